"""Every table of a report, from one or several run directories."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from taskgate.errors import LogFormatError
from taskgate.lab.reporting import appendix, memory, paper, wording
from taskgate.lab.reporting.runs import RunSet
from taskgate.lab.scoring import report as rt
from taskgate.lab.scoring.summary import Contrast, Row, adjacent_contrasts, summarize
from taskgate.lab.scoring.table import Table
from taskgate.lab.scoring.usage import compile_table, overhead


@dataclass
class Report:
    """The scored runs, their rows and contrasts, and the tables in the order they print."""

    runs: RunSet
    arms: list[str]
    rows: list[Row]
    contrasts: list[Contrast]
    tables: list[Table]

    @property
    def harness(self) -> str | None:
        """The real-tool harness mode of the runs (``None``: the testbed's)."""
        return self.runs.entries[0].scored.harness

    def table(self, key: str) -> Table | None:
        return next((t for t in self.tables if t.key == key), None)

    def as_json(self) -> dict[str, object]:
        return {
            "runs": [str(d) for d in self.runs.dirs],
            "configurations": self.runs.configs,
            "arms": self.arms,
            "rows": [r.json_row() for r in self.rows],
            # per table, the paired tests it prints with the Holm p of its own caption's family
            "contrasts": {t.key: list(t.contrasts) for t in self.tables if t.contrasts},
            "tables": {t.key: t.as_json() for t in self.tables},
        }

    def write_json(self, path: Path) -> None:
        path.write_text(json.dumps(self.as_json(), indent=1) + "\n", encoding="utf-8")


def build_report(runs: RunSet, arms: Sequence[str] | None = None) -> Report:
    """Score and tabulate ``runs`` with the arms in ``arms`` order (default: the ladder's)."""
    kinds = {e.scored.harness for e in runs.entries}
    if len(kinds) > 1:
        raise LogFormatError(
            "the run directories hold runs of several kinds (the testbed, the harness's actions "
            "and native modes); report each kind on its own"
        )
    order = list(arms) if arms is not None else runs.arms()
    scored = runs.scored
    rows = summarize(scored, order)
    cs = adjacent_contrasts(scored, order)  # the inventory's family: a scoring's contrasts
    within_model = adjacent_contrasts(scored, order, within="model")  # Table 2's
    entries = runs.entries
    if kinds == {None}:
        head = [rt.ladder(rows, order), rt.ladder(rows, order, da=True)]
        head += [rt.contrasts(within_model)] if len(order) > 1 else []
    else:
        head = [rt.tools(rows, cs).with_contrasts(c for c in cs if c.scoring == "primary")]
    tables = [
        *head,
        paper.inventory(rows, cs, order),
        appendix.replication(rows, scored),
        appendix.graph_size(rows, scored),
        appendix.variants(rows, scored),
        wording.wording(rows, entries, order),
        memory.memory(rows, scored),
        memory.recall(entries),
        rt.channels(rows),
        rt.obedience(rows),
        rt.matcher(rows),
        paper.omissions(entries, order),
        compile_table(entries),
        overhead(entries, order),
        paper.corruption(entries, order),
    ]
    return Report(runs, order, rows, cs, [t for t in tables if t])
