from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import tempfile
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

from taskgate import ChatMessage
from taskgate.lab import (
    Episode,
    EpisodeScore,
    Oracle,
    PerfectAgent,
    build_players,
    get_arm,
    run_episode,
    score_episode,
)
from taskgate.lab.arms.registry import memory_kind
from taskgate.lab.episodes.records import EndRecord, EpisodeRecord, TurnRecord
from taskgate.lab.memory import Memory, build_memory
from taskgate.llm.client import ChatClient
from taskgate.llm.endpoint import Endpoint
from taskgate.llm.fake import FakeServer, protocol_responder


@functools.cache
def fake_model() -> FakeServer:
    """One fake model server for the tests of this process (it plays Mem0's extraction too)."""
    server = FakeServer(protocol_responder, keep_requests=False).__enter__()
    atexit.register(server.__exit__, None, None, None)
    return server


@contextlib.asynccontextmanager
async def memory_for(arm: str) -> AsyncIterator[Memory | None]:
    """A memory arm's store for unit tests: top-k on the hash embedder; Mem0 on it too, its
    extraction played by the fake model server. ``None`` for the other arms."""
    kind = memory_kind(arm)
    if kind is None:
        yield None
        return
    async with contextlib.AsyncExitStack() as stack:
        client = None
        if kind == "mem0":
            ep = Endpoint(base_url=fake_model().base_url, model="fake")
            client = await stack.enter_async_context(ChatClient(ep))
        store = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        memory = build_memory(kind, embedder="hash", client=client, store=store)
        try:
            yield memory
        finally:
            await memory.close()


def run_arm(
    ep: Episode,
    arm: str,
    agent: str = "scripted:perfect",
    compiler: str = "scripted",
    corruption: float = 0.0,
    repair: bool = False,
    matcher: str = "scripted",
) -> tuple[list[TurnRecord], EpisodeScore]:
    records: list[EpisodeRecord | TurnRecord | EndRecord] = []

    async def go() -> None:
        async with memory_for(arm) as memory:
            players = build_players(ep, agent, compiler, matcher, memory=memory)
            the_arm = get_arm(arm)
            await run_episode(
                ep, the_arm, players, records.append, corruption=corruption, repair=repair
            )

    asyncio.run(go())
    assert isinstance(records[0], EpisodeRecord) and isinstance(records[-1], EndRecord)
    turns = [r for r in records if isinstance(r, TurnRecord)]
    return turns, score_episode(ep, turns)


class PatchedAgent:
    """The perfect agent, except on the turns given, where it says what ``patches`` say."""

    def __init__(self, patches: dict[int, object]) -> None:
        self._patches = patches
        self.seen: list[list[ChatMessage]] = []

    def bind(self, oracle: Oracle) -> None:
        self.oracle = oracle
        self._perfect = PerfectAgent(oracle)

    async def reply(self, messages: list[ChatMessage]) -> str:
        self.seen.append(list(messages))
        view = self.oracle.current()
        patch = self._patches.get(view.turn.index)
        if patch is None or view.notice is not None:
            return await self._perfect.reply(messages)
        return patch(view) if callable(patch) else str(patch)


def run_patched(
    ep: Episode, arm: str, patches: dict[int, object], agent: PatchedAgent | None = None
) -> tuple[list[TurnRecord], EpisodeScore]:
    records: list[EpisodeRecord | TurnRecord | EndRecord] = []
    players = build_players(ep)
    agent = agent or PatchedAgent(patches)
    assert players.oracle is not None
    agent.bind(players.oracle)
    players = replace(players, agent=agent)
    asyncio.run(run_episode(ep, get_arm(arm), players, records.append))
    turns = [r for r in records if isinstance(r, TurnRecord)]
    return turns, score_episode(ep, turns)
