"""One or several run directories, scored and merged into one set of episode-arms."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..arms.registry import ARMS
from ..episodes.models import Episode
from ..errors import LogFormatError
from ..rundir import EPISODES, OnSkip
from ..scoring.summary import Entry, Scored, score_entries


@dataclass
class RunSet:
    """The finished episode-arms of one or several run directories, each under its
    configuration (see :func:`taskgate.scoring.summary.configuration`)."""

    dirs: list[Path]
    entries: list[Entry]

    @property
    def scored(self) -> list[Scored]:
        return [e.scored for e in self.entries]

    @property
    def configs(self) -> list[str]:
        return list(dict.fromkeys(e.scored.config for e in self.entries))

    def arms(self) -> list[str]:
        """The arms present, in the registry's ladder order (unknown ones last, as logged)."""
        order = {name: i for i, name in enumerate(ARMS)}
        logged = dict.fromkeys(e.scored.score.arm for e in self.entries)
        return sorted(logged, key=lambda a: order.get(a, len(order)))


def load_runs(dirs: Sequence[Path], on_skip: OnSkip | None = None) -> RunSet:
    """Score the run directories and merge them.

    Directories of different configurations become separate rows of every table; directories of
    one configuration pool (shards of one grid, say). An episode-arm present in two of them, or
    one episode id generated differently in two, is an error naming both directories: pooling
    would count it twice or mix two episode distributions.
    """
    if not dirs:
        raise LogFormatError("no run directory given")
    entries: list[Entry] = []
    seen: dict[tuple[str, str, str], Path] = {}
    episodes: dict[str, tuple[Episode, Path]] = {}
    for d in dict.fromkeys(dirs):
        for e in score_entries(d, on_skip):
            ident = (e.scored.config, *e.scored.key)
            if ident in seen:
                raise LogFormatError(
                    f"{seen[ident]} and {d} both hold episode-arm {ident[1]} / {ident[2]} of "
                    f"configuration {ident[0]!r}: report them separately (shards of one grid "
                    "hold disjoint episodes; `taskgate merge` joins them)"
                )
            seen[ident] = d
            first, where = episodes.setdefault(e.episode.id, (e.episode, d))
            if first is not e.episode and first != e.episode:
                raise LogFormatError(
                    f"episode {e.episode.id} differs between {where / EPISODES}"
                    f" and {d / EPISODES}: runs of different generator versions cannot be merged"
                )
            entries.append(e)
    return RunSet(list(dict.fromkeys(dirs)), entries)
