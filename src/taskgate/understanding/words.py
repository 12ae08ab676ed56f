"""The words of a message as the readers compare them: its words, the words that say nothing of
what is asked (stop words), a word's stem, where its sentences end."""

from __future__ import annotations

import unicodedata

from taskgate.matching.lexical import STOP_WORDS
from taskgate.understanding.patterns import pattern

_WORD = pattern(r"[a-z0-9]+")
_STOP = STOP_WORDS | frozenset(
    [
        "i",
        "will",
        "would",
        "can",
        "could",
        "should",
        "want",
        "need",
        "like",
        "some",
        "any",
        "all",
        "just",
        "also",
        "then",
        "them",
        "they",
        "there",
        "their",
    ]
)  # and the words of a request form
_SENTENCE_END = pattern(r"(?<=[.!?])\s+")


def _stem(word: str) -> str:
    """A word without its -ing, -ed or -s ("playing" and "play" are one)."""
    for end in ("ing", "ed", "s"):
        if word.endswith(end) and len(word) - len(end) >= 3:
            return word[: -len(end)]
    return word


_APOSTROPHE = pattern(r"['\u2019]")
_POSSESSIVE = pattern(r"['\u2019]s\b")


def fold(text: str) -> str:
    """``text`` lower case, a possessive's "'s", apostrophes and accents dropped ("José's Café":
    "jose cafe"), as the value rules compare words."""
    low = _APOSTROPHE.sub("", _POSSESSIVE.sub("", text.lower()))
    return unicodedata.normalize("NFKD", low).encode("ascii", "ignore").decode()
