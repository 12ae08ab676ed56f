"""The paper's tables that need more than the per-row counts: the ladder inventory (Table 8),
the omission attribution of the gate arms (Table 10) and the corrupted-state table (Table 12)."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from taskgate.core.ids import normalize_code, normalize_tool
from taskgate.core.plan import Plan, Revision
from taskgate.lab.arms.registry import compiled_arm
from taskgate.lab.episodes.records import BookingRecord, TurnRecord
from taskgate.lab.episodes.tools import tool_plan
from taskgate.lab.reporting.appendix import thinks
from taskgate.lab.scoring.report import family_note, p_value, where
from taskgate.lab.scoring.scorer import directive_type
from taskgate.lab.scoring.summary import CellKey, Contrast, Entry, Row
from taskgate.lab.scoring.table import Table
from taskgate.lab.scoring.usage import compiled_key, compiled_revision, revision_matches


def inventory(rows: Sequence[Row], cs: Sequence[Contrast], arms: Sequence[str]) -> Table:
    """Table 8's layout: one line per (scoring, configuration, cell) with the agent's reasoning
    regime (``think``), each arm's strict successes k/n (rate) and each adjacent pair's exact
    McNemar p / Holm-adjusted p, Holm over all contrasts within a scoring (``cs``'s family)."""
    by = {(r.config, r.cell, r.arm): r for r in rows}
    ps = {(c.scoring, c.config, c.cell, c.lower, c.upper): c for c in cs}
    pairs = list(itertools.pairwise(arms))
    think = {r.config: _think(r.regime) for r in rows}
    corrupted = any(r.corruption for r in rows)
    body = []
    for scoring in ("primary", "decline-aware"):
        for config, cell in dict.fromkeys((r.config, r.cell) for r in rows):
            line = [scoring, config, str(cell[0]), f"{cell[1]:g}", think.get(config, "--")]
            line += [f"{cell[2]:g}"] if corrupted else []
            for arm in arms:
                r = by.get((config, cell, arm))
                k = None if r is None else (r.successes if scoring == "primary" else r.da_successes)
                line.append("--" if r is None or k is None else f"{k}/{r.n} ({k / r.n:.2f})")
            for lo, up in pairs:
                c = ps.get((scoring, config, cell, lo, up))
                line.append("--" if c is None else f"{p_value(c.p)}/{p_value(c.p_holm)}")
            body.append(line)
    header = ["scoring", "configuration", "S", "rho", "think", *(["eps"] if corrupted else [])]
    header += [*arms, *(f"{lo}->{up}" for lo, up in pairs)]
    title = (
        "Ladder inventory: strict successes per arm, adjacent exact McNemar p / Holm p (Table 8)"
    )
    note = family_note(cs, "all contrasts within a scoring")
    return Table.of("inventory", title, header, body, footnote=note).with_contrasts(cs)


def _think(regime: str | None) -> str:
    """The inventory's think column as the paper prints it: ``think`` or ``no`` (what the switch
    sent decides, where one was; else the budgets), ``--`` for a scripted agent, the switch after
    it."""
    said = thinks(regime)
    if said is None or regime is None:
        return "--"
    switch = regime.partition(", ")[2]
    word = "think" if said else "no"
    return f"{word} ({switch})" if switch else word


#: Table 10's columns in the paper's order (an omission is declined, a wrong ref or an
#: over-block; an over-block has one root cause), then this report's extras: corruption injected
#: by the ablation, and what the paper's matcher-less attribution has no column for
OMISSION_COLUMNS = (
    "omissions",
    "declined",
    "wrong ref",
    "over-blocked",
    "over-blocked: correct ref",
    "cause: empty code",
    "cause: cancelled prereq",
    "cause: rewire",
    "cause: other",
    "cause: corrupted state",
    "asked back",
    "wrong match",
    "no directive",
)
#: the categories that partition the omissions, and the causes that partition the over-blocks
OMISSION_KINDS = ("declined", "wrong ref", "over-blocked", "asked back", "wrong match",
                  "no directive")  # fmt: skip
OVER_BLOCK_CAUSES = ("cause: empty code", "cause: cancelled prereq", "cause: rewire",
                     "cause: other", "cause: corrupted state")  # fmt: skip


@dataclass
class _Omissions:
    counts: Counter[str]
    episodes: int = 0
    defect: int = 0
    differs: int = 0


def omissions(entries: Sequence[Entry], arms: Sequence[str]) -> Table:
    """Table 10: every omission of an arm that acts on a compiled state, attributed as the
    paper does, to the agent, its booking or the module's compiled state: declined (in prose,
    or with a re-display only), a wrong ref (a code or work order that is not the step's), or
    an over-block: the module's state kept an eligible step from running (a BLOCKED, DONE or
    CANCELLED directive, or the correct ref refused), with the correct refs refused counted
    apart, and one root cause per over-block: a prerequisite's compiled code empty, or the step's
    own (it can never be booked), the cancelled step still a prerequisite after the compiled
    revision, a prerequisite a compiled rewire brought in that the generator's graph lacks, or
    other; corruption injected into the state (the ablation) is a cause of its own. The
    runtime's ask-back and a matcher's wrong step (the paper's attribution has no matcher
    column) and a turn with no directive are extras. Episodes: those the compile validator
    flagged (defect) and those whose compiled graph or revision differs from the generator's
    (differs)."""
    groups: dict[tuple[str, CellKey, str], _Omissions] = defaultdict(lambda: _Omissions(Counter()))
    for e in entries:
        if not compiled_arm(e.scored.score.arm):
            continue
        g = groups[(e.scored.config, e.scored.cell, e.scored.score.arm)]
        g.episodes += 1
        g.defect += bool(e.run.header.plan_defects or any(t.revision_defects for t in e.run.turns))
        g.differs += _differs(e)
        for i, errors in e.scored.score.primary.errors.items():
            if "omission" in errors:
                g.counts["omissions"] += 1
                g.counts.update(_attribute(e, e.run.turns[i]))
    configs = list(dict.fromkeys(c for c, _, _ in groups))
    multi = len(configs) > 1
    body = []
    total = _Omissions(Counter())
    rank = {a: i for i, a in enumerate(arms)}
    for config, cell, arm in sorted(
        groups, key=lambda k: (configs.index(k[0]), k[1], rank.get(k[2], len(rank)))
    ):
        g = groups[(config, cell, arm)]
        body.append(_omission_line(where(config, cell, multi), arm, g))
        total.counts.update(g.counts)
        total.episodes += g.episodes
        total.defect += g.defect
        total.differs += g.differs
    if len(groups) > 1:
        body.append(_omission_line("all", "", total))
    header = ["cell", "arm", *OMISSION_COLUMNS, "episodes: defect", "episodes: differ"]
    title = "Omission attribution on the arms that act on a compiled state (Table 10)"
    return Table.of("omissions", title, header, body)


def _omission_line(cell: str, arm: str, g: _Omissions) -> list[str]:
    return [
        cell,
        arm,
        *(str(g.counts[c]) for c in OMISSION_COLUMNS),
        f"{g.defect}/{g.episodes}",
        f"{g.differs}/{g.episodes}",
    ]


def _attribute(e: Entry, rec: TurnRecord) -> list[str]:
    if rec.ask_back is not None:
        return ["asked back"]
    if rec.matched is not None and rec.matched.step != rec.step:
        return ["wrong match"]
    kind = directive_type(rec.directive)[0] if rec.directive else None
    correct = [b for b in _correct_ref(e, rec) if not b.redisplay]
    refused = [b for b in correct if b.decision == "refuse"]
    blocked = kind == "BLOCKED"
    if blocked or refused or kind in ("DONE", "CANCELLED"):
        cause = _cause(e, rec) if blocked else _own_cause(e, rec)
        return ["over-blocked", cause] + (["over-blocked: correct ref"] if refused else [])
    if kind == "ELIGIBLE":
        attempts = [b for b in rec.bookings if not b.redisplay]
        return ["wrong ref" if attempts else "declined"]
    return ["no directive"]


def _truth_plan(e: Entry) -> Plan:
    return tool_plan(e.episode) if e.run.header.compiled_plan.binding == "tool" else e.episode.plan


def _correct_ref(e: Entry, rec: TurnRecord) -> list[BookingRecord]:
    if rec.step is None:
        return []
    truth = _truth_plan(e)
    key = truth.key(rec.step)
    if truth.binding == "tool":
        return [b for b in rec.bookings if b.tool == key and b.work_order == rec.work_order]
    return [b for b in rec.bookings if b.code == key and b.work_order == rec.work_order]


def _cause(e: Entry, rec: TurnRecord) -> str:
    """Why the compiled state blocked the requested step: one cause per omission."""
    plan, step = e.run.header.compiled_plan, rec.step
    if any(t.corruptions for t in e.run.turns[: rec.index + 1]):
        return "cause: corrupted state"
    if step is None or step not in plan.steps:
        return "cause: other"
    deps = set(plan.steps[step].deps)
    revision = _revision_before(e, rec.index)
    truth_deps = set(e.episode.plan.steps[step].deps)
    if revision is not None:
        deps = _revised(deps, step, revision)
        truth_deps = _revised(truth_deps, step, e.episode.revision)
    for u in sorted(deps):
        spec = plan.steps.get(u)
        norm = normalize_tool if plan.binding == "tool" else normalize_code
        if spec is not None and norm(compiled_key(spec, plan.binding)) is None:
            return "cause: empty code"
    if revision is not None and e.episode.revision.cancel in deps:
        return "cause: cancelled prereq"
    if revision is not None and step in revision.rewires and deps - truth_deps:
        return "cause: rewire"
    return "cause: other"


def _own_cause(e: Entry, rec: TurnRecord) -> str:
    """Why the compiled state kept an eligible step from running though it let it be asked
    for: its own compiled code empty (no booking can name it), else what the prerequisites
    say."""
    plan, step = e.run.header.compiled_plan, rec.step
    if any(t.corruptions for t in e.run.turns[: rec.index + 1]):
        return "cause: corrupted state"
    spec = plan.steps.get(step) if step is not None else None
    norm = normalize_tool if plan.binding == "tool" else normalize_code
    if spec is not None and norm(compiled_key(spec, plan.binding)) is None:
        return "cause: empty code"
    return _cause(e, rec)


def _revision_before(e: Entry, index: int) -> Revision | None:
    for t in e.run.turns[:index]:
        if t.label == "revision":
            return t.compiled_revision or Revision()
    return None


def _revised(deps: set[str], step: str, revision: Revision) -> set[str]:
    out = set(revision.rewires[step]) if step in revision.rewires else set(deps)
    if revision.relax is not None and revision.relax[0] == step:
        out.discard(revision.relax[1])
    return out


def _differs(e: Entry) -> bool:
    plan = e.run.header.compiled_plan
    truth = _truth_plan(e)
    if set(plan.steps) != set(truth.steps):
        return True
    for sid, spec in truth.steps.items():
        got = plan.steps[sid]
        if set(got.deps) != set(spec.deps) or compiled_key(got, plan.binding) != truth.key(sid):
            return True
    ran_revision = any(t.label == "revision" for t in e.run.turns)
    return ran_revision and not all(revision_matches(compiled_revision(e.run), e.episode.revision))


EVENT_KINDS = ("spurious-done", "lost-done", "edge-drop")


def corruption(entries: Sequence[Entry], arms: Sequence[str]) -> Table:
    """Table 12: the corrupted-state ablation, event by event from the log. Per (cell, arm) at
    each corruption rate eps > 0: strict success, events per episode, events by kind, the share of
    episodes with at least one event, failures given events and given none, how often one event
    alone is fatal (single-event episodes, per kind), and the DONE bits receipts repair restored."""
    groups: dict[tuple[str, CellKey, str], list[Entry]] = defaultdict(list)
    for e in entries:
        if e.scored.cell[2] > 0 and compiled_arm(e.scored.score.arm):
            groups[(e.scored.config, e.scored.cell, e.scored.score.arm)].append(e)
    configs = list(dict.fromkeys(c for c, _, _ in groups))
    multi = len(configs) > 1
    rank = {a: i for i, a in enumerate(arms)}
    body = []
    for config, cell, arm in sorted(
        groups, key=lambda k: (configs.index(k[0]), k[1], rank.get(k[2], len(rank)))
    ):
        body.append(_corruption_line(where(config, cell, multi), arm, groups[(config, cell, arm)]))
    header = [
        "cell",
        "arm",
        "strict",
        "events/ep",
        "spurious DONE / lost DONE / edge drop",
        "P(>=1)",
        "fail | >=1",
        "fail | 0",
        "fatal alone: spurious / lost / edge",
        "repaired bits",
    ]
    title = "Corrupted-state ablation, replayed event by event (Table 12)"
    return Table.of("corruption", title, header, body)


def _corruption_line(cell: str, arm: str, group: list[Entry]) -> list[str]:
    n = len(group)
    kinds: Counter[str] = Counter()
    hit = fail_hit = fail_clean = repaired = 0
    alone: dict[str, list[int]] = {k: [0, 0] for k in EVENT_KINDS}
    for e in group:
        events = [c.split()[0] for t in e.run.turns for c in t.corruptions]
        repaired += sum(t.repaired for t in e.run.turns)
        kinds.update(events)
        failed = not e.scored.score.primary.strict
        if events:
            hit += 1
            fail_hit += failed
        else:
            fail_clean += failed
        if len(events) == 1 and events[0] in alone:
            alone[events[0]][0] += failed
            alone[events[0]][1] += 1
    strict = sum(e.scored.score.primary.strict for e in group) / n
    return [
        cell,
        arm,
        f"{strict:.2f}",
        f"{sum(kinds.values()) / n:.2f}",
        " / ".join(str(kinds[k]) for k in EVENT_KINDS),
        f"{hit / n:.2f}",
        f"{fail_hit}/{hit}" if hit else "--",
        f"{fail_clean}/{n - hit}" if n - hit else "--",
        " / ".join(f"{k}/{m}" if m else "--" for k, m in alone.values()),
        str(repaired),
    ]
