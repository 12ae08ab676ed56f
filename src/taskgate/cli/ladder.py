"""``taskgate ladder``: generate, run, score and report a grid of cells in one command."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Literal

import typer

from ..runner.ladder import LadderConfig, Progress, run_ladder
from .common import (
    DEFAULT_ARMS,
    AgentOpt,
    ArmsOpt,
    BypassOpt,
    CompilerOpt,
    ConcurrencyOpt,
    CorruptionOpt,
    FormatOpt,
    JsonOpt,
    MatcherOpt,
    RepairOpt,
    check_roles,
    parse_arms,
    parse_rates,
    print_results,
    with_progress,
)
from .options import load_rewrites, split_list


def ladder(
    agent: AgentOpt = "scripted:perfect",
    arms: ArmsOpt = DEFAULT_ARMS,
    steps: Annotated[str, typer.Option(help="Comma-separated step counts S (5-18).")] = "10",
    density: Annotated[str, typer.Option(help="Comma-separated extra-edge densities.")] = "0.15",
    episodes: Annotated[int, typer.Option(min=1, help="Episodes per cell.")] = 16,
    seed: Annotated[int, typer.Option(help="First seed; episodes use seed, seed+1, ...")] = 100,
    compiler: CompilerOpt = "scripted",
    matcher: MatcherOpt = "scripted",
    domain: Annotated[Literal["procurement", "release"], typer.Option()] = "procurement",
    brief: Annotated[Literal["amended", "original"], typer.Option()] = "amended",
    para_tier: Annotated[int, typer.Option(min=0, max=2)] = 0,
    rewrites: Annotated[Path | None, typer.Option(help="Rewrite cache (tier 2).")] = None,
    ambiguous_rate: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.0,
    corruption: CorruptionOpt = "0",
    repair: RepairOpt = False,
    bypass: BypassOpt = True,
    concurrency: ConcurrencyOpt = 8,
    out: Annotated[
        Path | None, typer.Option(help="Run directory; rerunning into it resumes.")
    ] = None,
    fmt: FormatOpt = "md",
    json: JsonOpt = None,
) -> None:
    """Run the state-coupling ladder and print its tables."""
    arm_list = parse_arms(arms)
    check_roles(agent, compiler, matcher)
    step_list = split_list(steps, int, "--steps")
    for s in step_list:
        if not 5 <= s <= 18:
            raise typer.BadParameter(f"{s} is outside 5-18", param_hint="--steps")
    densities = split_list(density, float, "--density")
    for d in densities:
        if not 0.0 <= d <= 1.0:
            raise typer.BadParameter(f"{d} is not a density in [0, 1]", param_hint="--density")
    config = LadderConfig(
        arms=arm_list,
        agent=agent,
        steps=step_list,
        densities=densities,
        episodes=episodes,
        first_seed=seed,
        compiler=compiler,
        matcher=matcher,
        domain=domain,
        brief=brief,
        para_tier=para_tier,  # type: ignore[arg-type]
        ambiguous_rate=ambiguous_rate,
        rewrites=load_rewrites(rewrites),
        corruption=parse_rates(corruption),
        repair=repair,
        bypass=bypass,
        concurrency=concurrency,
    )
    if para_tier == 2 and config.rewrites is None:
        raise typer.BadParameter("--para-tier 2 needs --rewrites FILE", param_hint="--rewrites")
    run_dir = out or Path(tempfile.mkdtemp(prefix="taskgate-ladder-"))

    async def work(progress: Progress) -> None:
        await run_ladder(config, run_dir, progress)

    with_progress(f"ladder ({agent})", work)
    typer.echo(f"run directory: {run_dir}")
    print_results(run_dir, arm_list, fmt, json)
