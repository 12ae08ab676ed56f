"""The task-state machine G = (V, E, sigma, alpha), advanced only by receipts.

Status is derived, never stored: CANCELLED if cancelled; DONE if an admitted booking (a receipt)
exists; BLOCKED if some prerequisite is not DONE; TODO otherwise. alpha holds the DONE steps whose
re-execution the user explicitly authorized for the current request, and lapses with it.

Everything that changes the state goes through one method, :meth:`TaskMachine._apply`, fed by a
ledger entry; the public methods build that entry, apply it and append it. So the state at any
point is the fold of the ledger up to that point (:meth:`TaskMachine.from_ledger`). A ledger
replayed from outside (:meth:`TaskMachine.from_ledger`, :meth:`TaskMachine.append`) is not taken
on trust: every admission in it is judged again where it was judged, under its policy, and one
the plan would not have admitted there is a :class:`~taskgate.errors.LedgerFormatError`.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

from taskgate.core.booking import Booking, receipt_key
from taskgate.core.graph import TaskGraph, step_sort_key
from taskgate.core.ids import normalize_work_order
from taskgate.core.ledger import (
    AnswerEntry,
    ApprovalEntry,
    AskEntry,
    AttemptEntry,
    LedgerEntry,
    PlanEntry,
    RequestEntry,
    RevisionEntry,
)
from taskgate.core.plan import Plan, Revision
from taskgate.core.verdict import Policy, Reason, Verdict
from taskgate.errors import LedgerFormatError, PlanError, TaskgateError, UsageError, WorkOrderError

K = TypeVar("K")


class Status(StrEnum):
    TODO = "TODO"
    BLOCKED = "BLOCKED"
    DONE = "DONE"
    CANCELLED = "CANCELLED"


@dataclass(frozen=True, slots=True)
class Request:
    """The current request: its work order, the step it resolved to, and the redo flag."""

    work_order: str
    step: str | None = None
    explicit_redo: bool = False


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything that makes up the state, for comparing two machines."""

    statuses: tuple[tuple[str, Status], ...]
    edges: frozenset[tuple[str, str]]
    done: frozenset[str]
    request: Request | None
    authorized: frozenset[str]
    issued: frozenset[str]
    approved: str | None = None  # the step a person approved one call of, this request
    granted: frozenset[str] = frozenset()  # steps whose asked call a person said yes to
    asks: frozenset[str] = frozenset()  # the asks waiting on a person, by id


@dataclass(frozen=True, slots=True)
class Grant:
    """A person's yes to an asked call: that call of ``step`` runs once during the current
    request, with exactly ``tool`` and ``arguments`` (canonical JSON), whatever the request
    asked for; the state still decides (a step cancelled or done since is not run)."""

    ask: str
    step: str
    tool: str
    arguments: str


#: how strictly a policy judges (a replay judges at least as strictly as the gate it rebuilds)
_STRICTNESS = {Policy.UNGATED: 0, Policy.STATE_BOUND: 1, Policy.REQUEST_BOUND: 2}


class _Before(Generic[K]):
    """The keys of ``positions`` that arose before position ``at`` (a set, as ``in`` reads it)."""

    __slots__ = ("_at", "_positions")

    def __init__(self, positions: Mapping[K, int], at: int) -> None:
        self._positions, self._at = positions, at

    def __contains__(self, key: object) -> bool:
        pos = self._positions.get(key)  # type: ignore[arg-type]
        return pos is not None and pos < self._at


class TaskMachine:
    """A plan's task state: graph, receipts ledger, and the current request."""

    def __init__(self, plan: Plan, *, lenient: bool = False, seed: int | None = None) -> None:
        self._graph = TaskGraph(plan, lenient=lenient)
        self._ledger: list[LedgerEntry] = [PlanEntry(plan=plan, lenient=lenient)]
        self._done: set[str] = set()
        # where each part of the state arose (ledger positions), so that the state at an earlier
        # position can be read without a replay (a receipt judged before it was recorded), and
        # the newest attempts retracted (the proxy's pending ones)
        self._receipts: dict[tuple[str, str], int] = {}  # (what, work order) -> position
        self._receipts_of: dict[str, list[int]] = {}  # step -> positions of its receipts
        self._issued: dict[str, int] = {}  # work order -> position
        self._requests: list[tuple[int, Request | None]] = []  # (position, the request then)
        self._revised: list[int] = []  # positions of revisions
        self._graph_before: list[TaskGraph] = []  # the graph as it was before each of them
        self._request: Request | None = None
        #: the step whose one call a person approved during the current request, and the
        #: positions at which that changed (an approval, the next request, the approved receipt)
        self._approved: str | None = None
        self._approvals: list[tuple[int, str | None]] = []
        #: the asks waiting on a person (by id), every ask id ever issued, and the calls a
        #: person said yes to in this request (by step), with the positions those changed at
        self._asks: dict[str, AskEntry] = {}
        self._ask_ids: set[str] = set()
        self._granted: dict[str, Grant] = {}
        self._grants: list[tuple[int, dict[str, Grant]]] = []
        self._floor: Policy | None = None  # replays judge admissions at least this strictly
        #: replays refuse an admission made while the request named no step (see ``judge``)
        self._requested = False
        self._rng = random.Random(seed)

    @classmethod
    def from_ledger(
        cls,
        entries: Sequence[LedgerEntry],
        *,
        seed: int | None = None,
        plan: Plan | None = None,
        policy: Policy | None = None,
        requested: bool = False,
    ) -> TaskMachine:
        """Rebuild the state from a ledger (or any prefix of one that starts with its plan).

        Each entry is applied as :meth:`append` applies it: an admission the plan would not have
        admitted where it stands, a request or revision the state cannot take, is a
        :class:`LedgerFormatError` naming the entry. With ``plan``, the ledger must also start
        from exactly that plan (so a ledger whose plan was edited is refused); with ``policy``,
        each admission is judged at least that strictly, whatever policy its entry names (so an
        entry edited to say ``ungated`` passes nothing the gate's own policy refuses); with
        ``requested``, an admission made at a gating policy while the request named no step (and
        no person approved the call) is refused too, as :meth:`judge` refuses it live."""
        if not entries or not isinstance(entries[0], PlanEntry):
            raise LedgerFormatError("a ledger must start with its plan entry")
        if plan is not None and entries[0].plan != plan:
            raise LedgerFormatError("the ledger's plan is not the plan given: it was edited")
        try:
            machine = cls(entries[0].plan, lenient=entries[0].lenient, seed=seed)
        except PlanError as exc:
            raise LedgerFormatError(f"ledger entry 0: the plan cannot be built: {exc}") from None
        machine._floor = policy
        machine._requested = requested
        for entry in entries[1:]:
            machine.append(entry)
        return machine

    # -- reading ---------------------------------------------------------------------------------
    @property
    def graph(self) -> TaskGraph:
        return self._graph

    @property
    def steps(self) -> tuple[str, ...]:
        return self._graph.steps

    @property
    def ledger(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._ledger)

    @property
    def ledger_length(self) -> int:
        """How many entries the ledger has (without copying it)."""
        return len(self._ledger)

    def last_entry(self) -> LedgerEntry:
        """The newest ledger entry (without copying the ledger)."""
        return self._ledger[-1]

    @property
    def request(self) -> Request | None:
        return self._request

    @property
    def done(self) -> frozenset[str]:
        """Steps with a receipt (cancelled ones included; ``status`` says CANCELLED for those)."""
        return frozenset(self._done)

    def status(self, step: str) -> Status:
        graph = self._graph
        if graph.is_cancelled(step):
            return Status.CANCELLED
        if step in self._done:
            return Status.DONE
        if self.missing(step):
            return Status.BLOCKED
        return Status.TODO

    def statuses(self) -> dict[str, Status]:
        return {s: self.status(s) for s in self._graph.steps}

    def missing(self, step: str) -> tuple[str, ...]:
        """Prerequisites of ``step`` that are not DONE, in natural order."""
        graph, done = self._graph, self._done
        out = [u for u in graph.prerequisites(step) if u not in done or graph.is_cancelled(u)]
        return tuple(sorted(out, key=step_sort_key)) if len(out) > 1 else tuple(out)

    @property
    def authorized(self) -> frozenset[str]:
        """alpha: the DONE steps whose re-execution the current request explicitly authorizes."""
        req = self._request
        if req is None or not req.explicit_redo or req.step is None:
            return frozenset()
        return frozenset({req.step}) if self.status(req.step) is Status.DONE else frozenset()

    def eligible(self) -> tuple[str, ...]:
        """Steps that are TODO now."""
        return tuple(s for s in self._graph.steps if self.status(s) is Status.TODO)

    def snapshot(self) -> Snapshot:
        return Snapshot(
            statuses=tuple(self.statuses().items()),
            edges=self._graph.edges(),
            done=frozenset(self._done),
            request=self._request,
            authorized=self.authorized,
            issued=frozenset(self._issued),
            approved=self._approved,
            granted=frozenset(self._granted),
            asks=frozenset(self._asks),
        )

    # -- the gate --------------------------------------------------------------------------------
    def judge(
        self,
        booking: Booking,
        policy: Policy = Policy.STATE_BOUND,
        in_flight: Collection[str] = (),
        requested: bool = False,
        grants: bool = True,
    ) -> Verdict:
        """Decide on ``booking`` under ``policy`` without recording anything.

        ``requested`` is the engineer's gate's rule that nothing runs on a message that asked
        for nothing: at a gating policy, a booking the state admits is refused
        ``no-resolved-step`` while the request names no step, unless a person approved the call.
        (The paper's state-bound enforcement runs any eligible step: ``requested=False``.)

        ``in_flight`` names the steps whose calls were admitted but whose receipts have not
        arrived (a tool that is still running, a call handed to a client): such a step is not
        DONE, so its dependents are BLOCKED on it, and a second call of it is refused
        ``in-progress`` (at every policy: even ungated, one step never executes twice at
        once).

        A call of a step a person said yes to when asked (:class:`Grant`) is judged by the state
        alone, whatever the request asked for; ``grants=False`` judges it as if no one had (the
        session's call differs from the one shown)."""
        graph = self._graph
        step = (
            graph.step_for_tool(booking.tool)
            if booking.tool is not None
            else graph.step_for_code(booking.code)
        )
        req = self._request
        if req is None or booking.work_order != req.work_order:
            if booking.work_order in self._issued:
                return Verdict("refuse", step, Reason.STALE_WORK_ORDER)
            if req is None:
                return Verdict("refuse", step, Reason.NO_REQUEST)
            return Verdict("refuse", step, Reason.UNKNOWN_WORK_ORDER)
        if step is None:
            unknown = Reason.UNKNOWN_TOOL if booking.tool is not None else Reason.UNKNOWN_CODE
            return Verdict("refuse", None, unknown)
        if (booking.key, booking.work_order) in self._receipts:
            return Verdict("refuse", step, Reason.REPEATED_RECEIPT)
        if step in in_flight:  # at every policy: one step is never executing twice at once
            return Verdict("refuse", step, Reason.IN_PROGRESS)
        if step == self._approved:  # a person approved this call, whatever the state says
            return Verdict("admit", step)
        if grants and step in self._granted:  # a person said yes to this call when asked
            return self._by_state(step, req, granted=True)
        if policy is Policy.UNGATED:
            return Verdict("admit", step)
        if policy is Policy.REQUEST_BOUND:  # first: a call of another step is simply unrequested
            if req.step is None:
                return Verdict("refuse", step, Reason.NO_RESOLVED_STEP)
            if step != req.step:
                return Verdict("refuse", step, Reason.NOT_REQUESTED)
        verdict = self._by_state(step, req)
        if not (requested and verdict.admitted):  # the state's refusals first
            return verdict
        confirm = graph.confirm(step)
        if confirm == "always":  # a person says yes to every call of it (a grant, above)
            return Verdict("refuse", step, Reason.UNCONFIRMED)
        if req.step is None and confirm != "never":  # "never": the state alone decides
            return Verdict("refuse", step, Reason.NO_RESOLVED_STEP)
        return verdict

    def _by_state(self, step: str, req: Request, granted: bool = False) -> Verdict:
        """The state's verdict on a call of ``step`` under ``req``: CANCELLED, DONE without the
        request's redo, BLOCKED, or admitted. ``granted``: a person said yes to this call when
        asked (a repeatable step runs again on that yes, as on a request for it)."""
        status = self.status(step)
        if status is Status.CANCELLED:
            return Verdict("refuse", step, Reason.CANCELLED)
        if status is Status.DONE and not (
            (req.explicit_redo or self._graph.repeatable(step)) and (req.step == step or granted)
        ):  # a repeatable step again on a new request for it; a one-shot one on a redo
            return Verdict("refuse", step, Reason.ALREADY_DONE)
        if status is Status.BLOCKED:
            return Verdict("refuse", step, Reason.BLOCKED, self.missing(step))
        return Verdict("admit", step)

    # -- changing the state (each through one ledger entry) --------------------------------------
    def open_request(
        self, step: str | None = None, *, explicit_redo: bool = False, work_order: str | None = None
    ) -> Request:
        """Open the next request, issuing ``work_order`` (or a fresh nonce); the old one lapses."""
        if step is not None and step not in self._graph:
            self._graph.prerequisites(step)  # raises UnknownStepError naming the step
        if work_order is None:
            wo = self._fresh_work_order()
        else:
            norm = normalize_work_order(work_order)
            if norm is None:
                raise WorkOrderError(f"{work_order!r} is not a work order; expected #W<digits>")
            if norm in self._issued:
                raise WorkOrderError(
                    f"work order {norm} was already issued; each request needs a fresh one"
                )
            wo = norm
        self._append(RequestEntry(work_order=wo, step=step, explicit_redo=explicit_redo))
        assert self._request is not None
        return self._request

    def close_request(self) -> None:
        """End the current request without opening another (a filler or revision turn)."""
        self._append(RequestEntry(work_order=None))

    def submit(self, booking: Booking, policy: Policy = Policy.STATE_BOUND) -> Verdict:
        """Judge ``booking``, record the attempt, and book it if admitted."""
        v = self.judge(booking, policy)
        self.record(booking, v, policy)
        return v

    def record(
        self, booking: Booking, v: Verdict, policy: Policy, judged_at: int | None = None
    ) -> None:
        """Record an attempt judged earlier: an admitted one is a receipt (the step is DONE).

        A tool gate judges a call, runs the tool, and records the receipt only once the tool
        succeeded; the receipt stands for what happened even if the state moved meanwhile.
        ``judged_at`` is the ledger's length when the call was judged, given when a request or
        revision was recorded since (a replay then judges the admission there).
        """
        if judged_at is not None and not 0 < judged_at < len(self._ledger):
            raise UsageError(f"judged_at={judged_at} is not a position of this ledger")
        self._append(
            AttemptEntry(
                code=booking.code,
                tool=booking.tool,
                work_order=booking.work_order,
                policy=policy,
                decision=v.decision,
                step=v.step,
                reason=v.reason,
                missing=v.missing,
                judged_at=judged_at,
            )
        )

    def submit_all(self, bookings: Iterable[Booking], policy: Policy) -> list[Verdict]:
        return [self.submit(b, policy) for b in bookings]

    @property
    def approved(self) -> str | None:
        """The step a person approved one call of during the current request, if any."""
        return self._approved

    def approve(self, step: str, by: str, reason: str = "") -> None:
        """A person approves one call of ``step`` during the current request, whatever the state
        says; recorded as an :class:`ApprovalEntry` (who and why). It lapses with the request,
        or once the approved call's receipt is booked. It does not run a step twice under one
        request's work order (the user asks again for that)."""
        if not by.strip():
            raise UsageError("an approval names who gave it")
        self._append(ApprovalEntry(step=step, by=by, reason=reason))

    @property
    def asks(self) -> dict[str, AskEntry]:
        """The asks waiting on a person's answer, by id (oldest first)."""
        return dict(self._asks)

    @property
    def granted(self) -> dict[str, Grant]:
        """The asked calls a person said yes to in this request, by step."""
        return dict(self._granted)

    def ask(self, entry: AskEntry) -> None:
        """Record that the gate held a call and asked the person (see :class:`AskEntry`)."""
        self._append(entry)

    def answer(self, entry: AnswerEntry) -> None:
        """Record a person's answer to a waiting ask (see :class:`AnswerEntry`); an answer to an
        ask not waiting (answered already, dropped, or never made) is a :class:`UsageError`."""
        self._append(entry)

    def revise(self, revision: Revision) -> None:
        """Apply a revision in place; on error nothing changes and nothing is recorded."""
        self._append(RevisionEntry(revision=revision))

    def append(self, entry: LedgerEntry) -> None:
        """Apply an entry recorded earlier (a saved ledger or journal being replayed) and append
        it. An admission is judged again first, where it was judged and under its policy; one
        the plan would not admit there, a request reusing a work order, a revision the graph
        cannot take, or a second plan entry is a :class:`LedgerFormatError` naming the entry,
        and nothing changes."""
        n = len(self._ledger)
        if isinstance(entry, AttemptEntry) and entry.decision == "admit":
            self._check_admission(entry, n)
        elif isinstance(entry, RequestEntry) and entry.work_order in self._issued:
            raise LedgerFormatError(
                f"ledger entry {n} issues work order {entry.work_order} a second time"
            )
        try:
            self._append(entry)
        except TaskgateError as exc:
            raise LedgerFormatError(f"ledger entry {n} cannot be applied: {exc}") from None

    def _check_admission(self, entry: AttemptEntry, n: int) -> None:
        at = entry.judged_at
        there: TaskMachine = self
        if at is not None:
            if not 0 < at < n:
                raise LedgerFormatError(f"ledger entry {n} was judged at {at}, not before it")
            if any(p >= at for p in self._receipts_of.get(entry.step or "", ())):
                raise LedgerFormatError(
                    f"ledger entry {n} books {entry.step} again, though its call was in flight "
                    f"from entry {at} on: the ledger was edited or forged"
                )
            there = self._at(at)
        policy = entry.policy
        if self._floor is not None and _STRICTNESS[self._floor] > _STRICTNESS[policy]:
            policy = self._floor
        call = Booking(entry.code, entry.work_order, tool=entry.tool)
        verdict = there.judge(call, policy, requested=self._requested)
        what = f"ledger entry {n} admits {entry.tool or entry.code} under {entry.work_order}"
        if verdict.reason is Reason.NO_RESOLVED_STEP and policy is not Policy.REQUEST_BOUND:
            raise LedgerFormatError(
                f"{what} while the user's request asked for no step; this gate runs nothing "
                "unrequested (load it with unrequested='run' if it was written so)"
            )
        if not verdict.admitted or verdict.step != entry.step:
            why = verdict.reason or f"it books {verdict.step}, not {entry.step}"
            raise LedgerFormatError(
                f"{what}, which the plan refuses there ({why}): the ledger was edited or forged"
            )

    def _at(self, at: int) -> TaskMachine:
        """A read-only view of the state when the ledger had ``at`` entries (for judging)."""
        view = TaskMachine.__new__(TaskMachine)
        r = bisect.bisect_left(self._revised, at)  # the first revision since ``at``, if any
        view._graph = self._graph_before[r] if r < len(self._revised) else self._graph
        first_receipt = {s: ps[0] for s, ps in self._receipts_of.items() if ps}
        view._done = _Before(first_receipt, at)  # type: ignore[assignment]
        view._receipts = _Before(self._receipts, at)  # type: ignore[assignment]
        view._issued = _Before(self._issued, at)  # type: ignore[assignment]
        k = bisect.bisect_left(self._requests, at, key=lambda r: r[0])
        view._request = self._requests[k - 1][1] if k else None
        a = bisect.bisect_left(self._approvals, at, key=lambda r: r[0])
        view._approved = self._approvals[a - 1][1] if a else None
        g = bisect.bisect_left(self._grants, at, key=lambda r: r[0])
        view._granted = self._grants[g - 1][1] if g else {}
        return view

    def retract(self, count: int) -> None:
        """Take back the newest ``count`` entries, which must all be attempts (the proxy's
        pending ones, when the client's next request does not commit them), in time linear in
        ``count``."""
        if not 0 <= count < len(self._ledger):
            raise UsageError(f"cannot retract {count} of {len(self._ledger)} ledger entries")
        tail = self._ledger[len(self._ledger) - count :]
        if not all(isinstance(e, AttemptEntry) for e in tail):
            raise UsageError("only attempts can be retracted")
        for entry in reversed(tail):
            assert isinstance(entry, AttemptEntry)
            self._ledger.pop()
            if self._approvals and self._approvals[-1][0] == len(self._ledger):
                self._approvals.pop()  # the receipt had used an approval: it stands again
                self._approved = self._approvals[-1][1] if self._approvals else None
            if self._grants and self._grants[-1][0] == len(self._ledger):
                self._grants.pop()  # the receipt had used a grant: it stands again
                self._granted = dict(self._grants[-1][1]) if self._grants else {}
            if entry.decision == "admit" and entry.step is not None:
                positions = self._receipts_of[entry.step]
                positions.pop()
                if not positions:
                    del self._receipts_of[entry.step]
                    self._done.discard(entry.step)
                self._receipts.pop((receipt_key(entry.code, entry.tool), entry.work_order), None)

    # -- fault injection and repair (the corrupted-state ablation) -------------------------------
    def corrupt_completion(self, step: str, done: bool) -> None:
        """Set or clear a DONE bit behind the ledger's back (never recorded)."""
        self._graph.prerequisites(step)
        (self._done.add if done else self._done.discard)(step)

    def repair_completions(self) -> int:
        """Rebuild the completion set from the ledger's receipts; return how many bits changed."""
        rebuilt = {
            e.step for e in self._ledger if isinstance(e, AttemptEntry) and e.decision == "admit"
        }
        rebuilt.discard(None)
        changed = len(self._done.symmetric_difference(rebuilt))
        self._done = {s for s in rebuilt if s is not None}
        return changed

    # -- internals -------------------------------------------------------------------------------
    def _append(self, entry: LedgerEntry) -> None:
        self._apply(entry, len(self._ledger))
        self._ledger.append(entry)

    def _apply(self, entry: LedgerEntry, pos: int) -> None:
        if isinstance(entry, RequestEntry):
            if entry.work_order is None:
                self._request = None
            else:
                self._issued[entry.work_order] = pos
                self._request = Request(entry.work_order, entry.step, entry.explicit_redo)
            self._requests.append((pos, self._request))
            self._set_approved(None, pos)
            self._set_granted({}, pos)
        elif isinstance(entry, AttemptEntry):
            if entry.decision == "admit" and entry.step is not None:
                self._done.add(entry.step)
                self._receipts[(receipt_key(entry.code, entry.tool), entry.work_order)] = pos
                self._receipts_of.setdefault(entry.step, []).append(pos)
                if entry.step == self._approved:  # the approval is used up
                    self._set_approved(None, pos)
                elif entry.step in self._granted:  # so is a yes to an asked call
                    self._set_granted({s: g for s, g in self._granted.items()
                                       if s != entry.step}, pos)  # fmt: skip
        elif isinstance(entry, ApprovalEntry):
            if self._request is None:
                raise UsageError("a call is approved during a request: none is open")
            if self._approved is not None:  # one at a time: it is used, or lapses first
                raise UsageError(
                    f"a call of {self._approved} is approved already in this request: one "
                    "approval at a time (it is used, or lapses with the request)"
                )
            self._graph.prerequisites(entry.step)  # raises UnknownStepError naming the step
            self._set_approved(entry.step, pos)
        elif isinstance(entry, AskEntry | AnswerEntry):
            self._apply_ask(entry, pos)
        elif isinstance(entry, RevisionEntry):
            before = self._graph.copy()
            self._graph.apply(entry.revision)
            self._asks.clear()  # the state moved on: what was asked is no longer the question
            self._set_granted({}, pos)
            self._revised.append(pos)
            self._graph_before.append(before)
        else:
            raise PlanError("a plan entry can only start a ledger")

    def _apply_ask(self, entry: AskEntry | AnswerEntry, pos: int) -> None:
        if isinstance(entry, AskEntry):
            if self._request is None:
                raise UsageError("a call is asked about during a request: none is open")
            if entry.id in self._ask_ids:
                raise UsageError(f"ask {entry.id} was made already: an ask id is used once")
            self._graph.prerequisites(entry.step)  # raises UnknownStepError naming the step
            self._ask_ids.add(entry.id)
            self._asks[entry.id] = entry
            return
        asked = self._asks.pop(entry.ask, None)
        if asked is None:
            raise UsageError(
                f"no ask {entry.ask!r} is waiting: it was answered already, the conversation "
                "moved on, or it was never made"
            )
        if entry.decision in ("approve", "edit"):
            if self._request is None:
                self._asks[entry.ask] = asked
                raise UsageError("a call is granted during a request: none is open")
            if entry.decision == "edit" and entry.arguments is None:
                self._asks[entry.ask] = asked
                raise UsageError("an edit gives the call's new arguments")
            args = entry.arguments if entry.decision == "edit" else asked.arguments
            grant = Grant(asked.id, asked.step, asked.tool, args or "{}")
            self._set_granted({**self._granted, asked.step: grant}, pos)

    def _set_granted(self, granted: dict[str, Grant], pos: int) -> None:
        if granted != self._granted:
            self._granted = granted
            self._grants.append((pos, granted))

    def _set_approved(self, step: str | None, pos: int) -> None:
        if step != self._approved:
            self._approved = step
            self._approvals.append((pos, step))

    def _fresh_work_order(self) -> str:
        for _ in range(1000):
            wo = f"#W{self._rng.randint(1000, 9999)}"
            if wo not in self._issued:
                return wo
        while True:  # the 4-digit space is nearly used up
            wo = f"#W{self._rng.randint(100000, 999999)}"
            if wo not in self._issued:
                return wo
