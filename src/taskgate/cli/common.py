"""Running under a progress bar, and the end-of-run printout, shared by the subcommands."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ..progress import Progress as RunProgress
from ..rundir import OnSkip
from ..runner.roles import Clients
from ..scoring.report import (
    Format,
    channel_table,
    contrast_table,
    ladder_table,
    matcher_table,
    obedience_table,
    tools_table,
)
from ..scoring.summary import Row, Scored, adjacent_contrasts, score_run, summarize
from .errors import FAILURE, fail
from .model import clients, endpoint_for
from .options import EndpointOptions, ReportOptions
from .usage import print_usage

Work = Callable[[RunProgress, Clients], Coroutine[Any, Any, None]]


def run_with_progress(
    label: str,
    work: Work,
    needs_model: bool,
    endpoint: EndpointOptions,
    think: bool = False,
    unit: str = "episode-arm",
) -> RunProgress:
    """Run ``work`` under a progress bar, with model clients when it needs a model.

    When every job failed (an endpoint that refuses, answers 404 or is not a URL) the command ends
    with the first failure, exit status 1: there is nothing to report.
    """
    if not needs_model:
        progress = with_progress(label, lambda p: work(p, Clients()), unit)
    else:
        with endpoint_for(endpoint, think) as endpoints:

            async def go(progress: RunProgress) -> None:
                async with clients(endpoints, warn_line) as role_clients:
                    await work(progress, role_clients)

            progress = with_progress(f"{label} on {endpoints.model}", go, unit)
    if progress.failed and progress.failed == progress.total - progress.skipped:
        first = progress.failures[0] if progress.failures else "no job finished"
        raise fail(f"every {unit} failed; the first: {first}", FAILURE)
    return progress


def warn_line(message: str) -> None:
    typer.echo(f"taskgate: warning: {message}", err=True)


def with_progress(
    label: str,
    work: Callable[[RunProgress], Coroutine[Any, Any, None]],
    unit: str = "episode-arm",
) -> RunProgress:
    """Run ``work`` under a rich progress bar of finished ``unit``s; return its counts."""
    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[calls]}"),
    )
    progress = RunProgress()
    with Progress(*columns, console=console) as bar:
        task = bar.add_task(label, total=None, calls="")

        def update(p: RunProgress) -> None:
            calls = f"calls {p.calls}  tokens {p.tokens}  errors {p.call_errors}" if p.calls else ""
            if p.failed:
                calls += f"  failed {unit}s {p.failed}"
            bar.update(task, total=p.total, completed=p.done, calls=calls)

        progress.on_change = update
        asyncio.run(work(progress))
    for failure in progress.failures[:10]:
        console.print(f"[red]failed[/red] {failure}", markup=True, highlight=False)
    if progress.failed:
        console.print(
            f"{progress.failed} {unit}(s) failed; rerun with the same --out to retry them."
        )
    return progress


def report_run(
    run_dir: Path,
    arms: Sequence[str],
    report: ReportOptions,
    on_skip: OnSkip,
    harness: str | None = None,
    usage: bool = False,
) -> None:
    """After a run: its directory, its tables (the runs of one kind: the testbed's, or the tool
    harness's in one mode), and token usage with compile accuracy when a model ran."""
    typer.echo(f"run directory: {run_dir}")
    scored = [s for s in score_run(run_dir, on_skip) if s.harness == harness]
    print_results(run_dir, arms, report, on_skip=on_skip, scored=scored)
    if usage:
        print_usage(run_dir, arms, on_skip)


def print_results(
    out: Path,
    arms: Sequence[str],
    report: ReportOptions,
    on_skip: OnSkip | None = None,
    scored: list[Scored] | None = None,
) -> list[Row]:
    """Score the run directory (unless ``scored`` already is), print the tables, and write the
    JSON rows if asked."""
    fmt, json_path = report.fmt, report.json
    scored = score_run(out, on_skip) if scored is None else scored
    present = [a for a in arms if any(s.score.arm == a for s in scored)]
    rows = summarize(scored, present)
    f: Format = "latex" if fmt == "latex" else "md"
    console = Console(highlight=False, soft_wrap=True)
    if any(s.harness for s in scored):
        _print_tools(console, scored, rows, present, f)
    else:
        _print_ladder(console, scored, rows, present, f)
    console.print(
        "\nError channels (rate over label turns; unrequested as a count)\n", markup=False
    )
    console.print(channel_table(rows, f), markup=False)
    for title, table in (
        ("Directive obedience per directive type (Wilson 95% CI)", obedience_table(rows, f)),
        ("Matcher (arms that use one)", matcher_table(rows, f)),
    ):
        if table:
            console.print(f"\n{title}\n", markup=False)
            console.print(table, markup=False)
    if json_path is not None:
        json_path.write_text(json.dumps([r.json_row() for r in rows], indent=1) + "\n")
        console.print(f"\nwrote {len(rows)} rows to {json_path}", markup=False)
    return rows


def _print_tools(
    console: Console, scored: list[Scored], rows: list[Row], arms: list[str], f: Format
) -> None:
    if len({s.harness for s in scored}) > 1:
        raise fail(
            "the run directory holds runs of several kinds (the testbed, the harness's actions "
            "and native modes); report each from its own directory"
        )
    console.print(
        "\nTool-dispatch harness (Table rw): strict success, Wilson 95% CI, exact McNemar p "
        "against the previous rung, refusals, error totals\n",
        markup=False,
    )
    console.print(tools_table(rows, adjacent_contrasts(scored, arms), f), markup=False)
    stale = ", ".join(f"{r.arm} {r.stale}" for r in rows if r.stale)
    if stale:
        console.print(
            f"\ncalls refused for a stale or unknown work order (every arm): {stale}", markup=False
        )


def _print_ladder(
    console: Console, scored: list[Scored], rows: list[Row], present: list[str], f: Format
) -> None:
    console.print("\nStrict episode success (Wilson 95% CI)\n", markup=False)
    console.print(ladder_table(rows, present, f), markup=False)
    console.print("\nDecline-aware episode success\n", markup=False)
    console.print(ladder_table(rows, present, f, da=True), markup=False)
    if len(present) > 1:
        console.print(
            "\nAdjacent rungs, exact McNemar on shared seeds, Holm-corrected\n", markup=False
        )
        console.print(contrast_table(adjacent_contrasts(scored, present), f), markup=False)
