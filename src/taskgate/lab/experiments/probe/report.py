"""Table 3: per variant, the share of sampled replies that book the finished step again
(Wilson 95% interval) and the greedy re-asks that did, one column per probe directory; and how
often the greedy re-ask of the recorded request reproduces the recorded outcome."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from taskgate.errors import LogFormatError
from taskgate.lab.experiments.probe.records import (
    GREEDY,
    PROBE,
    ProbeHeader,
    ProbeReply,
    read_probe,
)
from taskgate.lab.experiments.probe.variants import VARIANTS
from taskgate.lab.rundir import OnSkip
from taskgate.lab.scoring.stats import wilson
from taskgate.lab.scoring.table import Table

__all__ = ["probe_table", "read_probe"]


def _column(header: ProbeHeader, replies: Sequence[ProbeReply], out: Path) -> str:
    model = next((r.model for r in replies if r.model), None)
    return f"{model or header.agent} ({out.name})"


def _share(hits: int, n: int) -> str:
    if not n:
        return "--"
    lo, hi = wilson(hits, n)
    return f"{hits / n:.2f} [{lo:.2f},{hi:.2f}] ({hits}/{n})"


def probe_table(dirs: Sequence[Path], on_skip: OnSkip | None = None) -> Table:
    """Table 3 for one or more probe directories (one column each)."""
    columns: list[tuple[str, list[ProbeReply]]] = []
    for d in dirs:
        header, replies = read_probe(d, on_skip)
        if header is None:
            raise LogFormatError(f"{d} is not a probe directory: it has no {PROBE}")
        columns.append((_column(header, replies, d), replies))
    body = []
    for name, v in VARIANTS.items():
        cells = []
        for _, replies in columns:
            got = [r for r in replies if r.variant == name]
            sampled = [r for r in got if r.sample != GREEDY]
            greedy = [r for r in got if r.sample == GREEDY]
            cell = _share(sum(r.rebooked for r in sampled), len(sampled))
            if greedy:
                cell += f"; greedy {sum(r.rebooked for r in greedy)}/{len(greedy)}"
            cells.append(cell)
        if any(c != "--" for c in cells):
            body.append([v.label, *cells])
    traps = ["trap turns"]
    same = ["greedy re-ask reproduces the recorded outcome"]
    for _, replies in columns:
        traps.append(str(len({(r.episode, r.turn) for r in replies})))
        g = [r for r in replies if r.sample == GREEDY and r.variant == "recorded"]
        same.append(_share(sum(r.rebooked == r.recorded for r in g), len(g)))
    body += [traps, same]
    header_row = ["last message / context at the trap turn", *(c for c, _ in columns)]
    title = "Trap-turn probe: share of replies that book the finished step again (Table 3)"
    return Table.of("probe", title, header_row, body)
