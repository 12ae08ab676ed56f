"""``taskgate tools``: the real-tool harness (Appendix G), run, scored and reported (Table 19)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Annotated, Literal

import typer

from taskgate.cli.common import report_run, run_with_progress
from taskgate.cli.errors import warner, writable_dir, writable_file
from taskgate.cli.model import embedded
from taskgate.cli.options import (
    CellOptions,
    EndpointOptions,
    ReportOptions,
    ScaleOptions,
    ScheduleOpt,
    command,
    usage,
)
from taskgate.errors import MissingExtraError
from taskgate.lab.arms.registry import TOOL_LADDER
from taskgate.lab.progress import Progress
from taskgate.lab.runner.config import MAX_EPISODES, LadderConfig
from taskgate.lab.runner.ladder import run_ladder
from taskgate.lab.runner.roles import ROLES, Clients
from taskgate.llm.client import OnCall

#: the embedded model's smoke run: small, with the agent's reply to each request constrained by
#: llama.cpp's JSON-schema grammar to a valid call of a tool the brief lists (the tiny model never
#: writes an ACTION line on its own)
EMBEDDED_STEPS, EMBEDDED_EPISODES, EMBEDDED_MAX_TOKENS = 5, 1, 64
CONSTRAINED = "llm:constrained"


@command
def tools(
    cell: CellOptions,
    endpoint: EndpointOptions,
    output: ReportOptions,
    scale: ScaleOptions,
    mode: Annotated[
        Literal["actions", "native"],
        typer.Option(
            help="How the agent calls tools: ACTION lines (the paper) or native function calls.",
        ),
    ] = "actions",
    steps: Annotated[int | None, typer.Option(min=5, max=18, help="Steps S per episode.")] = None,
    density: Annotated[float, typer.Option(min=0.0, max=1.0, help="Extra-edge density.")] = 0.15,
    episodes: Annotated[
        int | None, typer.Option(min=1, max=MAX_EPISODES, help="Episodes (the paper: 50).")
    ] = None,
    seed: Annotated[int, typer.Option(help="First seed (the paper: 300-349).")] = 300,
    schedule: ScheduleOpt = "paper",
    out: Annotated[
        Path | None, typer.Option(help="Run directory; rerunning into it resumes.")
    ] = None,
) -> None:
    """Run the real-tool harness: 18 procurement tools with side effects in a per-episode
    workspace, a LangGraph agent loop, five arms; print Table 19.

    With no model flags the agent, compiler and matcher are the embedded SmolLM2 model (a smoke
    run: 1 episode at S=5, replies capped at 64 tokens, and the llm agent constrained by llama.cpp's
    grammar to answer each request with one tool call: llm:constrained).
    """
    try:
        from taskgate.lab.harness.exchange import NativeModel
        from taskgate.lab.harness.native import chat_model
        from taskgate.lab.harness.runner import ToolHarness
    except ModuleNotFoundError as exc:
        raise MissingExtraError("langgraph", "the real-tool harness") from exc
    arm_list = cell.arm_list(TOOL_LADDER, TOOL_LADDER)
    agent, compiler, matcher = cell.roles()
    if scale.ray is not None:
        raise typer.BadParameter(
            "the harness writes each episode-arm's workspace, so it runs locally; use --shard",
            param_hint="--ray",
        )
    shard, _ = scale.checked()
    writable_file(output.json, "--json")
    writable_dir(out, "--out")
    uses_model = ROLES.any_needs_model(agent, compiler, matcher)
    local = uses_model and embedded(endpoint)
    if local and mode == "native":
        raise typer.BadParameter(
            "the embedded model runs in the actions mode (llama.cpp's grammar constrains its calls)",
            param_hint="--mode",
        )
    if mode == "native" and (len(endpoint.base_url or ()) > 1 or endpoint.endpoints):
        raise typer.BadParameter(
            "the native mode's agent calls one endpoint (langchain-openai's ChatOpenAI)",
            param_hint="--mode",
        )
    if mode == "native" and agent != "llm" and ROLES.needs_model("agent", agent):
        raise typer.BadParameter(f"the {agent} agent writes ACTION lines", param_hint="--mode")
    if local:
        steps, episodes = steps or EMBEDDED_STEPS, episodes or EMBEDDED_EPISODES
        agent = CONSTRAINED if agent == "llm" else agent
        if endpoint.max_tokens is None:  # and one request at a time: llama.cpp serves one slot
            endpoint = dataclasses.replace(endpoint, max_tokens=EMBEDDED_MAX_TOKENS, concurrency=1)
        typer.echo(
            f"embedded model (SmolLM2-135M-Instruct via llama.cpp on loopback): {episodes} "
            f"episode(s) at S={steps}, agent {agent}, replies capped at {endpoint.max_tokens} tokens"
        )
    config = usage(
        "--episodes",
        lambda: LadderConfig(
            arms=arm_list,
            agent=agent,
            steps=(steps or 10,),
            densities=(density,),
            episodes=episodes or 50,
            first_seed=seed,
            schedule=schedule,
            compiler=compiler,
            matcher=matcher,
            **cell.conditions(),
            concurrency=endpoint.concurrency,
        ),
    )
    run_dir = out or Path(tempfile.mkdtemp(prefix="taskgate-tools-"))
    warn = warner()

    async def work(progress: Progress, clients: Clients) -> None:
        def native(on_call: OnCall) -> NativeModel:
            assert clients.agent is not None
            return chat_model(clients.agent.endpoint, on_call)

        harness = ToolHarness(run_dir, mode, native)
        await run_ladder(config, run_dir, progress, clients, None, warn, harness, shard=shard)

    run_with_progress(f"tools ({agent}, {mode})", work, uses_model, endpoint, cell.think)
    report_run(run_dir, arm_list, output, warn, harness=mode, usage=uses_model)
