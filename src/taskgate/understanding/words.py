"""The words of a message as the readers compare them: its words, the words that say nothing of
what is asked (stop words), a word's stem, where its sentences end."""

from __future__ import annotations

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
