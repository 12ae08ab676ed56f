"""``taskgate score`` and ``taskgate report``: numbers from a run directory's log alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..arms.registry import ARMS
from ..scoring.summary import Scored, score_run, summarize
from .common import print_results
from .errors import warner, writable_file
from .options import JsonOpt, ReportOptions, check_names, command, split_list
from .usage import print_usage

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


@command
def report(run_dir: RunDir, output: ReportOptions, arms: ArmOrder = None) -> None:
    """Print the ladder table, the paired contrasts, the per-channel table, directive obedience,
    the matcher's agreement and, when a model ran, token usage and compile accuracy."""
    writable_file(output.json, "--json")
    warn = warner()
    scored = score_run(run_dir, warn)
    order = _arms(scored, arms)
    print_results(run_dir, order, output, scored=scored)
    print_usage(run_dir, order, warn)
