"""Appendix F's tables: the memory baselines against the ladder (Table 18) and the recall
diagnostics behind them (hits per queried turn, empty searches, store populated, and whether the
recall block held the redone step's receipt when the agent re-executed)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from taskgate.lab.arms.registry import MEMORY_LADDER, memory_kind
from taskgate.lab.episodes.records import BookingRecord, TurnRecord
from taskgate.lab.scoring.report import family_note, p_value, where
from taskgate.lab.scoring.summary import CellKey, Contrast, Entry, Row, Scored, pair_contrasts
from taskgate.lab.scoring.table import Table

MEMORY_ARMS = tuple(a for a in MEMORY_LADDER if memory_kind(a) is not None)


def memory_arms_in(arms: Sequence[str]) -> bool:
    return any(memory_kind(a) is not None for a in arms)


def memory(rows: Sequence[Row], scored: Sequence[Scored]) -> Table:
    """Table 18's layout, per configuration and cell: strict and decline-aware success,
    omissions, and exact McNemar against the raw transcript on shared seeds; Holm over the
    memory-vs-raw contrasts, and the self-ledger's over its own (against raw and checklist)."""
    present = {r.arm for r in rows}
    if not memory_arms_in(list(present)):
        return Table.of("memory", "", [], [])
    mem = pair_contrasts(scored, [("raw", a) for a in MEMORY_ARMS], within="model")
    vs_raw = _by_pair(mem)
    ledger = [("raw", "self-ledger"), ("checklist", "self-ledger")]
    own = pair_contrasts(scored, ledger, within="model")
    vs_raw.update(_by_pair([c for c in own if c.lower == "raw"]))
    multi = len({r.config for r in rows}) > 1
    order = [a for a in MEMORY_LADDER if a in present]
    by = {(r.config, r.cell, r.arm): r for r in rows}
    body = []
    for config, cell in dict.fromkeys((r.config, r.cell) for r in rows):
        for arm in order:
            r = by.get((config, cell, arm))
            if r is None:
                continue
            c = vs_raw.get((config, cell, arm))
            body.append(
                [
                    where(config, cell, multi),
                    arm,
                    f"{r.rate:.2f}",
                    f"{r.da_rate:.2f}",
                    str(r.channels.get("omission", 0)),
                    "--" if c is None else p_value(c.p_holm),
                    "--" if c is None else f"({c.only_lower},{c.only_upper})",
                ]
            )
    header = ["cell", "arm", "strict", "DA", "omissions", "Holm p vs raw", "discordant (raw,arm)"]
    title = "Retrieval-memory baselines and the self-ledger against the ladder (Table 18)"
    note = " ".join(
        n
        for n in (
            family_note(mem, "the memory-vs-raw contrasts within model"),
            family_note(own, "the self-ledger's own contrasts (vs raw and vs checklist)"),
        )
        if n
    )
    return Table.of("memory", title, header, body, footnote=note).with_contrasts([*mem, *own])


def _by_pair(cs: Sequence[Contrast]) -> dict[tuple[str, CellKey, str], Contrast]:
    return {(c.config, c.cell, c.upper): c for c in cs}


def recall(entries: Sequence[Entry]) -> Table:
    """The recall diagnostics per (cell, memory arm): queried turns (a search of a non-empty
    store), hits per queried turn, empty searches, episodes whose store was populated, and the
    re-executions whose recall block held the redone step's own receipt."""
    groups: dict[tuple[str, CellKey, str], list[Entry]] = defaultdict(list)
    for e in entries:
        if memory_kind(e.scored.score.arm) is not None:
            groups[(e.scored.config, e.scored.cell, e.scored.score.arm)].append(e)
    multi = len({c for c, _, _ in groups}) > 1
    rank = {a: i for i, a in enumerate(MEMORY_ARMS)}
    body = [
        [where(config, cell, multi), arm, *_recall_line(groups[(config, cell, arm)])]
        for config, cell, arm in sorted(groups, key=lambda k: (k[0], k[1], rank[k[2]]))
    ]
    header = [
        "cell",
        "arm",
        "episodes",
        "queried turns",
        "hits/queried turn",
        "empty searches",
        "store populated",
        "re-executions",
        "with the step's receipt recalled",
    ]
    return Table.of("recall", "Recall diagnostics of the memory arms (Appendix F)", header, body)


def _recall_line(group: list[Entry]) -> list[str]:
    queried = hits = empty = populated = redone = shown = 0
    for e in group:
        turns = e.run.turns
        stores = [t.recall.store for t in turns if t.recall is not None]
        populated += bool(stores) and max(stores) > 0
        for t in turns:
            if t.recall is None or t.recall.store == 0:
                continue
            queried += 1
            hits += len(t.recall.items)
            empty += not t.recall.items
        for t in turns:
            if "re_execution" in e.scored.score.primary.errors.get(t.index, []):
                redone += 1
                shown += _receipt_recalled(turns, t)
    return [
        str(len(group)),
        str(queried),
        f"{hits / queried:.2f}" if queried else "--",
        str(empty),
        f"{populated}/{len(group)}",
        str(redone),
        f"{shown}/{redone}",
    ]


def _receipt_recalled(turns: Sequence[TurnRecord], turn: TurnRecord) -> bool:
    """Whether the turn's recall block held the work order of an earlier admitted booking of a
    step the turn booked again (the original receipt)."""
    if turn.recall is None:
        return False
    steps = {b.step for b in turn.bookings if b.decision == "admit" and b.step is not None}
    earlier: list[BookingRecord] = [
        b
        for t in turns
        if t.index < turn.index
        for b in t.bookings
        if b.decision == "admit" and b.step in steps
    ]
    numbers = {b.work_order.removeprefix("#W") for b in earlier}
    return any(
        m.group(1) in numbers for item in turn.recall.items for m in _ORDER_NUMBER.finditer(item)
    )


#: a work order as a memory may restate it: "#W8733", "W8733", "W-8733", "work order 8733"
_ORDER_NUMBER = re.compile(r"(?:#?\bW-?|work order #?)([0-9]{3,6})\b", re.IGNORECASE)
