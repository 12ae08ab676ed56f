"""``taskgate run``: run episodes from a file under some arms into a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from taskgate.cli.common import run_with_progress
from taskgate.cli.errors import warner, writable_dir
from taskgate.cli.model import card_roles
from taskgate.cli.options import CellOptions, EndpointOptions, ScaleOptions, command, usage
from taskgate.lab.arms.registry import memory_kind
from taskgate.lab.progress import Progress
from taskgate.lab.runcard import RunCard, settle, sha256_of, started
from taskgate.lab.rundir import read_episodes
from taskgate.lab.runner.config import LadderConfig
from taskgate.lab.runner.ladder import run_episodes
from taskgate.lab.runner.roles import Clients


@command
def run(
    episodes: Annotated[Path, typer.Option(help="Episodes file from `taskgate generate`.")],
    out: Annotated[
        Path, typer.Option(help="Run directory; rerunning into it with the same settings resumes.")
    ],
    cell: CellOptions,
    endpoint: EndpointOptions,
    scale: ScaleOptions,
    extend: Annotated[
        bool, typer.Option(help="Rerunning into --out: add arms to the ones it was run with.")
    ] = False,
) -> None:
    """Run episodes and log every turn (and model call) to OUT/log.jsonl."""
    arm_list = cell.arm_list()
    agent, compiler, matcher = cell.roles()
    shard, ray = scale.checked()
    writable_dir(out, "--out")
    eps = usage("--episodes", lambda: read_episodes(episodes))
    config = usage(
        "--concurrency",
        lambda: LadderConfig(
            arms=arm_list,
            agent=agent,
            compiler=compiler,
            matcher=matcher,
            **cell.conditions(),
            concurrency=endpoint.concurrency,
        ),
    )

    mem0 = any(memory_kind(a) == "mem0" for a in arm_list)
    models, urls = card_roles(endpoint, agent, compiler, matcher, memory=mem0)
    card = RunCard(
        command="run", agent=agent, compiler=compiler, matcher=matcher, models=models,
        endpoints=urls, arms=arm_list, episodes_file=sha256_of(episodes),
        corruption=list(config.corruption), repair=config.repair, bypass=config.bypass,
        embedder=config.embedder, think=cell.think, enable_thinking=endpoint.thinking,
        deepseek_thinking=endpoint.deepseek_thinking, max_tokens=endpoint.max_tokens,
    )  # fmt: skip
    card = settle(out, card, extend, started=started(out))
    warn = warner()

    async def work(progress: Progress, clients: Clients) -> None:
        await run_episodes(
            eps, config, out, progress, clients, None, warn, shard=shard, ray=ray, card=card
        )

    run_with_progress(f"run ({agent})", work, config.needs_model, endpoint, cell.think)
    ran = len(shard.take(eps)) if shard else len(eps)
    typer.echo(f"logged {ran * len(arm_list) * len(config.corruption)} episode-arms to {out}")
