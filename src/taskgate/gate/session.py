"""One gated conversation: the gate's core, which every surface calls.

A :class:`GateSession` holds a :class:`~taskgate.TaskMachine` over a tool-bound plan and every
rule the gate applies on top of it, so that the tool gate, the LangGraph middleware, the proxy,
the MCP gate and the SDK adapters only translate their framework's events into its calls:

* **open** a request (:meth:`GateSession.open_request`, or :meth:`GateSession.open_message` from
  the user's words through a matcher, with its ask-back question when the matcher cannot tell);
* **judge** the calls of one model turn as a batch (:meth:`GateSession.judge`): each is judged
  with the earlier admitted ones of the batch in flight, in one critical section, into a
  :class:`Ticket`. The rules, all here: a step whose prerequisite is in flight is BLOCKED, a
  second call of a step in flight ``in-progress``; nothing runs on a request that named no step
  (``unrequested="refuse"``, the default) unless a person approved it; a call repeated under its
  request is ALREADY DONE; a garbled name, unreadable arguments, and (where receipts come by call
  id) a missing or shared id are malformed; a tool no step is bound to passes ungated
  (``unbound="run"``, the default) or is refused (``unbound="refuse"``);
* **finish** an admitted ticket (:meth:`GateSession.finish`): ``"ok"`` books its receipt,
  ``"failed"`` frees its step, ``"unknown"`` (no answer ever came: a crash, a cancellation, a
  transport gone) holds the step **in doubt** until :meth:`GateSession.settle` says whether it ran;
* **approve** one call, **revise** the plan (cancel, rewire, relax; a revision that would strand
  a step is refused), read the **checklist** and **directive**.

Every change is one receipts-ledger entry, and :meth:`GateSession.from_ledger` (like every fold of
stored state on every surface) re-judges each admission with the same rules.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import itertools
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from taskgate.core.booking import Booking
from taskgate.core.graph import TaskGraph, step_sort_key
from taskgate.core.ids import normalize_tool, normalize_work_order, tool_key
from taskgate.core.ledger import AnswerEntry, AskEntry, LedgerEntry
from taskgate.core.machine import Request, Status, TaskMachine
from taskgate.core.plan import Plan, Revision
from taskgate.core.verdict import Policy, Reason, Verdict
from taskgate.errors import PlanError, TaskgateError, UsageError
from taskgate.gate.asking import (
    Ask,
    Decision,
    answer_of,
    canonical,
    decision_of,
    new_id,
    question,
    questions,
    quotes_any,
    relayed,
)
from taskgate.gate.asking import notice as ask_notice
from taskgate.gate.notices import plain_refusal, quoted
from taskgate.matching.askback import ask_back_question
from taskgate.matching.wordings import worded
from taskgate.protocol.render import render_checklist, render_directive, render_rejection
from taskgate.roles import Match, Matcher
from taskgate.understanding.acts import (
    AGENT_CHARS,
    USER_CHARS,
    opens_with_yes,
    read_agent,
    read_user,
)
from taskgate.understanding.calls import counted, names_item, sets_item
from taskgate.understanding.grounding import Ground, Heard, displaced
from taskgate.understanding.reader import (
    REVISIONS,
    Reading,
    Turn,
    proposed_steps,
    says_again,
)
from taskgate.understanding.values import Unreadable, readable

#: what a refused call's notice says: plain words (the default), or the paper's rejection notice
Notices = Literal["plain", "protocol"]
#: a gated call while the user's current message asked for no step of the plan: refused (the
#: default), or run when the state admits it (the paper's state-bound enforcement)
Unrequested = Literal["refuse", "run"]
#: a call of a tool no step of the plan is bound to: run ungated (the default), or refused
Unbound = Literal["run", "refuse"]
#: how an admitted call ended: it succeeded (its receipt), it failed (its step is free again), or
#: no answer came from what ran it (it may have run: the step is held in doubt until settled)
Outcome = Literal["ok", "failed", "unknown"]


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call as a surface hands it to the gate.

    ``tool`` is the name as the agent wrote it (anything that is not a tool name is judged, not
    raised: a malformed call); ``id`` is the framework's call id (needed where receipts come by
    id, see :meth:`GateSession.judge`'s ``keyed``); ``work_order`` defaults to the current
    request's; ``readable`` is False when the surface could not read the call's arguments."""

    tool: object
    id: str | None = None
    work_order: object = None
    readable: bool = True
    #: the call's arguments, where the surface has them: a confirmed proposal that names no step
    #: authorizes the call whose arguments it stated (see :class:`taskgate.Reading`)
    arguments: Mapping[str, object] | None = None


@dataclass(frozen=True, slots=True)
class Ticket:
    """One judged call: what was asked, and the gate's verdict on it."""

    call: Booking
    verdict: Verdict
    entry: LedgerEntry | None = None  # the refusal as recorded in the ledger (refused calls)
    refusal: str = ""  # the gate's notice for a refused call (see the session's ``notices``)
    id: str | None = None  # the framework's call id, if it gave one
    #: the ledger's length when the call was judged (where a late receipt is judged on replay)
    at: int = 0
    gated: bool = True  # False: a tool no step is bound to, let through ungated
    key: int = 0  # the session's own number for the ticket
    #: the request the gate opened for this call as it judged it (a confirmed proposal, one
    #: more thing of the message's order), in the ledger before the call's own entries: a
    #: surface that stores the ledger's entries per call stores it with this call's
    opened: LedgerEntry | None = None
    #: the call is held: the gate asked the person (see :mod:`taskgate.gate.asking`)
    ask: Ask | None = None

    @property
    def admitted(self) -> bool:
        return self.verdict.admitted

    @property
    def held(self) -> bool:
        """Whether the call waits on a person's answer (not run, not refused)."""
        return self.ask is not None

    @property
    def step(self) -> str | None:
        return self.verdict.step

    @property
    def notice(self) -> str:
        """What the agent reads for a refused call; empty if admitted."""
        if self.admitted:
            return ""
        return self.refusal or render_rejection(self.verdict, self.call)


@dataclass(frozen=True, slots=True)
class Opened:
    """What :meth:`GateSession.open_message` did: the request it opened (or None), the matcher's
    answer, and the ask-back question when it opened none."""

    request: Request | None
    match: Match
    ask_back: str | None = None
    reading: Reading | None = None  # what the gate understood of the message
    #: the held calls the message said yes to (the gate's question answered): they run now
    granted: tuple[Ask, ...] = ()


@dataclass(frozen=True, slots=True)
class Doubt:
    """A call in doubt: admitted, handed out, and never answered (it may have run)."""

    step: str
    work_order: str
    at: int  # the ledger's length when it was admitted


def check_tools(plan: Plan, tools: Iterable[str]) -> None:
    """Raise :class:`PlanError` naming every step bound to a tool that is not among ``tools`` (the
    agent's): such a step could never be executed, and its dependents never unblocked. Names are
    read as calls are (:func:`~taskgate.core.ids.tool_key`: ``GIT-STATUS`` is ``git_status``)."""
    have = set(tools)
    keys = {tool_key(n) for t in have if (n := normalize_tool(t))}  # names a call can carry
    missing = [f"{sid} ({spec.tool})" for sid, spec in plan.steps.items()
               if spec.tool is None or tool_key(spec.tool) not in keys]  # fmt: skip
    if missing:
        raise PlanError(
            f"the plan binds steps to tools the agent does not have: {', '.join(missing)}; "
            f"its tools are: {', '.join(sorted(have)) or 'none'}"
        )


class GateSession:
    """One gated conversation's task state and every rule the gate applies (see the module)."""

    #: ``"ask"`` (the default): a call a confirmed proposal authorizes, with a value nobody said
    #: in the conversation, is held and asked (see :meth:`hear` and
    #: :mod:`taskgate.understanding.grounding`); ``"off"``: not checked
    grounding: Literal["ask", "off"] = "ask"

    def __init__(
        self,
        plan: Plan,
        policy: Policy = Policy.STATE_BOUND,
        *,
        lenient: bool = False,
        seed: int | None = None,
        notices: Notices = "plain",
        unrequested: Unrequested = "refuse",
        unbound: Unbound = "run",
        asks: bool = True,
    ) -> None:
        self._setup(
            TaskMachine(plan, lenient=lenient, seed=seed),
            policy,
            notices,
            unrequested,
            unbound,
            asks,
        )

    @classmethod
    def from_ledger(
        cls,
        entries: Sequence[LedgerEntry],
        policy: Policy = Policy.STATE_BOUND,
        *,
        plan: Plan | None = None,
        notices: Notices = "plain",
        unrequested: Unrequested = "refuse",
        unbound: Unbound = "run",
        asks: bool = True,
    ) -> GateSession:
        """The session whose receipts ledger is ``entries`` (as saved from :attr:`ledger`, e.g.
        through :func:`~taskgate.dump_ledger` and :func:`~taskgate.load_ledger`).

        Every admission in it is judged again where it was made, at least as strictly as
        ``policy`` (a forged or edited receipt is a :class:`~taskgate.errors.LedgerFormatError`);
        with ``plan``, the ledger must start from exactly that plan. With the default
        ``unrequested="refuse"``, an admission made while the request asked for no step is an
        error too (a ledger of a gate that ran such calls loads with ``unrequested="run"``)."""
        session = cls.__new__(cls)
        machine = TaskMachine.from_ledger(
            entries, plan=plan, policy=policy, requested=unrequested == "refuse"
        )
        session._setup(machine, policy, notices, unrequested, unbound, asks)
        return session

    @classmethod
    def around(
        cls,
        machine: TaskMachine,
        policy: Policy = Policy.STATE_BOUND,
        notices: Notices = "plain",
        unrequested: Unrequested = "refuse",
        unbound: Unbound = "run",
        asks: bool = True,
    ) -> GateSession:
        """A session over an existing machine (shared, not copied: what either records, both
        see)."""
        session = cls.__new__(cls)
        session._setup(machine, policy, notices, unrequested, unbound, asks)
        return session

    def _setup(
        self,
        machine: TaskMachine,
        policy: Policy,
        notices: Notices,
        unrequested: Unrequested,
        unbound: Unbound,
        asks: bool = True,
    ) -> None:
        if machine.graph.binding != "tool":
            raise PlanError('a tool gate needs a tool-bound plan ({"binding": "tool", ...})')
        if notices not in ("plain", "protocol"):
            raise UsageError(f"notices must be 'plain' or 'protocol', not {notices!r}")
        if unrequested not in ("refuse", "run"):
            raise UsageError(f"unrequested must be 'refuse' or 'run', not {unrequested!r}")
        if unbound not in ("run", "refuse"):
            raise UsageError(f"unbound must be 'run' or 'refuse', not {unbound!r}")
        self.policy = policy
        #: what the matcher reads for steps with no text of their own (their tools' descriptions,
        #: see :func:`taskgate.matching.wordings.wordings`)
        self.wordings: dict[str, str] = {}
        self.notices: Notices = notices
        self.unrequested: Unrequested = unrequested
        self.unbound: Unbound = unbound
        #: hold and ask what the gate cannot tell the user agreed to (plain notices and
        #: ``unrequested="refuse"`` only: the paper's rungs have no asks)
        self.asks = bool(asks) and notices == "plain" and unrequested == "refuse"
        self._machine = machine
        self._lock = threading.Lock()
        self._channel = ""  # where the asks made while judging go (see begin)
        self._yes_led = False  # the last message read opened with a plain yes
        #: the calls (tool, canonical arguments) the person said no to since the last message
        #: read: the same call again is refused, not asked again
        self._said_no: set[tuple[str, str]] = set()
        self._reading: Reading | None = None  # what the gate understood of the last message
        #: the last turns read (the agent's message, the user's reply), for a revised proposal
        self._said: deque[Turn] = deque(maxlen=REVISIONS)
        self._reply = ""  # the user's last message read (a yes may restate a detail: "yes, at 8")
        #: what the conversation said, for its calls' values: the user's words, the results of
        #: tools, the agent's messages the user took up (a confirmed call's proposal is added to
        #: it where it is judged)
        self._heard = Ground()
        self._running: set[str] = set()  # steps with an admitted call not finished (or in doubt)
        self._open: dict[int, int] = {}  # admitted tickets not yet finished -> epoch judged at
        self._doubt: dict[str, Doubt] = {}  # steps held in doubt, by step
        self._epoch = 0  # requests opened or closed and revisions applied (they move the state)
        self._keys = itertools.count(1)

    # -- the state -------------------------------------------------------------------------------
    @property
    def machine(self) -> TaskMachine:
        return self._machine

    @property
    def ledger(self) -> tuple[LedgerEntry, ...]:
        return self._machine.ledger

    @property
    def requested(self) -> bool:
        """Whether this session refuses calls on a request that named no step."""
        return self.unrequested == "refuse"

    def in_doubt(self) -> dict[str, Doubt]:
        """The calls held in doubt, by step (see :meth:`finish` and :meth:`settle`)."""
        with self._lock:
            return dict(self._doubt)

    def running(self) -> frozenset[str]:
        """Steps with an admitted call that has not ended (those in doubt included)."""
        with self._lock:
            return frozenset(self._running)

    # -- requests --------------------------------------------------------------------------------
    def open_request(
        self, step: str | None = None, *, explicit_redo: bool = False, work_order: str | None = None
    ) -> Request:
        """A new request, resolved to ``step`` (or none); its work order is issued fresh."""
        with self._lock:
            req = self._machine.open_request(
                step, explicit_redo=explicit_redo, work_order=work_order
            )
            self._epoch += 1
            self._reading = None
            return req

    def close_request(self) -> None:
        with self._lock:
            self._reading = None
            self._machine.close_request()
            self._epoch += 1

    async def open_message(
        self,
        message: str,
        matcher: Matcher,
        ask_back: bool = True,
        *,
        agent: str | None = None,
        earlier: Sequence[Turn] | None = None,
    ) -> Opened:
        """Read a user message with ``matcher`` and open its request; or, when it could not tell
        which step the message means (no step, some candidates) and ``ask_back`` is set, close
        the request and return the ask-back question to put to the user instead of running the
        agent (without ``ask_back`` the request opens on no step).

        ``agent`` is the agent's message before it (what it proposed or asked): a matcher that
        reads conversations (a :class:`~taskgate.understanding.Reader`, such as the default
        :class:`~taskgate.ConversationReader`) reads the two together, so a "yes" confirms what the
        agent proposed and a "no" declines it; a plain matcher reads the message alone.
        ``earlier`` are the turns before, oldest first, each (the agent's message, the user's
        reply), for a proposal the user had changed before confirming it; without it the session
        uses the turns it was given before (a surface that keeps one session for a conversation
        need not pass them)."""
        if not (isinstance(message, str) and isinstance(agent, str | None)):
            raise UsageError("the user's message and the agent's must be text")
        given, agent = agent is not None, agent or ""  # None: the agent's message is not known
        with self._lock:  # calls held for the user's answer: the message is read against it
            for shown, said in () if earlier is None else _turns(earlier):
                self._took(shown, said)
            self._took(agent, message)
            self._said_no.clear()  # a new message: what they said no to may be asked again
            waiting = [Ask.of(a) for a in self._machine.asks.values()]
            granted = self._answer_in_message(message, agent, given)
            if granted is None and agent and quotes_any(waiting, agent):
                agent = ""  # the gate's own questions, not answered plainly: no proposal
            if granted is not None:
                self._said.clear()  # the held calls are the proposal: no later one revises it
                self._reading = granted
                return Opened(self._machine.request, granted.match, None, granted,
                              tuple(waiting))  # fmt: skip
        with self._lock:
            plan = worded(self._machine.graph.to_plan(), self.wordings)
            before = tuple(self._said) if earlier is None else _turns(earlier)
            self._said.append((agent[-AGENT_CHARS:], message[:USER_CHARS]))  # as read
            self._reply = message[:USER_CHARS]
            self._yes_led = opens_with_yes(message)
        try:
            reading = await self._read(matcher, plan, message, agent, before)
        except BaseException:  # unread, the last message's request must not stand for this one
            with self._lock:
                self._machine.close_request()
                self._epoch += 1
                self._reading = None
            raise
        reading = self._not_again(reading, agent, message)
        match = reading.match
        steps = [s for s in reading.steps if s in plan.steps]  # never a step it lacks
        with self._lock:  # the first step asked for that is not done (unless a redo): the
            # others of the message are context ("draft the RFQ from the requirements too"); a
            # repeatable step asked for again is asked for ("can I also get a latte?")
            fresh = [s for s in steps if self._machine.status(s) is not Status.DONE
                     or self._machine.graph.repeatable(s)]  # fmt: skip
        pick = steps if match.explicit_redo else (fresh or steps)
        step: str | None = pick[0] if pick else None
        asked = [c for c in match.candidates if c in plan.steps]
        with self._lock:
            if step is None and asked and ask_back:
                self._machine.close_request()
                self._epoch += 1
                self._reading = reading
                return Opened(None, match, ask_back_question(plan, asked), reading)
            req = self._machine.open_request(step, explicit_redo=match.explicit_redo)
            self._epoch += 1
            self._reading = reading
        return Opened(req, match._replace(step=step), None, reading)

    @staticmethod
    async def _read(
        matcher: Matcher, plan: Plan, message: str, agent: str, before: tuple[Turn, ...]
    ) -> Reading:
        aread = getattr(matcher, "aread", None)
        if callable(aread):
            read: Reading = await aread(plan, message, agent, before)
            return read
        return Reading.of(await matcher.match(plan, message))

    def _not_again(self, reading: Reading, agent: str, message: str) -> Reading:
        """A "yes" to a proposal that names only steps already done, and not another one of
        them ("Can you confirm the order is correct before I send it to be made?" after the
        drink was added), runs none of them again: it is read as a yes to the proposal's
        details (a call they describe, :meth:`Reading.confirms`)."""
        if reading.kind != "confirm" or not reading.steps or reading.explicit_redo:
            return reading
        with self._lock:
            done = all(self._machine.status(s) is Status.DONE for s in reading.steps
                       if s in self._machine.graph)  # fmt: skip
        said = agent[-AGENT_CHARS:]
        if not done or says_again(said):
            return reading
        if not read_user(message[:USER_CHARS], said).yes:  # "hold on, I want to add a muffin"
            return Reading("other")
        return dataclasses.replace(reading, steps=(), proposal=said,
                                   cue=read_agent(said).confirming)  # fmt: skip

    # -- judging calls ---------------------------------------------------------------------------
    def judge(
        self, calls: Sequence[Call | object], *, keyed: bool = False, channel: str = ""
    ) -> list[Ticket]:
        """Judge the calls of one model turn as a batch, in one critical section: each is judged
        with the earlier admitted ones of the batch in flight, so a call whose prerequisite is in
        the same batch is refused BLOCKED whatever order the calls later run and finish in (the
        verdicts do not depend on the threads' timing). Refusals are recorded at once; admitted
        calls reserve their steps until :meth:`finish`. ``keyed``: the receipts of this batch
        come by call id (a tool message answering it), so a gated call without an id, or sharing
        one with another call of the batch, is malformed. A bare name stands for ``Call(name)``.
        ``channel`` names where a held call's question goes (see :meth:`begin`)."""
        with self._lock, self._asking(channel):
            tickets = self._decide([_as_call(c) for c in calls], keyed)
            return [self._reserve(t) for t in tickets]

    def decide(self, calls: Sequence[Call | object], *, keyed: bool = False) -> list[Ticket]:
        """The verdicts :meth:`judge` would give, recording and reserving nothing (for a surface
        that journals a batch's attempts itself before they count, as the proxy's replies), except
        the request a confirmed proposal opens for the call it described (the surface journals
        it: see the proxy's ``Judged.opened``)."""
        with self._lock:
            return self._decide([_as_call(c) for c in calls], keyed)

    def begin(
        self,
        tool: object,
        work_order: object = None,
        arguments: Mapping[str, object] | None = None,
        *,
        channel: str = "",
    ) -> Ticket:
        """Judge one call of ``tool`` (a batch of one; ``arguments`` as the agent gave them, where
        known): see :meth:`judge`. ``channel`` names where the question of a call the gate holds
        goes: ``""`` (the default) to the agent, which asks the user, whose next message is read
        against it (the ask-back); any other name is a surface's own channel (an interrupt, an
        SDK's approval), answered there with :meth:`answer`: the user's next message drops it
        unanswered, never reads it as the answer."""
        call = _as_call(Call(tool, work_order=work_order, arguments=arguments))
        with self._lock, self._asking(channel):  # a batch of one, without a batch's bookkeeping
            mark = self._machine.ledger_length
            self._open_confirmed([call])
            return self._reserve(self._opening(mark, self._one(call, self._running)))

    def begin_all(self, tools: Sequence[object]) -> list[Ticket]:
        """Judge the calls of one model turn, given by their tools' names: see :meth:`judge`."""
        return self.judge([Call(t) for t in tools])

    def _decide(self, calls: Sequence[Call], keyed: bool) -> list[Ticket]:
        ids = Counter(c.id for c in calls) if keyed else None
        mark = self._machine.ledger_length
        self._open_confirmed(calls)
        in_flight = set(self._running)
        tickets = []
        for call in calls:
            ticket = self._opening(mark, self._one(call, in_flight))
            mark = self._machine.ledger_length
            if (
                ids is not None
                and ticket.gated
                and ticket.admitted
                and (not call.id or ids[call.id] > 1)
            ):
                # its receipt could not be told from another call's: one answer would book both
                ticket = self._refused(ticket.call, Verdict("refuse", ticket.step,
                                                           Reason.MALFORMED_CALL), call.id)  # fmt: skip
            if ticket.gated and ticket.admitted and ticket.step is not None:
                in_flight.add(ticket.step)
            tickets.append(ticket)
        return tickets

    def _opening(self, mark: int, ticket: Ticket) -> Ticket:
        """The ticket, with the request the gate opened since the ledger's length was ``mark``
        (judging it, or the batch it is the first of)."""
        if self._machine.ledger_length == mark:
            return ticket
        return dataclasses.replace(ticket, opened=self._machine.last_entry())

    def _one(self, call: Call, in_flight: set[str]) -> Ticket:
        current = self._current()
        tool, wo = call.tool, call.work_order
        if not isinstance(tool, str) or not (wo is None or isinstance(wo, str)):
            shown = tool if isinstance(tool, str) else type(tool).__name__
            garbled = Booking("", (wo if isinstance(wo, str) else current)[:80], tool=shown[:80])
            return self._refused(garbled, Verdict("refuse", None, Reason.MALFORMED_CALL), call.id)
        name = normalize_tool(tool)
        wo = current if wo is None else (normalize_work_order(wo) or wo)
        booking = Booking("", wo, tool=name or tool)
        step = self._machine.graph.step_for_tool(name) if name is not None else None
        if name is not None and step is None:  # a tool no step is bound to
            if self.unbound == "run":
                return Ticket(booking, Verdict("admit", None), id=call.id, gated=False)
            return self._refused(booking, Verdict("refuse", None, Reason.UNKNOWN_TOOL), call.id)
        if name is None or not call.readable:  # not a tool name, or arguments unreadable
            return self._refused(booking, Verdict("refuse", step, Reason.MALFORMED_CALL), call.id)
        granted = self._grant_fits(call, step, name)
        verdict = self._machine.judge(
            booking, self.policy, in_flight, requested=self.requested, grants=granted
        )
        if verdict.reason is Reason.REPEATED_RECEIPT and call.work_order is None:
            verdict, booking = self._next_thing(call, booking, verdict, in_flight)
        allowed = verdict.admitted or verdict.reason is Reason.UNCONFIRMED  # by the state
        why, details = "", ("", "")
        if granted and verdict.admitted:
            pass  # a person said yes to exactly this call when asked
        elif allowed and (self._only_confirmed(step) or self._beyond_reading(step)):
            # a "yes" confirms the proposed call, and a request asks for the steps it names, not
            # every step the state would admit: a clear request for something else
            verdict = Verdict("refuse", step, Reason.NOT_REQUESTED)
        elif allowed and not self._of_proposal(call, step):  # "for 2 at 7": not 40
            why = "its details are not what the user agreed to"
            details = ("what the user agreed to", "the details you proposed")
        elif allowed and not self._of_thing(call, step):  # "a mocha": no latte
            why = "its details are not what the user asked for"
            details = ("what the user asked for", "what they asked for")
        elif verdict.reason is Reason.UNCONFIRMED and step and not self._unclear(step):
            # a clear no, a goodbye: what the words alone give, refused, never asked again
            verdict = Verdict("refuse", step, self._no_reason())
        elif verdict.reason is Reason.UNCONFIRMED:
            why = "this step runs only on the user's yes to each call"
        elif verdict.reason is Reason.NO_RESOLVED_STEP and step and self._unclear(step):
            why = self._understood()
        elif self._again(verdict) and step and self._unclear(step):  # "another one, maybe"
            why = f"{self._understood()}, and it ran already for an earlier request"
        elif verdict.admitted and (moved := self._displaced(call)):  # "Friday at 7": no 21:00
            why = f"{_listed(moved)} {'is' if len(moved) == 1 else 'are'} not what was proposed"
            details = ("what the user agreed to", "the details you proposed")
        elif verdict.admitted and (unsaid := self._unsaid(call, step)):  # "Nizza" for "Sino"
            why = f"{_listed(unsaid)} {'was' if len(unsaid) == 1 else 'were'} said by nobody"
            details = ("what the user agreed to", "the details the user gave or agreed to")
        if why and self.asks and step is not None:
            if (booking.tool or "", canonical(call.arguments)) in self._said_no:  # asked: no
                refused = Verdict("refuse", step, self._no_reason())
                return Ticket(booking, refused, id=call.id, at=self._machine.ledger_length,
                              refusal=f"{quoted(booking.tool or '')} was not run: the user said no "
                              "to it. Do not call it again unless they ask for it.")  # fmt: skip
            return self._held(booking, call, step, why)
        if details[0]:
            return self._other_details(booking, step, call.id, *details)
        if verdict.reason is Reason.REPEATED_RECEIPT:  # the same call again under its request
            verdict = Verdict("refuse", verdict.step, Reason.ALREADY_DONE)  # would run it again
        if not verdict.admitted:
            return self._refused(booking, verdict, call.id)
        self._take(call, step)
        return Ticket(booking, verdict, id=call.id, at=self._machine.ledger_length)

    def _unsaid(self, call: Call, step: str | None) -> tuple[str, ...]:
        """The arguments of a call a confirmed proposal authorizes whose values nobody said in the
        conversation: not the user, not a tool's result, not the proposal nor an earlier message
        of the agent's the user took up (see :meth:`_hear_turn`); see
        :mod:`taskgate.understanding.grounding`. The same for a request in the user's own words:
        what they left open is asked, never chosen for them. None where no message was read (a
        request opened by hand) or where the gate runs what was not asked for (``unrequested="run"``, the
        protocol's notices: the paper's rungs)."""
        reading = self._reading
        if self.grounding != "ask" or self.unrequested != "refuse" or self.notices != "plain":
            return ()
        if reading is None:  # a request opened by hand: no conversation read
            return ()
        if step is not None and self._machine.graph.confirm(step) == "never":
            return ()  # the state alone decides, and the user is never asked
        proposal = Heard.of(f"{reading.proposal} {reading.earlier} {reading.thing}")
        return self._heard.ungrounded(call.arguments, proposal)

    def _displaced(self, call: Call) -> tuple[str, ...]:
        """The arguments of a call a confirmed proposal authorizes whose date, weekday or time
        is not one the proposal (or the user's yes to it) states: another said elsewhere in the
        conversation is not the one agreed to (see :func:`~taskgate.understanding.grounding.displaced`).
        Where :meth:`_unsaid` checks, and only for a yes to a proposal."""
        reading = self._reading
        if reading is None or reading.kind != "confirm" or not reading.proposal:
            return ()
        if self.grounding != "ask" or self.unrequested != "refuse" or self.notices != "plain":
            return ()
        stated = Heard.of(f"{reading.proposal[-AGENT_CHARS:]} {self._reply}")
        return displaced(call.arguments, stated)

    def _grant_fits(self, call: Call, step: str | None, name: str | None) -> bool:
        """Whether a person's yes to an asked call covers this call: the same tool, and
        arguments that are the shown ones byte for byte (any other call is a new one)."""
        grant = self._machine.granted.get(step) if step is not None else None
        return (
            grant is not None
            and normalize_tool(grant.tool) == name
            and grant.arguments == canonical(call.arguments)
        )

    def _again(self, verdict: Verdict) -> bool:
        """Whether the state refuses the call only because its repeatable step ran before and
        the request does not ask for it again (a yes to it would run it again)."""
        req, step = self._machine.request, verdict.step
        return (
            verdict.reason is Reason.ALREADY_DONE
            and step is not None
            and self._machine.graph.repeatable(step)
            and req is not None
            and req.step != step
            and self.requested
        )

    def _unclear(self, step: str) -> bool:
        """Whether the user's last message, which asked for no step, may still have agreed to a
        call of ``step``: anything but a clear no to it, or a goodbye. A request opened with no
        reading (by the engineer's code, or on a gate rebuilt from its ledger, which keeps no
        reading) cannot tell either: the call is asked; so is a message read as a no or a goodbye
        that opens with a plain yes."""
        reading = self._reading
        if reading is None:
            return True
        if reading.kind in ("closing", "decline") and self._yes_led:
            return True  # "Yes, book that - then ...": a yes, whatever the reader made of the rest
        if reading.kind == "closing":
            return False
        return not (reading.kind == "decline" and (not reading.about or step in reading.about))

    def _no_reason(self) -> Reason:
        """Why a call the user said no to is refused: no step asked for, or another one."""
        req = self._machine.request
        return Reason.NO_RESOLVED_STEP if req is None or req.step is None else Reason.NOT_REQUESTED

    def _understood(self) -> str:
        reading = self._reading
        if reading is None:
            return "the user's last message does not clearly ask for this"
        if reading.kind in ("closing", "decline") and self._yes_led:
            return "the user's last message opens with a yes but may also say no"
        return reading.understood(worded(self._machine.graph.to_plan(), self.wordings))

    @contextlib.contextmanager
    def _asking(self, channel: str) -> Iterator[None]:
        """Within the lock: the channel of the asks made while judging."""
        if not isinstance(channel, str) or len(channel) > 64:
            raise UsageError("an ask's channel is a name of at most 64 characters")
        self._channel = channel
        try:
            yield
        finally:
            self._channel = ""

    def _held(self, booking: Booking, call: Call, step: str, why: str) -> Ticket:
        """A call held until a person answers (its ask is recorded by :meth:`_reserve`); the
        same call held again before the answer is the same ask."""
        args = canonical(call.arguments)
        tool = booking.tool or ""
        same = [a for a in self._machine.asks.values()
                if a.step == step and a.tool == tool and a.arguments == args]  # fmt: skip
        if same:
            ask = Ask.of(same[-1])
        else:
            graph = self._machine.graph
            wording = graph.text(step) or self.wordings.get(step, "")
            shown = question(tool, call.arguments, wording)
            ask = Ask(new_id(), step, tool, dict(call.arguments or {}), shown, why, time.time(),
                      self._channel)  # fmt: skip
        notice = ask_notice(tool, why, ask.question)
        return Ticket(booking, Verdict("refuse", step, Reason.ASKED), refusal=notice, id=call.id,
                      at=self._machine.ledger_length, ask=ask)  # fmt: skip

    def _other_details(
        self, booking: Booking, step: str | None, call_id: str | None, what: str, instead: str
    ) -> Ticket:
        """A call refused because its details are not ``what`` the user said yes to or asked
        for (in plain words: call it with ``instead``, or ask them)."""
        refused = Verdict("refuse", step, Reason.NOT_REQUESTED)
        tool = quoted(booking.tool or "") or "The call"
        notice = (
            f"{tool} was not run: its details are not {what}. Call it with {instead}, or ask them."
            if self.notices == "plain"
            else render_rejection(refused, booking)
        )
        return Ticket(booking, refused, refusal=notice, id=call_id, at=self._machine.ledger_length)

    def _next_thing(
        self, call: Call, booking: Booking, verdict: Verdict, in_flight: set[str]
    ) -> tuple[Verdict, Booking]:
        """A call of the adding step that already ran for the message, when the message ordered
        several things ("a latte and a mocha, please") and the call is of one not yet taken:
        its own request opens (a fresh work order, in the ledger as any request) and the call
        is judged under it. Otherwise the verdict stands."""
        step, reading, req = verdict.step, self._reading, self._machine.request
        if (
            step is None
            or reading is None
            or reading.kind not in ("need", "confirm")
            or not reading.thing
            or req is None
            or req.step != step
            or not reading.steps
            or reading.steps[0] != step
            or not self._machine.graph.repeatable(step)
            or self._current() not in reading.taken  # what it took is not known: no more
            or self._untaken(call, step, fresh=True) is None
        ):
            return verdict, booking
        self._machine.open_request(step, work_order=None)
        self._epoch += 1
        booking = dataclasses.replace(booking, work_order=self._current())
        return self._machine.judge(
            booking, self.policy, in_flight, requested=self.requested
        ), booking

    def _untaken(self, call: Call, step: str, fresh: bool = False) -> tuple[int, int] | None:
        """The thing of the message's order a call of the adding step is of, and how many it
        counts, when the message's earlier requests have not taken that many of it yet (None:
        of no thing, or only of things taken). ``fresh``: for a request not yet opened (the
        current one's thing is taken too)."""
        reading = self._reading
        if reading is None:
            return None
        current = None if fresh else self._current()
        wording = self._words_of(step)
        counts, want = reading.counts(wording), counted(call.arguments)
        for place in reading.things_of(call.arguments, wording):
            taken = sum(n for wo, (p, n) in reading.taken.items()  # "a latte or a mocha": one
                        if (p == place or reading.either) and wo != current)  # fmt: skip
            if place < len(counts) and taken + want <= counts[place]:
                return place, want
        return None

    def _take(self, call: Call, step: str | None) -> None:
        """Note the thing of the order an admitted call of the adding step is of, under its
        request's work order (a later call under the same one replaces it: a retry)."""
        reading = self._reading
        if (
            step is not None
            and reading is not None
            and reading.kind in ("need", "confirm")
            and reading.thing
            and reading.steps
            and reading.steps[0] == step
            and self.requested
        ):
            hit = self._untaken(call, step)
            if hit is not None:
                reading.taken[self._current()] = hit

    def _refused(self, call: Booking, verdict: Verdict, call_id: str | None) -> Ticket:
        return Ticket(call, verdict, refusal=self.notice(verdict, call), id=call_id,
                      at=self._machine.ledger_length)  # fmt: skip

    @property
    def reading(self) -> Reading | None:
        """What the gate understood of the current request's user message (None: not read)."""
        return self._reading

    @reading.setter
    def reading(self, reading: Reading | None) -> None:
        with self._lock:
            self._reading = reading

    def resume(self, reading: Reading | None, said: Sequence[Turn]) -> None:
        """Take up a conversation read before (a surface restarted on its journal): what the
        gate understood of the current request's message, and the turns read, oldest first."""
        with self._lock:
            self._reading = reading
            self._said.clear()
            self._said.extend(_turns(said))
            for shown, heard in self._said:
                self._took(shown, heard)
            self._reply = self._said[-1][1] if self._said else ""

    def hear_turn(self, agent: str, user: str) -> None:
        """Take in one turn of the conversation no message read gave the gate (the agent's
        message, the user's reply), as :meth:`open_message` takes in each it reads: the user's
        words, and the agent's where the user took them up."""
        if not (isinstance(agent, str) and isinstance(user, str)):
            raise UsageError("a turn is the agent's message and the user's reply, as text")
        with self._lock:
            self._took(agent, user)

    def _took(self, agent: str, user: str) -> None:
        """One turn for the ground: the user's words, and the agent's message before them where
        the user took it up (a yes, a request, an order; no no, no change, no question about
        other options): what it offered is then what they agreed to. Read only where
        :attr:`grounding` is on."""
        self._heard.hear(user, typed=True)
        if self.grounding != "ask" or not agent.strip():
            return
        act = read_user(user[:USER_CHARS], agent[-AGENT_CHARS:])
        took = act.yes or act.asks or act.need or act.orders
        if took and not (act.no or act.declines or act.change or act.alternatives or act.held):
            self._heard.hear(agent)

    @property
    def tools_heard(self) -> bool:
        """Whether the gate is given the tools' results (by :meth:`hear`): then an identifier
        among a confirmed call's values must be in one of them. A surface that gives them says
        so when it builds its session (a restart that lost them then asks, never skips the
        check); otherwise it holds once a tool's result was heard."""
        return self._heard.results

    @tools_heard.setter
    def tools_heard(self, given: bool) -> None:
        self._heard.results = bool(given)

    @property
    def today(self) -> Callable[[], datetime.date | None]:
        """The day "today" said in the conversation is (the machine's local date unless set):
        a call's date is grounded by "today", "tomorrow" or "the day after tomorrow" only where it
        is that day (a function returning None: not known, any day)."""
        return self._heard.today

    @today.setter
    def today(self, today: Callable[[], datetime.date | None]) -> None:
        if not callable(today):
            raise UsageError("today is a function returning the day (or None)")
        self._heard.today = today

    def hear(self, text: str, by: Literal["tool", "user"] = "tool") -> None:
        """Take in a text of the conversation that no message read gave the gate: a tool's result
        the agent read (``by="tool"``), or an earlier message of the user's (a conversation taken
        up again). With :attr:`grounding` on, a call a confirmed proposal authorizes runs only
        where each of its values was said (see :mod:`taskgate.understanding.grounding`): by the
        user, in a tool's result, in the proposal, or in an earlier message of the agent's the
        user took up (its other messages do not count: an option it mentioned is not the one
        agreed to)."""
        if not isinstance(text, str) or by not in ("tool", "user"):
            raise UsageError("the gate hears text, said by a tool or the user")
        with self._lock:
            self._heard.hear(text, result=by == "tool", typed=by == "user")

    def _words_of(self, step: str) -> str:
        """Everything a step is called by: its text, its tool's description and name."""
        graph = self._machine.graph
        tool = graph.tool(step)
        return f"{graph.text(step)} {self.wordings.get(step, '')} {tool.replace('_', ' ')}"

    def _only_confirmed(self, step: str | None) -> bool:
        """Whether ``step`` is not the one the user's confirmation authorized (a confirmation of
        the agent's proposal authorizes that call, whatever else the state would admit)."""
        reading, req = self._reading, self._machine.request
        return (
            reading is not None
            and reading.kind == "confirm"
            and req is not None
            and req.step is not None
            and step != req.step
        )

    def _of_thing(self, call: Call, step: str | None) -> bool:
        """Whether the call is of what the user ordered or changed, where the message ordered a
        thing or asked for a change: the adding step's call of the thing ordered, as many as
        were ordered ("I'll take a mocha" adds no latte, and one mocha); a call of a step that
        changes things only with a word the user said among its values. A yes to a proposal
        of the adding step ("Shall I add a latte?") is an order of what it offered, where the call
        names an item. See
        :meth:`Reading.of_thing` and :meth:`Reading.mentions`."""
        reading = self._reading
        if (
            reading is None
            or not reading.thing
            or step is None
            or not self.requested
            or reading.kind not in ("need", "change", "confirm")
        ):
            return True
        if reading.changes:  # "Should I change your latte to decaf?" "Yes.": decaf, nothing else
            return step in reading.steps and reading.mentions(call.arguments)
        if reading.kind == "confirm" and not names_item(call.arguments):
            # "buy 2 tickets for the bus to Fresno": its count, time, date checked; no more than
            # the proposal counted ("menu_item_id": "12345", "quantity": 40 for "a latte")
            return reading.within(call.arguments, self._words_of(step))
        if reading.kind != "change" and reading.steps and step == reading.steps[0]:
            if reading.named_before and not reading.notes_said(call.arguments):
                return False  # "Shall I add it?" adds no "extra shots" nobody said
            if self._untaken(call, step) is not None:
                return True
            wording = self._words_of(step)
            if reading.named_before:  # "Shall I add it?": the thing named before, nothing else
                return bool(reading.things_of(call.arguments, wording))
            return (  # of no thing the proposal named: its items and options said before
                reading.kind == "confirm"
                and not reading.things_of(call.arguments, wording, counted=False)
                and reading.offered(call.arguments, wording)
            )
        if reading.kind == "confirm":
            return True  # another step: not the one confirmed (_only_confirmed)
        if reading.kind == "need" and sets_item(call.arguments):
            return False  # "I'd also like a latte." swaps no earlier item for a latte
        return reading.mentions(call.arguments)

    def _of_proposal(self, call: Call, step: str | None) -> bool:
        """Whether a call of the step a confirmed proposal named ("Shall I book a table for 2 at
        7 pm?" "Yes.") has no count, amount, time or date the proposal states otherwise. Where
        the proposal offered things of their own counts ("Shall I add two lattes and a
        mocha?"), the call's count is the thing's (:meth:`_of_thing`)."""
        reading = self._reading
        return (
            reading is None
            or reading.kind != "confirm"
            or step is None
            or step not in reading.steps
            or not self.requested
            or not reading.contradicted(call.arguments, self._words_of(step))
        )

    def _beyond_reading(self, step: str | None) -> bool:
        """Whether ``step`` is neither a step the user's message asked for (read by a reader of
        conversations) nor a prerequisite of one: "I'll take a mocha" asks for the drink to be
        added, not for the order to be sent. Only where the session refuses what was not asked
        for (``unrequested="refuse"``, the default); the paper's state-bound enforcement runs
        any eligible step."""
        reading, req = self._reading, self._machine.request
        if (
            not self.requested
            or step is None
            or reading is None
            or reading.kind == "confirm"  # its own rule: _only_confirmed
            or req is None
            or req.step is None
            or req.step not in reading.steps
        ):
            return False
        graph = self._machine.graph
        allowed, todo = set(), [s for s in reading.steps if s in graph]
        while todo:  # the steps asked for and, transitively, what they require
            s = todo.pop()
            if s not in allowed and s in graph:
                allowed.add(s)
                todo.extend(graph.prerequisites(s))
        return step not in allowed

    def _open_confirmed(self, calls: Sequence[Call]) -> None:
        """When the user confirmed the agent's proposal of a call of ``calls`` (a proposal naming
        no step, matched by the call's arguments), open its step's request, before any call of
        the batch is judged: the batch's verdicts do not depend on the calls' order."""
        req = self._machine.request
        if req is None or req.step is not None or self._reading is None:
            return
        for call in calls:
            name = normalize_tool(call.tool) if isinstance(call.tool, str) else None
            step = self._machine.graph.step_for_tool(name) if name is not None else None
            if step is not None and call.readable and self._confirmed(call, step):
                self._machine.open_request(step, work_order=None)
                self._epoch += 1
                self._said.clear()  # the proposal is used: no later one revises it
                return

    def _confirmed(self, call: Call, step: str | None) -> bool:
        """Whether the user's last message confirmed the agent's proposal of this call (a
        proposal naming no step, matched by the call's arguments, and speaking of no other
        step), under a request for nothing."""
        reading = self._reading
        req = self._machine.request
        if not (
            reading is not None
            and reading.kind == "confirm"
            and req is not None
            and req.step is None
            and step is not None
            and reading.confirms(call.arguments, self._words_of(step))
            # a step done: a yes runs it again only for a proposal of another one, never for a
            # report that it is done ("I have booked it." "Great.")
            and not (
                self._machine.status(step) is Status.DONE
                and (reading.claimed or not says_again(reading.proposal))
            )
        ):
            return False
        spoken = proposed_steps(worded(self._machine.graph.to_plan(), self.wordings),
                                reading.proposal)  # fmt: skip
        # "a table for 2 at 7" is no ticket purchase; "Is this the correct item?" (another
        # step's word) asks to check what is shown, for the call that places it
        return (
            not spoken
            or step in spoken
            or reading.places(call.arguments or {}, self._words_of(step))
        )

    def notice(self, verdict: Verdict, call: Booking) -> str:
        """What the agent reads for a refused call: plain words, or the paper's notice. A call
        refused because the request named no step says what the gate understood of the message
        (a decline, a change not yet confirmed, a question, ...)."""
        reading, req = self._reading, self._machine.request
        if (
            self.notices == "plain"
            and reading is not None
            and (
                (verdict.reason is Reason.NO_RESOLVED_STEP and reading.kind != "other")
                or (  # a finished step, and a message that asked for nothing: say what it did
                    verdict.reason is Reason.ALREADY_DONE
                    and reading.kind
                    in ("decline", "change", "question", "alternatives", "closing", "held")
                    and req is not None
                    and req.step is None
                )
            )
        ):
            plan = worded(self._machine.graph.to_plan(), self.wordings)
            tool = quoted(call.tool or "") or "The call"
            return (
                f"{tool} was not run: {reading.understood(plan)}. Do only what the user asks; "
                "ask them if unsure."
            )
        graph = self._machine.graph
        if (
            self.notices == "plain"
            and verdict.reason is Reason.ALREADY_DONE
            and verdict.step is not None
            and verdict.step in graph
            and graph.repeatable(verdict.step)
            and req is not None
            and req.step == verdict.step
        ):  # "a latte and a mocha, please": the second call under the one request
            tool = quoted(call.tool or "") or "The call"
            return (
                f"{tool} was not run: it already ran for what the user's last message asked for. "
                "If the user asked for more, ask them to confirm the next one."
            )
        if (
            self.notices == "plain"
            and verdict.reason is Reason.IN_PROGRESS
            and verdict.step in self._doubt
        ):  # no answer came from an earlier call: it may have run, and nothing runs it again
            tool = quoted(call.tool or "") or "The call"
            return (
                f"{tool} was not run: an earlier call of it got no answer and may have run. It "
                "is held until someone checks and settles it; tell the user, and do not call it "
                "again until then."
            )
        if (
            self.notices == "plain"
            and verdict.reason is Reason.IN_PROGRESS
            and verdict.step is not None
            and verdict.step in graph
            and graph.repeatable(verdict.step)
        ):  # "a latte and a mocha" as two calls of one model turn: the second waits its turn
            tool = quoted(call.tool or "") or "The call"
            return (
                f"{tool} was not run: another call of it is running now. Call it again for this "
                "one once that call has ended."
            )
        if self.notices == "plain":
            return plain_refusal(verdict, call, graph)
        return render_rejection(verdict, call)

    def _reserve(self, ticket: Ticket) -> Ticket:
        """Record a refusal; reserve an admitted call's step until it is finished."""
        if not ticket.gated:
            return ticket
        key, verdict = next(self._keys), ticket.verdict
        if ticket.ask is not None:
            asked = self.ask_entry(ticket)
            if asked is not None:
                self._machine.ask(asked)
            return dataclasses.replace(ticket, entry=asked, key=key)
        if not verdict.admitted:
            self._machine.record(ticket.call, verdict, self.policy)
            entry = self._machine.last_entry()
            return dataclasses.replace(ticket, entry=entry, key=key)
        assert verdict.step is not None
        self._running.add(verdict.step)
        self._open[key] = self._epoch
        at = self._machine.ledger_length
        return dataclasses.replace(ticket, entry=None, refusal="", at=at, key=key)

    def ask_entry(self, ticket: Ticket) -> AskEntry | None:
        """The ledger entry of a held ticket's ask (None: not held, or already asked)."""
        ask = ticket.ask
        if ask is None or ask.id in self._machine.asks:
            return None
        return AskEntry(id=ask.id, step=ask.step, tool=ask.tool, arguments=canonical(
            ask.arguments), question=ask.question, work_order=ticket.call.work_order, why=ask.why,
            time=ask.time, channel=ask.channel)  # fmt: skip

    # -- asks and answers ------------------------------------------------------------------------
    def waiting(self) -> list[Ask]:
        """The held calls waiting on a person's answer, oldest first."""
        with self._lock:
            return [Ask.of(a) for a in self._machine.asks.values()]

    def answer(
        self,
        ask: str,
        decision: Decision,
        *,
        by: str,
        channel: str = "",
        arguments: Mapping[str, object] | None = None,
    ) -> Call | None:
        """A person's answer to the held call ``ask`` (its id): ``"approve"`` grants the call
        shown, once, exactly; ``"edit"`` grants the same tool with ``arguments`` instead (judged
        again by the state when it is made); ``"reject"`` drops it. One ledger entry naming
        ``by`` and ``channel``. Returns the call to make now (None on a reject): a surface that
        runs tools makes it, and it runs if the state still allows it. An answer to an ask not
        waiting (answered already, from another conversation, or after the conversation moved
        on), an unknown decision, or an edit without readable arguments is a
        :class:`UsageError`, and nothing is recorded."""
        what = decision_of(decision)
        if not isinstance(by, str) or not by.strip() or len(by) > 200:
            raise UsageError("an answer names who gave it, in at most 200 characters: by='...'")
        if not isinstance(channel, str) or len(channel) > 64:
            raise UsageError("an answer's channel is a name of at most 64 characters")
        if not isinstance(ask, str):
            raise UsageError(f"an ask is named by its id, not {type(ask).__name__}")
        edited: Mapping[str, object] | None = None
        if what == "edit":
            if not isinstance(arguments, Mapping):
                raise UsageError("an edit gives the call's new arguments as an object")
            try:
                edited = readable(arguments)
            except Unreadable as exc:
                raise UsageError(f"the edited arguments cannot be read: {exc}") from None
        with self._lock:
            waiting = self._machine.asks.get(ask)
            if waiting is None:
                raise UsageError(
                    f"no held call {quoted(ask)[:80]!r} is waiting for an answer: it was answered "
                    "already, it belongs to another conversation, or the conversation moved on"
                )
            entry = AnswerEntry(ask=ask, decision="reject" if what == "reject" else what,
                                by=by.strip(), channel=channel, time=time.time(),
                                arguments=canonical(edited) if edited is not None else None)  # fmt: skip
            self._machine.answer(entry)
            self._epoch += 1
            if what == "reject":
                self._said_no.add((waiting.tool, waiting.arguments))
                return None
            args = edited if edited is not None else Ask.of(waiting).arguments
            return Call(waiting.tool, arguments=dict(args))

    def _answer_in_message(self, message: str, agent: str, given: bool) -> Reading | None:
        """The user's message read against the gate's own question, when calls are held for
        their answer (the ask-back): a yes grants the calls whose question the agent put to the
        user (its message holds the question; with no agent's message given, the one call
        waiting, if one alone waits), under a request for no step, so only the calls shown run;
        a no drops them; anything else drops them too and the message is read as any other
        (None), as are the calls the agent did not ask about."""
        now = time.time()
        for a in [a for a in self._machine.asks.values() if a.channel]:  # asked elsewhere
            self._machine.answer(AnswerEntry(ask=a.id, decision="dropped", by="gate",
                                             channel=a.channel, time=now))  # fmt: skip
        asks = list(self._machine.asks.values())
        if not asks:
            return None
        shown = relayed([Ask.of(a) for a in asks], agent, given)
        said = answer_of(message, questions(shown)) if shown else None
        decision: Literal["approve", "reject", "dropped"] = (
            "approve" if said == "yes" else "reject" if said == "no" else "dropped"
        )
        if decision == "approve":  # a request for no step: the granted calls run, nothing else
            self._machine.open_request(None)
            self._epoch += 1
        asked = {a.id for a in shown}
        if decision == "reject":
            self._said_no |= {(a.tool, a.arguments) for a in asks if a.id in asked}
        for a in asks:
            self._machine.answer(AnswerEntry(
                ask=a.id, decision=decision if a.id in asked else "dropped", by="user",
                channel="conversation", time=now))  # fmt: skip
        if decision != "approve":
            return None
        return Reading("other")

    def finish(self, ticket: Ticket, outcome: Outcome | bool) -> LedgerEntry | None:
        """The admitted call ended: ``"ok"`` (or True) records its receipt, ``"failed"`` (or
        False) books nothing and frees its step, ``"unknown"`` holds the step in doubt (see
        :meth:`settle`). Returns the receipt (``None`` when nothing was recorded). Finishing a
        refused, ungated or already finished ticket does nothing."""
        if not isinstance(outcome, str | bool):
            raise UsageError(f"a call ends ok, failed or unknown, not {outcome!r}")
        ok = outcome if isinstance(outcome, str) else ("ok" if outcome else "failed")
        if ok not in ("ok", "failed", "unknown"):
            raise UsageError(f"a call ends ok, failed or unknown, not {outcome!r}")
        with self._lock:
            epoch = self._open.pop(ticket.key, None)
            if epoch is None:  # refused, ungated, or finished already: nothing to record
                return None
            step = ticket.step or ""
            if ok == "unknown":
                self._doubt[step] = Doubt(step, ticket.call.work_order, ticket.at)
                return None
            self._running.discard(step)
            if ok == "failed":
                return None
            judged_at = ticket.at if epoch != self._epoch else None  # the state moved on since
            self._machine.record(ticket.call, ticket.verdict, self.policy, judged_at)
            return self._machine.last_entry()

    def hold(self, step: str, work_order: str, at: int) -> None:
        """Hold ``step`` in doubt: a call of it admitted under ``work_order`` when the ledger had
        ``at`` entries was handed out and never answered (a surface folding its journal after a
        crash). It is not run again until :meth:`settle`."""
        with self._lock:
            self._running.add(step)
            self._doubt[step] = Doubt(step, work_order, at)

    def settle(self, step: str, ran: bool) -> LedgerEntry | None:
        """A person says whether the call of ``step`` held in doubt ran: if it did, its receipt
        is recorded as judged where it was admitted; either way the step is free again. Returns
        the receipt. A step with no call in doubt is a :class:`UsageError` (a call still running
        is not in doubt: its answer may come)."""
        with self._lock:
            doubt = self._doubt.get(step)
            if doubt is None:
                running = step in self._running
                raise UsageError(
                    f"the call of {step} is still running: settle it once it ended"
                    if running
                    else f"no call of step {step!r} is in doubt"
                )
            del self._doubt[step]
            self._running.discard(step)
            if not ran:
                return None
            tool = self._machine.graph.tool(step)
            call = Booking("", doubt.work_order, tool=normalize_tool(tool) or tool)
            moved = doubt.at < self._machine.ledger_length  # entries since: judged back there
            self._machine.record(
                call, Verdict("admit", step), self.policy, doubt.at if moved else None
            )
            self._epoch += 1
            return self._machine.last_entry()

    # -- a person's changes ----------------------------------------------------------------------
    def revise(self, revision: Revision) -> None:
        """Cancel, rewire or relax mid-conversation, as one receipts-ledger entry (atomically: an
        invalid revision changes nothing). A revision that would strand a step (leave it waiting
        forever on a cancelled prerequisite) is refused with a :class:`PlanError` naming it,
        unless the revision rewires it too."""
        with self._lock:
            self._revise(revision)

    def _revise(self, revision: Revision) -> None:
        check_strands(self._machine, revision)
        self._machine.revise(revision)
        self._epoch += 1

    def approve(self, what: str, *, by: str, reason: str = "") -> LedgerEntry:
        """A person approves one call of ``what`` (a step id, or its tool's name) during the
        current request, whatever the state says (blocked, cancelled, done, unrequested): the
        next call of it runs, once; a step already run under this request's work order is not
        run again on it. The approval is a receipts-ledger entry naming ``by`` (who) and
        ``reason``; it lapses with the request, or once that call has run. Returns the entry.
        One approval at a time: a second, before the first is used or lapses, is refused."""
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
        revision = Revision(rewires={step: steps_of(prerequisites)})
        self.revise(revision)
        return revision

    def relax(self, step: str, prerequisite: str) -> Revision:
        """Let ``step`` run without ``prerequisite`` (one ledger entry)."""
        revision = Revision(relax=(step, prerequisite))
        self.revise(revision)
        return revision

    # -- what the agent sees ---------------------------------------------------------------------
    def checklist(self) -> str:
        return render_checklist(self._machine)

    def directive(self) -> str | None:
        return render_directive(self._machine)

    def _current(self) -> str:
        req = self._machine.request
        return req.work_order if req is not None else "#W0"


def _listed(paths: Sequence[str]) -> str:
    """Arguments named in plain words: "party_size", "date and time", "a, b and 3 more"."""
    shown = [quoted(p[:60]) for p in paths[:3]]
    rest = len(paths) - len(shown)
    if rest:
        return f"{', '.join(shown)} and {rest} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def _turns(earlier: object) -> tuple[Turn, ...]:
    """The last turns of ``earlier``, each (the agent's message, the user's reply), checked."""
    if isinstance(earlier, str | bytes) or not isinstance(earlier, Iterable):
        raise UsageError("earlier must be a list of (agent message, user message) pairs")
    turns = tuple(deque(earlier, maxlen=REVISIONS))
    for turn in turns:
        if not (isinstance(turn, tuple | list) and len(turn) == 2
                and all(isinstance(t, str) for t in turn)):  # fmt: skip
            raise UsageError("earlier must be a list of (agent message, user message) pairs")
    return tuple((str(a), str(u)) for a, u in turns)


def _as_call(call: Call | object) -> Call:
    """A call as the core reads it (an id that is not text is no id: a keyed batch refuses it;
    arguments the readers cannot read, as a number too long to print, make it unreadable)."""
    if not isinstance(call, Call):
        return Call(call)
    if call.id is not None and not isinstance(call.id, str):
        call = dataclasses.replace(call, id=None)
    if call.arguments is None or not call.readable:
        return call
    if not isinstance(call.arguments, Mapping):
        return dataclasses.replace(call, arguments=None, readable=False)
    try:
        return dataclasses.replace(call, arguments=readable(call.arguments))
    except Unreadable:
        return dataclasses.replace(call, arguments=None, readable=False)


def step_named(graph: TaskGraph, what: str) -> str:
    """The step ``what`` names: a step id, or the name of the tool a step is bound to."""
    if not isinstance(what, str):
        raise PlanError(f"a step is named by its id or its tool's name, not {what!r}")
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
    """The revision that cancels ``step`` on ``machine`` (see :meth:`GateSession.cancel`)."""
    if not isinstance(step, str):
        raise UsageError(f"a step is cancelled by its id, not {step!r}")
    rewires = {k: steps_of(v) for k, v in (rewire or {}).items()}
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


def steps_of(prerequisites: Sequence[str]) -> tuple[str, ...]:
    """Step ids given as a list (a bare string is a mistake, not one id per character)."""
    if isinstance(prerequisites, str):
        raise UsageError(f"prerequisites are a list of step ids, not the string {prerequisites!r}")
    return tuple(prerequisites)
