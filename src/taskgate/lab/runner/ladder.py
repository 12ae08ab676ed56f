"""The ladder: a grid of cells x arms x episodes, run concurrently into one run directory.

A cell is one configuration (steps, density, corruption rate); its arms share the same seeds, so
every contrast between arms is paired. Rerunning into the same directory resumes: finished
episode-arms are skipped, interrupted ones are rerun from their start.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from taskgate.errors import LogFormatError, ModelError, UsageError
from taskgate.lab.arms.registry import memory_kind
from taskgate.lab.episodes.generator import generate_episode
from taskgate.lab.episodes.models import Episode
from taskgate.lab.episodes.records import HarnessStamp
from taskgate.lab.progress import Progress
from taskgate.lab.runcard import RunCard
from taskgate.lab.runcard import write as write_card
from taskgate.lab.rundir import (
    COMPILED,
    EPISODES,
    LOG,
    LogWriter,
    OnSkip,
    Run,
    read_episodes,
    read_log,
    write_episodes,
)
from taskgate.lab.runner.cluster import Unit, run_on_ray
from taskgate.lab.runner.config import Cell, LadderConfig, Variant, run_key
from taskgate.lab.runner.one import run_one
from taskgate.lab.runner.roles import Clients, CompileCache, RoleBuilder
from taskgate.lab.runner.shards import Shard
from taskgate.lab.scoring.index import ScoreIndexWriter
from taskgate.llm.client import ChatClient

T = TypeVar("T")


async def run_ladder(
    config: LadderConfig,
    out: Path,
    progress: Progress | None = None,
    client: ChatClient | Clients | None = None,
    helper: ChatClient | None = None,
    on_skip: OnSkip | None = None,
    variant: Variant | None = None,
    *,
    shard: Shard | None = None,
    ray: str | None = None,
    card: RunCard | None = None,
) -> Progress:
    """Generate the grid's episodes and run every (cell, arm, episode) not yet finished in ``out``
    (``shard``, ``ray`` and ``card``: see :func:`run_episodes`)."""
    out.mkdir(parents=True, exist_ok=True)
    grid = _episodes(config, out, shard)
    episodes = [ep for eps in grid.values() for ep in eps]
    return await run_episodes(  # already the shard's episodes
        episodes, config, out, progress, client, helper, on_skip, variant, ray=ray, card=card
    )


async def run_episodes(
    episodes: Sequence[Episode],
    config: LadderConfig,
    out: Path,
    progress: Progress | None = None,
    client: ChatClient | Clients | None = None,
    helper: ChatClient | None = None,
    on_skip: OnSkip | None = None,
    variant: Variant | None = None,
    *,
    shard: Shard | None = None,
    ray: str | None = None,
    card: RunCard | None = None,
) -> Progress:
    """Run ``episodes`` under every arm of ``config`` (and each corruption rate) into ``out``.

    The episodes are added to ``out/episodes.jsonl``; episode-arms already finished there are
    skipped. The grid's steps and densities are ignored: each episode is its own cell's. ``client``
    serves the llm roles (``helper``, if given, the llm matcher and compiler; a :class:`Clients`
    gives each role its own). An
    episode-arm whose model calls fail after their retries is left unfinished (a rerun retries it)
    and counted in ``progress.failed``. Lines of the log that cannot be read are skipped and
    reported to ``on_skip`` (see :func:`taskgate.lab.rundir.read_log`); their episode-arms are rerun.
    ``variant``, when given, plays each episode-arm its way (the real-tool harness).

    ``shard`` runs only every N-th episode (see :mod:`taskgate.lab.runner.shards`); ``ray``, a Ray
    address, plays the episode-arms as Ray tasks (see :mod:`taskgate.lab.runner.cluster`), with the
    same run directory and results as a local run. ``card`` (see :mod:`taskgate.lab.runcard`),
    checked by the caller, is written once every check here has passed, as the episodes are.
    """
    if ray is not None and variant is not None:
        raise UsageError("Ray runs the testbed's episode-arms; the tool harness runs locally")
    if variant is not None and any(memory_kind(a) for a in config.arms):
        raise UsageError("the memory arms run in the testbed's text protocol, not the harness")
    clients = Clients.of(client, helper)
    if config.needs_model and clients.agent is None:
        raise ModelError("the llm roles need a model client; none was given")
    out.mkdir(parents=True, exist_ok=True)
    if shard is not None:
        episodes = _sharded(shard, episodes)
    logged = read_log(out / LOG, on_skip)
    _one_kind(out, logged.values(), variant)
    if card is not None:
        write_card(out, card)
    _remember(out, episodes)
    finished = set(logged)
    jobs = [
        (Cell(ep.params.steps, ep.params.density, eps), arm, ep)
        for eps in config.corruption
        for ep in episodes
        for arm in config.arms
    ]
    progress = progress or Progress()
    progress.total = len(jobs)
    writer = LogWriter(out / LOG, ScoreIndexWriter(out, {ep.id: ep for ep in episodes}))
    builder = RoleBuilder(clients, CompileCache(out / COMPILED, on_skip))
    tracker = progress

    async def one(cell: Cell, arm: str, ep: Episode) -> None:
        if (run_key(ep, arm, cell, variant), arm) in finished:
            tracker.skipped += 1
            tracker.advance()
            return
        try:
            await run_one(config, builder, cell, arm, ep, writer, tracker, variant, out)
        except ModelError as exc:
            tracker.fail(f"{run_key(ep, arm, cell, variant)} / {arm}: {exc}")
            return
        tracker.advance()

    # ``concurrency`` workers take the jobs in order (an episode's arms next to each other, so its
    # gate arms share one compile): memory holds what is in flight, however long the grid
    pending = iter(jobs)

    async def worker() -> None:
        for job in pending:
            await one(*job)

    try:
        with _fewer_collections():
            if ray is None:
                await asyncio.gather(*(worker() for _ in range(min(config.concurrency, len(jobs)))))
            else:
                units = _units(jobs, finished, variant, progress)
                await run_on_ray(
                    ray, units, config, builder.clients, builder.cache, writer, progress
                )
    finally:
        writer.close()
    return progress


def _kind(stamp: HarnessStamp | None) -> str:
    return "the testbed's" if stamp is None else f"the tool harness's ({stamp.mode} mode)"


def _one_kind(out: Path, logged: Iterable[Run], variant: Variant | None) -> None:
    """Refuse, before anything is written, a run directory that holds runs of another kind (the
    testbed's, or the harness's in another mode): its reports would refuse the mixture."""
    mine = None if variant is None else variant.stamp
    for run in logged:
        theirs = run.header.harness
        if (theirs and theirs.mode) != (mine and mine.mode):
            raise UsageError(
                f"{out} holds {_kind(theirs)} runs, not {_kind(mine)}; use another --out directory"
            )


def _sharded(shard: Shard, items: Sequence[T]) -> list[T]:
    """The shard's share of the grid's episodes; an error, before any file is written, when the
    grid has fewer episodes than there are shards."""
    mine = shard.take(items)
    if not mine:
        raise UsageError(
            f"shard {shard} holds no episodes: the grid has {len(items)}; "
            f"split it into at most {len(items)} shards"
        )
    return mine


def _units(
    jobs: Sequence[tuple[Cell, str, Episode]],
    finished: set[tuple[str, str]],
    variant: Variant | None,
    progress: Progress,
) -> list[Unit]:
    """The jobs as Ray tasks: each episode's unfinished episode-arms, under every cell (its
    corruption rates), so that they share the episode's one compile as a local run's do."""
    todo: dict[str, list[tuple[Cell, str]]] = {}
    eps: dict[str, Episode] = {}
    for cell, arm, ep in jobs:
        if (run_key(ep, arm, cell, variant), arm) in finished:
            progress.skipped += 1
            progress.advance()
            continue
        todo.setdefault(ep.id, []).append((cell, arm))
        eps[ep.id] = ep
    return [Unit(eps[ep_id], tuple(j)) for ep_id, j in todo.items()]


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """While the episode-arms run, the garbage collector scans the young generation every 50,000
    new objects instead of every 700, and leaves what existed before the run (modules, episodes)
    out of its full scans. With thousands of episode-arms in flight, the default spent a sixth of
    the runner's CPU re-scanning their histories (``bench/bench_runner.py 0.5 128``: 21.6 s of CPU
    against 17.1 s). Cyclic garbage is still collected; the thresholds are restored after."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(before[0], 50_000), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def _episodes(
    config: LadderConfig, out: Path, shard: Shard | None = None
) -> dict[tuple[int, float], list[Episode]]:
    """Each cell's episodes: read back from ``episodes.jsonl`` when there, else generated (only
    the shard's, when sharded: the shards partition the grid's episodes as listed here)."""
    path = out / EPISODES
    known = {e.id: e for e in read_episodes(path)} if path.exists() else {}
    stored = sorted({e.params.schedule for e in known.values()} - {config.schedule})
    if stored:  # the cells would pool two schedules' episodes: refuse before any work
        raise UsageError(
            f"{path} holds episodes of the {stored[0]!r} schedule; rerun with --schedule "
            f"{stored[0]} to go on with it, or use another --out directory"
        )
    grid: dict[tuple[int, float], list[Episode]] = {}
    cells: dict[tuple[int, float], Cell] = {}
    for c in config.cells():
        cells.setdefault((c.steps, c.density), c)
    params = [(key, p) for key, cell in cells.items() for p in config.episode_params(cell)]
    for key, p in _sharded(shard, params) if shard is not None else params:
        grid.setdefault(key, []).append(known.get(p.key) or generate_episode(p, config.rewrites))
    return grid


def _remember(out: Path, episodes: Sequence[Episode]) -> None:
    path = out / EPISODES
    known = {e.id: e for e in read_episodes(path)} if path.exists() else {}
    for ep in episodes:
        if ep.id in known and known[ep.id] != ep:
            raise LogFormatError(
                f"{path} already holds a different episode {ep.id!r}; use another --out directory"
            )
    new = {e.id: e for e in episodes if e.id not in known}
    if new:
        write_episodes(path, [*known.values(), *new.values()])
