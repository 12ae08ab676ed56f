"""``taskgate run``: run episodes from a file under some arms into a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..runner.ladder import LadderConfig, Progress, run_episodes
from ..runner.logio import read_episodes
from .common import (
    DEFAULT_ARMS,
    AgentOpt,
    ArmsOpt,
    BypassOpt,
    CompilerOpt,
    ConcurrencyOpt,
    CorruptionOpt,
    MatcherOpt,
    RepairOpt,
    check_roles,
    parse_arms,
    parse_rates,
    with_progress,
)


def run(
    episodes: Annotated[Path, typer.Option(help="Episodes file from `taskgate generate`.")],
    out: Annotated[Path, typer.Option(help="Run directory; rerunning into it resumes.")],
    agent: AgentOpt = "scripted:perfect",
    arms: ArmsOpt = DEFAULT_ARMS,
    compiler: CompilerOpt = "scripted",
    matcher: MatcherOpt = "scripted",
    corruption: CorruptionOpt = "0",
    repair: RepairOpt = False,
    bypass: BypassOpt = True,
    concurrency: ConcurrencyOpt = 8,
) -> None:
    """Run episodes and log every turn to OUT/log.jsonl."""
    arm_list = parse_arms(arms)
    check_roles(agent, compiler, matcher)
    eps = read_episodes(episodes)
    config = LadderConfig(
        arms=arm_list,
        agent=agent,
        compiler=compiler,
        matcher=matcher,
        corruption=parse_rates(corruption),
        repair=repair,
        bypass=bypass,
        concurrency=concurrency,
    )

    async def work(progress: Progress) -> None:
        await run_episodes(eps, config, out, progress)

    with_progress(f"run ({agent})", work)
    typer.echo(f"logged {len(eps) * len(arm_list) * len(config.corruption)} episode-arms to {out}")
