"""Running under a progress bar, and the end-of-run printout, shared by the subcommands."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from taskgate.cli.errors import FAILURE, fail
from taskgate.cli.model import clients, endpoint_for
from taskgate.cli.options import EndpointOptions, ReportOptions
from taskgate.lab.progress import Progress as RunProgress
from taskgate.lab.reporting.build import Report, build_report
from taskgate.lab.reporting.runs import RunSet
from taskgate.lab.runcard import describe
from taskgate.lab.runcard import load as load_card
from taskgate.lab.rundir import OnSkip
from taskgate.lab.runner.roles import Clients
from taskgate.lab.scoring.glossary import legend
from taskgate.lab.scoring.summary import score_entries

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


#: what a run prints when it ends (``taskgate report`` prints every table)
END_OF_RUN = (
    "ladder",
    "ladder_da",
    "contrasts",
    "tools",
    "memory",
    "recall",
    "channels",
    "obedience",
    "matcher",
)
MODEL_TABLES = ("overhead", "compile")


def report_run(
    run_dir: Path,
    arms: Sequence[str],
    report: ReportOptions,
    on_skip: OnSkip,
    harness: str | None = None,
    usage: bool = False,
) -> None:
    """After a run: its directory and its main tables (the runs of one kind: the testbed's, or
    the tool harness's in one mode), with overhead and compile accuracy when a model ran."""
    typer.echo(f"run directory: {run_dir}")
    card = load_card(run_dir)
    if card is not None:
        typer.echo(f"configuration: {describe(card)}")
    entries = [e for e in score_entries(run_dir, on_skip) if e.scored.harness == harness]
    built = build_report(RunSet([run_dir], entries), arms)
    print_tables(built, report, END_OF_RUN + (MODEL_TABLES if usage else ()))
    typer.echo(f"\nevery table, figures and a page to share: taskgate report {run_dir} --html FILE")


def print_tables(built: Report, report: ReportOptions, keys: Sequence[str] | None = None) -> None:
    """Print the report's tables (those named in ``keys``, in the report's order; default all)
    and write the JSON report if asked."""
    console = Console(highlight=False, soft_wrap=True)
    for table in built.tables:
        if keys is not None and table.key not in keys:
            continue
        console.print(f"\n{table.title}\n", markup=False)
        if table.note:
            console.print(table.note + "\n", markup=False)
        console.print(table.render(report.fmt), markup=False)
        if table.footnote:
            console.print("\n" + table.footnote, markup=False)
        explained = legend(table.header)
        if explained and report.fmt == "md":
            console.print("\n" + explained, markup=False)
    if report.json is not None:
        built.write_json(report.json)
        console.print(f"\nwrote the report ({len(built.rows)} rows) to {report.json}", markup=False)
