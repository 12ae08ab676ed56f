"""The exact-match scorer with dynamic ground truth (Section 4.2, Appendices A and D).

Ground truth is recomputed turn by turn from the executions the arm actually admitted: a reference
state on the generator's graph books each execution as it happened, and every turn is judged by the
definition of Section 3.1 against the state *before* it. Each violation falls in one of six error
channels:

* re-execution: a DONE step executed without authorization;
* superseded: a CANCELLED step executed;
* premature: a BLOCKED step executed;
* omission: the requested step was TODO and was not executed;
* unrequested: a step other than the requested one executed (every booking on a turn that resolves
  to no step, ambiguous probes included);
* refused redo: an authorized re-execution was not executed.

Strict episode success means no error on any turn. Under the primary scoring every admitted booking
is an execution; under decline-aware scoring one whose reply declines it (see
:mod:`taskgate.protocol.refusals`) is a citation instead. Re-displays are never executions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from taskgate.core.booking import Booking
from taskgate.core.ids import normalize_code, normalize_tool
from taskgate.core.machine import Status
from taskgate.core.plan import Plan, Revision
from taskgate.core.verdict import WORK_ORDER_REASONS, Policy
from taskgate.errors import LogFormatError
from taskgate.lab.episodes.models import STEP_LABELS, Episode
from taskgate.lab.episodes.records import BookingRecord, TurnRecord
from taskgate.lab.episodes.tools import tool_plan
from taskgate.protocol.refusals import (
    has_decline_annotation,
    has_refusal_language,
    is_refusal,
    local_context,
)

CHANNELS = ("re_execution", "superseded", "premature", "omission", "unrequested", "refused_redo")
#: The label whose scheduled turn count is each channel's denominator (unrequested is reported as
#: a count): the rate counts the turns of that label on which the channel fired (Table 9).
DENOMINATOR = {
    "re_execution": "redo_probe",
    "superseded": "superseded_cue",
    "premature": "premature",
    "omission": "ask",
    "refused_redo": "legit_redo",
}
DIRECTIVE_TYPES = ("ELIGIBLE", "BLOCKED", "DONE", "REDO", "CANCELLED")
TRAP_DIRECTIVES = frozenset({"BLOCKED", "DONE", "CANCELLED"})


@dataclass
class Scoring:
    """One scoring (primary or decline-aware) of one episode-arm."""

    channels: Counter[str] = field(default_factory=Counter)
    labels: Counter[str] = field(default_factory=Counter)  # realized labels
    scored_turns: int = 0
    correct_turns: int = 0
    errors: dict[int, list[str]] = field(default_factory=dict)  # turn index -> its channels
    #: turn index -> its realized label, where that differs from the scripted one
    realized: dict[int, str] = field(default_factory=dict)
    #: the scheduled (scripted) label of each scored turn: the channels' fixed denominators
    scheduled: Counter[str] = field(default_factory=Counter)
    #: per channel, the turns scheduled with its label (:data:`DENOMINATOR`) on which it fired,
    #: each turn once: the numerator of the paper's channel rate (Table 9)
    on_label: Counter[str] = field(default_factory=Counter)

    @property
    def strict(self) -> bool:
        return sum(self.channels.values()) == 0


@dataclass
class EpisodeScore:
    episode: str
    arm: str
    primary: Scoring
    decline_aware: Scoring
    redisplays: int = 0
    stale: int = 0  # the harness: calls refused for a work order not the current one (every arm)
    refused: int = 0
    false_completions: int = 0
    matcher_total: int = 0
    matcher_agree: int = 0
    redo_tp: int = 0
    redo_fp: int = 0
    redo_fn: int = 0
    directives: Counter[str] = field(default_factory=Counter)
    obeyed: Counter[str] = field(default_factory=Counter)
    matched_labels: Counter[str] = field(default_factory=Counter)  # matched turns per label
    ask_backs: Counter[str] = field(default_factory=Counter)  # asked back, per scripted label


def score_episode(episode: Episode, records: Sequence[TurnRecord]) -> EpisodeScore:
    """Score one episode-arm from its turn records."""
    if [r.index for r in records] != [t.index for t in episode.turns]:
        raise LogFormatError(
            f"episode {episode.id}: the log has turns {[r.index for r in records][:5]}..., "
            f"expected all {len(episode.turns)} turns in order"
        )
    arm = records[0].arm if records else "?"
    plan = tool_plan(episode) if _harness(records) else episode.plan
    primary = _ground_truth(episode, records, plan, frozenset())
    cited = _citations(records)
    score = EpisodeScore(
        episode.id,
        arm,
        primary,
        _ground_truth(episode, records, plan, cited) if cited else _copy(primary),
    )
    for rec in records:
        _count_gate(score, rec)
        _count_matcher(score, rec)
        _count_obedience(score, rec)
    return score


class _Reference:
    """The reference state the scorer books executions into: the generator's graph (valid by
    construction), its completion set and receipts, and the current request. It follows
    :class:`TaskMachine`'s rules under the ungated policy (a booking is an execution when it
    carries the current work order, names a step and repeats no receipt) without a ledger, so
    that scoring stays cheap; ``tests/lab/test_scorer_reference.py`` holds the two to the same
    results."""

    __slots__ = ("authorized", "by_code", "by_tool", "cancelled", "done", "prereqs", "receipts")

    def __init__(self, plan: Plan) -> None:
        self.prereqs = {sid: frozenset(spec.deps) for sid, spec in plan.steps.items()}
        self.by_code: dict[str, str] = {}
        self.by_tool: dict[str, str] = {}
        for sid, spec in plan.steps.items():
            key = normalize_tool(spec.tool) if plan.binding == "tool" else normalize_code(spec.code)
            if key is not None:
                (self.by_tool if plan.binding == "tool" else self.by_code).setdefault(key, sid)
        self.cancelled: set[str] = set()
        self.done: set[str] = set()
        self.receipts: set[tuple[str, str]] = set()
        self.authorized: str | None = None

    def revise(self, revision: Revision) -> None:
        for w, ps in revision.rewires.items():
            self.prereqs[w] = frozenset(ps)
        if revision.relax is not None:
            w, u = revision.relax
            self.prereqs[w] = self.prereqs[w] - {u}
        if revision.cancel is not None:
            self.cancelled.add(revision.cancel)

    def status(self, step: str) -> Status:
        if step in self.cancelled:
            return Status.CANCELLED
        if step in self.done:
            return Status.DONE
        prereqs = self.prereqs[step]
        if not prereqs <= self.done or not prereqs.isdisjoint(self.cancelled):
            return Status.BLOCKED
        return Status.TODO


def _citations(records: Sequence[TurnRecord]) -> frozenset[tuple[int, int]]:
    """(turn index, booking index) of each admitted booking of its turn's work order that the
    decline-aware scoring reads as a citation (see :mod:`taskgate.protocol.refusals`)."""
    out = []
    for rec in records:
        refusal: dict[int, bool] = {}
        for i, b in enumerate(rec.bookings):
            if b.decision != "admit" or b.work_order != rec.work_order:
                continue
            reply = rec.replies[b.reply_index]
            if b.reply_index not in refusal:
                refusal[b.reply_index] = is_refusal(reply)
            if refusal[b.reply_index] or has_decline_annotation(local_context(reply, _booking(b))):
                out.append((rec.index, i))
    return frozenset(out)


def _copy(s: Scoring) -> Scoring:
    return Scoring(
        Counter(s.channels),
        Counter(s.labels),
        s.scored_turns,
        s.correct_turns,
        dict(s.errors),
        dict(s.realized),
        Counter(s.scheduled),
        Counter(s.on_label),
    )


def _ground_truth(
    episode: Episode,
    records: Sequence[TurnRecord],
    plan: Plan,
    cited: frozenset[tuple[int, int]],
) -> Scoring:
    out = Scoring()
    truth = _Reference(plan)
    for turn, rec in zip(episode.turns, records, strict=True):
        if turn.label == "revision":
            truth.revise(episode.revision)
        if turn.work_order is None:
            continue
        v = turn.step
        before = truth.status(v) if v else None
        redo = turn.explicit_redo and before is Status.DONE
        truth.authorized = v if redo else None
        label = _realized_label(turn.label, before, redo)
        out.labels[label] += 1
        out.scheduled[turn.label] += 1
        if label != turn.label:
            out.realized[rec.index] = label
        errors: list[str] = []
        executed_v = False
        for x, status, ok_redo in _executions(truth, rec, turn.work_order, cited):
            if x is None or status is None:  # the harness: a workspace tool no step is bound to
                errors.append("unrequested")
            elif status is Status.CANCELLED:
                errors.append("superseded")
            elif status is Status.DONE and not ok_redo:
                errors.append("re_execution")
            elif status is Status.BLOCKED:
                errors.append("premature")
            elif x != v:
                errors.append("unrequested")
            else:
                executed_v = True
        owed = before is Status.TODO or redo
        if owed and not executed_v:
            # a requested redo not executed is a refused redo, also where an earlier omission left
            # the step TODO (Appendix D.3 counts "one refused redo that follows from an earlier
            # omission")
            errors.append("refused_redo" if label == "legit_redo" else "omission")
        if errors:
            out.channels.update(errors)
            out.errors[rec.index] = errors
            out.on_label.update(c for c in set(errors) if DENOMINATOR.get(c) == turn.label)
        out.scored_turns += 1
        out.correct_turns += not errors
    return out


Executed = tuple[str | None, Status | None, bool]


def _executions(
    truth: _Reference, rec: TurnRecord, work_order: str, cited: frozenset[tuple[int, int]]
) -> Iterator[Executed]:
    """The turn's executions, each as (step, its status at the request, re-execution authorized),
    booked into ``truth``. Status is sigma at the request (Section 3.1): a step the agent books
    after its prerequisites in the same reply was BLOCKED when asked, so it is premature, and the
    prerequisites are unrequested.

    Testbed: the admitted bookings of the turn's work order (a re-display, a repeated receipt or,
    decline-aware, a citation is none). The real-tool harness: the stamped blocks the workspace
    received; each is an execution, a second block of a step in one turn included, and a tool
    that no step is bound to is ``(None, ...)``.
    """
    done: list[str] = []  # booked once the turn is judged: status is sigma at the request
    if rec.executions is not None:
        for e in rec.executions:
            x = truth.by_tool.get(e.tool)
            if x is None:
                yield None, None, False
                continue
            # sigma at the request, except that a second execution of a step that was owed (TODO,
            # or an authorized redo, which covers one execution) re-executes what the first did
            again = x in done
            done.append(x)
            truth.receipts.add((f"tool:{e.tool}", e.work_order))
            status = truth.status(x)
            if again and status in (Status.TODO, Status.DONE):
                status = Status.DONE
            yield x, status, x == truth.authorized and not again
    else:
        for i, b in enumerate(rec.bookings):
            if b.decision != "admit" or b.work_order != work_order or (rec.index, i) in cited:
                continue
            x = truth.by_code.get(b.code)
            if x is None or (b.code, b.work_order) in truth.receipts:
                continue
            done.append(x)
            truth.receipts.add((b.code, b.work_order))
            yield x, truth.status(x), x == truth.authorized
    truth.done.update(done)


def _harness(records: Sequence[TurnRecord]) -> bool:
    return bool(records) and records[0].executions is not None


def _realized_label(scripted: str, status: Status | None, authorized: bool) -> str:
    """The turn's label as the state was when it was asked (dynamic ground truth). An explicit
    redo of a step an earlier omission left TODO stays a redo turn: its failure is a refused redo
    (Appendix D.3)."""
    if status is None:
        return scripted
    if scripted == "legit_redo" and status is Status.TODO:
        return scripted
    return {
        Status.TODO: "ask",
        Status.BLOCKED: "premature",
        Status.CANCELLED: "superseded_cue",
        Status.DONE: "legit_redo" if authorized else "redo_probe",
    }[status]


def _booking(b: BookingRecord) -> Booking:
    return Booking(b.code, b.work_order, b.span)


def _count_gate(score: EpisodeScore, rec: TurnRecord) -> None:
    if rec.executions is not None:  # the harness: a refused call is an execution prevented
        for b in rec.bookings:
            if b.reason in WORK_ORDER_REASONS:
                score.stale += 1
            elif b.decision == "refuse" and rec.policy is not Policy.UNGATED:
                score.refused += 1
                score.false_completions += not has_refusal_language(rec.visible_reply)
        return
    for b in rec.bookings:
        if b.redisplay:
            score.redisplays += 1
        elif b.decision == "refuse" and rec.policy is not Policy.UNGATED:
            score.refused += 1
            score.false_completions += not has_refusal_language(rec.visible_reply)


def _count_matcher(score: EpisodeScore, rec: TurnRecord) -> None:
    if rec.matched is None:
        return
    score.matched_labels[rec.label] += 1
    if rec.ask_back is not None:
        score.ask_backs[rec.label] += 1
    if rec.label in STEP_LABELS:
        score.matcher_total += 1
        score.matcher_agree += rec.matched.step == rec.step
    flag, truth = rec.matched.explicit_redo, rec.label == "legit_redo"
    score.redo_tp += flag and truth
    score.redo_fp += flag and not truth
    score.redo_fn += truth and not flag


def directive_type(directive: str) -> tuple[str, str]:
    """(type, step) of a directive line."""
    step = directive.split()[2]
    if "was CANCELLED" in directive:
        return "CANCELLED", step
    if "explicitly authorizes" in directive:
        return "REDO", step
    if "already DONE" in directive:
        return "DONE", step
    if "is BLOCKED" in directive:
        return "BLOCKED", step
    return "ELIGIBLE", step


def _count_obedience(score: EpisodeScore, rec: TurnRecord) -> None:
    if rec.directive is None:
        return
    kind, step = directive_type(rec.directive)
    attempted = any(
        b.step == step and b.work_order == rec.work_order and b.reason != "repeated-receipt"
        for b in rec.bookings
        if b.reply_index == 0
    )
    score.directives[kind] += 1
    score.obeyed[kind] += attempted != (kind in TRAP_DIRECTIVES)
