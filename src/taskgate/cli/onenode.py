"""``taskgate one-node``: the one-node case (Appendix J) into a run directory, and its table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from taskgate.cli.common import run_with_progress
from taskgate.cli.errors import writable_dir
from taskgate.cli.model import embedded
from taskgate.cli.options import EndpointOptions, check_names, command, split_list, usage
from taskgate.lab.experiments.onenode import (
    ARMS,
    EmbeddingTriggerMatcher,
    LLMNodeAgent,
    LLMTriggerCompiler,
    LLMTriggerMatcher,
    NaiveNodeAgent,
    NodeConfig,
    NodeEpisode,
    NodeRoles,
    PerfectNodeAgent,
    ScriptedTriggerCompiler,
    ScriptedTriggerMatcher,
    node_table,
    run_one_node,
)
from taskgate.lab.experiments.onenode.roles import TriggerMatcher
from taskgate.lab.progress import Progress
from taskgate.lab.runner.roles import Clients
from taskgate.llm.client import ChatClient
from taskgate.matching.embedders import HashEmbedder, minilm
from taskgate.registry import Registry

AGENTS = Registry("one-node agent", ((n, n) for n in ("llm", "scripted:perfect", "scripted:naive")))
COMPILERS = Registry("trigger compiler", ((n, n) for n in ("scripted", "llm")))
MATCHERS = Registry(
    "trigger matcher", ((n, n) for n in ("scripted", "llm", "embedding", "embedding:hash"))
)


@command
def one_node(
    endpoint: EndpointOptions,
    out: Annotated[Path, typer.Option(help="Run directory; rerunning into it resumes.")],
    arms: Annotated[str, typer.Option(help=f"Comma-separated arms: {ARMS.choices()}.")] = ",".join(
        ARMS
    ),
    agent: Annotated[str, typer.Option(help=f"The agent: {', '.join(AGENTS)}.")] = "llm",
    compiler: Annotated[
        str, typer.Option(help=f"The trigger compiler: {', '.join(COMPILERS)}.")
    ] = "llm",
    matcher: Annotated[str, typer.Option(help=f"The trigger matcher: {', '.join(MATCHERS)}.")] = (
        "llm"
    ),
    episodes: Annotated[int, typer.Option(min=1, max=10_000)] = 25,
    seed: Annotated[int, typer.Option(help="First seed.")] = 100,
    commitments: Annotated[
        int, typer.Option(min=1, max=9, help="Concurrent one-shot commitments per episode.")
    ] = 4,
    after: Annotated[int, typer.Option(min=1, help="Requests of each kind after its trigger.")] = 2,
    fmt: Annotated[Literal["md", "latex"], typer.Option(help="Table format.")] = "md",
) -> None:
    """Standing one-shot commitments, compiled into guarded triggers that fire on a later,
    differently phrased request, with and without sanitizing the consumed one-shot from the
    transcript, against a prompt manifest: re-execution of consumed one-shots and trigger recall."""
    writable_dir(out, "--out")
    arm_list = check_names(split_list(arms, str, "--arms"), ARMS, "--arms")
    check_names([agent], AGENTS, "--agent")
    check_names([compiler], COMPILERS, "--compiler")
    check_names([matcher], MATCHERS, "--matcher")
    uses_model = "llm" in (agent, compiler, matcher)
    if uses_model and embedded(endpoint) and episodes == 25:
        episodes = 1
        typer.echo("embedded model (SmolLM2 via llama.cpp): 1 episode")
    config = usage(
        "--arms",
        lambda: NodeConfig(
            arms=tuple(arm_list),
            episodes=episodes,
            first_seed=seed,
            k=commitments,
            after=after,
            concurrency=endpoint.concurrency,
        ),
    )

    async def work(progress: Progress, clients: Clients) -> None:
        def roles(ep: NodeEpisode) -> NodeRoles:
            return _roles(ep, agent, compiler, matcher, clients, progress)

        def named(role: str, kind: Literal["agent", "matcher", "compiler"]) -> str:
            return f"llm:{_client(clients, kind).model}" if role == "llm" else role

        names = (named(agent, "agent"), named(compiler, "compiler"), named(matcher, "matcher"))
        await run_one_node(config, out, roles, names, progress)

    run_with_progress("one-node", work, uses_model, endpoint)
    table = node_table(out)
    typer.echo(f"\n{table.title}\n")
    typer.echo(table.render(fmt))


def _roles(
    ep: NodeEpisode, agent: str, compiler: str, matcher: str, clients: Clients, progress: Progress
) -> NodeRoles:
    count = progress.count_call
    the_agent = (
        PerfectNodeAgent(ep)
        if agent == "scripted:perfect"
        else NaiveNodeAgent()
        if agent == "scripted:naive"
        else LLMNodeAgent(_client(clients, "agent"), count)
    )
    the_compiler = (
        ScriptedTriggerCompiler(ep)
        if compiler == "scripted"
        else LLMTriggerCompiler(_client(clients, "compiler"), count)
    )
    the_matcher: TriggerMatcher
    if matcher == "scripted":
        the_matcher = ScriptedTriggerMatcher()
    elif matcher == "llm":
        the_matcher = LLMTriggerMatcher(_client(clients, "matcher"), count)
    else:
        embedder = HashEmbedder() if matcher == "embedding:hash" else minilm()
        the_matcher = EmbeddingTriggerMatcher(embedder)
    return NodeRoles(the_agent, the_compiler, the_matcher)


def _client(clients: Clients, kind: Literal["agent", "matcher", "compiler"]) -> ChatClient:
    client = clients.get(kind)
    assert client is not None  # the command starts a model when any role needs one
    return client
