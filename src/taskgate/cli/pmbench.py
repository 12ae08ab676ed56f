"""``taskgate pmbench``: the ladder's rungs on PM-Bench's week (Appendix I), and its table."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from taskgate.cli.common import run_with_progress, warn_line
from taskgate.cli.errors import writable_dir
from taskgate.cli.model import embedded
from taskgate.cli.options import EndpointOptions, check_names, command, split_list, usage
from taskgate.lab.experiments.pmbench import (
    AGENTS,
    PMBENCH_RUNGS,
    Limits,
    LLMDueJudge,
    LLMIntentionCompiler,
    LLMPMAgent,
    PMConfig,
    PMRoles,
    RunSpec,
    ScriptedDueJudge,
    ScriptedIntentionCompiler,
    ledger_runner,
    load_checkout,
    pmbench_table,
    run_pmbench,
    scripted_agent,
)
from taskgate.lab.experiments.pmbench.roles import DueJudge, IntentionCompiler
from taskgate.lab.progress import Progress
from taskgate.lab.runner.roles import Clients
from taskgate.llm.client import ChatClient
from taskgate.registry import Registry

ROLES = Registry("role", (("llm", "the model"), ("scripted", "the truth")))


@command
def pmbench(
    endpoint: EndpointOptions,
    out: Annotated[Path, typer.Option(help="Run directory; rerunning into it resumes.")],
    checkout: Annotated[
        Path | None,
        typer.Option(
            "--pmbench",
            help="Your PM-Bench checkout (default: $PMBENCH_PATH). Nothing of it is copied.",
            show_default=False,
            metavar="PATH",
        ),
    ] = None,
    scenario: Annotated[
        Path | None,
        typer.Option(help="A week file (default: the checkout's data/synthetic_week_v9.json)."),
    ] = None,
    arms: Annotated[
        str,
        typer.Option(
            "--arms",
            help=f"Comma-separated rungs: {PMBENCH_RUNGS.choices()}.",
        ),
    ] = (",".join(PMBENCH_RUNGS)),
    agent: Annotated[str, typer.Option(help=f"The agent: {', '.join(AGENTS)}.")] = "llm",
    compiler: Annotated[
        str, typer.Option(help="The intention record's compiler: llm or scripted (the truth).")
    ] = "llm",
    matcher: Annotated[str, typer.Option(help="The matcher: llm or scripted (the truth).")] = (
        "llm"
    ),
    samples: Annotated[
        int, typer.Option(min=0, max=100, help="Runs per rung at --temperature.")
    ] = 0,
    temperature: Annotated[float, typer.Option(help="The sampled runs' temperature.")] = 0.7,
    greedy: Annotated[
        bool, typer.Option("--greedy/--no-greedy", help="One run per rung at temperature 0.")
    ] = True,
    seed: Annotated[int, typer.Option(help="The first sampled run's seed.")] = 0,
    days: Annotated[
        int | None,
        typer.Option(min=1, help="Run and score only the week's first N days (a smoke run)."),
    ] = None,
    max_queries: Annotated[
        int, typer.Option(min=1, help="State queries allowed in one step before it fails.")
    ] = 40,
    max_invalid: Annotated[
        int, typer.Option(min=0, help="Invalid replies re-asked in one step before it fails.")
    ] = 2,
    schema: Annotated[
        Literal["json_schema", "json_object", "none"] | None,
        typer.Option(
            help="How the agent's calls send the benchmark's action schema as response_format: "
            "json_schema (vLLM, SGLang, OpenAI), json_object (llama.cpp's server), none "
            "(default: json_object on the embedded model, else json_schema).",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[Literal["md", "latex"], typer.Option(help="Table format.")] = "md",
) -> None:
    """The ladder's rungs on PM-Bench's released week with the benchmark's own prompts and
    scorer, from your checkout: raw transcript (its single_baseline), self-written ledger (its
    todo_ledger), text checklist, directive gate, and enforcement bound to the matcher's
    judgement or to the record's state. Prints Table 21."""
    writable_dir(out, "--out")
    root = checkout or (
        Path(os.environ["PMBENCH_PATH"]) if os.environ.get("PMBENCH_PATH") else None
    )
    if root is None:
        raise typer.BadParameter(
            "point it at your PM-Bench checkout (or set PMBENCH_PATH)", param_hint="--pmbench"
        )
    rung_list = check_names(split_list(arms, str, "--arms"), PMBENCH_RUNGS, "--arms")
    check_names([agent], AGENTS, "--agent")
    check_names([compiler], ROLES, "--compiler")
    check_names([matcher], ROLES, "--matcher")
    if "self-ledger" in rung_list and agent != "llm":
        if arms != ",".join(PMBENCH_RUNGS):
            raise typer.BadParameter(
                "the self-written ledger is PM-Bench's own scaffold: it needs --agent llm",
                param_hint="--arms",
            )
        rung_list.remove("self-ledger")
    the_checkout = usage("--pmbench", lambda: load_checkout(root, scenario))
    for line in the_checkout.warnings:
        warn_line(line)
    uses_model = "llm" in (agent, compiler, matcher)
    if uses_model and embedded(endpoint) and days is None:
        days = 1
        typer.echo("embedded model (SmolLM2 via llama.cpp): the week's first day only")
    if days is not None:
        the_checkout = the_checkout.first_days(days)
    local = uses_model and embedded(endpoint)
    form = schema or ("json_object" if local else "json_schema")
    request: dict[str, Any] = {}  # as the benchmark's runner calls a local server
    if endpoint.max_tokens is None:
        request["max_tokens"] = 768
    if endpoint.thinking is None and not local:
        request["chat_template_kwargs"] = {"enable_thinking": False}
    limits = Limits(max_invalid, max_queries, form, request)
    config = usage(
        "--arms",
        lambda: PMConfig(
            rungs=tuple(rung_list),
            greedy=greedy,
            samples=samples,
            temperature=temperature,
            seed=seed,
            concurrency=endpoint.concurrency,
            limits=limits,
        ),
    )

    async def work(progress: Progress, clients: Clients) -> None:
        def named(role: str, kind: Literal["agent", "matcher", "compiler"]) -> str:
            return f"llm:{_client(clients, kind).model}" if role == "llm" else role

        names = (
            agent if agent != "llm" else named("llm", "agent"),
            named(compiler, "compiler"),
            named(matcher, "matcher"),
        )
        ledger = None
        if "self-ledger" in config.rungs:
            ledger = ledger_runner(the_checkout, _client(clients, "agent").endpoints[0])

        def roles(spec: RunSpec) -> PMRoles:
            return _roles(spec, agent, compiler, matcher, clients, progress, limits)

        await run_pmbench(the_checkout, config, out, roles, names, ledger, progress)

    run_with_progress("pmbench", work, uses_model, endpoint, unit="run")
    _print(out, fmt)


def _roles(
    spec: RunSpec, agent: str, compiler: str, matcher: str, clients: Clients,
    progress: Progress, limits: Limits,
) -> PMRoles:  # fmt: skip
    count = progress.count_call
    the_agent = (
        LLMPMAgent(
            _client(clients, "agent"),
            spec.temperature,
            spec.seed,
            limits.schema,
            count,
            limits.request,
        )
        if agent == "llm"
        else scripted_agent(agent)
    )
    the_compiler: IntentionCompiler = (
        ScriptedIntentionCompiler()
        if compiler == "scripted"
        else LLMIntentionCompiler(_client(clients, "compiler"), count)
    )
    the_matcher: DueJudge = (
        ScriptedDueJudge()
        if matcher == "scripted"
        else LLMDueJudge(_client(clients, "matcher"), count)
    )
    return PMRoles(the_agent, the_compiler, the_matcher)


def _client(clients: Clients, kind: Literal["agent", "matcher", "compiler"]) -> ChatClient:
    client = clients.get(kind)
    assert client is not None  # the command starts a model when any role needs one
    return client


def _print(out: Path, fmt: Literal["md", "latex"]) -> None:
    table = pmbench_table(out)
    typer.echo(f"\n{table.title}\n")
    typer.echo(table.render(fmt))
    typer.echo(f"\nthe benchmark's own logs of each run: {out / 'logs'}")
