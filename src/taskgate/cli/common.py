"""Options shared by ``taskgate run`` and ``taskgate ladder``, and the end-of-run printout."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ..arms.registry import ARMS, LADDER
from ..rundir import OnSkip
from ..runner.ladder import Progress as RunProgress
from ..runner.roles import AGENT_NAMES, COMPILER_NAMES, MATCHER_NAMES
from ..scoring.report import channel_table, contrast_table, ladder_table
from ..scoring.summary import Row, adjacent_contrasts, score_run, summarize
from .options import check_names, split_list

ArmsOpt = Annotated[
    str, typer.Option(help=f"Comma-separated arms, lowest rung first: {', '.join(ARMS)}.")
]
AgentOpt = Annotated[str, typer.Option(help=f"The agent: {', '.join(AGENT_NAMES)}.")]
CompilerOpt = Annotated[
    str,
    typer.Option(
        help=f"The gate's compiler: {', '.join(COMPILER_NAMES)}; auto = llm with an llm agent, else scripted."
    ),
]
MatcherOpt = Annotated[
    str,
    typer.Option(
        help=f"The matcher: {', '.join(MATCHER_NAMES)}; auto = llm with an llm agent, else scripted."
    ),
]
CorruptionOpt = Annotated[
    str, typer.Option(help="Comma-separated corruption rates of the gate's state, per step-turn.")
]
RepairOpt = Annotated[
    bool, typer.Option(help="Rebuild the gate's completions from its receipts every turn.")
]
BypassOpt = Annotated[
    bool, typer.Option(help="Filler and revision turns skip the matcher (schedule metadata).")
]
ConcurrencyOpt = Annotated[int, typer.Option(min=1, help="Episode-arms in flight at once.")]
FormatOpt = Annotated[Literal["md", "latex"], typer.Option(help="Table format.")]
JsonOpt = Annotated[Path | None, typer.Option(help="Write one row per (cell, arm) as JSON.")]

DEFAULT_ARMS = ",".join(LADDER)


def parse_arms(arms: str) -> list[str]:
    names = split_list(arms, str, "--arms")
    check_names(names, list(ARMS), "--arms")
    return names


def parse_rates(value: str) -> list[float]:
    rates = split_list(value, float, "--corruption")
    for r in rates:
        if not 0.0 <= r <= 1.0:
            raise typer.BadParameter(f"{r} is not a rate in [0, 1]", param_hint="--corruption")
    return rates


def resolve_roles(agent: str, compiler: str, matcher: str) -> tuple[str, str, str]:
    """Check the three names and resolve ``auto``."""
    check_names([agent], list(AGENT_NAMES), "--agent")
    default = "llm" if agent == "llm" else "scripted"
    compiler = default if compiler == "auto" else compiler
    matcher = default if matcher == "auto" else matcher
    check_names([compiler], list(COMPILER_NAMES), "--compiler")
    check_names([matcher], list(MATCHER_NAMES), "--matcher")
    return agent, compiler, matcher


def with_progress(
    label: str,
    work: Callable[[RunProgress], Coroutine[Any, Any, None]],
    unit: str = "episode-arm",
) -> None:
    """Run ``work`` under a rich progress bar of finished ``unit``s."""
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


def print_results(
    out: Path,
    arms: Sequence[str],
    fmt: str,
    json_path: Path | None,
    on_skip: OnSkip | None = None,
) -> list[Row]:
    """Score the run directory, print the tables, and write the JSON rows if asked."""
    scored = score_run(out, on_skip)
    present = [a for a in arms if any(s.score.arm == a for s in scored)]
    rows = summarize(scored, present)
    f: Literal["md", "latex"] = "latex" if fmt == "latex" else "md"
    console = Console(highlight=False, soft_wrap=True)
    console.print("\nStrict episode success (Wilson 95% CI)\n", markup=False)
    console.print(ladder_table(rows, present, f), markup=False)
    console.print("\nDecline-aware episode success\n", markup=False)
    console.print(ladder_table(rows, present, f, da=True), markup=False)
    if len(present) > 1:
        console.print(
            "\nAdjacent rungs, exact McNemar on shared seeds, Holm-corrected\n", markup=False
        )
        console.print(contrast_table(adjacent_contrasts(scored, present), f), markup=False)
    console.print(
        "\nError channels (rate over label turns; unrequested as a count)\n", markup=False
    )
    console.print(channel_table(rows, f), markup=False)
    if json_path is not None:
        json_path.write_text(json.dumps([r.json_row() for r in rows], indent=1) + "\n")
        console.print(f"\nwrote {len(rows)} rows to {json_path}", markup=False)
    return rows
