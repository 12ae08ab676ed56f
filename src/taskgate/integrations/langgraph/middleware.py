"""The tool gate in LangGraph: a ``langchain.agents`` middleware, and the same gate for ToolNode.

``TaskGateMiddleware(plan)`` goes into ``create_agent(model, tools, middleware=[...])``. Each
user message opens a request: the matcher resolves it to a step and the gate issues a work order.
Each tool call is judged before the tool runs; a refused call is answered with a
``ToolMessage(status="error")`` naming the reason and the tool never runs; an admitted call runs,
and its success is the receipt. Every tool call id gets its answer.

The receipts ledger lives in graph state (``taskgate_ledger``, appended through a reducer), so a
checkpointer makes it durable per thread. Only the gate writes it: the key is left out of the
graph's input, so rows a caller passes in ``invoke`` are dropped, and the rows are sealed (each
carries its position and a hash chained to the one before, an HMAC when ``secret`` is given), so
an edited, dropped or inserted row is named and the gate refuses to run on that thread's state.
At each user message the gate in memory is made equal to the state's ledger (rebuilt from it,
every admission judged again, whenever the two differ: a new process, another replica, a fork or
replay of an earlier checkpoint). Rows of one turn's concurrent calls may reach the state in
another order than the gate recorded them; they are put back in order by their position. Tool
calls of one model turn run concurrently, and the gate's judge-and-reserve is one critical
section, so two calls of one step never both run, and a step whose prerequisite is still running
is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import operator
import threading
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal, NotRequired, TypeVar

from langchain.agents import AgentState
from langchain.agents.middleware import AgentMiddleware, ToolCallRequest, hook_config
from langchain.agents.middleware.types import OmitFromInput
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.config import get_config
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from taskgate._aio import run_sync
from taskgate.core.ids import tool_key
from taskgate.core.ledger import AttemptEntry, LedgerEntry, RequestEntry, Sealer
from taskgate.core.machine import TaskMachine
from taskgate.core.plan import Plan, Revision
from taskgate.core.verdict import Policy, Reason
from taskgate.errors import PlanError, TaskgateError, UsageError
from taskgate.gate.notices import why_refused
from taskgate.gate.registry import SessionRegistry
from taskgate.gate.session import Call, GateSession, Notices, Outcome, Ticket, check_tools
from taskgate.integrations.langgraph import confirm
from taskgate.integrations.langgraph.rows import Read, Rows
from taskgate.matching.wordings import wordings
from taskgate.roles import Matcher
from taskgate.understanding.grounding import result_text
from taskgate.understanding.reader import ConversationReader, turns

LEDGER_KEY = "taskgate_ledger"
HELD_KEY = "taskgate_approvals"
#: the user messages the gate read (the last 64): a run with no new one opens no new request
READ_KEY = "taskgate_read"
_READ_KEPT = 64
log = logging.getLogger("taskgate.langgraph")
CHANNEL = confirm.CHANNEL


@dataclass
class _Thread:
    """A thread's gate, and the seals of the rows it took on trust."""

    gate: GateSession
    adopted: frozenset[str]
    thread: str
    stored: int = 0  # how many of the gate's entries the state held at the last sync


T = TypeVar("T")
Handler = Callable[[ToolCallRequest], Any]
AsyncHandler = Callable[[ToolCallRequest], Awaitable[Any]]


def _message_key(messages: Sequence[Any], at: int) -> str:
    """A user message's key: its id (else its place) and a digest of its text, so a message
    edited in place under its id is a new one."""
    message = messages[at]
    digest = hashlib.sha256(str(message.content).encode("utf-8", "replace")).hexdigest()[:16]
    return f"{getattr(message, 'id', None) or f'at:{at}'}:{digest}"


class GateState(AgentState):
    """The agent's state plus the gate's receipts ledger (one sealed JSON object per entry; not
    part of the graph's input: only the gate writes it)."""

    taskgate_ledger: NotRequired[Annotated[list[dict[str, Any]], OmitFromInput, operator.add]]
    #: an operator's approvals, held for the thread's next request (see ``approve``)
    taskgate_approvals: NotRequired[Annotated[list[dict[str, str]], OmitFromInput]]
    #: the user messages the gate read (their ids and texts' digests), see ``READ_KEY``
    taskgate_read: NotRequired[Annotated[list[str], OmitFromInput]]


class TaskGateMiddleware(AgentMiddleware[GateState, Any]):
    """Gate an agent's tools by a tool-bound plan (steps bound to the agent's tool names).

    ``matcher`` resolves each user message to a step (default: the lexical matcher, no model);
    ``policy`` is state-bound or request-bound enforcement. Tools the plan binds to no step (a
    search, a read) run ungated unless ``unbound="refuse"``. While the user's current message
    asks for no step of the plan ("thanks!"), gated calls are refused unless
    ``unrequested="run"`` (the paper's state-bound enforcement, which runs any eligible step). Pass the agent's ``tools`` too, and a
    plan step bound to a tool the agent lacks is an error here, before any run. Give each conversation its own
    ``thread_id``: the gate of a thread is kept in memory between a run's tool calls, so that
    concurrent calls are judged in one critical section. ``secret`` keys the ledger's seals
    (an HMAC): give every process that serves the same threads the same secret; without one the
    seals are plain hashes, which catch edits but not a forger who recomputes them.

    ``notices`` is what a refused call's answer says: plain words (the default) or the paper's
    rejection notices (``"protocol"``). With ``approvals="ask"`` a refused call is put to a
    person through LangGraph's ``interrupt`` (the graph needs a checkpointer), and runs if the
    resume approves it. A call the gate holds because it cannot tell the user agreed to exactly
    it is asked about: by default its answer to the agent is the question to put to the user,
    whose next message is read against it; with ``confirm="interrupt"`` the run pauses with
    LangChain's ``ToolApprovalRequest`` (see :mod:`taskgate.integrations.langgraph.confirm`) and
    the call runs, exactly as shown or as edited, on an approve. An operator revises or approves a thread between runs with
    :meth:`cancel`, :meth:`rewire`, :meth:`relax` and :meth:`approve`; each is a row of the
    thread's receipts ledger.
    """

    state_schema = GateState

    def __init__(
        self,
        plan: Plan,
        matcher: Matcher | None = None,
        policy: Policy = Policy.STATE_BOUND,
        *,
        unbound: Literal["run", "refuse"] = "run",
        unrequested: Literal["refuse", "run"] = "refuse",
        notices: Notices = "plain",
        approvals: Literal["off", "ask"] = "off",
        confirm: Literal["ask-back", "interrupt"] = "ask-back",
        interrupt_mode: Literal["batched", "per_call"] = "batched",
        max_threads: int = 10_000,
        tools: Sequence[Any] | None = None,
        secret: bytes | str | None = None,
    ) -> None:
        super().__init__()
        # a plan not tool-bound, or an option the gate does not know: refused here
        GateSession(plan, policy, unrequested=unrequested, notices=notices, unbound=unbound)
        if approvals not in ("off", "ask"):
            raise UsageError(f"approvals must be 'off' or 'ask', not {approvals!r}")
        if confirm not in ("ask-back", "interrupt"):
            raise UsageError(f"confirm must be 'ask-back' or 'interrupt', not {confirm!r}")
        #: how a held call is put to the person: the question answered to the agent, which asks
        #: the user (``ask-back``, the default), or LangGraph's interrupt in LangChain's
        #: human-in-the-loop format (``interrupt``: the graph needs a checkpointer)
        self.confirm: Literal["ask-back", "interrupt"] = confirm
        if interrupt_mode not in ("batched", "per_call"):
            raise UsageError(
                f"interrupt_mode must be 'batched' or 'per_call', not {interrupt_mode!r}"
            )
        #: with ``confirm="interrupt"``: one ``HITLRequest`` per model turn for its held calls
        #: (``batched``, LangChain's default) or one ``ToolApprovalRequest`` per held call
        self.interrupt_mode: Literal["batched", "per_call"] = interrupt_mode
        #: steps with no text are matched by their tools' descriptions
        self.wordings = wordings(plan, list(tools)) if tools is not None else {}
        if tools is not None:
            check_tools(plan, tool_names(tools))
        self.plan, self.policy, self.unbound = plan, policy, unbound
        self.unrequested: Literal["refuse", "run"] = unrequested
        self.notices: Notices = notices
        self.approvals: Literal["off", "ask"] = approvals
        #: each gate's calls put to a person (an interrupt), by call id: their refused tickets
        self._asked: weakref.WeakKeyDictionary[GateSession, dict[str, Ticket]] = (
            weakref.WeakKeyDictionary()
        )
        #: reads each user message with the agent's message before it (no model call by default)
        self.matcher: Matcher = matcher or ConversationReader()
        #: the threads' gates in memory (at most ``max_threads`` idle ones, rebuilt from the state
        #: when next used)
        self._threads: SessionRegistry[_Thread, threading.Lock] = SessionRegistry(
            max_threads,
            threading.Lock,
            # never evicted while a call runs or is held in doubt: the state does not hold
            # doubts, and a gate rebuilt from it would run the step again
            busy=lambda key, held: bool(held.gate.running()),
        )
        self._own = Rows(secret)
        #: each gate's sealer (the seals of its rows, each computed once); gone with the gate
        self._sealers: weakref.WeakKeyDictionary[GateSession, Sealer] = weakref.WeakKeyDictionary()
        #: each gate's judged batches: the tickets of a model turn's calls not yet run, by call id
        self._batches: weakref.WeakKeyDictionary[GateSession, dict[Any, dict[str, Ticket]]] = (
            weakref.WeakKeyDictionary()
        )
        self._max_threads = max_threads
        #: (thread, call id) of the interrupts whose approval was given: a fork that resumes one
        #: again gets the refusal (in this process; a fork resumed in another is not seen)
        self._spent: OrderedDict[tuple[str, str, str, int], None] = OrderedDict()
        self._lock = threading.Lock()
        #: per thread with an operator's change under way: its lock and how many use it
        self._operating: dict[str, tuple[threading.Lock, int]] = {}
        self._judging = threading.Lock()  # one model turn's calls are judged once

    # -- the gate of a thread, in step with the graph state --------------------------------------
    def gate(self, state: Any, *, sync: bool = False, thread: str | None = None) -> GateSession:
        """This thread's gate. ``sync=True`` (at each new user message) makes it equal to the
        rows of the state's ledger the gate vouches for (see :mod:`.rows`): rebuilt from them
        unless the two agree entry for entry, so a fork, a replayed checkpoint or a superstep
        LangGraph discarded never leaves them apart, and a row the gate did not write never
        counts."""
        thread = thread if thread is not None else _thread_of(state)
        rows: list[Any] = list(state.get(LEDGER_KEY) or [])
        with self._lock:
            held = self._threads.get(thread)
            if held is None or sync:
                read = self._own.read(rows, thread, None if held is None else held.adopted)
                if read.ignored:
                    log.warning(
                        "taskgate: thread %r: %d ledger row(s) the gate did not write were "
                        "ignored (at %s)", thread, len(read.ignored), read.ignored[:10],
                    )  # fmt: skip
                if held is None or read.entries != list(held.gate.ledger):
                    held = self._adopt(thread, read, held)
                held.stored = len(read.entries)
            return held.gate

    def _stored(self, state: Any, gate: GateSession) -> int:
        """How many of ``gate``'s entries its thread's state held at the last sync."""
        return self._stored_of(_thread_of(state), gate)

    def _stored_of(self, thread: str, gate: GateSession) -> int:
        with self._lock:
            held = self._threads.get(thread)
            return held.stored if held is not None and held.gate is gate else 0

    def _adopt(self, thread: str, read: Read, held: _Thread | None) -> _Thread:
        """A thread's gate rebuilt from the rows read (every admission judged again)."""
        if read.entries:  # judged as written, and under the rule that nothing runs unasked
            machine = TaskMachine.from_ledger(
                read.entries, plan=self.plan, requested=self.unrequested == "refuse"
            )
        else:
            machine = TaskMachine(self.plan)
        gate = GateSession.around(
            machine, self.policy, self.notices, self.unrequested, self.unbound
        )
        gate.wordings = self.wordings
        gate.tools_heard = True  # every tool message passes wrap_tool_call
        if held is not None:  # calls in doubt are not in the rows: carried over, not forgotten
            for doubt in held.gate.in_doubt().values():
                gate.hold(doubt.step, doubt.work_order, doubt.at)
        adopted = frozenset(read.seals) | (held.adopted if held is not None else frozenset())
        new = _Thread(gate, adopted, thread)
        self._sealers[gate] = self._own.sealer(thread)
        self._threads.put(thread, new)
        return new

    # -- a request per user message --------------------------------------------------------------
    @hook_config(can_jump_to=["end"])
    def before_agent(self, state: GateState, runtime: Any) -> dict[str, Any] | None:
        gate, had = self._synced(state)  # here, where the graph's config is in context
        return run_sync(self._open(state, gate, had, ask_back=True))

    @hook_config(can_jump_to=["end"])
    async def abefore_agent(self, state: GateState, runtime: Any) -> dict[str, Any] | None:
        gate, had = self._synced(state)
        return await self._open(state, gate, had, ask_back=True)

    async def open_request(self, state: Any) -> dict[str, Any] | None:
        """Open a request for the newest user message; the state update that records it.

        A hand-built graph runs this as its first node (see :func:`gated_tool_node`).
        """
        gate, had = self._synced(state)
        return await self._open(state, gate, had)

    def _synced(self, state: Any) -> tuple[GateSession, int]:
        """The thread's gate made equal to its state, and how many of its entries the state
        holds (rows the gate ignored do not count)."""
        gate = self.gate(state, sync=True)
        return gate, self._stored(state, gate)

    async def _open(
        self, state: Any, gate: GateSession, had: int, ask_back: bool = False
    ) -> dict[str, Any] | None:
        """The request of the newest user message. With ``ask_back`` (an agent built by
        ``create_agent``), a message the matcher cannot resolve to one step ends the run with
        the ask-back question as the agent's reply; a hand-built graph opens no step instead."""
        self._release(gate)
        messages = list(state.get("messages", []))
        human = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
        update: dict[str, Any] = {}
        read = _message_key(messages, human[-1]) if human else ""
        seen = state.get(READ_KEY)
        seen = [k for k in seen if isinstance(k, str)] if isinstance(seen, list) else []
        if human and read in seen:
            human = []  # read already: a run with no new user message asks for nothing new
        if human:
            last = human[-1]
            update[READ_KEY] = [*seen, read][-_READ_KEPT:]
            since = human[-2] + 1 if len(human) > 1 else 0  # the agent's turn before this one
            agent = next((m.text for m in reversed(messages[since:last])
                          if isinstance(m, AIMessage) and m.text), "")  # fmt: skip
            said = [(isinstance(m, HumanMessage), m.text)
                    for m in messages[max(0, last - 40) : last + 1]
                    if isinstance(m, HumanMessage | AIMessage)]  # fmt: skip
            opened = await gate.open_message(
                str(messages[last].content), self.matcher, ask_back, agent=agent,
                earlier=turns(said),
            )  # fmt: skip
            if opened.request is None:
                assert opened.ask_back is not None
                update = {"messages": [AIMessage(opened.ask_back)], "jump_to": "end"}
            elif state.get(HELD_KEY):  # an operator's approvals, given for this request
                self._give(gate, state[HELD_KEY], _thread_of(state))
                update[HELD_KEY] = []
        ledger = gate.ledger
        new = self._seal(gate, had, len(ledger))  # the plan first, then the request
        if new:
            update[LEDGER_KEY] = new
        return update or None

    def _give(self, gate: GateSession, held: Sequence[Any], thread: str) -> None:
        """Give the held approvals on the request just opened. Only this middleware's (or its
        secret's) are given, and only for the first request opened since they were held: one
        written into the state by anyone else, or copied from an earlier state, is dropped and
        logged, as is one that no longer applies (a step cancelled since)."""
        ledger = gate.ledger
        for approval in held:
            at = approval.get("at") if isinstance(approval, Mapping) else None
            if not self._own.stamped(thread, approval) or not isinstance(at, int):
                log.warning("taskgate: thread %r: an approval the gate did not hold was dropped",
                            thread)  # fmt: skip
                continue
            since = ledger[max(at, 0) : -1]
            if at > len(ledger) or any(_opened(e) for e in since):
                log.warning("taskgate: thread %r: a stale approval was dropped", thread)
                continue
            try:
                gate.approve(approval["step"], by=approval["by"], reason=approval["reason"])
            except (TaskgateError, KeyError, TypeError) as exc:
                log.warning("taskgate: thread %r: a held approval was dropped: %s", thread, exc)

    # -- each tool call --------------------------------------------------------------------------
    def wrap_tool_call(self, request: ToolCallRequest, handler: Handler) -> Any:
        gate, ticket = self._ticket(request)
        if not ticket.gated:  # a tool no step is bound to, let through by the core
            return _heard(gate, handler(request))
        ticket, rows = self._escalated(request, gate, ticket)
        ticket, rows, request = self._confirmed(request, gate, ticket, rows)
        if not ticket.admitted:
            return _refusal(request, ticket, rows)
        outcome: Outcome = "unknown"  # interrupted: it may have run (held until settled)
        result = None
        try:
            result = handler(request)
            outcome = "ok" if _succeeded(result, request.tool_call.get("id")) else "failed"
        except Exception:
            outcome = "failed"
            raise
        finally:
            receipt = gate.finish(ticket, outcome)
        return _with_entries(_heard(gate, result), rows + self._rows(gate, receipt))

    async def awrap_tool_call(self, request: ToolCallRequest, handler: AsyncHandler) -> Any:
        gate, ticket = self._ticket(request)
        if not ticket.gated:  # a tool no step is bound to, let through by the core
            return _heard(gate, await handler(request))
        ticket, rows = self._escalated(request, gate, ticket)
        ticket, rows, request = self._confirmed(request, gate, ticket, rows)
        if not ticket.admitted:
            return _refusal(request, ticket, rows)
        outcome: Outcome = "unknown"  # cancelled: it may have run (held until settled)
        result = None
        try:
            result = await handler(request)
            outcome = "ok" if _succeeded(result, request.tool_call.get("id")) else "failed"
        except Exception:
            outcome = "failed"
            raise
        finally:
            receipt = gate.finish(ticket, outcome)
        return _with_entries(_heard(gate, result), rows + self._rows(gate, receipt))

    def _escalated(
        self, request: ToolCallRequest, gate: GateSession, ticket: Ticket
    ) -> tuple[Ticket, list[dict[str, Any]]]:
        """A refused call put to a person when ``approvals="ask"``: LangGraph's interrupt asks
        whether it may run anyway, and the run pauses until the graph is resumed with the answer
        (``Command(resume={"approve": True, "by": "alice", "reason": "..."})``; anything else
        keeps the refusal). An approval is a receipts-ledger entry, and the call is judged again
        under it. Returns the call's ticket and the ledger rows it made so far."""
        rows = self._rows(gate, ticket.opened) + self._rows(gate, ticket.entry)
        if ticket.admitted or self.approvals != "ask" or ticket.verdict.reason not in APPROVABLE:
            return ticket, rows
        if _ran_on_this_request(gate, ticket):  # an approval never runs a step twice on one
            return ticket, rows
        call = request.tool_call
        call_id = str(call.get("id"))
        with self._lock:  # a resumed run finds this very ticket (see _ticket)
            self._asked.setdefault(gate, {})[call_id] = ticket
        answer = interrupt(
            {
                "question": f"{why_refused(ticket.notice)} Run it anyway?",
                "tool": call["name"],
                "args": call.get("args", {}),
                "step": ticket.verdict.step,
                "reason": ticket.verdict.reason.value if ticket.verdict.reason else None,
            }
        )
        with self._lock:
            self._asked.get(gate, {}).pop(call_id, None)
        by, reason = _approval(answer)
        if by is None:
            return ticket, rows
        if not self._spend((_thread_of(request.state), call_id, ticket.call.work_order, ticket.at)):
            return ticket, rows
        try:
            entry = gate.approve(call["name"], by=by, reason=reason)
        except TaskgateError as exc:  # e.g. a request that moved on: the refusal stands
            log.warning("taskgate: the approval of %s could not be given: %s", call["name"], exc)
            return ticket, rows
        again = gate.begin(call["name"])
        return again, rows + self._rows(gate, entry) + self._rows(gate, again.entry)

    def _spend(self, key: tuple[str, str, str, int]) -> bool:
        """Whether the yes given in an interrupt for ``key`` (a thread, a call id, ...) is the
        first: one interrupt, one yes; a fork resumed again gets the refusal (in this process; a
        fork resumed in another is not seen)."""
        with self._lock:
            if key in self._spent:
                log.warning("taskgate: the yes to call %s was given already (its interrupt was "
                            "resumed again, a fork): it does not run again", key[1])  # fmt: skip
                return False
            self._spent[key] = None
            while len(self._spent) > self._max_threads * 16:
                self._spent.popitem(last=False)
            return True

    def _confirmed(
        self,
        request: ToolCallRequest,
        gate: GateSession,
        ticket: Ticket,
        rows: list[dict[str, Any]],
    ) -> tuple[Ticket, list[dict[str, Any]], ToolCallRequest]:
        """A held call asked through LangGraph's interrupt when ``confirm="interrupt"``: the run
        pauses with LangChain's ``ToolApprovalRequest``; on the resume's approve the call shown
        runs, on an edit the edited one (judged again), on a reject nothing. A resume value the
        gate cannot read is one line in the log and runs nothing. Returns the call's ticket, its
        ledger rows, and the request to run (with the edited arguments on an edit)."""
        if ticket.ask is None or self.confirm != "interrupt":
            return ticket, rows, request  # (batched: a call held in no model turn asks alone)
        ask, call_id = ticket.ask, str(request.tool_call.get("id"))
        with self._lock:  # a resumed run finds this very ticket (see _ticket)
            self._asked.setdefault(gate, {})[call_id] = ticket
        answer = interrupt(confirm.tool_approval(ask, call_id),
                           response_schema=confirm.response_schema(ask))  # fmt: skip
        with self._lock:
            self._asked.get(gate, {}).pop(call_id, None)
        try:
            what, edited, message = confirm.decision(answer, ask)
            if what != "reject" and not self._spend(
                (_thread_of(request.state), call_id, "confirm", 0)
            ):
                return _declined(ticket, "the user's yes to it was given already"), rows, request
            call = gate.answer(ask.id, what, by="reviewer", channel=CHANNEL, arguments=edited)
        except UsageError as exc:
            log.warning("taskgate: the answer to held call %s was not used: %s", call_id, exc)
            return _declined(ticket, f"the answer could not be used ({exc})"), rows, request
        rows = rows + self._rows(gate, gate.ledger[-1])
        if call is None:
            said = f": {message}" if message else ""
            return _declined(ticket, f"the user declined it{said}"), rows, request
        again = gate.begin(call.tool, arguments=call.arguments)
        if edited is not None:
            request = request.override(tool_call={**request.tool_call, "args": edited})
        return again, rows + self._rows(gate, again.entry), request

    # -- the held calls of a model turn, asked in one interrupt ----------------------------------
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """With ``confirm="interrupt"`` in the ``batched`` mode: the model turn's calls are
        judged as they come, and those the gate holds are put to the person in one
        ``HITLRequest``; the resume's decisions are answered (a reject or an answer the gate
        cannot read runs nothing) before any call of the turn runs, each approved or edited call
        judged again under the yes (an edit's arguments go into the turn's message)."""
        if self.confirm != "interrupt" or self.interrupt_mode != "batched":
            return None
        messages = state.get("messages", []) if isinstance(state, dict) else []
        calls = getattr(messages[-1], "tool_calls", None) if messages else None
        found = _batch(state, calls[0].get("id")) if calls else None
        if found is None:
            return None
        key, pending = found
        gate, judged = self._judged(state, key, pending)
        held = [(cid, t) for cid, t in judged.items() if t.ask is not None]
        if not held:
            return None
        asks = [t.ask for _, t in held if t.ask is not None]
        answer = interrupt(confirm.hitl_request(asks))
        rows: list[dict[str, Any]] = []
        for _, t in held:  # shown in this node: the rows of their asks go with it
            rows += self._rows(gate, t.opened) + self._rows(gate, t.entry)
        try:
            decided = confirm.decisions(answer, asks)
        except UsageError as exc:
            log.warning("taskgate: the answer to the held calls was not used: %s", exc)
            decided = [("reject", None, f"the answer could not be used ({exc})")] * len(held)
            unread = True
        else:
            unread = False
        edits: dict[str, dict[str, Any]] = {}
        answered: dict[str, Ticket] = {}
        thread = _thread_of(state)
        for (cid, ticket), (what, edited, message) in zip(held, decided, strict=True):
            call, why = None, f"the user declined it{': ' + message if message else ''}"
            if unread:
                why = message
            elif what != "reject" and not self._spend((thread, cid, "confirm", 0)):
                why = "the user's yes to it was given already"
            else:
                try:
                    call = gate.answer(ticket.ask.id, what, by="reviewer", channel=CHANNEL,  # type: ignore[union-attr]
                                       arguments=edited)  # fmt: skip
                    rows += self._rows(gate, gate.ledger[-1])
                except UsageError as exc:  # e.g. an edit the state no longer allows
                    why = f"the answer could not be used ({exc})"
            if call is None:  # its ask's rows went with this node: the refusal adds none
                answered[cid] = replace(_declined(ticket, why), opened=None, entry=None)
                continue
            answered[cid] = gate.begin(call.tool, arguments=call.arguments)
            if edited is not None:
                edits[cid] = edited
        with self._judging:
            self._batches[gate].setdefault(key, {}).update(answered)
        update: dict[str, Any] = {LEDGER_KEY: rows}
        if edits:
            last = messages[-1]
            changed = [{**c, "args": edits[c["id"]]} if c.get("id") in edits else c
                       for c in last.tool_calls]  # fmt: skip
            update["messages"] = [last.model_copy(update={"tool_calls": changed})]
        return update

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_model(state, runtime)

    # -- an operator's revisions and approvals of a thread ---------------------------------------
    def cancel(
        self,
        agent: Any,
        config: Any,
        step: str,
        *,
        rewire: Mapping[str, Sequence[str]] | None = None,
        inherit: bool = False,
    ) -> Revision:
        """Cancel ``step`` on the thread ``config`` names (see :meth:`GateSession.cancel`), between
        runs: one receipts-ledger row written to the thread's state. ``agent`` is the compiled
        graph (it needs a checkpointer)."""
        return self._operate(
            agent, config, lambda g: g.cancel(step, rewire=rewire, inherit=inherit)
        )

    def rewire(self, agent: Any, config: Any, step: str, prerequisites: Sequence[str]) -> Revision:
        """Give ``step`` exactly ``prerequisites`` on the thread (see :meth:`cancel`)."""
        return self._operate(agent, config, lambda g: g.rewire(step, prerequisites))

    def relax(self, agent: Any, config: Any, step: str, prerequisite: str) -> Revision:
        """Let ``step`` run without ``prerequisite`` on the thread (see :meth:`cancel`)."""
        return self._operate(agent, config, lambda g: g.relax(step, prerequisite))

    def approve(self, agent: Any, config: Any, what: str, *, by: str, reason: str = "") -> str:
        """A person approves one call of ``what`` (a step or its tool) on the thread, between
        runs: it is held in the thread's state and given (a receipts-ledger entry, see
        :meth:`GateSession.approve`) when the thread's next user message opens its request, for
        that request. Returns the step approved."""
        if not isinstance(by, str) or not by.strip():
            raise UsageError("an approval names who gave it: by='...'")
        step = _step_of(self.plan, what)
        return self._operate(agent, config, lambda g: step, approval=(step, by.strip(), reason))

    def settle(self, agent: Any, config: Any, what: str, *, ran: bool) -> str:
        """A person says whether the call of ``what`` (a step or its tool) held in doubt on the
        thread ran (a run cancelled mid-call: the tool may have run): if it did, its receipt is a
        row of the thread's ledger; either way the step is free again. Returns the step."""
        step = _step_of(self.plan, what)
        self._operate(agent, config, lambda g: g.settle(step, ran))
        return step

    def _operate(
        self,
        agent: Any,
        config: Any,
        change: Callable[[GateSession], T],
        approval: tuple[str, str, str] | None = None,
    ) -> T:
        """Apply ``change`` to the thread's gate and write the rows it made to its state (all or
        nothing: a change the gate refuses writes nothing); an ``approval`` is held in the
        state for the next request."""
        thread = (config or {}).get("configurable", {}).get("thread_id")
        if thread is None:
            raise UsageError("an operator's change names its thread: config={'configurable': "
                             "{'thread_id': ...}}")  # fmt: skip
        with self._operator_lock(str(thread)):  # one operator's change of a thread at a time
            return self._changed(agent, config, str(thread), change, approval)

    @contextlib.contextmanager
    def _operator_lock(self, thread: str) -> Iterator[None]:
        """One operator's change of ``thread`` at a time: a lock per thread, counted by its
        users, so it is dropped only when no one holds or waits on it."""
        with self._lock:
            lock, users = self._operating.get(thread, (threading.Lock(), 0))
            self._operating[thread] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._lock:
                lock, users = self._operating[thread]
                if users == 1:
                    del self._operating[thread]
                else:
                    self._operating[thread] = (lock, users - 1)

    def _changed(
        self,
        agent: Any,
        config: Any,
        thread: str,
        change: Callable[[GateSession], T],
        approval: tuple[str, str, str] | None,
    ) -> T:
        snapshot = agent.get_state(config)
        if snapshot.next:
            raise UsageError(
                f"thread {thread!r} is in the middle of a run (next: {', '.join(snapshot.next)}):"
                " change it between runs, or answer its interrupt"
            )
        state = snapshot.values or {}
        gate = self.gate(state, sync=True, thread=thread)
        had = self._stored_of(thread, gate)
        with self._judging:
            result = change(gate)
            rows = self._seal(gate, had, len(gate.ledger))
        if _checkpoint(agent.get_state(config)) != _checkpoint(snapshot):
            self._forget(thread)  # a run went on meanwhile: nothing written, the gate re-read
            raise UsageError(f"thread {thread!r} moved on while it was being changed; retry")
        update: dict[str, Any] = {LEDGER_KEY: rows}
        if approval is not None:  # tagged, and bound to the ledger's length (see _give)
            step, by, reason = approval
            hold: dict[str, Any] = {
                "step": step,
                "by": by,
                "reason": reason,
                "at": len(gate.ledger),
            }
            hold["tag"] = self._own.stamp(thread, hold)
            update[HELD_KEY] = [*(state.get(HELD_KEY) or []), hold]
        try:
            agent.update_state(config, update)
        except BaseException:
            self._forget(thread)
            raise
        with self._lock:
            held = self._threads.get(thread)
            if held is not None and held.gate is gate:
                held.stored = len(gate.ledger)
        return result

    def _forget(self, thread: str) -> None:
        """Drop the thread's gate from memory: it is rebuilt from the state when next used."""
        with self._lock:
            self._threads.pop(thread)

    def _ticket(self, request: ToolCallRequest) -> tuple[GateSession, Ticket]:
        """This call's gate and ticket. The gated calls of the model turn it came in are judged
        together when the first of them arrives (:meth:`GateSession.begin_all`), the gate first
        made equal to the state (a fork or a resume may have moved it), so a call whose
        prerequisite is in the same turn is refused whichever of them runs or finishes first."""
        name = request.tool_call["name"]
        call_id = request.tool_call.get("id")
        held = self.gate(request.state)
        with self._lock:  # a call put to a person, resumed: its ticket, judged once
            asked = self._asked.get(held, {}).get(str(call_id))
        if asked is not None:
            return held, asked
        args = request.tool_call.get("args")
        arguments = args if isinstance(args, dict) else None if args is None else {"args": args}
        channel = CHANNEL if self.confirm == "interrupt" else ""
        found = _batch(request.state, call_id)
        if found is None or not isinstance(call_id, str):
            gate = self.gate(request.state)
            return gate, gate.begin(name, arguments=arguments, channel=channel)
        key, calls = found
        gate, _ = self._judged(request.state, key, calls)
        with self._judging:
            judged = self._batches[gate]
            ticket = judged.get(key, {}).pop(call_id, None)
            if key in judged and not judged[key]:
                del judged[key]
        if ticket is None:
            ticket = gate.begin(name, arguments=arguments, channel=channel)
        return gate, ticket

    def _judged(
        self, state: Any, key: Any, calls: list[dict[str, Any]]
    ) -> tuple[GateSession, dict[str, Ticket]]:
        """The gate of ``state``'s thread and the tickets of the model turn ``key`` not yet
        taken, the turn judged once, when it is first seen (the gate first made equal to the
        state); an earlier turn's calls that never ran are freed then."""
        left: list[Ticket] = []
        channel = CHANNEL if self.confirm == "interrupt" else ""
        with self._judging:
            gate = self.gate(state)
            if key not in self._batches.setdefault(gate, {}):
                gate = self.gate(state, sync=True)
                judged = self._batches.setdefault(gate, {})
                if key not in judged:
                    for earlier in list(judged):  # a new model turn: the last one's unrun calls
                        left += judged.pop(earlier).values()
                    tickets = gate.judge(
                        [Call(c.get("name"), c["id"], arguments=c.get("args")) for c in calls],
                        channel=channel,
                    )
                    judged[key] = {c["id"]: t for c, t in zip(calls, tickets, strict=True)}
            taken = self._batches[gate].get(key, {})
        for unrun in left:  # never ran: nothing booked, their steps free again
            gate.finish(unrun, "failed")
        return gate, taken

    def _release(self, gate: GateSession) -> None:
        """A new user message: admitted calls of earlier turns that never ran book nothing and
        free their steps."""
        with self._judging:
            left = self._batches.pop(gate, {})
        for tickets in left.values():
            for ticket in tickets.values():
                gate.finish(ticket, "failed")

    def _rows(self, gate: GateSession, entry: LedgerEntry | None) -> list[dict[str, Any]]:
        """The sealed row of ``entry`` (an entry of ``gate``'s ledger), as the state gets it."""
        if entry is None:
            return []
        ledger = gate.ledger
        at = next(i for i in range(len(ledger) - 1, -1, -1) if ledger[i] is entry)
        return self._seal(gate, at, at + 1)

    def _seal(self, gate: GateSession, start: int, stop: int) -> list[dict[str, Any]]:
        """The state's rows of ``gate``'s ledger entries ``start`` to ``stop``."""
        with self._lock:
            sealer = self._sealers[gate]  # every gate handed out was adopted with its sealer
        return self._own.tagged(sealer.rows(gate.ledger, start, stop), sealer.scope)


#: the refusals a person may override: the state's (not a malformed or concurrent call)
APPROVABLE = frozenset(
    {Reason.BLOCKED, Reason.CANCELLED, Reason.ALREADY_DONE, Reason.NOT_REQUESTED,
     Reason.NO_RESOLVED_STEP}
)  # fmt: skip


def _approval(answer: object) -> tuple[str | None, str]:
    """Who approved, and why, from a resumed interrupt's answer; ``(None, "")`` for a no (or
    an approval that names no one, which is logged)."""
    if not isinstance(answer, Mapping) or answer.get("approve") is not True:
        return None, ""
    by, reason = answer.get("by"), answer.get("reason", "")
    if not isinstance(by, str) or not by.strip():
        log.warning("taskgate: an approval must name who gave it ('by'); the refusal stands")
        return None, ""
    return by.strip(), reason if isinstance(reason, str) else str(reason)


def _step_of(plan: Plan, what: str) -> str:
    """The step ``what`` names (a step id, or the tool it is bound to)."""
    if isinstance(what, str) and what in plan.steps:
        return what
    key = tool_key(what) if isinstance(what, str) else None
    found = [sid for sid, spec in plan.steps.items() if tool_key(spec.tool) == key]
    if not found:
        raise PlanError(f"nothing to approve: {what!r} is no step or tool of the plan")
    return found[0]


def _ran_on_this_request(gate: GateSession, ticket: Ticket) -> bool:
    """Whether ``ticket``'s step already ran under the current request's work order (a person's
    yes would not run it again: the user asks again for that)."""
    step, work_order = ticket.verdict.step, ticket.call.work_order
    return any(
        isinstance(e, AttemptEntry) and e.decision == "admit" and e.step == step
        and e.work_order == work_order
        for e in gate.ledger
    )  # fmt: skip


def _checkpoint(snapshot: Any) -> object:
    """The checkpoint a state snapshot was read at."""
    return ((getattr(snapshot, "config", None) or {}).get("configurable") or {}).get(
        "checkpoint_id"
    )


def _opened(entry: LedgerEntry) -> bool:
    """Whether ``entry`` opened a request (a user message with a work order)."""
    return isinstance(entry, RequestEntry) and entry.work_order is not None


def tool_names(tools: Sequence[Any]) -> list[str]:
    """The names the model calls ``tools`` by (a LangChain tool's name, a function's name)."""
    return [str(getattr(t, "name", None) or getattr(t, "__name__", "")) for t in tools]


def _batch(state: Any, call_id: object) -> tuple[Any, list[dict[str, Any]]] | None:
    """The model turn a tool call came in: a key for it (its place in the messages and its call
    ids) and its calls; ``None`` when the call cannot be placed in one (no id, or ids repeated)."""
    if not isinstance(call_id, str) or not call_id:
        return None
    messages = state.get("messages", []) if isinstance(state, dict) else []
    for at in range(len(messages) - 1, -1, -1):
        calls = getattr(messages[at], "tool_calls", None) or []
        ids = [c.get("id") for c in calls if isinstance(c, dict)]
        if call_id in ids:
            if len(set(ids)) != len(ids) or len(ids) != len(calls):
                return None
            # calls answered already (a person rejected one, another middleware answered it)
            # never reach the tool node: they are not judged, so they reserve no step
            answered = {getattr(m, "tool_call_id", None) for m in messages[at + 1 :]}
            pending = [c for c in calls if c["id"] not in answered or c["id"] == call_id]
            return (at, tuple(ids)), pending
    return None


def _succeeded(result: Any, call_id: object) -> bool:
    """Whether the tool's answer reports success: its status, never its words. A ``Command``
    answers through the messages it adds (any of them for this call with an error status is a
    failure)."""
    if isinstance(result, ToolMessage):
        return result.status != "error"
    if isinstance(result, Command) and isinstance(result.update, dict):
        messages = result.update.get("messages") or []
        return not any(
            isinstance(m, ToolMessage) and m.status == "error" and m.tool_call_id == call_id
            for m in (messages if isinstance(messages, list) else [messages])
        )
    return True


def _thread_of(state: Any) -> str:
    """The conversation's key: its ``thread_id``; without one (no checkpointer), the id the
    graph gave its first message, so two conversations never share a gate."""
    thread = get_config().get("configurable", {}).get("thread_id")
    if thread is not None:
        return str(thread)
    messages = state.get("messages", []) if isinstance(state, dict) else []
    first = getattr(messages[0], "id", None) if messages else None
    if not first:
        raise UsageError(
            "the LangGraph gate tells conversations apart by their thread_id (or, without one, "
            "by their first message's id): give the run a thread_id"
        )
    return f"(no thread id) {first}"


def _declined(ticket: Ticket, why: str) -> Ticket:
    """The held call's ticket as a refusal, saying why (a no, or an answer not used)."""
    tool = ticket.call.tool or "The call"
    return replace(ticket, ask=None, refusal=f'"{tool}" was not run: {why}. Do not call it again '
                   "unless the user asks for it.")  # fmt: skip


def _refusal(request: ToolCallRequest, ticket: Ticket, rows: list[dict[str, Any]]) -> Command[Any]:
    call = request.tool_call
    message = ToolMessage(
        content=ticket.notice, tool_call_id=call["id"], name=call["name"], status="error"
    )
    return Command(update={"messages": [message], LEDGER_KEY: rows})


def _with_entries(result: Any, rows: list[dict[str, Any]]) -> Any:
    """The tool's answer, carrying the sealed ledger rows it made (as a state update)."""
    if not rows:
        return result
    if isinstance(result, Command):
        update = dict(result.update or {}) if isinstance(result.update, dict) else {}
        update[LEDGER_KEY] = [*update.get(LEDGER_KEY, []), *rows]
        return Command(update=update, goto=result.goto, graph=result.graph)
    return Command(update={"messages": [result], LEDGER_KEY: rows})


def gated_tool_node(tools: Sequence[Any], gate: TaskGateMiddleware) -> ToolNode:
    """The same gate for a hand-built graph: a ``ToolNode`` whose calls the gate judges.

    The graph's state needs the ``taskgate_ledger`` key (use :class:`GateState`), and a node
    that runs ``gate.open_request`` on each new user message before the model. A plan step bound
    to a tool not in ``tools`` is an error.
    """
    check_tools(gate.plan, tool_names(tools))
    return ToolNode(tools, wrap_tool_call=gate.wrap_tool_call, awrap_tool_call=gate.awrap_tool_call)


def _heard(gate: GateSession, result: Any) -> Any:
    """A tool's result, heard by the gate first: what it says grounds later calls' values."""
    content = getattr(result, "content", None)
    if isinstance(content, str | list):
        gate.hear(result_text(content if isinstance(content, str) else
                              " ".join(str(p.get("text", "")) if isinstance(p, dict) else str(p)
                                       for p in content)))  # fmt: skip
    return result
