"""The cascade matcher: the embedding matcher first, the LLM matcher only where it is not sure.

The embedding matcher's confident answers (a step it is sure of, an ambiguous request, a message
near no step) are kept; an unsure one goes to the fallback matcher (the paper's LLM matcher). The
counters say how many model calls that saved: ``kept`` of ``kept + asked`` matches needed none.
"""

from __future__ import annotations

from taskgate.core.plan import Plan
from taskgate.matching.embedding import EmbeddingMatcher
from taskgate.roles import Match, Matcher


class CascadeMatcher:
    def __init__(self, fallback: Matcher, first: EmbeddingMatcher | None = None) -> None:
        self.first = first or EmbeddingMatcher()
        self.fallback = fallback
        self.kept = 0  # answered by the embedding matcher
        self.asked = 0  # passed to the fallback

    async def match(self, plan: Plan, message: str) -> Match:
        got = await self.first.aresolve(plan, message)
        if got.confident:
            self.kept += 1
            return got.as_match()
        self.asked += 1
        return await self.fallback.match(plan, message)
