"""Explicit-redo intent without a model: a redo word in a clause that asks for it.

The paper's matcher answers "is the user EXPLICITLY authorizing re-execution of an
already-completed step (redo/again with a stated reason)?". This is the same question asked of the
words: a redo word ("redo", "again", "done over", "from scratch", ...) raises the flag unless its
clause says otherwise: a negation or refusal before it ("don't", "shouldn't", "won't", "no need
to", "refrain from", "hold off on", "skip", ...), someone else's words reported before it ("my boss
said to redo it"), a dismissal or a verdict after it ("... is unnecessary", "... would be a
mistake", "... would be crazy", "... next month"), a question mark ending the clause ("did it
go out again?"; not "Can you pay it again?"), a condition opening its sentence ("Once the new
invoice comes, pay it again."; not "If that's ok, ..."), quotation marks around it (an instruction quoted to reject it),
or a message taken back as a joke ("... just kidding"). A wrong flag would let the gate re-execute finished
work, so the reading errs towards no flag. One pass over the text, each hit reading a bounded
window of its clause, so linear in the text's length.
"""

from __future__ import annotations

import re

_REDO = re.compile(
    r"\b(?:re-?do(?:ne|ing)?|again|(?:do|done|doing)\s+(?:it\s+|this\s+|that\s+)?over|"
    r"re-?run|repeat|once\s+more|one\s+more\s+time|from\s+scratch|second\s+time|"
    r"(?:fresh|another|new)\s+pass|afresh|anew|re-?execute|re-?submit|re-?send|re-?book)\b",
    re.IGNORECASE,
)
_BEFORE = re.compile(
    r"\b(?:don'?t|do\s+not|doesn'?t|does\s+not|no|not|never|without|nor|stop|avoid|skip|"
    r"cancel|instead\s+of|rather\s+than|cannot|refrain|hold\s+off|forget\s+about|"
    r"against|hate|last\s+thing|wonder(?:ing)?\s+(?:if|whether)\s+(?:i|we)\s+should|hardly|"
    r"pointless|point\s+in|useless|no\s+use|only\s+if|unless|if\s+(?:you|we|i|they)\s+"
    r"(?!could|would|can|will|please|don'?t\s+mind)\w+)\b|\b\w+n['\u2019]t\b",
    re.IGNORECASE,
)
#: someone else's words, reported: "my boss said to redo it" is not the user asking
_REPORTED = re.compile(
    r"\b(?:said|says|say|told|tells|asked|asks|wants|wanted|suggested|suggests|claims?|"
    r"claimed)\b(?:\s+\w+){0,3}\s+(?:to|that|:)"
    r"\s",
    re.IGNORECASE,
)
_AFTER = re.compile(
    r"\b(?:unnecessary|not\s+(?:needed|necessary|required)|isn'?t\s+(?:needed|necessary)|"
    r"no\s+longer\s+needed|would\s+be\s+(?:a\s+)?(?:mistake|wrong|pointless|waste|wasteful|"
    r"bad\s+idea|unwise|overkill|silly)|is\s+(?:pointless|a\s+waste|a\s+bad\s+idea|overkill)|"
    r"makes?\s+no\s+sense|(?:would\s+be|is)\s+(?:crazy|insane|ridiculous|absurd|nuts|dumb|stupid)|"
    r"(?:means|would\s+mean)\s+(?:a\s+)?double|charged\s+twice|double[\s-]charg\w*|so\s+don'?t|"
    # not now: "pay it again next month", "tomorrow, not today"
    r"(?<!for\s)next\s+(?:week|month|year|time|cycle)|(?<!for\s)tomorrow|(?<!than\s)later|only\s+if|"
    r"unless)\b",
    re.IGNORECASE,
)
_QUOTES = re.compile(r"[\"\u201c\u201d]")
#: the whole message taken back as a joke: "Pay it again lol no", "... just kidding"
_JEST = re.compile(
    r"\bjust\s+(?:kidding|joking)\b(?!\s+about)|\bj/?k\b|\b(?:lol|haha|lmao),?\s+no[\s.!]*$",
    re.IGNORECASE,
)
#: a sentence that sets a condition first: "Once the new invoice comes, pay it again."
_CONDITION = re.compile(
    r"^\s*(?:after\s+(?:the|my|your|our)\s+\w+\s*,|(?:once|if|unless|as\s+soon\s+as|only\s+if)\b"
    r"(?!\s+(?:again|more|possible|you\s+(?:can|"
    r"could|would|don'?t\s+mind|please)|(?:that|it)'?s\s+(?:ok|okay|fine|alright|not\s+too)|that\s+"
    r"works|needed)\b))",
    re.IGNORECASE,
)
#: a question that asks for it to be done: "Can you pay the invoice again?"
_POLITE = re.compile(r"^\s*(?:(?:can|could|would|will)\s+you|please)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"[.!?]\s")
_CLAUSE = re.compile(r"[.;:!?,]|--|\bbut\b", re.IGNORECASE)
_WINDOW = 60  # characters of the clause read on each side of a redo word


def explicit_redo(message: str) -> bool:
    """Whether ``message`` explicitly asks for finished work to be done again."""
    if _JEST.search(message):
        return False
    marks = [m.start() for m in _QUOTES.finditer(message)]  # an inch mark alone quotes nothing
    quotes = 0  # quotation marks before the hit: an odd count, closed later, is a quotation
    for hit in _REDO.finditer(message):
        while quotes < len(marks) and marks[quotes] < hit.start():
            quotes += 1
        if quotes % 2 and quotes < len(marks):  # a quoted instruction, not the user's own
            continue
        before = _CLAUSE.split(message[max(0, hit.start() - _WINDOW) : hit.start()])[-1]
        tail = message[hit.end() : hit.end() + _WINDOW]
        end = _CLAUSE.search(tail)
        after = tail[: end.start()] if end else tail
        parts = _SENTENCE.split(message[max(0, hit.start() - 2 * _WINDOW) : hit.start()])
        # the sentence before the hit, where it starts within the window read
        sentence = parts[-1] if len(parts) > 1 or hit.start() <= 2 * _WINDOW else ""
        asked = end is not None and end.group() == "?" and not _POLITE.match(sentence)
        if not (_BEFORE.search(before) or _REPORTED.search(before) or _AFTER.search(after)
                or asked or _CONDITION.match(sentence)):  # fmt: skip
            return True
    return False
