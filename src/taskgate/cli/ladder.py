"""``taskgate ladder``: generate, run, score and report a grid of cells in one command."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Annotated, Literal

import typer

from taskgate._lazy import require
from taskgate.cli.common import report_run, run_with_progress
from taskgate.cli.errors import warner, writable_dir, writable_file
from taskgate.cli.model import card_roles, embedded
from taskgate.cli.options import (
    CellOptions,
    EndpointOptions,
    ReportOptions,
    ScaleOptions,
    ScheduleOpt,
    command,
    load_rewrites,
    split_list,
    usage,
)
from taskgate.lab.arms.registry import memory_kind
from taskgate.lab.progress import Progress
from taskgate.lab.runcard import RunCard, settle, sha256_of, started
from taskgate.lab.runner.config import MAX_EPISODES, LadderConfig
from taskgate.lab.runner.ladder import run_ladder
from taskgate.lab.runner.roles import ROLES, Clients

#: a small ladder for the embedded model, which is tiny and slow on a laptop
EMBEDDED_STEPS, EMBEDDED_EPISODES, EMBEDDED_MAX_TOKENS = "5", 1, 64


@command
def ladder(
    cell: CellOptions,
    endpoint: EndpointOptions,
    output: ReportOptions,
    scale: ScaleOptions,
    steps: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated step counts S (5-18).",
            show_default=f"10; {EMBEDDED_STEPS} on the embedded model",
        ),
    ] = None,
    density: Annotated[str, typer.Option(help="Comma-separated extra-edge densities.")] = "0.15",
    episodes: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_EPISODES,
            help="Episodes per cell.",
            show_default=f"16; {EMBEDDED_EPISODES} on the embedded model",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="First seed; episodes use seed, seed+1, ...")] = 100,
    domain: Annotated[Literal["procurement", "release"], typer.Option()] = "procurement",
    brief: Annotated[Literal["amended", "original"], typer.Option()] = "amended",
    para_tier: Annotated[int, typer.Option(min=0, max=2)] = 0,
    rewrites: Annotated[Path | None, typer.Option(help="Rewrite cache (tier 2).")] = None,
    ambiguous_rate: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.0,
    schedule: ScheduleOpt = "paper",
    out: Annotated[
        Path | None,
        typer.Option(
            help="Run directory; rerunning into it with the same settings resumes (default: a "
            "new temporary directory).",
            show_default=False,
        ),
    ] = None,
    extend: Annotated[
        bool,
        typer.Option(
            help="Rerunning into --out: add arms, step counts, densities or episodes to its grid."
        ),
    ] = False,
) -> None:
    """Run the state-coupling ladder and print its tables.

    With no model flags the agent, compiler and matcher are the embedded SmolLM2 model (a small
    ladder: 1 episode at S=5, replies capped at 64 tokens, unless you say otherwise).
    """
    arm_list = cell.arm_list()
    agent, compiler, matcher = cell.roles()
    shard, ray = scale.checked()
    writable_file(output.json, "--json")
    writable_dir(out, "--out")
    # Mem0's extraction runs on the agent's model, so its arms need one even for a scripted agent
    mem0 = any(memory_kind(a) == "mem0" for a in arm_list)
    if mem0:  # before any model server starts
        require("memory", "the Mem0 memory arms", ("mem0",))
    uses_model = mem0 or ROLES.any_needs_model(agent, compiler, matcher)
    if uses_model and embedded(endpoint):
        steps = EMBEDDED_STEPS if steps is None else steps
        episodes = episodes or EMBEDDED_EPISODES
        if endpoint.max_tokens is None:  # and one request at a time: llama.cpp serves one slot
            endpoint = dataclasses.replace(endpoint, max_tokens=EMBEDDED_MAX_TOKENS, concurrency=1)
        typer.echo(
            f"embedded model (SmolLM2-135M-Instruct via llama.cpp on loopback): {episodes} episode(s) "
            f"per cell at S={steps}, agent replies capped at {endpoint.max_tokens} tokens"
        )
    if uses_model and agent == "llm:constrained":
        typer.echo(constrained_note(compiler, matcher))
    step_list = split_list("10" if steps is None else steps, int, "--steps")
    for s in step_list:
        if not 5 <= s <= 18:
            raise typer.BadParameter(f"{s} is outside 5-18", param_hint="--steps")
    densities = split_list(density, float, "--density")
    for d in densities:
        if not 0.0 <= d <= 1.0:
            raise typer.BadParameter(f"{d} is not a density in [0, 1]", param_hint="--density")
    if para_tier == 2 and rewrites is None:
        raise typer.BadParameter("--para-tier 2 needs --rewrites FILE", param_hint="--rewrites")
    config = usage(
        "--episodes",
        lambda: LadderConfig(
            arms=arm_list,
            agent=agent,
            steps=step_list,
            densities=densities,
            episodes=episodes or 16,
            first_seed=seed,
            compiler=compiler,
            matcher=matcher,
            domain=domain,
            brief=brief,
            para_tier=para_tier,  # type: ignore[arg-type]
            ambiguous_rate=ambiguous_rate,
            schedule=schedule,
            rewrites=load_rewrites(rewrites),
            **cell.conditions(),
            concurrency=endpoint.concurrency,
        ),
    )
    run_dir = out or Path(tempfile.mkdtemp(prefix="taskgate-ladder-"))
    models, urls = card_roles(endpoint, agent, compiler, matcher, memory=mem0)
    card = RunCard(
        command="ladder", agent=agent, compiler=compiler, matcher=matcher, models=models,
        endpoints=urls, arms=arm_list, steps=step_list, densities=densities,
        episodes=config.episodes, first_seed=seed, domain=domain, brief=brief, schedule=schedule,
        para_tier=para_tier, ambiguous_rate=ambiguous_rate,
        rewrites=sha256_of(rewrites) if rewrites is not None else "",
        corruption=list(config.corruption),
        repair=config.repair, bypass=config.bypass, embedder=config.embedder, think=cell.think,
        enable_thinking=endpoint.thinking, deepseek_thinking=endpoint.deepseek_thinking,
        max_tokens=endpoint.max_tokens,
    )  # fmt: skip
    card = settle(run_dir, card, extend, started=started(run_dir))

    warn = warner()

    async def work(progress: Progress, clients: Clients) -> None:
        await run_ladder(
            config, run_dir, progress, clients, None, warn, shard=shard, ray=ray, card=card
        )

    run_with_progress(f"ladder ({agent})", work, uses_model, endpoint, cell.think)
    report_run(run_dir, arm_list, output, warn, usage=uses_model)


def constrained_note(compiler: str, matcher: str) -> str:
    """What the constrained agent's run constrains, and why (printed before it starts)."""
    helpers = {
        "parser": "the brief parser compiles",
        "embedding": "the embedding matcher matches",
        "lexical": "the lexical matcher matches",
        "scripted": "the generator's own plan",
    }
    without = [helpers[r] for r in (compiler, matcher) if r in helpers]
    rest = f"; {' and '.join(without)}, with no model call" if without else ""
    return (
        "constrained: each agent reply is one booking line (a completion code the brief lists, "
        "under the request's work order) or a decline, by the server's JSON-schema grammar: a "
        "small model writes no booking line on its own, and every rung needs one to judge; which "
        f"code, or a decline, is the model's choice{rest}"
    )
