"""``taskgate probe``: the trap-turn probe of a raw-transcript run; ``probe-report``: its table."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Literal

import typer

from taskgate.cli.common import run_with_progress
from taskgate.cli.errors import warner, writable_dir
from taskgate.cli.model import embedded
from taskgate.cli.options import EndpointOptions, ProbeOptions, command, usage
from taskgate.errors import MissingExtraError
from taskgate.lab.experiments.probe import (
    VARIANTS,
    LLMProbeAgent,
    ProbeAgent,
    ScriptedProbeAgent,
    probe_table,
    probe_traps,
    read_probe,
    run_probe,
)
from taskgate.lab.experiments.probe.runner import CONSTRAINED, ConstrainedProbeAgent
from taskgate.lab.progress import Progress
from taskgate.lab.runner.config import LadderConfig
from taskgate.lab.runner.roles import Clients

SCRIPTED = "scripted:rebook="


@command
def probe(
    run_dir: Annotated[
        Path,
        typer.Argument(
            help="A finished run directory with raw-transcript episode-arms (the testbed's).",
            metavar="RUN_DIR",
            show_default=False,
        ),
    ],
    out: Annotated[Path, typer.Option(help="Probe directory; rerunning into it resumes.")],
    endpoint: EndpointOptions,
    sampling: ProbeOptions,
    agent: Annotated[
        str,
        typer.Option(
            help="llm (the model flags' agent), or scripted:rebook=V[+V...], an oracle that books "
            "the finished step again under those variants only."
        ),
    ] = "llm",
    steps: Annotated[
        int | None, typer.Option(help="The cell to probe, when the run has several: S.")
    ] = None,
    density: Annotated[float, typer.Option(help="The cell's density (with --steps).")] = 0.15,
    fmt: Annotated[Literal["md", "latex"], typer.Option(help="Table format.")] = "md",
) -> None:
    """Re-ask every trap turn of a raw-transcript run (a fresh work order for a finished step)
    with the recorded history fixed and one thing changed; print the share of replies that book
    the finished step again, per variant (Appendix A.4, Table 3)."""
    writable_dir(out, "--out")
    smoke = embedded(endpoint) and agent == "llm" and sampling.max_traps is None
    if smoke:
        typer.echo("embedded model: the first 2 trap turns, at most 2 samples per variant")
    cell = None if steps is None else (steps, density)
    config = sampling.config(endpoint.concurrency, cell, smoke=2 if smoke else 0)
    scripted = _scripted(agent)
    if not probe_traps(run_dir, config.max_traps, config.cell):  # bad input: before any work
        typer.echo(
            f"{run_dir} has no trap turns: its raw arm never finished a step that a later request "
            "ordered again, so there is nothing to re-ask"
        )
        return
    warn = warner()
    read_probe(out, warn)

    async def work(progress: Progress, clients: Clients) -> None:
        who: ProbeAgent
        if scripted is not None:
            who = scripted
        else:
            assert clients.agent is not None
            who = LLMProbeAgent(clients.agent, progress.count_call)
        await run_probe(run_dir, out, who, config, progress, warn)

    run_with_progress("probe", work, scripted is None, endpoint, unit="re-ask")
    typer.echo(probe_table([out], warn).render(fmt))


def _scripted(agent: str) -> ScriptedProbeAgent | None:
    if agent == "llm":
        return None
    if not agent.startswith(SCRIPTED):
        raise typer.BadParameter(f"{agent!r}: give llm or {SCRIPTED}V[+V...]", param_hint="--agent")
    chosen = [v for v in agent.removeprefix(SCRIPTED).split("+") if v]
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        raise typer.BadParameter(
            f"unknown variant(s) {', '.join(unknown)}; choose from: {', '.join(VARIANTS)}",
            param_hint="--agent",
        )
    return ScriptedProbeAgent(chosen)


@command
def probe_tools(
    out: Annotated[Path, typer.Option(help="Probe directory; rerunning into it resumes.")],
    endpoint: EndpointOptions,
    sampling: ProbeOptions,
    agent: Annotated[
        str,
        typer.Option(
            help="llm (the model replays the raw arm and answers the re-asks), or "
            "scripted:rebook=V[+V...] (always-book replays; the oracle answers)."
        ),
    ] = "llm",
    steps: Annotated[int | None, typer.Option(min=5, max=18, help="Step count S.")] = None,
    episodes: Annotated[int | None, typer.Option(min=1, max=10_000)] = None,
    seed: Annotated[int, typer.Option(help="First episode seed.")] = 300,
    fmt: Annotated[Literal["md", "latex"], typer.Option(help="Table format.")] = "md",
) -> None:
    """The probe's tool-harness half: replay the raw arm live in the real-tool harness (ACTION
    lines) and branch at each trap turn, so that booking again is a tool call that executes in a
    copy of the workspace; print Table 3's tools column."""
    try:
        from taskgate.lab.experiments.probe.tools import run_tool_probe
    except ModuleNotFoundError as exc:
        raise MissingExtraError("langgraph", "the tool probe") from exc
    writable_dir(out, "--out")
    scripted = _scripted(agent)
    replay_agent = "scripted:always-book" if scripted is not None else "llm"
    local = scripted is None and embedded(endpoint)
    if local:  # SmolLM2 writes no ACTION line unless its grammar makes it (agents/tools.py)
        replay_agent = CONSTRAINED
        steps, episodes = steps or 5, episodes or 1
        if endpoint.max_tokens is None:
            endpoint = dataclasses.replace(endpoint, max_tokens=64, concurrency=1)
        typer.echo(f"embedded model: {episodes} episode at S={steps}, {replay_agent}, 1 sample")
    config = sampling.config(endpoint.concurrency, smoke=1 if local else 0)
    helper = "scripted" if scripted is not None else "llm"
    replay = usage(
        "--episodes",
        lambda: LadderConfig(
            arms=("raw",),
            agent=replay_agent,
            compiler=helper,
            matcher=helper,
            steps=(steps or 10,),
            episodes=episodes or 50,
            first_seed=seed,
            concurrency=endpoint.concurrency,
        ),
    )

    async def work(progress: Progress, clients: Clients) -> None:
        who: ProbeAgent
        if scripted is not None:
            who = scripted
        else:
            assert clients.agent is not None
            maker = ConstrainedProbeAgent if local else LLMProbeAgent
            who = maker(clients.agent, progress.count_call)
        await run_tool_probe(out, who, config, replay, clients, progress, warn)

    warn = warner()
    run_with_progress("tool probe", work, scripted is None, endpoint)
    typer.echo(probe_table([out], warn).render(fmt))
