"""The MCP gate's state: one tool gate per client session, durable in the proxy's journal.

A session is a fold of its journal (:class:`~taskgate.journal.events.Conversation`): the plan, then
every receipts-ledger entry (requests, refusals, receipts, revisions, approvals), and a ``call``
event when an admitted call is forwarded and when it ends. Each change is written before the
gate acts on it: a refusal before its answer, a call's start before it reaches the upstream, its
receipt before its result goes back. So a gate killed at any point and restarted on the same
journal continues every session exactly; a call forwarded and never seen to end is **in doubt**:
its step is not run again (refused as being done) until an operator settles it, so a crash never
runs a step twice and never books one that did not run. So is a call whose answer never came
(the client cancelled it, the upstream went away): only the upstream's answer ends a call.

Nothing here speaks MCP: :mod:`.server` turns a session's answers into MCP results.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
import uuid
from collections import Counter, OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import orjson

from taskgate.core.ids import tool_key
from taskgate.core.ledger import LedgerEntry, PlanEntry, RequestEntry
from taskgate.core.machine import TaskMachine
from taskgate.core.plan import Plan, Revision
from taskgate.core.verdict import Policy, Reason
from taskgate.errors import TaskgateError, UsageError
from taskgate.gate.asking import Decision
from taskgate.gate.registry import SessionRegistry
from taskgate.gate.session import Call, GateSession, Notices, Opened, Ticket, step_named
from taskgate.journal.events import (
    CallEvent,
    Conversation,
    HeldEvent,
    LedgerEvent,
    MessageEvent,
)
from taskgate.journal.held import give_held, scratch
from taskgate.journal.store import MemoryStore, StaleJournal, Store
from taskgate.roles import Matcher
from taskgate.serving.operator import percentiles
from taskgate.serving.router import Conflict, Unavailable
from taskgate.understanding.reader import ConversationReader

T = TypeVar("T")


def _text(text: str) -> str:
    """Text as it can be journaled: a lone surrogate ("\\ud800", which no UTF-8 holds) read as
    the replacement character, so the message is read and journaled, never refused half-way."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


log = logging.getLogger("taskgate.mcp")

#: how a request opens (MCP carries no user messages): the client model calls ``taskgate_request``
#: with the user's words, or each session has one standing request and the plan's order rules, or
#: the application that has the user's messages posts each one (the operators' endpoint)
Requests = Literal["tool", "plan", "application"]
#: the largest arguments of one call the gate reads (its JSON), in bytes
MAX_ARGUMENT_BYTES = 1 << 20


@dataclass
class McpGateConfig:
    """What ``taskgate mcp`` is told."""

    plan: Plan
    requests: Requests = "tool"
    policy: Policy = Policy.STATE_BOUND
    notices: Notices = "plain"
    unbound: Literal["run", "refuse"] = "run"
    status_token: str | None = None
    max_argument_bytes: int = MAX_ARGUMENT_BYTES

    def __post_init__(self) -> None:
        if self.plan.binding != "tool":
            raise UsageError("the MCP gate gates tool calls: the plan must be tool-bound")
        if self.requests not in ("tool", "plan", "application"):
            raise UsageError(f"requests must be tool, plan or application, not {self.requests!r}")
        if self.unbound not in ("run", "refuse"):
            raise UsageError(f"unbound must be run or refuse, not {self.unbound!r}")
        # a bad option: one error, here
        GateSession(self.plan, self.policy, notices=self.notices, unbound=self.unbound)


@dataclass(frozen=True)
class Answer:
    """What a gated call came to: forwarded (``result`` is the upstream's), or refused
    (``text`` says why, in plain words)."""

    result: Any = None
    text: str = ""
    refused: bool = False


@dataclass
class Session:
    key: str
    conv: Conversation
    gate: GateSession
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: the calls this process is forwarding now (their answer may still come: not in doubt)
    live: set[str] = field(default_factory=set)

    def in_doubt(self) -> dict[str, CallEvent]:
        """The calls begun and never ended that no one is waiting on, by id."""
        return {c: e for c, e in self.conv.in_flight.items() if c not in self.live}


@dataclass
class Metrics:
    """Calls by what became of them, and the gate's own time per gated call (the upstream's
    time left out), for ``/taskgate/metrics``."""

    calls: Counter[str] = field(default_factory=Counter)
    own: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))
    #: the gate's verdicts on gated calls: ``admitted``, or the reason of a refusal
    verdicts: Counter[str] = field(default_factory=Counter)
    #: held calls: ``asked``, and the elicited answers (``approved``, ``rejected``)
    asks: Counter[str] = field(default_factory=Counter)

    def summary(self) -> dict[str, Any]:
        return {
            "calls": dict(self.calls),
            "gated": len(self.own),
            **percentiles(self.own),
            "verdicts": dict(self.verdicts),
            "asks": dict(self.asks),
        }


class SessionMoved(Conflict, UsageError):
    """Another process wrote the session's journal first: read it afresh and retry."""


class McpGate:
    """The sessions of one MCP gate, each a tool gate over the plan, kept in ``store``."""

    def __init__(
        self,
        config: McpGateConfig,
        store: Store | None = None,
        matcher: Matcher | None = None,
        max_sessions: int = 10_000,
    ) -> None:
        self.config = config
        self.store: Store = store or MemoryStore()
        self.matcher: Matcher = matcher or ConversationReader()
        #: the sessions in memory (at most ``max_sessions`` idle ones); a key's registry lock is
        #: held while its session is folded from the journal, the session's own while it changes
        self.sessions: SessionRegistry[Session, asyncio.Lock] = SessionRegistry(
            max_sessions,
            asyncio.Lock,
            busy=lambda key, s: bool(s.live) or SessionRegistry.in_use(s.lock),
            gone=lambda key, s: self._live.pop(key, None),
        )
        self.metrics = Metrics()
        self._live: dict[str, set[str]] = {}  # per session: the calls this process forwards now
        self._bound = {tool_key(s.tool) for s in config.plan.steps.values()}
        #: the plan alone, never recording: what the core says of a call before any session
        #: (a tool no step is bound to passes, or is refused, by the core's ``unbound`` rule)
        self._template = self._session_gate(TaskMachine(config.plan))
        #: steps with no text are matched by their tools' descriptions (set when tools are known)
        self.wordings: dict[str, str] = {}
        #: sessions whose last user message could not be read or recorded: their gated calls
        #: are refused until a message is (the journal still has the request before it)
        self._unread: OrderedDict[str, None] = OrderedDict()

    # -- sessions ----------------------------------------------------------------------------------
    async def session(self, key: str) -> Session:
        """The session ``key``: in memory, else folded from its journal, else new."""
        held = self.sessions.get(key)
        if held is not None:
            return held
        async with self.sessions.lock(key):
            held = self.sessions.peek(key)
            if held is not None:
                return held
            conv = Conversation(
                key, await self.store.load(key), requested=self.config.requests != "plan"
            )
            if not conv.started:
                conv.apply(LedgerEvent(entry=PlanEntry(plan=self.config.plan)))
            first = conv.committed[0]
            if not isinstance(first, PlanEntry) or first.plan != self.config.plan:
                raise UsageError(
                    f"session {key} was started with another plan; start the gate with that plan, "
                    "or use a new journal"
                )
            gate = self._gate(conv)
            gate.resume(conv.reading, conv.said)  # the last message's reading, as journaled
            # the calls this process forwards are the gate's, not the session object's: a
            # session read back after a failed write still knows them running, not in doubt
            new = Session(key, conv, gate, live=self._live.setdefault(key, set()))
            if conv.written == 0:  # a new session: its plan (and standing request) first
                if self.config.requests == "plan":
                    gate.open_request(None)
                    conv.apply(LedgerEvent(entry=gate.machine.last_entry()), applied=True)
                await self._write(new)
            for call in conv.in_flight.values():  # in doubt: not run again until settled
                gate.hold(call.step, call.work_order or "", call.at or 0)
            # the least recently used idle ones go (their journal keeps them; a memory-only
            # gate forgets them)
            self.sessions.put(key, new)
            return new

    def _gate(self, conv: Conversation) -> GateSession:
        gate = self._session_gate(conv.machine)
        gate.wordings = self.wordings
        return gate

    def _session_gate(self, machine: TaskMachine) -> GateSession:
        unrequested: Literal["run", "refuse"] = (
            "run" if self.config.requests == "plan" else "refuse"
        )
        config = self.config
        return GateSession.around(
            machine, config.policy, config.notices, unrequested, config.unbound
        )

    async def _write(self, session: Session) -> None:
        """Append what the session folded since its last write (call holding its lock)."""
        conv = session.conv
        events = conv.events[conv.written :]
        if not events:
            return
        try:
            await self.store.append(conv.key, conv.written, events)
        except BaseException as exc:  # read afresh next time: memory never runs ahead of it
            self.sessions.pop(conv.key)
            if isinstance(exc, StaleJournal):
                raise SessionMoved(
                    f"session {conv.key} moved on in another process; retry"
                ) from None
            if isinstance(exc, OSError):  # the journal could not be written (a LogFormatError)
                raise Unavailable(f"the gate could not record it: {exc}") from exc
            raise
        conv.written = len(conv.events)

    def _record(self, session: Session, entries: Sequence[LedgerEntry | None]) -> None:
        for entry in entries:
            if entry is not None:
                session.conv.apply(LedgerEvent(entry=entry), applied=True)

    def step(self, what: str) -> str:
        """The step ``what`` names: a step id, or its tool's name (a :class:`PlanError` else)."""
        return step_named(self._template.machine.graph, what)

    def bound(self, tool: str) -> bool:
        """Whether a step of the plan is bound to ``tool`` (else it runs ungated, or not at all)."""
        return tool_key(tool) in self._bound

    # -- requests ----------------------------------------------------------------------------------
    async def request(self, key: str, message: str, agent: str = "") -> str:
        """Open the request of a user message (read with the agent's message before it, when the
        application has it); the answer for the client model (what the gate understood, or the
        question to ask the user)."""
        try:
            opened, session = await self._opened(key, message, agent)
        except BaseException:  # unread or unrecorded: the request before it must not stand
            self._unread[key] = None
            while len(self._unread) > 100_000:
                self._unread.popitem(last=False)
            raise
        self._unread.pop(key, None)
        if opened.ask_back is not None:
            return opened.ask_back
        step = opened.request.step if opened.request is not None else None
        if opened.granted:
            return ("Noted: the user said yes to the call you asked about; make it again, with "
                    "exactly the same arguments.")  # fmt: skip
        if step is None and opened.reading is not None and opened.reading.kind == "confirm":
            return "Noted: the user confirmed your proposal; make the call you proposed."
        if step is None and opened.reading is not None and opened.reading.kind != "other":
            plan = session.gate.machine.graph.to_plan()
            return f"Noted: {opened.reading.understood(plan)}; do not call the task's tools now."
        if step is None:
            return (
                "Noted. This message asks for none of the task's steps: do not call its tools now."
            )
        text = session.gate.machine.graph.text(step) or step
        again = " again" if opened.match.explicit_redo else ""
        return f"Noted: the user asks you to {text}{again}."

    async def _opened(self, key: str, message: str, agent: str) -> tuple[Opened, Session]:
        session = await self.session(key)
        async with session.lock:
            self._give(session, approvals=False)  # an operator's revisions, before the message
            message, agent = _text(message[:4000]), _text(agent[-4000:])
            before = session.gate.machine.ledger_length
            opened = await session.gate.open_message(message, self.matcher, agent=agent or None)
            reading = opened.reading and dataclasses.replace(opened.reading, taken={})
            read = MessageEvent(message=message, agent=agent, reading=reading, time=time.time())
            session.conv.apply(read, applied=True)
            self._record(session, list(session.gate.machine.ledger[before:]))  # and answers
            self._give(session, approvals=True)  # and approvals, for the request now open
            await self._write(session)
        return opened, session

    # -- calls -------------------------------------------------------------------------------------
    async def call(
        self, key: str, tool: str, arguments: Mapping[str, Any] | None,
        forward: Callable[[], Awaitable[T]], succeeded: Callable[[T], bool],
        elicit: Callable[[str], Awaitable[str]] | None = None,
    ) -> Answer:  # fmt: skip
        """Judge one call of ``tool``; forward it (``forward()``) if admitted, and book its receipt
        when ``succeeded(result)``. A call too large to read is refused unread. A call the gate
        holds is asked about with ``elicit`` (the client's elicitation: it shows the question and
        answers ``accept``, ``decline`` or ``cancel``) where the client has it, and runs on an
        accept; otherwise (or when the elicitation fails) its answer is the question for the
        agent to put to the user, whose next message answers it."""
        started = time.perf_counter()
        try:
            size = len(orjson.dumps(arguments or {}))
        except (TypeError, orjson.JSONEncodeError):  # e.g. an integer over 64 bits
            size = len(json.dumps(arguments or {}, default=str))
        if size > self.config.max_argument_bytes:
            self.metrics.calls["too-large"] += 1
            return Answer(
                text=f"{tool[:80]} was not run: its arguments are over "
                f"{self.config.max_argument_bytes} bytes.",
                refused=True,
            )
        first = self._template.decide([Call(tool)])[0]
        if not first.gated:  # a tool no step is bound to: the core lets it through
            self.metrics.calls["unbound"] += 1
            return Answer(result=await forward())
        if first.verdict.reason is Reason.UNKNOWN_TOOL and not key:  # unbound="refuse"
            self.metrics.calls["refused"] += 1  # no session to record it in
            return Answer(text=first.notice, refused=True)
        if key in self._unread:
            self.metrics.calls["refused"] += 1
            self.metrics.verdicts["message-unread"] += 1
            return Answer(
                text=f"{tool[:80]} was not run: the user's last message could not be read or "
                "recorded. Ask the user to send it again.",
                refused=True,
            )
        session = await self.session(key)
        call_id = uuid.uuid4().hex
        async with session.lock:
            if session.conv.held:  # an operator's changes, given at this exchange
                self._give(session, approvals=False)
                self._give(session, approvals=True)
            before = session.gate.machine.ledger_length
            ticket = session.gate.begin(tool, arguments=arguments)
            if session.gate.machine.ledger_length > before + (ticket.entry is not None):
                # a request the core opened for a confirmed proposal: journaled before the call
                ledger = session.gate.machine.ledger
                self._record(session, [e for e in ledger[before:] if isinstance(e, RequestEntry)])
            if not ticket.admitted:
                self._record(session, [ticket.entry])
                await self._write(session)
                if ticket.ask is not None:
                    self.metrics.asks["asked"] += 1
                if ticket.ask is None or elicit is None:
                    self.metrics.calls["asked" if ticket.ask is not None else "refused"] += 1
                    self.metrics.verdicts[str(ticket.verdict.reason)] += 1
                    self.metrics.own.append(time.perf_counter() - started)
                    return Answer(text=ticket.notice, refused=True)
            else:
                begun = await self._begun(session, ticket, call_id)
        if ticket.ask is not None and elicit is not None:  # asked, with the session's lock free
            again, text = await self._elicited(session, ticket, elicit)
            if again is None:
                return Answer(text=text, refused=True)
            return await self.call(key, tool, again, forward, succeeded)  # granted: it runs
        step = begun.step
        own = time.perf_counter() - started
        try:
            result = await forward()
        except BaseException:  # cancelled, or the upstream gone: it may have run, or not
            session.live.discard(call_id)
            session.gate.finish(ticket, "unknown")  # held in doubt until settled
            self.metrics.calls["in-doubt"] += 1
            log.warning("taskgate mcp: session %s: a call of %s ended with no answer; the step "
                        "is held until an operator settles it", key, step)  # fmt: skip
            raise  # the ticket stays open: the step is not run again until settled
        back = time.perf_counter()
        session.live.discard(call_id)
        async with session.lock:
            receipt = session.gate.finish(ticket, succeeded(result))
            self._record(session, [receipt])
            session.conv.apply(CallEvent(call=call_id, step=step, ended=True))
            await self._write(session)
        own += time.perf_counter() - back
        self.metrics.calls["forwarded"] += 1
        self.metrics.own.append(own)
        return Answer(result=result)

    async def _begun(self, session: Session, ticket: Ticket, call_id: str) -> CallEvent:
        """An admitted call's start, journaled before it runs (under the session's lock)."""
        step = ticket.verdict.step or ""
        at = session.gate.machine.ledger_length
        work_order = ticket.call.work_order
        reading = session.gate.reading  # the thing of the order it is for, if any
        taken = None if reading is None else reading.taken.get(work_order or "")
        begun = CallEvent(call=call_id, step=step, work_order=work_order, at=at, taken=taken)
        session.conv.apply(begun)
        try:
            await self._write(session)  # the call's start is durable before it runs
        except BaseException:
            session.gate.finish(ticket, False)
            raise
        session.live.add(call_id)
        self.metrics.verdicts["admitted"] += 1
        return begun

    async def _elicited(
        self, session: Session, ticket: Ticket, elicit: Callable[[str], Awaitable[str]]
    ) -> tuple[dict[str, Any] | None, str]:
        """Ask the client's user about a held call (MCP elicitation); their answer journaled.
        Returns the call's arguments to make it with on an accept (it is granted, exactly), or
        None and what the agent reads: on a decline or cancel (the call is dropped), or when the
        elicitation failed (the call stays held, and the agent gets its question instead)."""
        ask = ticket.ask
        assert ask is not None
        try:
            action = await elicit(ask.question)
        except Exception as exc:  # the client could not ask: the ask-back instead
            log.warning("taskgate mcp: the elicitation of a held call failed (%s); the question "
                        "goes to the agent", str(exc)[:200])  # fmt: skip
            self.metrics.calls["asked"] += 1
            return None, ticket.notice
        decision: Decision = "approve" if action == "accept" else "reject"
        async with session.lock:
            try:
                call = session.gate.answer(ask.id, decision, by="user", channel="mcp-elicitation")
            except TaskgateError as exc:  # the conversation moved on while the user was asked
                log.warning("taskgate mcp: an elicited answer was not used: %s", exc)
                call = None
            else:
                self._record(session, [session.gate.machine.last_entry()])
                await self._write(session)
        self.metrics.asks["approved" if call is not None else "rejected"] += 1
        if call is None:
            self.metrics.calls["refused"] += 1
            return None, (f'"{ask.tool[:80]}" was not run: the user said no to it. Do not call '
                          "it again unless they ask for it.")  # fmt: skip
        return dict(call.arguments or {}), ""

    # -- an operator's changes ---------------------------------------------------------------------
    async def hold(
        self, key: str, make: Callable[[Conversation, TaskMachine], HeldEvent]
    ) -> list[HeldEvent]:
        """Hold an operator's revision or approval in the session's journal, checked at once
        (``make`` builds the held event on the session's state with the changes already held,
        or raises naming what is wrong; nothing is written then), and given at the session's
        next exchange (its next call or user message), as on every journaling surface (see
        :mod:`taskgate.journal.held`). Returns what is held now."""
        session = await self.session(key)
        async with session.lock:
            event = make(session.conv, scratch(session.conv))
            busy = session.gate.running()
            if event.approval is not None and event.approval.step in busy:
                raise UsageError(
                    f"step {event.approval.step} has a call running or in doubt now: approve its "
                    "next call once that one has ended (or was settled)"
                )
            session.conv.apply(event)
            await self._write(session)
            return list(session.conv.held)

    def _give(self, session: Session, *, approvals: bool) -> None:
        for event in give_held(session.conv, session.gate, approvals=approvals):
            session.conv.apply(event, applied=True)

    async def change(self, key: str, apply: Callable[[GateSession], T]) -> T:
        """Apply an operator's change to the session's gate and journal it (all or nothing)."""
        session = await self.session(key)
        async with session.lock:
            before = session.gate.machine.ledger_length
            result = apply(session.gate)
            self._record(session, session.gate.ledger[before:])
            await self._write(session)
        return result

    async def settle(self, key: str, step: str, ran: bool) -> None:
        """An operator says whether the call of ``step`` in doubt ran: if it did, its receipt is
        booked as judged where it was admitted; either way the step is free again. A call still
        being forwarded is not in doubt (its answer may come) and cannot be settled."""
        session = await self.session(key)
        async with session.lock:
            doubt = [e for e in session.in_doubt().values() if e.step == step]
            if not doubt:
                running = any(e.step == step for e in session.conv.in_flight.values())
                raise UsageError(
                    f"the call of {step} is still running in session {key}: settle it once it ended"
                    if running
                    else f"no call of step {step!r} is in doubt in session {key}"
                )
            first = doubt[0]
            if ran and (first.work_order is None or first.at is None):
                raise UsageError(f"the call of {step} was journaled without where it was admitted")
            entry = session.gate.settle(step, ran)
            self._record(session, [entry])
            for event in doubt:
                session.conv.apply(CallEvent(call=event.call, step=step, ended=True))
            await self._write(session)

    def revise(self, revision: Revision) -> Callable[[GateSession], Revision]:
        def apply(gate: GateSession) -> Revision:
            gate.revise(revision)
            return revision

        return apply

    async def keys(self) -> list[str]:
        return sorted(set(self.sessions) | set(await self.store.keys()))
