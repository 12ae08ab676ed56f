"""``taskgate score`` and ``taskgate report``: numbers from a run directory's log alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..rundir import LOG, OnSkip, SkippedLine, read_log
from .common import FormatOpt, JsonOpt, parse_arms, print_results

RunDir = Annotated[Path, typer.Argument(help="A run directory (episodes.jsonl and log.jsonl).")]
ArmOrder = Annotated[
    str | None, typer.Option("--arms", help="Arm order for contrasts (default: as logged).")
]


def _arms(out: Path, arms: str | None, on_skip: OnSkip) -> list[str]:
    if arms is not None:
        return parse_arms(arms)
    return list(dict.fromkeys(arm for _, arm in read_log(out / LOG, on_skip)))


def _warner() -> OnSkip:
    """Print each skipped line once, as one warning line on stderr."""
    seen: set[SkippedLine] = set()

    def warn(skipped: SkippedLine) -> None:
        if skipped not in seen:
            seen.add(skipped)
            typer.echo(f"warning: {skipped}", err=True)

    return warn


def score(run_dir: RunDir, json_out: JsonOpt = None, arms: ArmOrder = None) -> None:
    """Score every finished episode-arm; print one summary line per (cell, arm)."""
    from ..scoring.summary import score_run, summarize

    warn = _warner()
    order = _arms(run_dir, arms, warn)
    rows = summarize(score_run(run_dir, warn), order)
    for r in rows:
        typer.echo(
            f"{r.arm:<22} S={r.steps:<3} rho={r.density:<5g} n={r.n:<4} strict={r.rate:.2f} "
            f"[{r.ci_low:.2f}, {r.ci_high:.2f}]  decline-aware={r.da_rate:.2f}"
        )
    if json_out is not None:
        json_out.write_text(json.dumps([r.json_row() for r in rows], indent=1) + "\n")


def report(
    run_dir: RunDir, fmt: FormatOpt = "md", arms: ArmOrder = None, json: JsonOpt = None
) -> None:
    """Print the ladder table, the paired contrasts and the per-channel table."""
    warn = _warner()
    print_results(run_dir, _arms(run_dir, arms, warn), fmt, json, on_skip=warn)
