"""The one-node case's roles: the commitment compiler, the trigger matcher and scripted agents.

The compiler turns a commitment message into a guarded trigger (category, vendor); the matcher
decides whether a later request fires one of the pending triggers. Each comes scripted (the
testbed's truth), on a model (a JSON prompt), and the matcher also on sentence embeddings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel

from taskgate.lab.experiments.onenode.testbed import (
    BY_SLUG,
    CATEGORIES,
    Commitment,
    NodeEpisode,
    NodeTurn,
)
from taskgate.llm.client import ChatClient, OnCall
from taskgate.llm.roles import LLMAgent, ask_json
from taskgate.matching.embedders import Embedder, Vectors
from taskgate.roles import ChatMessage

#: a pending trigger: its number in the episode and what it owes
Pending = dict[int, Commitment]


class TriggerCompiler(Protocol):
    async def compile(self, message: str, turn: NodeTurn) -> Commitment | None: ...


class TriggerMatcher(Protocol):
    async def fires(self, request: str, pending: Pending, turn: NodeTurn) -> int | None: ...


class ScriptedTriggerCompiler:
    def __init__(self, episode: NodeEpisode) -> None:
        self._episode = episode

    async def compile(self, message: str, turn: NodeTurn) -> Commitment | None:
        return None if turn.commitment is None else self._episode.commitments[turn.commitment]


class ScriptedTriggerMatcher:
    """Fires the pending trigger of the request's category (the truth)."""

    async def fires(self, request: str, pending: Pending, turn: NodeTurn) -> int | None:
        return next((i for i, c in pending.items() if c.category == turn.category), None)


class _CompileReply(BaseModel):
    category: str | None
    vendor: str | None


class _FireReply(BaseModel):
    fires: int | None


def _categories() -> str:
    return "\n".join(f"- {c.slug}: {c.noun}" for c in CATEGORIES)


class LLMTriggerCompiler:
    def __init__(self, client: ChatClient, on_call: OnCall | None = None) -> None:
        self._client, self._on_call = client, on_call

    async def compile(self, message: str, turn: NodeTurn) -> Commitment | None:
        prompt = (
            "A user gave a standing one-shot instruction about their next booking. Booking "
            f"categories:\n{_categories()}\n\nINSTRUCTION: {message}\n\nAnswer with JSON only: "
            '{"category": "<slug>", "vendor": "<vendor name>"}, or nulls if it is no such '
            "instruction."
        )
        # a two-field JSON reply: the matcher's budget, not the graph compiler's
        got, _ = await ask_json(self._client, prompt, _CompileReply, "matcher", self._on_call)
        if got is None or got.category not in BY_SLUG or not got.vendor:
            return None
        return Commitment(category=got.category, vendor=got.vendor.strip())


class LLMTriggerMatcher:
    def __init__(self, client: ChatClient, on_call: OnCall | None = None) -> None:
        self._client, self._on_call = client, on_call

    async def fires(self, request: str, pending: Pending, turn: NodeTurn) -> int | None:
        if not pending:
            return None
        listed = "\n".join(f"{i}: the next {BY_SLUG[c.category].noun}" for i, c in pending.items())
        prompt = (
            f"Pending one-shot instructions, each for the user's next booking of a kind:\n{listed}"
            f"\n\nNEW REQUEST: {request}\n\nIs the new request a booking of one of these kinds? "
            'Answer with JSON only: {"fires": <number>} or {"fires": null}.'
        )
        got, _ = await ask_json(self._client, prompt, _FireReply, "matcher", self._on_call)
        return got.fires if got is not None and got.fires in pending else None


class EmbeddingTriggerMatcher:
    """Fires the pending trigger whose category's examples are most similar to the request, when
    the similarity clears ``threshold``."""

    def __init__(self, embedder: Embedder, threshold: float = 0.35) -> None:
        self._embedder, self._threshold = embedder, threshold
        self._rows: dict[str, Vectors] = {}

    async def fires(self, request: str, pending: Pending, turn: NodeTurn) -> int | None:
        if not pending:
            return None
        q = self._embedder.embed([request])[0]
        best, score = None, self._threshold
        for i, c in pending.items():
            rows = self._rows.get(c.category)
            if rows is None:
                cat = BY_SLUG[c.category]
                rows = self._rows[c.category] = self._embedder.embed([cat.noun, *cat.requests])
            s = float((rows @ q).max())
            if s >= score:
                best, score = i, s
        return best


class LLMNodeAgent:
    """The model as the agent (it never sees the truth)."""

    def __init__(self, client: ChatClient, on_call: OnCall | None = None) -> None:
        self._agent = LLMAgent(client, on_call)
        self.turn: NodeTurn | None = None

    async def reply(self, messages: Sequence[ChatMessage]) -> str:
        return await self._agent.reply(list(messages))


class PerfectNodeAgent:
    """Books what is owed (the truth): the commitment's vendor at its trigger, else the default."""

    def __init__(self, episode: NodeEpisode) -> None:
        self._episode = episode
        self.turn: NodeTurn | None = None

    async def reply(self, messages: Sequence[ChatMessage]) -> str:
        t = self.turn
        if t is None or t.work_order is None or t.category is None:
            return "Noted."
        vendor = BY_SLUG[t.category].default
        if t.role == "trigger" and t.commitment is not None:
            vendor = self._episode.commitments[t.commitment].vendor
        return f"Done.\nbook {vendor} {t.work_order}"


_SEEN = re.compile(r"For my next (.+?), use ([A-Za-z]+) -- just this once")
_DIRECTIVE = re.compile(r"\[ONE-SHOT\] [^\n]*?book it with ([A-Za-z]+)")


class NaiveNodeAgent:
    """Books with the vendor of any one-shot instruction for the request's kind still visible in
    its prompt (the latest), a directive first; else the default. It never tracks consumption,
    so it re-executes whatever the prompt still shows."""

    def __init__(self) -> None:
        self.turn: NodeTurn | None = None

    async def reply(self, messages: Sequence[ChatMessage]) -> str:
        t = self.turn
        if t is None or t.work_order is None or t.category is None:
            return "Noted."
        cat = BY_SLUG[t.category]
        text = "\n".join(m["content"] for m in messages)
        vendor = cat.default
        for noun, v in _SEEN.findall(text):
            if noun == cat.noun:
                vendor = v
        directive = _DIRECTIVE.findall(messages[-1]["content"])
        if directive:
            vendor = directive[-1]
        return f"Done.\nbook {vendor} {t.work_order}"
