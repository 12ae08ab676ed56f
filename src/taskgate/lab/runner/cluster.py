"""A grid's episode-arms as Ray tasks on a cluster (the ``ray`` extra, ``--ray ADDRESS``).

Nothing of Ray is imported or started unless an address is given: ``local`` starts a one-machine
Ray instance for the run; any other address (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``) joins
that cluster, after a check that it answers.

One task plays one episode's unfinished episode-arms (its arms under each corruption rate),
concurrently, with its own model clients built from the driver's endpoint lists; they share the
episode's one compile in the task, as they do in a local run. At most ``--concurrency`` episode-arms
are in flight over the cluster (whole tasks: at least one). A task writes nothing: it returns the records of the
episode-arms it finished, and the compile cache entries it made, and the driver, the only writer,
appends them to the run directory. A task that dies is retried by Ray and reruns its episode-arms
from their start, which is safe because an episode-arm is deterministic given its episode and
roles and leaves no trace until the driver writes it. Resume, tables and run directory are those
of a local run.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from taskgate.errors import MissingExtraError, ModelError, UsageError
from taskgate.lab.episodes.models import Episode
from taskgate.lab.episodes.records import CallRecord
from taskgate.lab.progress import Progress
from taskgate.lab.rundir import AnyRecord
from taskgate.lab.runner.config import Cell, LadderConfig, run_key
from taskgate.lab.runner.one import run_one
from taskgate.lab.runner.roles import Clients, CompileCache, Entry, RoleBuilder
from taskgate.llm.client import ChatClient
from taskgate.llm.endpoint import Endpoint

#: Ray CPUs per task: episode-arms mostly wait on the model, so several share a core
TASK_CPUS = 0.25
#: a task that dies (its worker crashed, its node left) is run again this many times
TASK_RETRIES = 3
#: how long the check that a cluster answers waits
CONNECT_TIMEOUT = 5.0


@dataclass(frozen=True)
class Unit:
    """One task: an episode's unfinished episode-arms, as (cell, arm) pairs (its cells differ only
    in the corruption rate)."""

    episode: Episode
    jobs: tuple[tuple[Cell, str], ...]


@dataclass(frozen=True)
class UnitResult:
    records: list[AnyRecord]  # the finished episode-arms', in the order they were made
    compiled: list[Entry]  # compile cache entries the task made
    failures: list[str]  # "run id / arm: why" of the episode-arms whose model calls failed
    finished: int


Endpoints = tuple[tuple[Endpoint, ...], tuple[Endpoint, ...], tuple[Endpoint, ...]]


def check_address(address: str) -> None:
    """Before any work: the ray extra is installed, and a cluster answers at ``address``."""
    if importlib.util.find_spec("ray") is None:
        raise MissingExtraError("ray", "--ray")
    if address != "local":
        _answers(address)


def connect(address: str) -> Any:
    """The ``ray`` module, initialised for ``address``; a clear error when it cannot be."""
    try:
        import ray
    except ModuleNotFoundError as exc:
        raise MissingExtraError("ray", "--ray") from exc
    if ray.is_initialized():
        return ray
    if address == "local":
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        return ray
    _answers(address)
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise UsageError(f"--ray {address}: cannot join the Ray cluster: {exc}") from None
    return ray


def _answers(address: str) -> None:
    """Fail fast, naming the address, when nothing listens there (Ray itself would wait minutes)."""
    if address == "auto":
        return  # Ray finds the address itself, and says at once when there is none
    try:
        split = urlsplit(address if "://" in address else f"tcp://{address}")
        host, port = split.hostname, split.port
    except ValueError:  # a bad port, an unclosed bracket
        host = port = None
    if not host or not port:
        raise UsageError(
            f"--ray {address!r} is not a Ray address (local, auto, HOST:PORT or ray://HOST:PORT)"
        )
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT).close()
    except (OSError, ValueError) as exc:  # ValueError: a host name that cannot be encoded
        raise UsageError(f"--ray {address}: no Ray cluster answers there ({exc})") from None


async def run_on_ray(
    address: str,
    units: Sequence[Unit],
    config: LadderConfig,
    clients: Clients,
    cache: CompileCache,
    write: Callable[[AnyRecord], None],
    progress: Progress,
) -> None:
    """Run every unit as a Ray task; write what each returns as it arrives."""
    ray = connect(address)
    endpoints: Endpoints = (_eps(clients.agent), _eps(clients.matcher), _eps(clients.compiler))
    task = ray.remote(num_cpus=TASK_CPUS, max_retries=TASK_RETRIES)(play_unit)

    arms = max(len(u.jobs) for u in units) if units else 1
    gate = asyncio.Semaphore(max(1, config.concurrency // arms))  # tasks in flight

    async def one(unit: Unit) -> None:
        try:
            async with gate:
                known = cache.entries(unit.episode.id)
                result: UnitResult = await task.remote(config, unit, endpoints, known)
        except Exception as exc:  # Ray's own errors: the task died past its retries, or raised
            why = " ".join(str(exc).split())[:300] or type(exc).__name__
            for cell, arm in unit.jobs:  # left unfinished: a rerun into the same directory retries
                key = run_key(unit.episode, arm, cell)
                progress.fail(f"{key} / {arm}: the Ray task failed: {why}")
            return
        cache.add(result.compiled)
        for record in result.records:
            write(record)
            if isinstance(record, CallRecord):
                progress.count_call(record)
        for _ in range(result.finished):
            progress.advance()
        for failure in result.failures:
            progress.fail(failure)

    await asyncio.gather(*(one(u) for u in units))


def _eps(client: ChatClient | None) -> tuple[Endpoint, ...]:
    return client.endpoints if client is not None else ()


def play_unit(
    config: LadderConfig, unit: Unit, endpoints: Endpoints, known: list[Entry]
) -> UnitResult:
    """The task: play the unit's episode-arms on this worker; return their records."""
    return asyncio.run(_play(config, unit, endpoints, known))


async def _play(
    config: LadderConfig, unit: Unit, endpoints: Endpoints, known: list[Entry]
) -> UnitResult:
    opened: list[tuple[tuple[Endpoint, ...], ChatClient]] = []
    for eps in endpoints:  # one client per distinct list, as on the driver
        if eps and all(eps != known_eps for known_eps, _ in opened):
            opened.append((eps, ChatClient(eps)))
    clients = Clients(*(next((c for e, c in opened if e == eps), None) for eps in endpoints))
    cache = CompileCache()
    cache.add(known)
    builder = RoleBuilder(clients, cache)
    kept: dict[tuple[Cell, str], list[AnyRecord]] = {job: [] for job in unit.jobs}
    failures: list[str] = []

    async def arm_run(cell: Cell, arm: str) -> None:
        sink = kept[(cell, arm)].append
        try:
            await run_one(config, builder, cell, arm, unit.episode, sink, Progress())
        except ModelError as exc:
            failures.append(f"{run_key(unit.episode, arm, cell)} / {arm}: {exc}")
            del kept[(cell, arm)]

    try:
        await asyncio.gather(*(arm_run(cell, arm) for cell, arm in unit.jobs))
    finally:
        for _, client in opened:
            await client.close()
    records = [r for job in unit.jobs if job in kept for r in kept[job]]
    new = [e for e in cache.entries(unit.episode.id) if e not in known]
    return UnitResult(records, new, failures, finished=len(kept))
