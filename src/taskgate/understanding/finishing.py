"""A yes that places what was shown: the finishing step's call (finish, submit, place, complete,
checkout, ...) confirmed by a yes to the agent's request to check the order ("Is the order
correct on the screen?"), read by :meth:`taskgate.understanding.reader.Reading.confirms`."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping

from taskgate.understanding.acts import AGENT_CHARS, asks_to_confirm
from taskgate.understanding.patterns import pattern
from taskgate.understanding.words import _SENTENCE_END, _STOP, _WORD, _stem

#: the first words of a step that completes what the user confirmed (an order, a checkout)
_FINISHERS = frozenset(
    ["finish", "submit", "place", "complete", "finalize", "finalise", "checkout", "process"]
)
#: an argument that identifies a record the conversation does not show ("order_id")
_ID_KEY = pattern(r"(?:^|[_\s-])(?:id|uuid|ref|reference|key)$|[a-z]Id$")
_ID_VALUE = pattern(r"[A-Za-z0-9_.:-]{1,64}")


def _finishing(wording: str, arguments: Mapping[str, object]) -> bool:
    """Whether a call completes what was confirmed: its step's wording starts with a verb of
    :data:`_FINISHERS` and its arguments are one or two identifiers ("order_id": "38056"), which
    no proposal states."""
    first = next((w for w in _WORD.findall(wording.lower()) if w not in _STOP), "")
    return (
        first in _FINISHERS
        and len(arguments) <= 2
        and all(
            isinstance(v, str)
            and _ID_KEY.search(str(k)) is not None
            and _ID_VALUE.fullmatch(v) is not None
            and any(c.isdigit() for c in v)
            for k, v in arguments.items()
        )
    )


def _of_step(said: str, wording: str, heard: str = "") -> bool:
    """Whether a request to confirm is about what a step acts on. The agent's message proposes
    nothing undone or other ("... or would you like to cancel?", "I'll sign you up for our
    newsletter, is that okay?", "I won't send it yet. Is that fine?"), and its question (the
    last two sentences that ask or ask to confirm; what it says it does next, "before I send it",
    aside) names a word of the step's wording that is no verb of finishing ("Is the order
    correct?" for "finish order"), or asks the user to look over what is shown ("Does this look
    right?", "Can you confirm, please?") and names nothing but what is shown and what was said
    in the turns before (``heard``: "One mocha with oat milk, right?"
    after the user ordered it). "Is your email correct?", "Are you okay?" and "How's
    everything?" are about something else."""
    low = said.lower()[-AGENT_CHARS:]
    # "let me know if you want me to change anything"; "confirm the order again"
    plain = _RECHECK.sub(" ", _ANY_CHANGE.sub(" ", low))
    if _CONTRARY.search(plain) or _OTHER_ACT.search(plain):
        return False  # "... if you want me to cancel your order", "I'll put you on hold"
    parts = [p for p in itertools.islice(_SENTENCE_END.split(low), 64) if _WORD.search(p)]
    asks = [p for p in parts if p.rstrip().endswith("?") or asks_to_confirm(p)][-2:] or [low]
    asked = " ".join(_asking(p) for p in asks)
    objects = {_stem(w) for w in _WORD.findall(wording.lower()[:400])
               if w not in _STOP and w not in _FINISHERS and len(w) >= 3}  # fmt: skip
    if _ANNOUNCED.search(plain) or any(not (_LOOKED.search(p) or _ABOUT_ORDER.search(p))
                                        for p in parts if p.rstrip().endswith("?")):  # fmt: skip
        return False  # "I'll make it a large.", "Would you like a muffin too? ... correct?"
    if objects and all(_heads(asked, o) for o in objects):
        return True  # "Is the order correct?"; not "Is the payment method on file correct?"
    before = {_stem(w) for w in _WORD.findall(heard.lower()[: 4 * AGENT_CHARS])}
    words = {_stem(w) for w in _WORD.findall(asked)
             if w not in _STOP and w not in _FINISHERS and len(w) >= 3}  # fmt: skip
    return (
        not words - _SHOWN - before - objects
        and bool(_LOOKED.search(asked))
        and (bool(_SHOWING.search(asked)) or asks_to_confirm(asked))
    )


#: a request to check what is shown once more ("Please confirm the order again."), which places
#: nothing twice
_RECHECK = pattern(
    r"\b(?:confirm|check|look(?: over| at)?|verify|review|see)\w*(?:\s+(?:the|your|this|that|it|"
    r"them|order|drink|drinks|details|everything|for|me|on|screen|monitor|please|once))*\s+again\b"
)
#: an action of the agent's other than placing what was shown
_OTHER_ACT = pattern(
    r"\b(?:sign (?:you )?up|subscri\w*|newsletter|transfer\w*|shar(?:e|ing)|void\w*|switch\w*|"
    r"on hold|hold (?:off|it|on)|put (?:you|it|this|that|the order) (?:on hold|aside)|wait\w*|"
    r"until|tomorrow|later|not yet|(?:won'?t|will not|don'?t|do not|not going to|can'?t|cannot) "
    r"(?:\w+ ){0,2}(?:send|submit|place|finish|complete|process|start)\w*|from scratch|start (?:it |the "
    r"order )?over|upgrad\w*|bill\w*|charg\w*|sell\w*|partner\w*|rewards?|loyalty|manager|"
    r"survey|feedback|twice|thrice|two times|again|under [\w']+ name|ship\w*|deliver\w*|next "
    r"week|in an? (?:hour|while)|reserv\w*|rate us|coworker|colleague|friend'?s|as well|or (?:shall|"
    r"should|do|would|can|may) (?:i|we|you)|make (?:it|that|this|them) (?:a |an )?(?!for\b|now\b|"
    r"right\b|soon\b|fresh\b)[a-z]+)\b"
)
#: the agent announcing an action of its own other than sending, placing or starting the order
_ANNOUNCED = pattern(
    r"\b(?:i'?ll|i will|i'?m going to|i am going to|let me|we'?ll|we will|i'?m gonna|i can|we can)"
    r"\s+(?:just\s+|also\s+|now\s+|then\s+|go ahead and\s+)?+(?!send|submit|place|finish|complete|"
    r"process|start|get (?:it|that|this|your|the|them|right|to|going|started|on)|pass|(?:punch|key|"
    r"enter|input|type)(?: in| up)? (?:it|that|this|them|(?:your|the|that|this) order)\b|put (?:it|that|"
    r"this|them) (?:in|through|into)|giv\w* (?:it|that|this|your|the)|hand|have (?:it|that)|ring|go "
    r"ahead|proceed|need|confirm|check|see|know|make|prepar|brew|do that|do this|help|be|take care)"
    r"\w+"
)
#: a question about the order itself ("Are you ready to send it?", "Is this your complete order?")
_ABOUT_ORDER = pattern(
    r"\b(?:ready|send\w*|sent|order\w*|plac\w*|proceed|go ahead|complet\w*|submit\w*|finish\w*|"
    r"all|everything)\b"
)
#: a word that asks the user to look something over or to judge it
_LOOKED = pattern(
    r"\b(?:look\w*|appear\w*|see|seeing|screen|display\w*|monitor|shown|show\w*|check\w*|"
    r"review\w*|verify|confirm\w*|match\w*|correct\w*|accurate\w*|right|better|perfect|"
    r"want|wanted|would like|(?:is|was) (?:that|this|it) (?:it|all|everything)|(?:is|does) (?:that|"
    r"this) (?:look )?good)\b"
)
#: an offer to change whatever is wrong, which proposes no change ("Please let me know if you want
#: me to change anything")
_ANY_CHANGE = pattern(
    r"\bif (?:you (?:want|would like|'d like|need)(?: me| us)? to |there(?:'s| is) )?(?:chang|modif|"
    r"edit|fix|updat|adjust)\w* (?:anything|something)\b"
)


def _judges(said: str) -> bool:
    """Whether the agent's last question asks the user to judge something ("Does this order
    look all right to you?", "Is that better?", "Can you make sure we have it right?")."""
    low = said.lower()[-AGENT_CHARS:]
    last = next((p for p in reversed(list(itertools.islice(_SENTENCE_END.split(low), 64)))
                 if p.strip()), "")  # fmt: skip
    return bool(_JUDGED.search(last)) and (
        last.rstrip().endswith("?") or bool(_REQUEST.match(last.strip()))
    )


#: a word that asks for a judgement
_JUDGED = pattern(
    r"\b(?:correct(?:ly)?|right|good|ok|okay|fine|accurate(?:ly)?|alright|all right|better|"
    r"perfect|match(?:es)?|everything)\b"
)
#: a sentence that asks the user to do something ("Can you ...", "Please ...")
_REQUEST = pattern(r"(?:\w+,? )?(?:can|could|would|will) you\b|(?:\w+,? )?please\b")


def _asking(sentence: str) -> str:
    """A sentence that asks, less what it says follows a yes ("before I send it over, is this
    right?": "is this right?"); the whole sentence where nothing else is left."""
    left = _NEXT.sub(" , ", sentence)
    # "Okay I'll get right on that is this order correct?": the question went with what follows
    return left if _WORD.search(left) and _LOOKED.search(left) else sentence


def _heads(text: str, word: str) -> bool:
    """Whether ``word`` (a stem) is in ``text`` as what it speaks of, not before another noun
    ("the order is correct", "your order?"; not "order number", "payment method")."""
    tokens = _WORD.findall(text)
    return any(
        _stem(t) == word and (i + 1 == len(tokens) or tokens[i + 1] in _AFTER_HEAD)
        for i, t in enumerate(tokens[:400])
    )


#: the words that may follow the thing a request to confirm speaks of
_AFTER_HEAD = frozenset(
    [
        "is",
        "are",
        "was",
        "look",
        "looks",
        "looking",
        "appear",
        "appears",
        "seem",
        "seems",
        "correct",
        "correctly",
        "right",
        "accurate",
        "ok",
        "okay",
        "good",
        "fine",
        "displayed",
        "shown",
        "on",
        "in",
        "here",
        "there",
        "so",
        "now",
        "all",
        "details",
        "before",
        "please",
    ]
)
#: a question about what is shown ("Does this look right?", "Is everything correct?")
_SHOWING = pattern(
    r"\b(?:this|that|it|everything|all|these|those|screen|display|here|what you(?:'re)? see(?:ing)?)\b"
)


def _ids_said(said: str, arguments: Mapping[str, object]) -> bool:
    """Whether the numbers a request to confirm states are those of the call's identifiers."""
    stated = set(re.findall(r"\d+", said[-AGENT_CHARS:]))
    return not stated or all(set(re.findall(r"\d+", str(v))) <= stated for v in arguments.values())


#: a proposal to undo or change what it names
_CONTRARY = pattern(
    r"\b(?!(?:updat|chang|modifi|edit)ed\b)(?:cancel|delet|remov|refund|void|return|chang|modif|"
    r"updat|edit|undo|revok|clos|withdraw|discard|drop)\w*",
    re.I,
)
#: where a request to confirm goes on to what follows a yes ("before I send it", "then I'll")
_NEXT = pattern(
    r"\b(?:before|then|once|so (?:i|we|that)|if so|and i'?ll|and we'?ll|i'?ll|we'?ll|i will|"
    r"we will)\b[^,;:?!]*"
)
#: the words of a request to confirm what is shown
_SHOWN = frozenset(
    _stem(w)
    for w in (
        "look",
        "looks",
        "right",
        "correct",
        "correctly",
        "okay",
        "good",
        "fine",
        "accurate",
        "screen",
        "display",
        "displayed",
        "monitor",
        "tablet",
        "check",
        "sure",
        "make",
        "confirm",
        "please",
        "everything",
        "this",
        "that",
        "here",
        "front",
        "shown",
        "appear",
        "appears",
        "seem",
        "seems",
        "verify",
        "review",
        "let",
        "know",
        "tell",
        "just",
        "sound",
        "great",
        "alright",
        "perfect",
        "want",
        "like",
        "thing",
        "things",
        "detail",
        "details",
        "wanted",
        "ordered",
        "does",
        "do",
        "is",
        "are",
        "got",
        "see",
        "yes",
        "yeah",
        "course",
        "absolutely",
        "problem",
        "sir",
        "madam",
        "over",
        "how",
        "again",
        "enter",
        "entered",
        "confirmation",
        "one",
        "all",
        "set",
        "drink",
        "drinks",
        "send",
        "sent",
        "bar",
        "start",
        "started",
        "made",
        "prepared",
        "preparation",
        "barista",
        "baristas",
        "kitchen",
        "better",
        "updated",
        "changed",
        "new",
        "final",
        "current",
        "accuracy",
        "accurately",
        "match",
        "matches",
        "matching",
        "show",
        "shows",
        "showing",
        "did",
        "yours",
        "gotten",
        "way",
        "input",
        "checking",
        "again",
        "take",
        "certainly",
        "sure",
        "ensure",
        "may",
        "favor",
        "doublecheck",
        "double",
        "safe",
        "about",
        "whole",
        "below",
        "above",
        "item",
        "items",
        "information",
        "info",
        "those",
        "these",
        "seeing",
        "entered",
        "listed",
        "written",
        "put",
        "thanks",
        "thank",
        "but",
        "well",
        "now",
        "okay",
        "ok",
    )
)
