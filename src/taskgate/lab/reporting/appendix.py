"""The paper's appendix tables that pair configurations: the amended-brief replication (Table 14),
the graph-size sweep with per-turn accuracy (Table 15) and the prompt-surface variants (Table 16).

Each is built only from runs that hold what it pairs (both briefs of a model, two or more graph
sizes, a variant with its paper arm); :func:`not_built` says, for the others, what run would
build them. Each declares its Holm family as the paper's caption does and names it under it.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence

from taskgate.lab.scoring.report import family_note, p_value, rate_ci
from taskgate.lab.scoring.summary import CellKey, Contrast, Row, Scored, pair_contrasts
from taskgate.lab.scoring.table import Table

GATE_LADDER = ("raw", "checklist", "directive", "enforcement")
#: Table 16: each variant and the paper arm it is compared with
VARIANTS = (
    ("checklist-replace", "checklist"),
    ("checklist-matched", "checklist"),
    ("self-ledger", "checklist-replace"),
    ("directive-system", "directive"),
    ("enforcement-system", "enforcement"),
)
#: Table 14's columns: (brief, schedule) of the original grid and of the amended replication
ORIGINAL = ("original", "original")
AMENDED = ("amended", "paper")
DECONFOUND = ("original", "paper")  # the original brief on the revised schedule


def regime(text: str | None) -> str:
    """A configuration's regime as a column names it: ``scripted`` for a scripted agent, else the
    recorded regime (``no-think``, ``think, enable_thinking=true``, ...)."""
    return text or "scripted"


def thinks(text: str | None) -> bool | None:
    """Whether the agent thought: the switch sent to the server where one was (it decides), else
    the budgets (``--think``); ``None`` for a scripted agent."""
    if text is None:
        return None
    for part in text.split(", ")[1:]:
        if part in ("enable_thinking=true", "deepseek thinking=enabled"):
            return True
        if part in ("enable_thinking=false", "deepseek thinking=disabled"):
            return False
    return text.startswith("think")


def _cell(cell: CellKey) -> str:
    return f"S={cell[0]}, rho={cell[1]:g}"


# -- Table 15 ---------------------------------------------------------------------------------------
def graph_size(rows: Sequence[Row], scored: Sequence[Scored]) -> Table:
    """Table 15: per model, strict success (Wilson 95%) per graph cell and arm under each
    reasoning regime, then per-turn accuracy (correct scored turns over scored turns, the count
    in the row label). Holm over each regime's adjacent contrasts (the paper's "over the five
    thinking cells"); the contrasts that survive are named under the table."""
    clean = [r for r in rows if not r.corruption and r.arm in GATE_LADDER]
    by_model: dict[str, list[Row]] = defaultdict(list)
    for r in clean:
        by_model[r.model].append(r)
    wide = {m: rs for m, rs in by_model.items() if len({r.cell for r in rs}) >= 2}
    if not wide:
        return Table.of("graph_size", "", [], [])
    regimes = sorted({regime(r.regime) for rs in wide.values() for r in rs})
    arms = [a for a in GATE_LADDER if any(r.arm == a for rs in wide.values() for r in rs)]
    header = ["model", "graph", *(f"{g}: {a}" for g in regimes for a in arms)]
    body = []
    for model, rs in wide.items():
        at = {(r.cell, regime(r.regime), r.arm): r for r in rs}
        cells = sorted({r.cell for r in rs})
        for cell in cells:
            line = [model, _cell(cell)]
            for g in regimes:
                for a in arms:
                    got = at.get((cell, g, a))
                    line.append(
                        "--"
                        if got is None
                        else rate_ci(got.successes, got.n, got.ci_low, got.ci_high)
                    )
            body.append(line)
        for g in regimes:
            for cell in cells:
                turns = {a: at.get((cell, g, a)) for a in arms}
                n = next((t.scored_turns for t in turns.values() if t is not None), 0)
                line = [model, f"per-turn accuracy, {g}, {_cell(cell)} ({n} turns)"]
                for g2 in regimes:
                    for a in arms:
                        acc = turns[a] if g2 == g else None
                        line.append("" if acc is None else f"{acc.per_turn_accuracy:.3f}")
                body.append(line)
    inside = [s for s in scored if s.model in wide and s.score.arm in arms and not s.cell[2]]
    cs = pair_contrasts(inside, list(itertools.pairwise(arms)), within="config")
    title = (
        "Graph-size sweep: strict success per regime, and per-turn accuracy, best rung per row "
        "and regime in bold (Table 15)"
    )
    note = _survivors(cs, "each regime of a model")
    width = len(arms)
    best = [
        [(i, 2 + g * width + a) for a in range(width)]
        for i in range(len(body))
        for g in range(len(regimes))
    ]
    table = Table.of("graph_size", title, header, body, footnote=note)
    return table.with_best(best).with_contrasts(cs)


def _survivors(cs: Sequence[Contrast], declared: str) -> str:
    kept = [c for c in cs if c.p_holm < 0.05]
    named = "; ".join(
        f"{c.config}, {_cell(c.cell)}: {c.lower} -> {c.upper} (Holm p {p_value(c.p_holm)})"
        for c in kept
    )
    survive = f" Survive at 0.05: {named}." if kept else " None survives at 0.05."
    return family_note(cs, declared) + survive if cs else ""


# -- Table 16 ---------------------------------------------------------------------------------------
def variants(rows: Sequence[Row], scored: Sequence[Scored]) -> Table:
    """Table 16: each prompt-surface variant's strict success (Wilson 95%) beside its paper arm's,
    and exact McNemar against it on shared seeds, Holm within model over all variant contrasts."""
    present = {r.arm for r in rows}
    pairs = [(paper, v) for v, paper in VARIANTS if v in present and paper in present]
    if not pairs:
        return Table.of("variants", "", [], [])
    cs = pair_contrasts(scored, pairs, within="model")
    by_cs = {(c.config, c.cell, c.upper): c for c in cs}
    shown = {a for pair in pairs for a in pair}
    columns = list(dict.fromkeys((r.config, r.cell) for r in rows if r.arm in shown))
    at = {(r.config, r.cell, r.arm): r for r in rows}
    order = [a for a in ("checklist", "checklist-replace", "checklist-matched", "self-ledger",
                         "directive", "directive-system", "enforcement", "enforcement-system")
             if a in shown]  # fmt: skip
    body = []
    for arm in order:
        line: list[str] = [arm]
        for config, cell in columns:
            r = at.get((config, cell, arm))
            c = by_cs.get((config, cell, arm))
            line.append("--" if r is None else rate_ci(r.successes, r.n, r.ci_low, r.ci_high))
            line.append("--" if c is None else p_value(c.p_holm))
        body.append(line)
    header = ["arm"]
    for config, cell in columns:
        header += [f"{config}: {_cell(cell)}", "Holm p vs paper arm"]
    title = (
        "Prompt-surface variants against their paper arms, best row per column in bold (Table 16)"
    )
    note = family_note(cs, "within model, over all variant contrasts")
    best = [[(i, j) for i in range(len(body))] for j in range(1, len(header), 2)]
    table = Table.of("variants", title, header, body, footnote=note)
    return table.with_best(best).with_contrasts(cs)


# -- Table 14 ---------------------------------------------------------------------------------------
Column = tuple[str, CellKey, str, tuple[str, str], str]  # base, cell, regime, grid, scoring


def replication(rows: Sequence[Row], scored: Sequence[Scored]) -> Table:
    """Table 14: per model, cell and regime that both grids ran, strict success under the
    original brief on its grid's schedule and under the amended brief on the revised one
    (decline-aware too for the amended columns), the schedule deconfound (the original brief on
    the revised schedule) under the raw transcript, the raw transcript's and the checklist's
    errors per 128 episodes, and the amended brief's adjacent contrasts in those columns, Holm
    within model over the contrasts printed."""
    inside = [r for r in rows if not r.corruption]
    at = {(r.base, r.cell, r.brief, r.schedule, regime(r.regime), r.arm): r for r in inside}
    shared = _shared_cells(inside)
    if not shared:
        return Table.of("replication", "", [], [])
    columns: list[Column] = []
    for base, cell, g in shared:
        columns += [(base, cell, g, ORIGINAL, "primary"), (base, cell, g, AMENDED, "primary")]
        columns += [(base, cell, g, AMENDED, "decline-aware")]
    header = ["row", *(f"{b}, {_cell(c)}, {g}, {gr[0]} brief, {sc}" for b, c, g, gr, sc in columns)]

    def rate(arm: str, grid: tuple[str, str], col: Column) -> str:
        base, cell, g, _, scoring = col
        r = at.get((base, cell, *grid, g, arm))
        if r is None:
            return "--"
        k = r.successes if scoring == "primary" else r.da_successes
        return f"{k / r.n:.2f} ({k}/{r.n})"

    body = []
    for arm in GATE_LADDER:
        body.append([arm, *(rate(arm, col[3], col) for col in columns)])
        if arm == "raw":
            deconfound = [
                rate("raw", DECONFOUND, col) if col[3] == AMENDED and col[4] == "primary" else "--"
                for col in columns
            ]
            body.append(["  raw, original brief, revised schedule", *deconfound])
    for arm, channels in (("raw", ("re_execution", "superseded", "premature", "omission")),
                          ("checklist", ("re_execution", "superseded"))):  # fmt: skip
        for ch in channels:
            line = [f"  {arm}: {ch.replace('_', '-')} per 128 episodes"]
            for base, cell, g, grid, _ in columns:
                got = at.get((base, cell, *grid, g, arm))
                line.append("--" if got is None else f"{got.channels[ch] * 128 / got.n:.0f}")
            body.append(line)
    printed = set(shared)
    amended = [
        s
        for s in scored
        if (s.brief, s.schedule) == AMENDED and (s.base, s.cell, regime(s.regime)) in printed
    ]
    cs = pair_contrasts(amended, list(itertools.pairwise(GATE_LADDER)), within="base")
    where = {s.config: (s.base, regime(s.regime)) for s in amended}
    for c in cs:
        line = [f"  {c.lower} -> {c.upper}, Holm p (amended, primary)"]
        for base, cell, g, grid, scoring in columns:
            hit = (
                grid == AMENDED
                and scoring == "primary"
                and c.cell == cell
                and where[c.config] == (base, g)
            )
            line.append(p_value(c.p_holm) if hit else "")
        body.append(line)
    title = "Amended-brief replication against the original grid (Table 14)"
    note = family_note(cs, "within model, over the contrasts printed")
    return Table.of("replication", title, header, body, footnote=note).with_contrasts(cs)


def _shared_cells(rows: Sequence[Row]) -> list[tuple[str, CellKey, str]]:
    """The (base configuration, cell, regime) both grids ran, uncorrupted: Table 14's columns."""
    grids: dict[tuple[str, CellKey, str], set[tuple[str, str]]] = defaultdict(set)
    for r in rows:
        if not r.corruption:
            grids[(r.base, r.cell, regime(r.regime))].add((r.brief, r.schedule))
    return sorted(k for k, g in grids.items() if ORIGINAL in g and AMENDED in g)


def not_built(rows: Sequence[Row]) -> dict[str, str]:
    """Each of these tables the runs cannot build, and what run would build it."""
    why: dict[str, str] = {}
    if not _shared_cells(rows):
        why["Table 14"] = (
            "needs one model run under both grids at one cell and regime: --brief original "
            "--schedule original, and --brief amended --schedule paper (the deconfound row: "
            "--brief original --schedule paper), reported together"
        )
    cells: dict[str, set[CellKey]] = defaultdict(set)
    for r in rows:
        if not r.corruption:
            cells[r.model].add(r.cell)
    if not any(len(c) >= 2 for c in cells.values()):
        why["Table 15"] = "needs two or more graph cells of one model (--steps 5,10,15,18)"
    present = {r.arm for r in rows}
    if not any(v in present and p in present for v, p in VARIANTS):
        why["Table 16"] = (
            "needs a prompt-surface variant with its paper arm (--arms checklist,checklist-replace,"
            "checklist-matched,self-ledger,directive,directive-system,enforcement,"
            "enforcement-system)"
        )
    return why
