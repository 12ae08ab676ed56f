"""``taskgate rewrites``: build the tier-2 rewrite cache; ``taskgate raters``: the redo-probe
wording study with model raters (and ``raters-report``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from taskgate.cli.common import run_with_progress
from taskgate.cli.errors import FAILURE, fail, warner, writable_dir, writable_file
from taskgate.cli.options import EndpointOptions, check_names, command, split_list, usage
from taskgate.lab.experiments.wording import (
    RaterConfig,
    RewriteConfig,
    build_rewrites,
    rater_table,
    run_raters,
)
from taskgate.lab.experiments.wording.raters import VERDICTS, LLMRater, Rater, ScriptedRater
from taskgate.lab.experiments.wording.rewrites import LLMRewriter, Rewriter, ScriptedRewriter
from taskgate.lab.progress import Progress
from taskgate.lab.runner.roles import Clients

DOMAINS = ("procurement", "release")


@command
def rewrites(
    endpoint: EndpointOptions,
    out: Annotated[
        Path, typer.Option(help="The cache file (JSON); rerunning fills what is missing.")
    ],
    rewriter: Annotated[
        Literal["llm", "scripted"],
        typer.Option(help="llm (the model flags' model), or scripted: fixed openings, no model."),
    ] = "llm",
    domains: Annotated[str, typer.Option(help="Comma-separated domains.")] = "procurement,release",
    temperature: Annotated[float, typer.Option(min=0.0, max=2.0)] = 0.7,
    attempts: Annotated[int, typer.Option(min=1, help="Asks per template at most.")] = 3,
) -> None:
    """Write three held-out wordings per step template with a model, validate them (one line,
    distinct, the step's noun kept, nothing added) and store the cache that --para-tier 2 reads."""
    writable_file(out, "--out")
    names = split_list(domains, str, "--domains")
    check_names(names, DOMAINS, "--domains")
    config = usage("--domains", lambda: RewriteConfig(tuple(names), attempts, temperature))
    failed: dict[str, str] = {}

    async def work(progress: Progress, clients: Clients) -> None:
        who: Rewriter = ScriptedRewriter()
        if rewriter == "llm":
            assert clients.agent is not None
            who = LLMRewriter(clients.agent, temperature, progress.count_call)
        progress.total = 18 * len(names)
        result = await build_rewrites(out, who, config, lambda _: progress.advance())
        failed.update(result.failed)
        typer.echo(f"{result.written} templates rewritten, {result.kept} kept from {out}")

    run_with_progress("rewrites", work, rewriter == "llm", endpoint, unit="template")
    if failed:
        for slug, problem in failed.items():
            typer.echo(f"{slug}: {problem}", err=True)
        raise fail(f"{len(failed)} template(s) have no valid rewrites; rerun to retry", FAILURE)


@command
def raters(
    endpoint: EndpointOptions,
    out: Annotated[Path, typer.Option(help="Study directory; rerunning into it resumes.")],
    rater: Annotated[
        str,
        typer.Option(
            help="llm (the model flags' model), or a scripted oracle: "
            + ", ".join(f"scripted:{v}" for v in VERDICTS)
            + ", scripted:split."
        ),
    ] = "llm",
    raters_n: Annotated[int, typer.Option("--raters", min=1, help="Independent sessions.")] = 3,
    samples: Annotated[int, typer.Option(min=0, help="Sampled redo-probe turns.")] = 40,
    domains: Annotated[str, typer.Option(help="Comma-separated domains.")] = "procurement",
    temperature: Annotated[float, typer.Option(min=0.0, max=2.0)] = 1.0,
    fmt: Annotated[Literal["md", "latex"], typer.Option(help="Table format.")] = "md",
) -> None:
    """Model raters judge each redo-probe wording (every template paraphrase and sampled probe
    turns) as a fresh order, a re-mention, or ambiguous under the brief's one-shot rule."""
    writable_dir(out, "--out")
    names = split_list(domains, str, "--domains")
    check_names(names, DOMAINS, "--domains")
    scripted = _scripted(rater)
    config = usage(
        "--raters",
        lambda: RaterConfig(raters_n, samples, tuple(names), endpoint.concurrency),
    )

    async def work(progress: Progress, clients: Clients) -> None:
        who: Rater
        if scripted is not None:
            who = scripted
        else:
            assert clients.agent is not None
            who = LLMRater(clients.agent, temperature, progress.count_call)
        await run_raters(out, who, config, progress, warn)

    warn = warner()
    run_with_progress("raters", work, scripted is None, endpoint, unit="verdict")
    typer.echo(rater_table(out, warn).render(fmt))


def _scripted(rater: str) -> ScriptedRater | None:
    if rater == "llm":
        return None
    if rater == "scripted:split":
        return ScriptedRater(split=True)
    for v in VERDICTS:
        if rater == f"scripted:{v}":
            return ScriptedRater(v)
    raise typer.BadParameter(f"unknown rater {rater!r}", param_hint="--rater")
