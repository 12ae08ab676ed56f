"""Printing token usage per arm and compile accuracy per cell after a model run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from ..rundir import EPISODES, LOG, OnSkip, read_episodes, read_log
from ..scoring.usage import compile_accuracy, usage_rows


def _cell(cell: tuple[int, float, float]) -> str:
    return f"S={cell[0]}, rho={cell[1]:g}" + (f", eps={cell[2]:g}" if cell[2] else "")


def print_usage(run_dir: Path, arms: Sequence[str], on_skip: OnSkip | None = None) -> None:
    runs = read_log(run_dir / LOG, on_skip)
    if not any(run.calls for run in runs.values()):  # no model ran: nothing to report
        return
    episodes = {e.id: e for e in read_episodes(run_dir / EPISODES)}
    console = Console(highlight=False, soft_wrap=True)
    rows = usage_rows(runs, episodes, arms)
    if rows:
        console.print("\nToken usage per episode (agent calls; Appendix B.5)\n", markup=False)
        console.print(
            "| cell | arm | prompt | completion | total | x raw | matcher calls | compile tokens "
            "| refused | failed calls | prefix share |\n|---|---|---|---|---|---|---|---|---|---|---|",
            markup=False,
        )
        for r in rows:
            ratio = "--" if r.ratio_to_raw is None else f"{r.ratio_to_raw:.2f}"
            prefix = "--" if r.prefix_share is None else f"{r.prefix_share:.3f}"
            console.print(
                f"| {_cell(r.cell)} | {r.arm} | {r.prompt:.0f} | {r.completion:.0f} | {r.total:.0f} "
                f"| {ratio} | {r.matcher_calls:.1f} | {r.compiler_tokens:.0f} | {r.refused} "
                f"| {r.failed_calls} | {prefix} |",
                markup=False,
            )
    acc = compile_accuracy(runs, episodes)
    if acc:
        console.print("\nCompile accuracy against the generator (Table 6)\n", markup=False)
        console.print(
            "| cell | n | Dep | Code (tool) | Cancel | Rewire | Relax |\n|---|---|---|---|---|---|---|",
            markup=False,
        )
        for a in acc:
            console.print(
                f"| {_cell(a.cell)} | {a.n} | {a.dep:.3f} | {a.code:.3f} | {a.cancel:.3f} "
                f"| {a.rewire:.3f} | {a.relax:.3f} |",
                markup=False,
            )
