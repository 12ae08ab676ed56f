"""Printing overhead per episode and compile accuracy after a model run."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from taskgate.lab.scoring.summary import Entry
from taskgate.lab.scoring.table import Format
from taskgate.lab.scoring.usage import compile_table, overhead


def print_usage(entries: Sequence[Entry], arms: Sequence[str], fmt: Format = "md") -> None:
    """Token usage and compile accuracy, when a model ran (a scripted run has no calls)."""
    if not any(e.run.calls for e in entries):
        return
    console = Console(highlight=False, soft_wrap=True)
    for table in (overhead(entries, arms), compile_table(entries)):
        if table:
            console.print(f"\n{table.title}\n", markup=False)
            console.print(table.render(fmt), markup=False)
