"""The one-node table: per arm, re-execution of consumed one-shots and trigger recall."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from taskgate.errors import LogFormatError
from taskgate.lab.experiments.onenode.run import ARMS, LOG, NodeTurnRecord, read_node_log
from taskgate.lab.experiments.onenode.testbed import NodeEpisode, bookings, generate
from taskgate.lab.rundir import OnSkip
from taskgate.lab.scoring.stats import wilson
from taskgate.lab.scoring.table import Table


@dataclass
class _Counts:
    episodes: int = 0
    commitments: int = 0
    compiled: int = 0
    triggers: int = 0
    fired: int = 0
    misfires: int = 0
    applied: int = 0  # one-shots executed at their trigger: consumed
    reexecuted: int = 0  # consumed one-shots executed again on a later request
    late: int = 0  # one-shots not executed at their trigger but on a later request
    after: int = 0
    after_hits: int = 0
    controls: int = 0
    controls_hit: int = 0


def _booked(reply: str, work_order: str | None) -> set[str]:
    return {v.lower() for v, wo in bookings(reply) if wo == work_order}


def _add(c: _Counts, ep: NodeEpisode, turns: Sequence[NodeTurnRecord], gated: bool) -> None:
    c.episodes += 1
    c.commitments += len(ep.commitments)
    vendors = {x.vendor.lower() for x in ep.commitments}
    consumed: set[int] = set()
    used_after: set[int] = set()
    for t, rec in zip(ep.turns, turns, strict=True):
        c.compiled += bool(rec.compiled)
        if rec.fired is not None and not (t.role == "trigger" and rec.fired == t.commitment):
            c.misfires += 1
        booked = _booked(rec.reply, t.work_order)
        own = ep.commitments[t.commitment].vendor.lower() if t.commitment is not None else None
        if t.role == "trigger":
            c.triggers += 1
            c.fired += rec.fired == t.commitment
            if own in booked and t.commitment is not None:
                consumed.add(t.commitment)
        elif t.role == "after":
            c.after += 1
            if own in booked and t.commitment is not None:
                c.after_hits += 1
                used_after.add(t.commitment)
        elif t.role == "control":
            c.controls += 1
            c.controls_hit += bool(booked & vendors)
    c.applied += len(consumed)
    c.reexecuted += len(used_after & consumed)
    c.late += len(used_after - consumed)
    if not gated:
        c.compiled = c.fired = c.misfires = 0


def _share(k: int, n: int) -> str:
    if not n:
        return "--"
    lo, hi = wilson(k, n)
    return f"{k / n:.2f} [{lo:.2f},{hi:.2f}] ({k}/{n})"


def node_table(out: Path, on_skip: OnSkip | None = None) -> Table:
    """The one-node table from a run directory alone (its log has no line to skip: an
    unreadable one is an error naming it, so ``on_skip`` is not called)."""
    header, done = read_node_log(out)
    if header is None:
        raise LogFormatError(f"{out} is not a one-node run directory: it has no {LOG}")
    counts = {a: _Counts() for a in ARMS}
    for (seed, arm), turns in sorted(done.items()):
        ep = generate(seed, header.k, header.after, header.controls)
        _add(counts[arm], ep, turns, arm.startswith("trigger"))
    body = []
    for arm, c in counts.items():
        if not c.episodes:
            continue
        gated = arm.startswith("trigger")
        body.append(
            [
                arm,
                str(c.episodes),
                _share(c.reexecuted, c.applied),
                _share(c.after_hits, c.after),
                _share(c.fired, c.triggers) if gated else "--",
                _share(c.applied, c.triggers),
                str(c.late),
                str(c.misfires) if gated else "--",
                f"{c.compiled}/{c.commitments}" if gated else "--",
                _share(c.controls_hit, c.controls),
            ]
        )
    cols = [
        "arm",
        "episodes",
        "consumed one-shots re-executed",
        "after-requests given the one-shot vendor",
        "trigger recall",
        "applied at trigger (consumed)",
        "late first uses",
        "misfires",
        "compiled",
        "controls given a one-shot vendor",
    ]
    title = (
        f"The one-node case: {header.k} concurrent one-shot commitments per episode "
        f"(agent {header.agent}, compiler {header.compiler}, matcher {header.matcher})"
    )
    return Table.of("onenode", title, cols, body)
