"""``taskgate run``: run episodes from a file under some arms into a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..rundir import read_episodes
from ..runner.ladder import LadderConfig, Progress, run_episodes
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
    parse_arms,
    parse_rates,
    resolve_roles,
    with_progress,
)
from .model import (
    BaseUrlOpt,
    MaxTokensOpt,
    ModelOpt,
    ModelOptions,
    ThinkKwargOpt,
    ThinkOpt,
    TimeoutOpt,
    clients,
    endpoint_for,
)


def run(
    episodes: Annotated[Path, typer.Option(help="Episodes file from `taskgate generate`.")],
    out: Annotated[Path, typer.Option(help="Run directory; rerunning into it resumes.")],
    agent: AgentOpt = "llm",
    arms: ArmsOpt = DEFAULT_ARMS,
    compiler: CompilerOpt = "auto",
    matcher: MatcherOpt = "auto",
    corruption: CorruptionOpt = "0",
    repair: RepairOpt = False,
    bypass: BypassOpt = True,
    concurrency: ConcurrencyOpt = 8,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    think: ThinkOpt = False,
    think_kwarg: ThinkKwargOpt = False,
    timeout: TimeoutOpt = 900.0,
    max_tokens: MaxTokensOpt = None,
) -> None:
    """Run episodes and log every turn (and model call) to OUT/log.jsonl."""
    arm_list = parse_arms(arms)
    agent, compiler, matcher = resolve_roles(agent, compiler, matcher)
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

    if not config.needs_model:

        async def work(progress: Progress) -> None:
            await run_episodes(eps, config, out, progress)

        with_progress(f"run ({agent})", work)
    else:
        opts = ModelOptions(base_url, model, think, think_kwarg, timeout, max_tokens, concurrency)
        with endpoint_for(opts) as endpoints:

            async def work(progress: Progress) -> None:
                async with clients(endpoints) as (client, helper):
                    await run_episodes(eps, config, out, progress, client, helper)

            with_progress(f"run ({agent} on {endpoints[0].model})", work)
    typer.echo(f"logged {len(eps) * len(arm_list) * len(config.corruption)} episode-arms to {out}")
