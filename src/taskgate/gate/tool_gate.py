"""One small object an engineer wraps around any tool dispatcher.

The gate holds a :class:`~taskgate.TaskMachine` over a tool-bound plan. For each tool call it
judges the call against the current request (state-bound or request-bound; a stale work order is
refused under every policy), lets an admitted call run, and records the receipt once the call
succeeded. Judging and reserving the step happen in one critical section, and so does recording
the receipt: tool calls of one model turn may run concurrently, and a second call of a step that
another admitted call is executing is refused (``in-progress``), so two calls of the same step
never both execute. A call that fails books nothing and releases the step.

The gate's state is its receipts ledger: :attr:`ToolGate.ledger` and
:meth:`ToolGate.from_ledger` save and restore it exactly.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from taskgate._aio import run_sync
from taskgate.core.booking import Booking
from taskgate.core.graph import TaskGraph, step_sort_key
from taskgate.core.ids import normalize_tool, normalize_work_order
from taskgate.core.ledger import ApprovalEntry, AttemptEntry, LedgerEntry, RequestEntry
from taskgate.core.machine import Request, TaskMachine
from taskgate.core.plan import Plan, Revision
from taskgate.core.verdict import Policy, Reason, Verdict
from taskgate.errors import LedgerFormatError, PlanError, TaskgateError, ToolRefused, UsageError
from taskgate.gate.notices import plain_refusal
from taskgate.matching.askback import ask_back_question
from taskgate.matching.lexical import LexicalMatcher
from taskgate.matching.wordings import worded
from taskgate.protocol.render import render_checklist, render_directive, render_rejection
from taskgate.roles import Match, Matcher

T = TypeVar("T")
#: what a refused call's notice says: plain words (the default), or the paper's rejection notice
Notices = Literal["plain", "protocol"]
#: a gated call while the user's current message asked for no step of the plan: refused (the
#: default), or run when the state admits it (the paper's state-bound enforcement)
Unrequested = Literal["refuse", "run"]


@dataclass(frozen=True, slots=True)
class Ticket:
    """One judged call: what was asked, and the gate's verdict on it."""

    call: Booking
    verdict: Verdict
    entry: LedgerEntry | None = None  # the refusal as recorded in the ledger (refused calls)
    refusal: str = ""  # the gate's notice for a refused call (see ToolGate's ``notices``)

    @property
    def admitted(self) -> bool:
        return self.verdict.admitted

    @property
    def notice(self) -> str:
        """What the agent reads for a refused call; empty if admitted."""
        if self.admitted:
            return ""
        return self.refusal or render_rejection(self.verdict, self.call)


@dataclass(frozen=True, slots=True)
class Opened:
    """What :meth:`ToolGate.open_message` did: the request it opened (or None), the matcher's
    answer, and the ask-back question when it opened none."""

    request: Request | None
    match: Match
    ask_back: str | None = None


def check_tools(plan: Plan, tools: Iterable[str]) -> None:
    """Raise :class:`PlanError` naming every step bound to a tool that is not among ``tools`` (the
    agent's): such a step could never be executed, and its dependents never unblocked."""
    have = set(tools)
    missing = [f"{sid} ({spec.tool})" for sid, spec in plan.steps.items() if spec.tool not in have]
    if missing:
        raise PlanError(
            f"the plan binds steps to tools the agent does not have: {', '.join(missing)}; "
            f"its tools are: {', '.join(sorted(have)) or 'none'}"
        )


class ToolGate:
    """Task state around a tool dispatcher, at the policy you choose."""

    def __init__(
        self,
        plan: Plan,
        policy: Policy = Policy.STATE_BOUND,
        *,
        lenient: bool = False,
        seed: int | None = None,
        notices: Notices = "plain",
        unrequested: Unrequested = "refuse",
    ) -> None:
        self._setup(TaskMachine(plan, lenient=lenient, seed=seed), policy, notices, unrequested)

    @classmethod
    def from_ledger(
        cls,
        entries: Sequence[LedgerEntry],
        policy: Policy = Policy.STATE_BOUND,
        *,
        plan: Plan | None = None,
        notices: Notices = "plain",
        unrequested: Unrequested = "refuse",
    ) -> ToolGate:
        """The gate whose receipts ledger is ``entries`` (as saved from :attr:`ledger`, e.g.
        through :func:`~taskgate.dump_ledger` and :func:`~taskgate.load_ledger`).

        Every admission in it is judged again where it was made, at least as strictly as
        ``policy`` (a forged or edited receipt is a :class:`~taskgate.errors.LedgerFormatError`);
        with ``plan``, the ledger must start from exactly that plan. With the default
        ``unrequested="refuse"``, an admission made while the request asked for no step is an
        error too (a ledger of a gate that ran such calls loads with ``unrequested="run"``)."""
        gate = cls.__new__(cls)
        if unrequested == "refuse" and policy is Policy.STATE_BOUND:
            _check_requested(entries)
        machine = TaskMachine.from_ledger(entries, plan=plan, policy=policy)
        gate._setup(machine, policy, notices, unrequested)
        return gate

    @classmethod
    def around(
        cls,
        machine: TaskMachine,
        policy: Policy = Policy.STATE_BOUND,
        notices: Notices = "plain",
        unrequested: Unrequested = "refuse",
    ) -> ToolGate:
        """A gate over an existing machine (shared, not copied: what either records, both see)."""
        gate = cls.__new__(cls)
        gate._setup(machine, policy, notices, unrequested)
        return gate

    def _setup(
        self, machine: TaskMachine, policy: Policy, notices: Notices, unrequested: Unrequested
    ) -> None:
        if machine.graph.binding != "tool":
            raise PlanError('a tool gate needs a tool-bound plan ({"binding": "tool", ...})')
        if notices not in ("plain", "protocol"):
            raise UsageError(f"notices must be 'plain' or 'protocol', not {notices!r}")
        if unrequested not in ("refuse", "run"):
            raise UsageError(f"unrequested must be 'refuse' or 'run', not {unrequested!r}")
        self.policy = policy
        #: what the matcher reads for steps with no text of their own (their tools' descriptions,
        #: see :func:`taskgate.matching.wordings.wordings`)
        self.wordings: dict[str, str] = {}
        self.notices: Notices = notices
        self.unrequested: Unrequested = unrequested
        self._machine = machine
        self._lock = threading.Lock()
        self._running: set[str] = set()
        #: admitted tickets not yet finished: the epoch and ledger length they were judged at
        self._open: dict[int, tuple[int, int]] = {}
        self._epoch = 0  # requests opened or closed and revisions applied (they move the state)

    # -- the state -------------------------------------------------------------------------------
    @property
    def machine(self) -> TaskMachine:
        return self._machine

    @property
    def ledger(self) -> tuple[LedgerEntry, ...]:
        return self._machine.ledger

    def open_request(
        self, step: str | None = None, *, explicit_redo: bool = False, work_order: str | None = None
    ) -> Request:
        """A new request, resolved to ``step`` (or none); its work order is issued fresh."""
        with self._lock:
            req = self._machine.open_request(
                step, explicit_redo=explicit_redo, work_order=work_order
            )
            self._epoch += 1
            return req

    def close_request(self) -> None:
        with self._lock:
            self._machine.close_request()
            self._epoch += 1

    async def open_message(self, message: str, matcher: Matcher, ask_back: bool = True) -> Opened:
        """Resolve a user message with ``matcher`` and open its request; or, when the matcher
        could not tell which step it means (no step, some candidates) and ``ask_back`` is set,
        close the request and return the ask-back question to put to the user instead of running
        the agent (without ``ask_back`` the request opens on no step)."""
        with self._lock:
            plan = worded(self._machine.graph.to_plan(), self.wordings)
        match = await matcher.match(plan, message)
        step = match.step if match.step in plan.steps else None  # never a step it lacks
        asked = [c for c in match.candidates if c in plan.steps]
        if step is None and asked and ask_back:
            self.close_request()
            return Opened(None, match, ask_back_question(plan, asked))
        return Opened(self.open_request(step, explicit_redo=match.explicit_redo), match)

    def user_message(
        self, message: str, matcher: Matcher | None = None, ask_back: bool = True
    ) -> Opened:
        """:meth:`open_message` from sync code; the matcher defaults to the lexical one (no
        model call). Call it with each new user message, before the agent runs on it."""
        return run_sync(self.open_message(message, matcher or LexicalMatcher(), ask_back))

    def guard(self, fn: Callable[..., Any], tool: str | None = None) -> Callable[..., Any]:
        """``fn`` behind the gate, ready to hand to an agent framework as a tool: the same name
        (``tool``, default ``fn.__name__``), signature and docstring; an admitted call runs
        ``fn`` and is the receipt once it returns; a refused call returns the refusal notice
        (what the model reads) and ``fn`` does not run. Works for coroutine functions too."""
        name = tool or getattr(fn, "__name__", None) or type(fn).__name__

        if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004  (an object whose __call__ is async)
        ):

            @functools.wraps(fn)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await self.acall(name, fn, *args, **kwargs)
                except ToolRefused as refused:
                    return refused.notice

            guarded_async.__name__ = name
            return guarded_async

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return self.call(name, fn, *args, **kwargs)
            except ToolRefused as refused:
                return refused.notice

        guarded.__name__ = name
        return guarded

    def revise(self, revision: Revision) -> None:
        """Cancel, rewire or relax mid-conversation, as one receipts-ledger entry (atomically: an
        invalid revision changes nothing). A revision that would strand a step (leave it waiting
        forever on a cancelled prerequisite) is refused with a :class:`PlanError` naming it, unless
        the revision rewires it too."""
        with self._lock:
            self._revise(revision)

    def _revise(self, revision: Revision) -> None:
        """:meth:`revise`, the lock held."""
        check_strands(self._machine, revision)
        self._machine.revise(revision)
        self._epoch += 1

    def approve(self, what: str, *, by: str, reason: str = "") -> LedgerEntry:
        """A person approves one call of ``what`` (a step id, or its tool's name) during the
        current request, whatever the state says (blocked, cancelled, done, unrequested): the
        next call of it runs, once; a step already run under this request's work order is not
        run again on it. The approval is a receipts-ledger entry naming ``by`` (who) and
        ``reason``; it lapses with the request, or once that call has run. Returns the entry.
        Without a ``secret`` on the saved ledger, an approval is as trustworthy as the file."""
        if not isinstance(by, str) or not by.strip():
            raise UsageError("an approval names who gave it: by='...'")
        with self._lock:
            step = step_named(self._machine.graph, what)
            if step in self._running:  # its receipt would use the approval up
                raise UsageError(f"step {step} is running now: approve its next call once it ended")
            self._machine.approve(step, by.strip(), reason)
            self._epoch += 1
            return self._machine.last_entry()

    def cancel(
        self,
        step: str,
        *,
        rewire: Mapping[str, Sequence[str]] | None = None,
        inherit: bool = False,
    ) -> Revision:
        """Cancel ``step``. Each step still waiting on it needs new prerequisites: give them in
        ``rewire`` (``{dependent: prerequisites}``), or pass ``inherit=True`` to put every such
        step onto ``step``'s own prerequisites (the paper's rewiring). Returns the revision
        applied; one that would strand a step is refused and changes nothing."""
        with self._lock:  # one critical section: the rewires are built from the state they change
            revision = cancelling(self._machine, step, rewire, inherit)
            self._revise(revision)
        return revision

    def rewire(self, step: str, prerequisites: Sequence[str]) -> Revision:
        """Give ``step`` exactly ``prerequisites`` from now on (one ledger entry)."""
        revision = Revision(rewires={step: _steps(prerequisites)})
        self.revise(revision)
        return revision

    def relax(self, step: str, prerequisite: str) -> Revision:
        """Let ``step`` run without ``prerequisite`` (one ledger entry)."""
        revision = Revision(relax=(step, prerequisite))
        self.revise(revision)
        return revision

    def hold(self, step: str) -> None:
        """Treat ``step`` as running until :meth:`unhold`: a call of it whose outcome is unknown
        (the MCP gate, after a crash mid-call) is not run again until a person settles it."""
        with self._lock:
            self._running.add(step)

    def unhold(self, step: str) -> None:
        with self._lock:
            self._running.discard(step)

    def settle(self, step: str, work_order: str, judged_at: int, ran: bool) -> LedgerEntry | None:
        """A call of ``step`` admitted under ``work_order`` when the ledger had ``judged_at``
        entries, whose outcome was unknown (held), is settled: its step is free again and, if it
        ran, its receipt is recorded as judged where it was admitted. Returns the receipt."""
        with self._lock:
            self._running.discard(step)
            if not ran:
                return None
            tool = self._machine.graph.tool(step)
            call = Booking("", work_order, tool=normalize_tool(tool) or tool)
            moved = judged_at < self._machine.ledger_length  # entries since: judged back there
            self._machine.record(
                call, Verdict("admit", step), self.policy, judged_at if moved else None
            )
            self._epoch += 1
            return self._machine.last_entry()

    # -- what the agent sees ---------------------------------------------------------------------
    def checklist(self) -> str:
        return render_checklist(self._machine)

    def directive(self) -> str | None:
        return render_directive(self._machine)

    # -- judging and running calls ---------------------------------------------------------------
    def begin(self, tool: object, work_order: object = None) -> Ticket:
        """Judge a call of ``tool`` and, if admitted, reserve its step until :meth:`finish`.

        ``work_order`` defaults to the current request's. A refused call is recorded at once.
        Garbled input (a name or work order that is not text) is judged, not raised: it is
        refused as a malformed call.
        """
        with self._lock:
            return self._begin(tool, work_order)

    def begin_all(self, tools: Sequence[object]) -> list[Ticket]:
        """Judge the calls of one model turn as a batch, in one critical section: each is judged
        with the earlier ones of the batch in flight, so a call whose prerequisite is in the same
        batch is refused BLOCKED whatever order the calls later run and finish in (the verdicts do
        not depend on the threads' timing). Admitted ones are reserved until :meth:`finish`."""
        with self._lock:
            return [self._begin(tool, None) for tool in tools]

    def _begin(self, tool: object, work_order: object) -> Ticket:
        call, verdict = self._judged(tool, work_order)
        if verdict.admitted:
            assert verdict.step is not None
            self._running.add(verdict.step)
            ticket = Ticket(call, verdict)
            self._open[id(ticket)] = (self._epoch, self._machine.ledger_length)
            return ticket
        self._machine.record(call, verdict, self.policy)
        refusal = (
            plain_refusal(verdict, call, self._machine.graph)
            if self.notices == "plain"
            else render_rejection(verdict, call)
        )
        return Ticket(call, verdict, self._machine.last_entry(), refusal)

    def _judged(self, tool: object, work_order: object) -> tuple[Booking, Verdict]:
        if not isinstance(tool, str) or not isinstance(work_order, str | None):
            shown = tool if isinstance(tool, str) else type(tool).__name__
            wo = work_order if isinstance(work_order, str) else self._current()
            return Booking("", wo[:80], tool=shown[:80]), Verdict(
                "refuse", None, Reason.MALFORMED_CALL
            )
        call = self._call(tool, work_order)
        verdict = self._machine.judge(call, self.policy, self._running)
        req = self._machine.request
        idle = req is not None and req.step is None and self.policy is not Policy.UNGATED
        approved = verdict.step is not None and verdict.step == self._machine.approved
        if verdict.admitted and self.unrequested == "refuse" and idle and not approved:
            # the user's current message asked for no step ("thanks!"): nothing runs on it
            verdict = Verdict("refuse", verdict.step, Reason.NO_RESOLVED_STEP)
        if verdict.reason is Reason.REPEATED_RECEIPT:  # a call repeated under its request
            verdict = Verdict("refuse", verdict.step, Reason.ALREADY_DONE)  # runs it again
        return call, verdict

    def finish(self, ticket: Ticket, succeeded: bool) -> LedgerEntry | None:
        """The admitted call ended: record its receipt if it succeeded, release its step, and
        return the receipt (``None`` when nothing was recorded)."""
        with self._lock:
            opened = self._open.pop(id(ticket), None)
            if opened is None:  # refused, or already finished: nothing to record
                return None
            self._running.discard(ticket.verdict.step or "")
            if not succeeded:
                return None
            epoch, at = opened
            judged_at = at if epoch != self._epoch else None  # the request or plan moved on
            self._machine.record(ticket.call, ticket.verdict, self.policy, judged_at)
            return self._machine.last_entry()

    def call(self, tool: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` as a call of ``tool`` if the gate admits it.

        Raises :class:`ToolRefused` when refused (``fn`` does not run); an exception from ``fn``
        books nothing and propagates.
        """
        ticket = self.begin(tool)
        if not ticket.admitted:
            raise ToolRefused(ticket)
        ok = False
        try:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):  # it has not run yet: never a receipt
                close = getattr(result, "close", None)
                if callable(close):
                    close()
                raise UsageError(f"{tool} is asynchronous: run it with acall (or guard it)")
            ok = True
            return result
        finally:
            self.finish(ticket, ok)

    async def acall(
        self, tool: str, fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any
    ) -> T:
        """:meth:`call` for a coroutine function."""
        ticket = self.begin(tool)
        if not ticket.admitted:
            raise ToolRefused(ticket)
        ok = False
        try:
            result = await fn(*args, **kwargs)
            ok = True
            return result
        finally:
            self.finish(ticket, ok)

    def _current(self) -> str:
        req = self._machine.request
        return req.work_order if req is not None else "#W0"

    def _call(self, tool: str, work_order: str | None) -> Booking:
        """The call as a booking; a name or work order the agent garbled is judged, not raised
        (it names no step, or no current request, and is refused)."""
        if work_order is None:
            work_order = self._current()
        wo = normalize_work_order(work_order) or work_order
        return Booking("", wo, tool=normalize_tool(tool) or tool)


def step_named(graph: TaskGraph, what: str) -> str:
    """The step ``what`` names: a step id, or the name of the tool a step is bound to."""
    step = what if what in graph else graph.step_for_tool(normalize_tool(what) or what)
    if step is None:
        raise PlanError(f"nothing to approve: {what!r} is no step or tool of the plan")
    return step


def cancelling(
    machine: TaskMachine,
    step: str,
    rewire: Mapping[str, Sequence[str]] | None = None,
    inherit: bool = False,
) -> Revision:
    """The revision that cancels ``step`` on ``machine`` (see :meth:`ToolGate.cancel`)."""
    rewires = {k: _steps(v) for k, v in (rewire or {}).items()}
    graph = machine.graph
    if step in graph and graph.is_cancelled(step):
        raise UsageError(f"step {step} is already cancelled")
    if inherit:
        own = graph.prerequisites(step) if step in graph else frozenset()
        for dep in _waiting_on(machine, step):
            if dep not in rewires:
                rewires[dep] = tuple(sorted((graph.prerequisites(dep) - {step}) | own))
    return Revision(cancel=step, rewires=rewires)


def _waiting_on(machine: TaskMachine, step: str) -> list[str]:
    """Steps not cancelled and not done whose prerequisites include ``step``."""
    graph, done = machine.graph, machine.done
    return [
        s
        for s in graph.steps
        if step in graph.prerequisites(s) and not graph.is_cancelled(s) and s not in done
    ]


def check_strands(machine: TaskMachine, revision: Revision) -> None:
    """Raise :class:`PlanError` naming each step ``revision`` would newly leave waiting forever
    on a cancelled prerequisite (a step whose call is running counts: it may fail)."""
    stranded = _stranded(machine, revision)
    if stranded:
        them = "them" if len(stranded) > 1 else "it"
        waits = "; ".join(f"{s} waiting forever on cancelled {', '.join(on)}" for s, on in stranded)
        raise PlanError(
            f"the revision would leave {waits}: rewire {them} in the same revision, or "
            f"cancel {them} too"
        )


def _stranded(machine: TaskMachine, revision: Revision) -> list[tuple[str, list[str]]]:
    """Steps the revision would newly leave waiting on a cancelled prerequisite, each with those
    prerequisites."""
    before = machine.graph
    after = before.copy()
    try:
        after.apply(revision)
    except TaskgateError:
        return []  # the machine refuses it with its own error, changing nothing
    done = machine.done

    def stranded(graph: TaskGraph) -> set[str]:
        return {
            s
            for s in graph.steps
            if not graph.is_cancelled(s)
            and s not in done  # a running call may still fail: it would be stranded too
            and any(graph.is_cancelled(u) for u in graph.prerequisites(s))
        }

    return [
        (s, sorted((u for u in after.prerequisites(s) if after.is_cancelled(u)), key=step_sort_key))
        for s in sorted(stranded(after) - stranded(before), key=step_sort_key)
    ]


def _steps(prerequisites: Sequence[str]) -> tuple[str, ...]:
    """Step ids given as a list (a bare string is a mistake, not one id per character)."""
    if isinstance(prerequisites, str):
        raise UsageError(f"prerequisites are a list of step ids, not the string {prerequisites!r}")
    return tuple(prerequisites)


def _check_requested(entries: Sequence[LedgerEntry]) -> None:
    """Refuse a ledger in which a call was admitted while the request asked for no step."""
    idle: list[bool] = []  # at each position: a request is open and it names no step
    approved: list[str | None] = []  # at each position: the step a person approved a call of
    now, person = False, None
    for entry in entries:
        idle.append(now)
        approved.append(person)
        if isinstance(entry, RequestEntry):
            now, person = entry.work_order is not None and entry.step is None, None
        elif isinstance(entry, ApprovalEntry):
            person = entry.step
        elif isinstance(entry, AttemptEntry) and entry.decision == "admit" and entry.step == person:
            person = None
    for i, entry in enumerate(entries):
        if isinstance(entry, AttemptEntry) and entry.decision == "admit":
            at = entry.judged_at if entry.judged_at is not None else i
            if 0 <= at < len(idle) and idle[at] and approved[at] != entry.step:
                raise LedgerFormatError(
                    f"ledger entry {i} admits {entry.tool or entry.code} while the user's request "
                    "asked for no step; this gate runs nothing unrequested (load it with "
                    "unrequested='run' if it was written so)"
                )
