from __future__ import annotations

import asyncio

from taskgate import (
    AGENTS,
    COMPILERS,
    MATCHERS,
    Episode,
    EpisodeScore,
    Players,
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
) -> tuple[list[TurnRecord], EpisodeScore]:
    records: list[EpisodeRecord | TurnRecord | EndRecord] = []
    players = Players(AGENTS[agent](ep), COMPILERS[compiler](ep), MATCHERS["scripted"](ep))
    asyncio.run(
        run_episode(ep, get_arm(arm), players, records.append, corruption=corruption, repair=repair)
    )
    assert isinstance(records[0], EpisodeRecord) and isinstance(records[-1], EndRecord)
    turns = [r for r in records if isinstance(r, TurnRecord)]
    return turns, score_episode(ep, turns)


class PatchedAgent:
    """The perfect agent, except on the turns given, where it says what ``patches`` say."""

    def __init__(self, patches: dict[int, object]) -> None:
        from taskgate import PerfectAgent

        self._perfect = PerfectAgent()
        self._patches = patches
        self.seen: list[list[dict[str, str]]] = []

    async def reply(self, messages: list, view: object) -> str:  # type: ignore[type-arg]
        self.seen.append(list(messages))
        patch = self._patches.get(view.turn.index)  # type: ignore[attr-defined]
        if patch is None or view.notice is not None:  # type: ignore[attr-defined]
            return await self._perfect.reply(messages, view)  # type: ignore[arg-type]
        return patch(view) if callable(patch) else str(patch)


def run_patched(
    ep: Episode, arm: str, patches: dict[int, object], agent: PatchedAgent | None = None
) -> tuple[list[TurnRecord], EpisodeScore]:
    records: list[EpisodeRecord | TurnRecord | EndRecord] = []
    agent = agent or PatchedAgent(patches)
    players = Players(agent, COMPILERS["scripted"](ep), MATCHERS["scripted"](ep))
    asyncio.run(run_episode(ep, get_arm(arm), players, records.append))
    turns = [r for r in records if isinstance(r, TurnRecord)]
    return turns, score_episode(ep, turns)
