"""What the proxy does to one request and its reply, with no I/O: the pure half of the proxy.

* :func:`align` places a request in its conversation: a new turn (one more user message than the
  conversation has turns), a new hop of the last turn (tool results after the last reply), or a
  client retry of the last hop. Anything else is a conflict, and nothing changes.
* :func:`settle` reads the evidence a request carries for the last reply's pending attempts.
* :func:`upstream_messages` rebuilds what the upstream is shown: the conversation's earlier user
  messages as they were forwarded (notices, checklist, directive), and its earlier replies as the
  upstream wrote them (refused booking lines included, as the testbed's arms keep them).
* :func:`judge_text` and :func:`judge_calls` judge a reply's booking lines and tool calls on the
  conversation's machine and take the refused ones out of what the client gets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from taskgate.core.ledger import AskEntry, AttemptEntry, LedgerEntry
from taskgate.core.machine import TaskMachine
from taskgate.errors import TaskgateError, UsageError
from taskgate.gate.asking import questions
from taskgate.gate.session import Call, GateSession, Notices, Unbound
from taskgate.journal.events import Conversation, ReplyEvent
from taskgate.protocol.actions import from_arguments
from taskgate.protocol.bookings import parse_bookings
from taskgate.protocol.render import render_checklist, render_directive, render_rejection
from taskgate.rungs import RUNGS as _ALL_RUNGS
from taskgate.rungs import Rung
from taskgate.understanding.reader import Reading

#: the rungs a proxy can run (raw tracks the state and couples nothing)
RUNGS = tuple(_ALL_RUNGS)
#: a request's work order: the last ``(#W1234)`` of its user message, as the brief's protocol writes it
_WORK_ORDER = re.compile(r"\(#W([0-9]{1,12})\)")

Message = dict[str, Any]


class Conflict(TaskgateError):
    """A request that does not continue its conversation (HTTP 409); nothing is changed."""


def rung(name: str) -> Rung:
    """The rung of that name: its checklist, directive and policy are the testbed's arm's."""
    try:
        return _ALL_RUNGS.choose(name)
    except TaskgateError as exc:
        raise UsageError(str(exc)) from None


def gating(arm: Rung) -> bool:
    return arm.gating


def text_of(content: object) -> str | None:
    """A message's text: its string content, or its text parts joined; None for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, Mapping) else None for p in content]
        if all(isinstance(p, str) for p in parts):  # every part is text (of any text type)
            return "".join(str(p) for p in parts)
    return None


def work_order_of(message: str) -> str | None:
    """The request's work order: the last parenthesized ``#W<digits>`` of the message."""
    found = _WORK_ORDER.findall(message)
    return f"#W{found[-1]}" if found else None


@dataclass(frozen=True)
class Place:
    """Where a request falls in its conversation."""

    kind: str  # "turn" (a new user message), "hop" (tool results), "retry" (the last hop again)
    turn: int
    hop: int
    message: str = ""  # the new user message (kind "turn")
    answered: frozenset[str] = field(default_factory=frozenset)  # tool call ids answered, no error


def align(conv: Conversation, messages: Sequence[Message]) -> Place:
    """Place the request (raise :class:`Conflict` when it does not continue the conversation)."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    n, last = len(conv.turns), messages[-1].get("role") if messages else None
    answered = _answered(messages)
    if len(users) == n + 1 and last == "user":
        text = text_of(messages[-1].get("content"))
        if text is None:
            raise UsageError("the new user message's content must be text or text parts")
        return Place("turn", n, 0, text, answered)
    if n and len(users) == n:
        hops = sum(1 for m in messages[users[-1] :] if m.get("role") == "assistant")
        stored = len(conv.turns[-1].replies)
        if last == "user" and hops == 0 and stored == 1:
            return Place("retry", n - 1, 0, answered=answered)
        if last == "tool" and hops == stored:
            return Place("hop", n - 1, stored, answered=answered)
        if last == "tool" and hops == stored - 1:
            return Place("retry", n - 1, stored - 1, answered=answered)
    raise Conflict(
        f"the request does not continue conversation {conv.key}: it has {len(users)} user "
        f"messages, the conversation {n} turns (start a new conversation for a new history)"
    )


#: a tool message's own fields that say its call failed (taskgate's; not sent upstream)
FAILURE_FIELDS = ("status", "is_error")


def failed(message: Message) -> bool:
    """Whether a tool message reports its call failed: ``"status": "error"`` or
    ``"is_error": true`` (the OpenAI format has no status of its own). Its text is never read:
    a result that begins with "error" is a result."""
    return message.get("status") == "error" or message.get("is_error") is True


def _answered(messages: Sequence[Message]) -> frozenset[str]:
    """The call ids that tool messages answer without a failure status, after the last reply
    (an id an upstream used again in an earlier hop is no evidence for this one)."""
    ids = set()
    for m in reversed(messages):
        if m.get("role") == "assistant":
            break
        if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str) and not failed(m):
            ids.add(m["tool_call_id"])
    return frozenset(ids)


def settle(reply: ReplyEvent, answered: frozenset[str]) -> tuple[int, ...]:
    """The pending attempts the client's going on commits: booking lines and refusals as they
    stand; an admitted tool call only if a tool message answered its id without an error."""
    return tuple(
        i
        for i, (attempt, call) in enumerate(zip(reply.attempts, reply.call_ids, strict=True))
        if call is None or attempt.decision == "refuse" or call in answered
    )


def user_text(arm: Rung, machine: TaskMachine, notices: Sequence[str], message: str) -> str:
    """The user message the upstream gets at this rung (the testbed arm's rendering)."""
    parts = [*notices, message]
    if arm.checklist is not None:
        parts.append(render_checklist(machine))
    if arm.compiled:
        directive = render_directive(machine)
        if directive is not None:
            parts.append(directive)
    return "\n\n".join(parts)


def upstream_messages(conv: Conversation, messages: Sequence[Message]) -> list[Message]:
    """The request's messages as the upstream sees them (the new turn's is in ``conv`` already)."""
    out: list[Message] = []
    turn, hop = -1, 0
    for m in messages:
        role = m.get("role")
        if role == "user":
            turn, hop = turn + 1, 0
            if turn < len(conv.turns) and text_of(m.get("content")) == conv.turns[turn].client:
                m = {**m, "content": conv.turns[turn].forwarded}
        elif role == "assistant" and 0 <= turn < len(conv.turns):
            replies = conv.turns[turn].replies
            told = _told(m, replies[hop]) if hop < len(replies) else []
            if hop < len(replies) and _kept(m, replies[hop]):
                m = {**m, "content": replies[hop].original}
            hop += 1
            if told:  # its refused calls, answered by the gate's notices
                out.append({**m, "tool_calls": [*m["tool_calls"], *(t["call"] for t in told)]})
                out += [{"role": "tool", "tool_call_id": _call_id(t["call"]),
                         "content": t["notice"]} for t in told]  # fmt: skip
                continue
        elif role == "tool" and any(f in m for f in FAILURE_FIELDS):
            m = {k: v for k, v in m.items() if k not in FAILURE_FIELDS}
        out.append(m)
    return out


def _told(m: Message, reply: ReplyEvent) -> list[dict[str, Any]]:
    """The refused calls of ``reply`` to answer beside the client's copy ``m`` of it: only where
    ``m`` carries exactly the calls the client got (by id: an edited or trimmed history is not
    grafted onto), and only those with an id of their own."""
    calls = m.get("tool_calls")
    if not reply.refused or not isinstance(calls, list):
        return []
    ids = [_call_id(c) for c in calls]
    if ids != [_call_id(c) for c in reply.calls]:
        return []
    return [t for t in reply.refused if told_id(t["call"], ids)]


def told_id(call: object, taken: Sequence[str]) -> bool:
    """Whether a refused call can be answered by a tool message: an id of its own (a string,
    not empty, not one of ``taken``)."""
    cid = call.get("id") if isinstance(call, Mapping) else None
    return isinstance(cid, str) and bool(cid) and cid not in taken


def _kept(m: Message, reply: ReplyEvent) -> bool:
    """Whether the client kept the reply as it got it (a client may trim its whitespace)."""
    content = text_of(m.get("content"))
    return (
        not reply.has_calls
        and not m.get("tool_calls")
        and content is not None
        and content.strip() == reply.returned.strip()
    )


@dataclass
class Judged:
    """A reply's attempts, as the journal records them, and the notices they raise."""

    attempts: list[AttemptEntry] = field(default_factory=list)
    call_ids: list[str | None] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    #: requests the core opened while judging (a confirmed proposal matched by a call's
    #: arguments): journaled before the reply, as they stand in the ledger
    opened: list[LedgerEntry] = field(default_factory=list)
    #: the calls held and asked about: journaled with the reply, before its attempts
    asks: list[AskEntry] = field(default_factory=list)
    #: the native tool calls refused, each with the gate's notice (the tool result the agent
    #: gets in plan mode: :mod:`taskgate.proxy.telling`)
    refused: list[tuple[Mapping[str, Any], str]] = field(default_factory=list)
    #: of those, the ones told to the agent on the next request (their reply handed out others)
    later: list[tuple[Mapping[str, Any], str]] = field(default_factory=list)

    def add(self, machine: TaskMachine, call_id: str | None) -> None:
        entry = machine.last_entry()
        assert isinstance(entry, AttemptEntry)
        self.attempts.append(entry)
        self.call_ids.append(call_id)


def judge_text(machine: TaskMachine, arm: Rung, text: str, judged: Judged) -> str:
    """Judge ``text``'s booking lines in order; return it with the refused ones taken out (at a
    gating rung; re-displays of past work stay, as citations)."""
    out, at = [], 0
    for booking in parse_bookings(text):
        verdict = machine.submit(booking, arm.policy)
        judged.add(machine, None)
        if gating(arm) and not verdict.admitted and not verdict.redisplay:
            judged.notices.append(render_rejection(verdict, booking))
            start, end = booking.span
            out.append(text[at:start])
            at = end
    out.append(text[at:])
    return "".join(out)


def unbound_calls(
    arm: Rung, calls: Sequence[Mapping[str, Any]], unbound: Unbound
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """A code-bound brief's reply's native tool calls: no step is bound to a tool there, so each
    is a call of a tool no step is bound to, passed or refused by ``unbound`` (at a gating rung),
    as in a tool-bound plan; the calls the client may get, and the refusals."""
    if unbound == "run" or not gating(arm):
        return list(calls), []
    refusals = []
    for call in calls:
        fn = call.get("function") if isinstance(call, Mapping) else None
        name = fn.get("name") if isinstance(fn, Mapping) else None
        named = name[:80] if isinstance(name, str) and name else "The call"
        refusals.append(f"{named} was not run: it is not one of this task's tools.")
    return [], refusals


def judge_calls(
    machine: TaskMachine,
    arm: Rung,
    calls: Sequence[Mapping[str, Any]],
    judged: Judged,
    *,
    planned: bool = False,
    notices: Notices = "plain",
    unbound: Unbound = "run",
    reading: Reading | None = None,
    messages: object = None,
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """Judge a reply's tool calls as one batch: the calls the client may get, and the refusals.
    ``messages`` are the request's: what they say (the user's words, the agent's, the tools'
    results) grounds the calls' values.

    The judging is the gate's core (:meth:`~taskgate.gate.GateSession.decide`, every rule
    there); this translates the reply's native calls into it and records the verdicts as the
    reply's pending attempts. A call admitted here is only handed out, its receipt comes when a
    tool message answers its id, so within the batch it is in flight (a call of a step that needs
    it is refused BLOCKED, a second call of it ``in-progress``) and receipts come by id (a gated
    call without an id, or sharing one, is malformed). A call without a work order is judged
    under the current request's; in plan mode (``planned``) the work order is always the proxy's
    own (a ``work_order`` argument is the tool's business), and at a gating rung nothing runs on
    a request that named no step. ``notices`` words the refusals; ``unbound`` says what a call of
    a tool no step is bound to gets (passed ungated by default, unrecorded).
    """
    session = GateSession.around(
        machine,
        arm.policy,
        notices,
        unrequested="refuse" if planned and gating(arm) else "run",
        unbound=unbound,
    )
    session.reading = reading  # what the gate understood of the turn's user message
    session.tools_heard = True  # the request carries the tools' results
    for agent, text in said_in(messages):  # what grounds the calls' values
        if agent is None:
            session.hear(text)
        else:
            session.hear_turn(agent, text)
    before = machine.ledger_length
    tickets = session.decide([_native(c, planned) for c in calls], keyed=True)
    if machine.ledger_length != before:  # a request resolved by a confirmed proposal
        judged.opened += machine.ledger[before:]
    kept: list[Mapping[str, Any]] = []
    refusals: list[str] = []
    asks = [t.ask for t in tickets if t.ask is not None]
    for ticket in tickets:  # the held calls' asks, before the pending attempts (retractable)
        asked = session.ask_entry(ticket)
        if asked is not None:
            machine.ask(asked)
            judged.asks.append(asked)
    for call, ticket in zip(calls, tickets, strict=True):
        if not ticket.gated:  # a tool no step is bound to
            kept.append(call)
            continue
        if ticket.held:  # not handed out: the user is asked (below), in their words
            continue
        machine.record(ticket.call, ticket.verdict, arm.policy)  # pending until answered
        judged.add(machine, _call_id(call))
        if ticket.admitted or not gating(arm):
            kept.append(call)
        else:
            refusals.append(ticket.notice)
            if isinstance(call, Mapping):  # a call that is no object is refused, never told
                judged.refused.append((call, ticket.notice))
    if asks:  # the reply asks the user the gate's question: their next message answers it
        refusals.append(questions(list({a.id: a for a in asks}.values())))
    return kept, refusals


def _call_id(call: object) -> str:
    cid = call.get("id") if isinstance(call, Mapping) else None
    return cid if isinstance(cid, str) else ""


def _native(call: object, planned: bool) -> Call:
    """A native tool call of a reply as the gate's core reads it."""
    fn = call.get("function") if isinstance(call, Mapping) else None
    fn = fn if isinstance(fn, Mapping) else {}
    name, raw = fn.get("name"), fn.get("arguments")
    try:  # a JSON object's text, as OpenAI sends them; some servers send the object itself
        args = orjson.loads(raw) if isinstance(raw, str) and raw.strip() else raw
    except orjson.JSONDecodeError:
        args = None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        args = {}
    work_order = None
    if not planned and isinstance(args, dict):  # plan mode: the proxy's work order only
        work_order = from_arguments(name, args).work_order or None
    arguments = args if isinstance(args, dict) else None
    return Call(name, _call_id(call) or None, work_order, isinstance(args, dict), arguments)


def said_in(messages: object) -> list[tuple[str | None, str]]:
    """What a request's messages said that grounds a call's values: each user message with the
    assistant's text before it (the turn, ``(agent, user)``), and each other message's text
    (tools' results, the system prompt: what the operator and the tools gave the agent) with
    ``None``."""
    if not isinstance(messages, list):
        return []
    said: list[tuple[str | None, str]] = []
    agent = ""
    for m in messages:
        if not isinstance(m, Mapping):
            continue
        text, role = _text_of(m.get("content")), m.get("role")
        if role == "assistant":
            agent = text
        elif role == "user":
            said.append((agent, text))
            agent = ""
        elif text:
            said.append((None, text))
    return said


def _text_of(content: object) -> str:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p["text"] for p in content
                        if isinstance(p, Mapping) and isinstance(p.get("text"), str))  # fmt: skip
    return ""
