from __future__ import annotations

import asyncio
from dataclasses import replace

from taskgate import (
    ChatMessage,
    Episode,
    EpisodeScore,
    Oracle,
    PerfectAgent,
    build_players,
    get_arm,
    run_episode,
    score_episode,
)
from taskgate.episodes.records import EndRecord, EpisodeRecord, TurnRecord


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
    players = build_players(ep, agent, compiler, matcher)
    asyncio.run(
        run_episode(ep, get_arm(arm), players, records.append, corruption=corruption, repair=repair)
    )
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
