"""A grid split over machines without a cluster: ``--shard i/N`` runs every N-th episode (all of
its arms and corruption rates, so its gate arms still share one compile), each shard into its own
run directory; ``taskgate merge OUT SHARD_DIR...`` puts them together into one run directory
whose tables are those of a single local run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from taskgate.errors import LogFormatError, UsageError
from taskgate.lab.episodes.models import Episode
from taskgate.lab.episodes.records import EndRecord
from taskgate.lab.rundir import (
    COMPILED,
    EPISODES,
    LOG,
    LogWriter,
    OnSkip,
    read_compiled,
    read_episodes,
    read_log,
    write_episodes,
)
from taskgate.lab.runner.roles import CompileCache, Entry
from taskgate.lab.scoring.index import ScoreIndexWriter

T = TypeVar("T")
_SHARD = re.compile(r"\s*(\d{1,6})\s*/\s*(\d{1,6})\s*")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (from 1) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise UsageError(
                f"shard {self.index}/{self.count} is out of range: shards run from 1/N to N/N"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/4"`` -> ``Shard(2, 4)``; a clear error for anything else."""
        m = _SHARD.fullmatch(text)
        if m is None:
            raise UsageError(f"--shard {text[:40]!r} is not I/N (for example 1/4)")
        return cls(int(m.group(1)), int(m.group(2)))

    def take(self, items: Sequence[T]) -> list[T]:
        """Every ``count``-th item from the ``index``-th: the shards partition ``items``."""
        return list(items[self.index - 1 :: self.count])

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class Merged:
    runs: int  # episode-arms in the merged directory
    added: int  # of which this merge added
    duplicates: int  # finished episode-arms found in more than one source (kept once)
    episodes: int


def merge_runs(out: Path, sources: Sequence[Path], on_skip: OnSkip | None = None) -> Merged:
    """Merge the run directories ``sources`` into ``out`` (new, or a run directory already).

    Episodes must agree where they share an id. Each finished episode-arm is written once: one
    already in ``out`` or in an earlier source wins. Unfinished ones are left out (a rerun into
    ``out`` runs them). Nothing is written unless every source could be read.
    """
    if not sources:
        raise UsageError("merge needs at least one run directory to merge")
    for src in sources:
        if not (src / EPISODES).is_file():
            raise LogFormatError(f"{src} is not a run directory (no {EPISODES})")
        if src.resolve() == out.resolve():
            raise UsageError(f"{src} is the merge's output directory; name it only as OUT")
    own = 1 if (out / EPISODES).is_file() else 0  # out is a run directory already: kept first
    dirs = [out] * own + list(sources)
    episodes: dict[str, Episode] = {}
    for d in dirs:
        for ep in read_episodes(d / EPISODES):
            if episodes.setdefault(ep.id, ep) != ep:
                raise LogFormatError(
                    f"{d / EPISODES} holds an episode {ep.id!r} that differs from another "
                    "source's: these runs come from different grids and cannot be merged"
                )
    schedules = sorted({ep.params.schedule for ep in episodes.values()})
    if len(schedules) > 1:  # its cells would pool two schedules' episodes
        raise LogFormatError(
            f"these runs use different episode schedules ({', '.join(schedules)}) and cannot be "
            "merged"
        )
    logs = [read_log(d / LOG, on_skip) for d in dirs]
    entries: list[Entry] = []
    for d in dirs:
        entries += read_compiled(d / COMPILED, on_skip)
    out.mkdir(parents=True, exist_ok=True)
    write_episodes(out / EPISODES, episodes.values())
    CompileCache(out / COMPILED, on_skip).add(entries)
    have = set(logs[0]) if own else set()
    added = duplicates = 0
    writer = LogWriter(out / LOG, ScoreIndexWriter(out, episodes))
    try:
        for log in logs[own:]:
            for key, run in log.items():
                if key in have:
                    duplicates += 1
                    continue
                have.add(key)
                added += 1
                writer(run.header)
                for call in run.calls:
                    writer(call)
                for turn in run.turns:
                    writer(turn)
                writer(
                    EndRecord(episode=key[0], arm=key[1], turns=len(run.turns), seconds=run.seconds)
                )
    finally:
        writer.close()
    return Merged(len(have), added, duplicates, len(episodes))
