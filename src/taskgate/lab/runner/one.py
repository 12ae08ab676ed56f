"""One episode-arm: its players built from the run's roles, its episode played under its arm."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from taskgate.lab.agents.base import Oracle
from taskgate.lab.arms.registry import get_arm, memory_kind
from taskgate.lab.episodes.models import Episode
from taskgate.lab.memory.base import Memory
from taskgate.lab.memory.factory import build_memory
from taskgate.lab.progress import Progress
from taskgate.lab.rundir import (
    MEMORY,
    AnyRecord,
)
from taskgate.lab.runner.config import Cell, LadderConfig, Variant, run_key
from taskgate.lab.runner.episode import Players, run_episode
from taskgate.lab.runner.roles import ROLES, CallLog, RoleBuilder


async def run_one(
    config: LadderConfig,
    builder: RoleBuilder,
    cell: Cell,
    arm: str,
    ep: Episode,
    sink: Callable[[AnyRecord], None],
    progress: Progress,
    variant: Variant | None = None,
    out: Path | None = None,
) -> None:
    run_id = run_key(ep, arm, cell, variant)
    calls = CallLog(sink, progress.count_call)
    calls.bind(run_id, arm)
    if variant is not None:
        ep = variant.episode(ep)
    oracle = Oracle(ep)
    ctx = builder.context(oracle, calls)
    players = Players(
        agent=ROLES.agent(config.agent, ctx),
        compiler=builder.compiler(config.compiler, ctx),
        matcher=ROLES.matcher(config.matcher, ctx),
        agent_name=config.agent,
        compiler_name=config.compiler,
        matcher_name=config.matcher,
        oracle=oracle,
        memory=_memory(config, builder, arm, run_id, calls, out),
        regime=_regime(config, builder),
    )
    the_arm = get_arm(arm)
    try:
        await run_episode(
            ep,
            the_arm,
            players,
            sink,
            corruption=cell.corruption,
            repair=config.repair,
            bypass=config.bypass,
            run_id=run_id,
            on_start=calls.start,
            exchange=variant.exchange(the_arm, run_id, config.agent, calls) if variant else None,
            harness=variant.stamp if variant else None,
        )
    finally:
        if players.memory is not None:
            await players.memory.close()


def _memory(
    config: LadderConfig,
    builder: RoleBuilder,
    arm: str,
    run_id: str,
    calls: CallLog,
    out: Path | None,
) -> Memory | None:
    """A fresh store for a memory arm's episode-arm, else None. Mem0's lives under ``out/memory``
    (a Ray worker's, which has no run directory, under the temporary directory)."""
    kind = memory_kind(arm)
    if kind is None:
        return None
    return build_memory(
        kind,
        embedder=config.embedder,
        client=builder.clients.agent,
        on_call=calls,
        store=(out or Path(tempfile.gettempdir()) / "taskgate") / MEMORY,
        collection=f"{run_id}--{arm}",
    )


def _regime(config: LadderConfig, builder: RoleBuilder) -> str | None:
    """The reasoning regime recorded on each episode-arm: the agent model's. A scripted agent has
    none unless the run asked for thinking; then the helper model's regime (``think`` where no
    role calls a model), so that a grid's two regimes stay two configurations."""
    client = builder.clients.agent
    if client is not None and ROLES.needs_model("agent", config.agent):
        return client.endpoint.regime
    if not config.think:
        return None
    helper = builder.clients.matcher or builder.clients.compiler
    return helper.endpoint.regime if helper is not None else "think"
