"""A lexical matcher: resolves a message to a step by word overlap, with no model.

Each step's content words (its text minus stop words; without a text, its tool's name in words,
as an ordinary agent's plan may give only tools) are compared with the message's; the step
covering the largest share of its words wins if that share reaches ``threshold`` and no other step
comes close (a message naming two steps resolves to none). The redo flag is the explicit-redo
reading every matcher shares (:func:`taskgate.explicit_redo`): a redo word in a clause that asks
for it, so "don't redo the draft" raises no flag.
"""

from __future__ import annotations

import re

from taskgate.core.plan import Plan
from taskgate.matching.askback import step_wording
from taskgate.matching.redo import explicit_redo
from taskgate.roles import Match

_WORD = re.compile(r"[a-z0-9]+")
#: words that name no step (articles, pronouns, fillers); the reader shares them
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "as",
        "at",
        "be",
        "by",
        "do",
        "for",
        "from",
        "get",
        "go",
        "have",
        "in",
        "into",
        "is",
        "it",
        "its",
        "let",
        "me",
        "my",
        "now",
        "of",
        "off",
        "on",
        "or",
        "our",
        "out",
        "please",
        "put",
        "so",
        "that",
        "the",
        "this",
        "to",
        "up",
        "us",
        "we",
        "what",
        "where",
        "with",
        "you",
        "your",
        "w",
    ]
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and not w.isdigit()}


class LexicalMatcher:
    def __init__(self, threshold: float = 0.2, margin: float = 0.9) -> None:
        self.threshold, self.margin = threshold, margin

    async def match(self, plan: Plan, message: str) -> Match:
        return self.match_now(plan, message)

    def match_now(self, plan: Plan, message: str) -> Match:
        said = _words(message)
        scores = []
        for sid in plan.steps:
            words = _words(step_wording(plan, sid))  # its text, else its tool's name in words
            if words:
                scores.append((len(words & said) / len(words), sid))
        scores.sort(reverse=True)
        if not scores or scores[0][0] < self.threshold:
            return Match(None, False)
        if (
            len(scores) > 1
            and scores[1][0] >= self.threshold
            and scores[1][0] > scores[0][0] * self.margin
        ):
            return Match(None, False)
        return Match(scores[0][1], explicit_redo(message))
