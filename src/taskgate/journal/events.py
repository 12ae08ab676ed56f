"""A gated conversation as an append-only journal, and the state folded from it.

The gating proxy writes six kinds of event and the MCP gate three (``ledger``, ``call`` and
``message``);
a conversation is nothing but their fold (status is derived, never stored), and every admission
folded is judged again by the gate's core (under the surface's rule that nothing runs on a
request that named no step, ``requested``):

* ``ledger``: an entry of the receipts ledger (the plan first; then requests, revisions and the
  attempts that were committed), as :class:`~taskgate.TaskMachine` keeps it;
* ``turn``: a user message began a turn: the client's text and the text the upstream was sent
  (notices before it, the rung's checklist or directive after it), and in plan mode what the
  gate understood of it;
* ``reply``: the upstream answered a hop of the turn: its original content, what the client got
  (the tool calls included), the attempts it made (pending: judged and applied, not yet
  receipts) and the notices for the next turn. A client retry of a hop whose reply handed out
  tool calls gets that reply again, and nothing is written; a retry of any other reply is asked
  anew, and its reply replaces the first, whose pending attempts are dropped;
* ``commit``: the client went on past a reply, which is the evidence that decides its attempts: a
  booking line is committed because the client kept the reply; an admitted tool call only when a
  tool message answers its call id without an error. Refusals are committed as they stand;
* ``held``: an operator's revision or approval (``POST /taskgate/conversations/{id}/...``),
  held until the conversation's next request;
* ``given``: that request took held changes: each one given is followed by its ``ledger`` event,
  and one the state no longer allows is dropped, with the reason;
* ``call`` and ``message`` (the MCP gate's): a call forwarded or seen to end, and a user message
  read, with what the gate understood of it (:class:`MessageEvent`).

So a client retry never books twice nor hands out a second admission, and a proxy killed at any
point and restarted on the same journal is back in exactly the state its last committed request
left.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from taskgate.core.ledger import AskEntry, AttemptEntry, LedgerEntry, PlanEntry, RequestEntry
from taskgate.core.machine import TaskMachine
from taskgate.core.plan import Revision
from taskgate.errors import LedgerFormatError
from taskgate.understanding.reader import REVISIONS, Reading


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LedgerEvent(_Event):
    kind: Literal["ledger"] = "ledger"
    entry: LedgerEntry


class TurnEvent(_Event):
    kind: Literal["turn"] = "turn"
    client: str  # the user message as the client sent it
    forwarded: str  # the user message as the upstream got it
    time: float = 0.0  # when it came, in seconds since the epoch (0: not recorded)
    #: what the gate understood of it (plan mode), so a proxy reloaded mid-turn judges the
    #: turn's calls by the same reading
    reading: Reading | None = None


class ReplyEvent(_Event):
    kind: Literal["reply"] = "reply"
    turn: int  # 0-based turn index
    hop: int  # 0-based: the n-th upstream reply of this turn
    original: str  # the upstream's content
    returned: str  # the content the client got
    has_calls: bool = False  # the reply carried tool calls (its history copy is the client's)
    attempts: tuple[AttemptEntry, ...] = ()  # judged, applied, pending
    call_ids: tuple[str | None, ...] = ()  # per attempt: a tool call's id, None for a booking line
    notices: tuple[str, ...] = ()  # rejection notices for the next turn's user message
    ask_back: bool = False  # the proxy's own ask-back question; the upstream was not called
    #: the tool calls the client got, as it got them, and the reply's finish reason: a client
    #: retry of this hop gets this very reply again (same call ids), never a second admission
    calls: tuple[dict[str, Any], ...] = ()
    finish_reason: str | None = None
    #: the calls it held and asked the user about (the gate's question is in ``returned``):
    #: in the ledger before its attempts, and kept when a retry retracts them
    asks: tuple[AskEntry, ...] = ()
    #: plan mode: the tool calls it refused while it handed out others, each ``{"call": ...,
    #: "notice": ...}``: the upstream is told of them as their tool results on the next
    #: request (:func:`taskgate.proxy.gating.upstream_messages`), the client never
    refused: tuple[dict[str, Any], ...] = ()

    @property
    def handed_out(self) -> bool:
        """Whether the client got tool calls it may have run (a retry must not re-ask)."""
        return bool(self.calls) or (
            self.has_calls
            and any(
                a.decision == "admit" and c is not None
                for a, c in zip(self.attempts, self.call_ids, strict=True)
            )
        )


class CommitEvent(_Event):
    kind: Literal["commit"] = "commit"
    keep: tuple[int, ...]  # indices of the last reply's attempts that are committed, in order


class Approval(_Event):
    """A person's approval of one call of ``step``, held until a request takes it."""

    step: str
    by: str = Field(min_length=1)
    reason: str = ""


class HeldEvent(_Event):
    """An operator's revision or approval, held until the conversation's next request gives it
    (see :mod:`taskgate.proxy.operator`)."""

    kind: Literal["held"] = "held"
    revision: Revision | None = None
    approval: Approval | None = None


class GivenEvent(_Event):
    """The held changes at ``taken`` (indices into the held list) left it: each was given (a
    ledger event follows it) or dropped (the state had moved on: ``dropped`` says why)."""

    kind: Literal["given"] = "given"
    taken: tuple[int, ...]
    dropped: tuple[str, ...] = ()


class CallEvent(_Event):
    """The MCP gate forwards an admitted call (``ended`` False) or saw it end (True): a call
    begun and never ended is in doubt after a crash, and its step is not run again until an
    operator settles it (see :mod:`taskgate.integrations.mcp`)."""

    kind: Literal["call"] = "call"
    call: str  # the gate's id for the call
    step: str
    ended: bool = False
    work_order: str | None = None  # begun: the request it was admitted under
    at: int | None = None  # begun: the ledger's length when it was admitted
    #: begun: the thing of the message's order it was admitted for (its place, how many; see
    #: :attr:`Reading.taken`), so a restarted gate runs no thing twice nor more than was ordered
    taken: tuple[int, int] | None = None


class MessageEvent(_Event):
    """The MCP gate read a user message (with the agent's message before it): what it
    understood, so a restarted gate judges the message's calls by the same reading (its
    order's things and options), and the turns it was read with, for the next message."""

    kind: Literal["message"] = "message"
    message: str
    agent: str = ""
    reading: Reading | None = None
    time: float = 0.0  # when it came, in seconds since the epoch (0: not recorded)


Event = Annotated[
    LedgerEvent
    | TurnEvent
    | ReplyEvent
    | CommitEvent
    | HeldEvent
    | GivenEvent
    | CallEvent
    | MessageEvent,
    Field(discriminator="kind"),
]
EVENT: TypeAdapter[Event] = TypeAdapter(Event)


def dump_event(event: Event) -> bytes:
    return EVENT.dump_json(event)


def load_event(data: bytes | str) -> Event:
    try:
        return EVENT.validate_json(data)
    except ValueError as exc:
        raise LedgerFormatError(f"a journal row is not a valid event: {exc}") from exc


def _fresh(reading: Reading | None) -> Reading | None:
    """A journaled reading, as its own copy with nothing taken yet (what calls take is folded
    into it from their events; the proxy's are not journaled: after a reload the turn runs no
    further thing of its order)."""
    return None if reading is None else dataclasses.replace(reading, taken={})


@dataclass
class Turn:
    client: str
    forwarded: str
    replies: list[ReplyEvent] = field(default_factory=list)


class Conversation:
    """One conversation's state: the machine (committed receipts plus the last reply's pending
    attempts), its turns, and the notices waiting for the next turn."""

    def __init__(
        self, key: str, events: list[Event] | None = None, *, requested: bool = False
    ) -> None:
        self.key = key
        #: the gate's rule that nothing runs on a request that named no step: every admission
        #: folded from the journal is judged again under it (see TaskMachine.from_ledger)
        self.requested = requested
        self.events: list[Event] = []
        self.committed: list[LedgerEntry] = []
        self.turns: list[Turn] = []
        self.pending: ReplyEvent | None = None
        self.notices: list[str] = []
        self.held: list[HeldEvent] = []  # an operator's changes, for the next request
        #: the MCP gate's calls begun and not ended, by id
        self.in_flight: dict[str, CallEvent] = {}
        #: what the gate understood of the current turn's user message (the proxy's in memory
        #: only: after a restart a refusal's notice says less, and the verdicts are the
        #: journal's; the MCP gate's folded from its ``message`` events)
        self.reading: Reading | None = None
        #: the MCP gate's user messages read, each (the agent's message, the user's), the last
        #: few, for a proposal the user revised
        self.said: deque[tuple[str, str]] = deque(maxlen=REVISIONS)
        #: the user messages read so far (the proxy's turns, the MCP gate's messages), the first
        #: of them, and when the first and the last came (0: not recorded)
        self.messages, self.first, self.since, self.last = 0, "", 0.0, 0.0
        #: the user's words beside each request they opened: the committed request's place in
        #: the ledger -> (the message, what the gate read it as: a Reading's kind, or "")
        self.words: dict[int, tuple[str, str]] = {}
        self._unplaced: tuple[str, str] | None = None  # a message read, its request not yet in
        self._bare: int | None = None  # a request in, its message not yet read
        self._machine: TaskMachine | None = None
        for event in events or ():
            self.apply(event)
        self.written = len(self.events)  # how many of the events the journal holds

    def _heard(self, message: str, at: float, reading: Reading | None) -> None:
        if not self.messages:
            self.first, self.since = message, at
        self.messages += 1
        self.last = at or self.last
        words = (message, reading.kind if reading is not None else "")
        if self._bare is not None:  # the request came in before its turn's words
            self.words[self._bare], self._bare = words, None
        else:
            self._unplaced = words

    @property
    def started(self) -> bool:
        return self._machine is not None

    @property
    def machine(self) -> TaskMachine:
        if self._machine is None:
            raise LedgerFormatError(f"conversation {self.key} has no plan yet")
        return self._machine

    def apply(self, event: Event, *, applied: bool = False) -> None:
        """Fold one event into the state (and keep it in :attr:`events`). ``applied``: its ledger
        entries or attempts are in the machine already (the proxy made them there, live)."""
        if isinstance(event, LedgerEvent):
            self._ledger(event.entry, applied)
        elif isinstance(event, TurnEvent):
            self.turns.append(Turn(event.client, event.forwarded))
            self.notices = []
            self.reading = _fresh(event.reading)  # read anew for each turn
            self._heard(event.client, event.time, event.reading)
        elif isinstance(event, ReplyEvent):
            self._reply(event, applied)
        elif isinstance(event, HeldEvent):
            self.held.append(event)
        elif isinstance(event, CallEvent):
            if event.ended:
                self.in_flight.pop(event.call, None)
            else:
                self.in_flight[event.call] = event
                if event.taken is not None and self.reading is not None and event.work_order:
                    self.reading.taken[event.work_order] = event.taken
        elif isinstance(event, MessageEvent):
            self.said.append((event.agent, event.message))
            self.reading = _fresh(event.reading)
            self._heard(event.message, event.time, event.reading)
        elif isinstance(event, GivenEvent):
            if any(not 0 <= i < len(self.held) for i in event.taken):
                raise LedgerFormatError(f"conversation {self.key}: it gives changes it never held")
            taken = set(event.taken)
            self.held = [h for i, h in enumerate(self.held) if i not in taken]
        else:
            self._commit(event)
        self.events.append(event)

    def rebuild(self, keep: int) -> None:
        """Back to the fold of the first ``keep`` events (the written ones), after a request that
        failed half-way."""
        events, self.events = self.events[:keep], []
        self.committed, self.turns, self.pending, self.notices = [], [], None, []
        self.held, self.in_flight = [], {}
        self.reading = None
        self.said.clear()
        self._machine = None
        for event in events:
            self.apply(event)
        self.written = len(self.events)

    def retract(self) -> None:
        """A client retry of the last hop is coming: drop that reply and its pending attempts
        (the journal needs no event for it: the retry's reply replaces the hop)."""
        last = self.pending
        if last is None:
            return
        self._settle(())
        self.turns[last.turn].replies.pop()
        if last.notices:
            del self.notices[-len(last.notices) :]

    def _ledger(self, entry: LedgerEntry, applied: bool) -> None:
        if isinstance(entry, PlanEntry):
            if self._machine is not None:
                raise LedgerFormatError(f"conversation {self.key} has two plans")
            self._machine = TaskMachine.from_ledger([entry], requested=self.requested)
        else:
            if self.pending is not None:
                raise LedgerFormatError(f"conversation {self.key}: a turn before the reply settled")
            if not applied:
                self.machine.append(entry)
        if isinstance(entry, RequestEntry):
            if self._unplaced is not None:
                self.words[len(self.committed)], self._unplaced = self._unplaced, None
            else:
                self._bare = len(self.committed)
        self.committed.append(entry)

    def _reply(self, event: ReplyEvent, applied: bool) -> None:
        last = self.pending
        if last is not None and (last.turn, last.hop) == (event.turn, event.hop):
            self.retract()  # a client retry of that hop
        elif last is not None:
            raise LedgerFormatError(f"conversation {self.key}: a reply before the last one settled")
        turn = self.turns[event.turn]
        if not applied:
            for asked in event.asks:
                self.machine.append(asked)
            for attempt in event.attempts:
                self.machine.append(attempt)
        self.committed += event.asks  # asked when the reply went out: never taken back
        turn.replies.append(event)
        self.pending = event
        self.notices += event.notices

    def _commit(self, event: CommitEvent) -> None:
        if self.pending is None:
            raise LedgerFormatError(f"conversation {self.key}: a commit with no reply pending")
        self._settle(event.keep)

    def _settle(self, keep: tuple[int, ...]) -> None:
        """Commit the pending attempts ``keep`` names; drop the rest (rebuilding if any)."""
        pending = self.pending
        if pending is None:
            return
        self.pending = None
        kept = [pending.attempts[i] for i in keep]
        self.committed += kept
        if len(kept) != len(pending.attempts):  # take the attempts back, keep the committed
            self.machine.retract(len(pending.attempts))
            for attempt in kept:
                self.machine.append(attempt)
