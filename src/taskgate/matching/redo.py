"""Explicit-redo intent without a model: a re-execution word that no negation governs.

The paper's matcher answers "is the user EXPLICITLY authorizing re-execution of an
already-completed step (redo/again with a stated reason)?". This is the same question asked of the
words: a redo word ("redo", "again", "done over", "from scratch", ...) raises the flag unless a
negation ("don't", "no need to", "never", ...) stands before it in the same clause. One pass over
the text with bounded look-behind per hit, so linear in its length.
"""

from __future__ import annotations

import re

_REDO = re.compile(
    r"\b(?:re-?do(?:ne|ing)?|again|(?:do|done|doing)\s+(?:it\s+|this\s+|that\s+)?over|"
    r"re-?run|repeat|once\s+more|one\s+more\s+time|from\s+scratch|second\s+time|"
    r"(?:fresh|another|new)\s+pass|afresh|anew|re-?execute|re-?submit|re-?send|re-?book)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:don'?t|do\s+not|doesn'?t|does\s+not|no\s+need|not|never|without|nor|stop|avoid)\b",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[.;:!?]|--|\bbut\b", re.IGNORECASE)
_WINDOW = 40  # characters of the same clause read before a redo word


def explicit_redo(message: str) -> bool:
    """Whether ``message`` explicitly asks for finished work to be done again."""
    for hit in _REDO.finditer(message):
        before = message[max(0, hit.start() - _WINDOW) : hit.start()]
        clause = _CLAUSE.split(before)[-1]
        if not _NEGATION.search(clause):
            return True
    return False
