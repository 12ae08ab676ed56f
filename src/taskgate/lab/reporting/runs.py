"""One or several run directories, scored and merged into one set of episode-arms."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from taskgate.errors import LogFormatError
from taskgate.lab.arms.registry import ARMS
from taskgate.lab.episodes.models import Episode
from taskgate.lab.runcard import RunCard
from taskgate.lab.runcard import load as load_card
from taskgate.lab.rundir import EPISODES, OnSkip
from taskgate.lab.scoring.summary import Entry, Scored, score_entries


@dataclass
class RunSet:
    """The finished episode-arms of one or several run directories, each under its
    configuration (see :func:`taskgate.lab.scoring.summary.configuration`)."""

    dirs: list[Path]
    entries: list[Entry]

    @property
    def scored(self) -> list[Scored]:
        return [e.scored for e in self.entries]

    @property
    def configs(self) -> list[str]:
        return list(dict.fromkeys(e.scored.config for e in self.entries))

    @property
    def cards(self) -> list[RunCard]:
        """The run cards of the directories that have one."""
        return [c for c in (load_card(d) for d in self.dirs) if c is not None]

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
    merge = _Merge()
    for d in dict.fromkeys(dirs):
        for e in score_entries(d, on_skip):
            merge.add(e, d)
    return RunSet(list(dict.fromkeys(dirs)), merge.entries)


class _Merge:
    """The episode-arms of several directories, checked as they come."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self._seen: dict[tuple[str, str, str], Path] = {}
        self._roles: dict[tuple[str, str], tuple[str, str, Path]] = {}
        self._episodes: dict[str, tuple[Episode, Path]] = {}

    def add(self, e: Entry, d: Path) -> None:
        config, run_id, arm = ident = (e.scored.config, *e.scored.key)
        if ident in self._seen:
            raise LogFormatError(
                f"{self._seen[ident]} and {d} both hold episode-arm {run_id} / {arm} of "
                f"configuration {config!r}: report them separately (shards of one grid hold "
                "disjoint episodes; `taskgate merge` joins them)"
            )
        self._seen[ident] = d
        h = e.run.header
        compiler, matcher, where = self._roles.setdefault((config, arm), (h.compiler, h.matcher, d))
        if (compiler, matcher) != (h.compiler, h.matcher):
            raise LogFormatError(
                f"{where} and {d} ran arm {arm} of configuration {config!r} with different roles "
                f"(compiler {compiler} / matcher {matcher} against {h.compiler} / {h.matcher}): "
                "report them separately"
            )
        first, at = self._episodes.setdefault(e.episode.id, (e.episode, d))
        if first is not e.episode and first != e.episode:
            raise LogFormatError(
                f"episode {e.episode.id} differs between {at / EPISODES} and {d / EPISODES}: runs "
                "of different generator versions cannot be merged"
            )
        self.entries.append(e)
