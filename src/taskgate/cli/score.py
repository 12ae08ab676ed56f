"""``taskgate score`` and ``taskgate report``: numbers from a run directory's log alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from taskgate.cli.common import print_tables
from taskgate.cli.errors import warner, writable_dir, writable_file
from taskgate.cli.options import JsonOpt, ReportOptions, check_names, command, split_list
from taskgate.lab.arms.registry import ARMS
from taskgate.lab.reporting.appendix import not_built
from taskgate.lab.reporting.build import build_report
from taskgate.lab.reporting.figures import (
    matplotlib_module,
    not_drawn,
    styled_figures,
    write_figures,
)
from taskgate.lab.reporting.html import write_html
from taskgate.lab.reporting.runs import load_runs
from taskgate.lab.runcard import describe
from taskgate.lab.runcard import load as load_card
from taskgate.lab.scoring.index import score_run
from taskgate.lab.scoring.summary import Scored, summarize

RunDir = Annotated[Path, typer.Argument(help="A run directory (episodes.jsonl and log.jsonl).")]
ArmOrder = Annotated[
    str | None,
    typer.Option("--arms", help="Arm order for contrasts (default: the arms' ladder order)."),
]


def _arms(scored: list[Scored], arms: str | None) -> list[str]:
    logged = list(dict.fromkeys(s.score.arm for s in scored))
    if arms is None:  # the registry's order, lowest rung first (arms it lacks last, as logged)
        order = {name: i for i, name in enumerate(ARMS)}
        return sorted(logged, key=lambda a: order.get(a, len(order)))
    names = split_list(arms, str, "--arms")
    check_names(names, logged, "--arms")
    return names


def score(run_dir: RunDir, json_out: JsonOpt = None, arms: ArmOrder = None) -> None:
    """Score every finished episode-arm; print one summary line per (cell, arm)."""
    writable_file(json_out, "--json")
    scored = score_run(run_dir, warner())
    rows = summarize(scored, _arms(scored, arms))
    for r in rows:
        typer.echo(
            f"{r.arm:<22} S={r.steps:<3} rho={r.density:<5g} n={r.n:<4} strict={r.rate:.2f} "
            f"[{r.ci_low:.2f}, {r.ci_high:.2f}]  decline-aware={r.da_rate:.2f}"
        )
    if json_out is not None:
        json_out.write_text(json.dumps([r.json_row() for r in rows], indent=1) + "\n")


RunDirs = Annotated[
    list[Path],
    typer.Argument(
        help="One or several run directories (episodes.jsonl and log.jsonl): runs of one "
        "configuration pool, runs of different ones become rows of their own.",
        metavar="RUN_DIR",
        show_default=False,
    ),
]
FiguresOpt = Annotated[
    Path | None,
    typer.Option(
        "--figures",
        help="Also draw the figures into this directory, as PNG and PDF (the figures extra).",
        metavar="DIR",
    ),
]
HtmlOpt = Annotated[
    Path | None,
    typer.Option(
        "--html",
        help="Also write one self-contained HTML page: tables, figures and every episode's "
        "turns, readable offline.",
        metavar="FILE",
    ),
]


@command
def report(
    run_dirs: RunDirs,
    output: ReportOptions,
    arms: ArmOrder = None,
    figures: FiguresOpt = None,
    html: HtmlOpt = None,
) -> None:
    """Every table the paper builds from a ladder run, from run directories alone: the ladder and
    its inventory, paired contrasts, error channels, directive obedience, the matcher, omission
    attribution, compile accuracy, overhead and the corrupted-state table; with --figures the
    figures, with --html one page to share."""
    writable_file(output.json, "--json")
    writable_file(html, "--html")
    writable_dir(figures, "--figures")
    if figures is not None:
        matplotlib_module()  # a missing extra is said before any work
    runs = load_runs(run_dirs, warner())
    built = build_report(runs, _arms(runs.scored, arms))
    for run_dir in runs.dirs:
        card = load_card(run_dir)
        typer.echo(f"{run_dir}: {describe(card) if card else 'no run card: configuration unknown'}")
    print_tables(built, output)
    for name, why in not_built(built.rows).items():
        typer.echo(f"not built: {name}: {why}")
    figs = styled_figures(built) if figures is not None else None  # drawn once for both
    if figures is not None:
        written = write_figures(built, figures, figs)
        typer.echo(f"\nwrote {len(written)} figure files to {figures}")
        for name, why in not_drawn(built).items():
            typer.echo(f"not drawn: {name}: {why}")
    if html is not None:
        write_html(built, html, figs)
        typer.echo(f"wrote the HTML report to {html}")
