"""Table 4's layout (Appendix A.5): wording control and matcher stress, one column per
configuration and cell (canonical, held-out phrasing, held-out plus ambiguous probes): strict and
decline-aware success per arm, the gate arms' matcher agreement on ask, premature and redo turns,
the omission episodes whose first omitted ask the gate answered by naming another step, and the
ambiguous probes on which the agent booked."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from taskgate.lab.arms.registry import compiled_arm
from taskgate.lab.scoring.report import p_value, where
from taskgate.lab.scoring.stats import holm, mcnemar_exact
from taskgate.lab.scoring.summary import CellKey, Entry, Row
from taskgate.lab.scoring.table import Table

Column = tuple[str, CellKey]
#: the turns Table 4's matcher agreement counts: ask, premature and redo-probe turns
AGREEMENT_LABELS = frozenset({"ask", "premature", "redo_probe"})


def _is_wording(config: str) -> bool:
    return "tier=" in config or "ambiguous=" in config


def wording(rows: Sequence[Row], entries: Sequence[Entry], arms: Sequence[str]) -> Table:
    """Built when the runs include a wording configuration (tier 1 or 2, or ambiguous probes)."""
    if not any(_is_wording(r.config) for r in rows):
        return Table.of("wording", "", [], [])
    columns: list[Column] = list(dict.fromkeys((r.config, r.cell) for r in rows))
    by_row = {(r.config, r.cell, r.arm): r for r in rows}
    groups: dict[tuple[str, CellKey, str], list[Entry]] = {}
    for e in entries:
        groups.setdefault((e.scored.config, e.scored.cell, e.scored.score.arm), []).append(e)
    present = [a for a in arms if any((c, k, a) in by_row for c, k in columns)]
    gates = [a for a in present if compiled_arm(a)]

    def block(
        title: str, names: Sequence[str], cell: Callable[[Column, str], str]
    ) -> list[list[str]]:
        if not names:
            return []
        return [[title, *([""] * len(columns))]] + [
            [name, *(cell(col, name) for col in columns)] for name in names
        ]

    def strict(col: Column, arm: str, da: bool = False) -> str:
        r = by_row.get((*col, arm))
        if r is None:
            return "--"
        k, lo, hi = (
            (r.da_successes, r.da_ci_low, r.da_ci_high)
            if da
            else (r.successes, r.ci_low, r.ci_high)
        )
        return f"{k / r.n:.2f} [{lo:.2f},{hi:.2f}]"

    def agreement(col: Column, arm: str) -> str:
        turns = [
            t
            for e in groups.get((*col, arm), [])
            for t in e.run.turns
            if t.label in AGREEMENT_LABELS and t.matched is not None
        ]
        k = sum(t.matched is not None and t.matched.step == t.step for t in turns)
        return f"{k / len(turns):.3f} ({k}/{len(turns)})" if turns else "--"

    def first_omission(col: Column, arm: str) -> str:
        es = groups.get((*col, arm))
        if es is None:
            return "--"
        k = n = 0
        for e in es:
            named = _first_omitted_ask_names_another(e)
            if named is not None:
                n += 1
                k += named
        return f"{k}/{n}"

    def ambiguous(col: Column, arm: str) -> str:
        es = groups.get((*col, arm))
        if es is None:
            return "--"
        probes = [t for e in es for t in e.run.turns if t.label == "ambiguous"]
        if not probes:
            return "--"
        booked = sum(any(b.work_order == t.work_order for b in t.bookings) for t in probes)
        return f"{booked}/{len(probes)}"

    body = [
        *block("Strict episode success", present, strict),
        *block("Decline-aware episode success", present, lambda c, a: strict(c, a, da=True)),
        *block("Matcher agreement on ask, premature and redo turns", gates, agreement),
        *block(
            "Omission episodes whose first omitted ask names another step", gates, first_omission
        ),
        *block("Ambiguous probes booked", present, ambiguous),
        *block(
            "Exact McNemar against the first column on shared seeds, Holm over the arms",
            present,
            _paired(columns, present, groups),
        ),
    ]
    header = ["arm", *(where(c, k, True) for c, k in columns)]
    title = "Wording control and matcher stress, best rung per column in bold (Table 4)"
    note = "Holm family: per column against the first, over the arms run in both (primary)."
    # the two success blocks: their rows follow each block's title row
    blocks = [range(1, 1 + len(present)), range(2 + len(present), 2 + 2 * len(present))]
    best = [[(i, j) for i in rows_] for rows_ in blocks for j in range(1, len(header))]
    table = Table.of("wording", title, header, body, footnote=note if len(columns) > 1 else "")
    return table.with_best(best)


def _first_omitted_ask_names_another(e: Entry) -> bool | None:
    """For a failing episode with an omission: whether its first omitted ask was answered by the
    gate naming another step (the matcher resolved it to a different step); ``None`` otherwise."""
    score = e.scored.score.primary
    if score.strict or not score.channels.get("omission"):
        return None
    realized = score.realized
    for rec in e.run.turns:
        label = realized.get(rec.index, rec.label)
        if label == "ask" and "omission" in score.errors.get(rec.index, []):
            m = rec.matched
            return m is not None and m.step is not None and m.step != rec.step
    return False


def _paired(
    columns: Sequence[Column],
    arms: Sequence[str],
    groups: dict[tuple[str, CellKey, str], list[Entry]],
) -> Callable[[Column, str], str]:
    """Each arm's strict outcomes in a column against the first column's, paired by seed."""
    base = columns[0]
    found: dict[tuple[Column, str], tuple[float, float]] = {}
    for col in columns[1:]:
        tests = []
        for arm in arms:
            a = {e.scored.seed: e.scored.score.primary.strict for e in groups.get((*base, arm), [])}
            b = {e.scored.seed: e.scored.score.primary.strict for e in groups.get((*col, arm), [])}
            seeds = sorted(set(a) & set(b))
            if seeds:
                tests.append((arm, mcnemar_exact([a[x] for x in seeds], [b[x] for x in seeds]).p))
        for (arm, p), ph in zip(tests, holm([p for _, p in tests]), strict=True):
            found[(col, arm)] = (p, ph)

    def cell(col: Column, arm: str) -> str:
        got = found.get((col, arm))
        return "--" if got is None else f"p={p_value(got[0])} (Holm {p_value(got[1])})"

    return cell
