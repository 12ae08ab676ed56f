"""An operator's revisions and approvals of a conversation the proxy gates.

    POST /taskgate/conversations/{id}/revisions  {"cancel": "s2", "inherit": true}
                                                 {"cancel": "s2", "rewire": {"s3": ["s1"]}}
                                                 {"rewire": {"s3": ["s1"]}}
                                                 {"relax": {"step": "s3", "prerequisite": "s2"}}
    POST /taskgate/conversations/{id}/approvals  {"step": "place_order", "by": "alice",
                                                  "reason": "the vendor is pre-approved"}

Both need the proxy's status token (``TASKGATE_STATUS_TOKEN``): a client cannot revise or approve its
own conversation. A change is checked at once against the conversation's state (with the
changes already held applied), so a revision naming no step, one that would strand a step, or
an approval of nothing is refused with one line and nothing is written; an accepted change is
held in the conversation's journal (``held``) and given at its next request: a revision before
that request's user message is matched (so the matcher sees the revised plan), an approval once
its request is open, for that request (a ``step`` is a step id or its tool's name). A change the
state no longer allows by then (a step cancelled since) is dropped, logged and recorded with its
reason. Each one given is an entry of the receipts ledger.
"""

from __future__ import annotations

import orjson
from starlette.responses import Response

from taskgate.core.graph import find_cycle
from taskgate.core.ledger import PlanEntry
from taskgate.core.machine import TaskMachine
from taskgate.errors import CycleError, TaskgateError
from taskgate.gate.session import check_strands, step_named
from taskgate.journal.events import Approval, Conversation, GivenEvent, HeldEvent, LedgerEvent
from taskgate.journal.store import StaleJournal
from taskgate.proxy.session import Call, Proxy, log
from taskgate.serving.errors import HttpError
from taskgate.serving.operator import (
    ApprovalBody,
    Body,
    RevisionBody,
    names_steps,
    parsed,
    revision_of,
)


def scratch(conv: Conversation) -> TaskMachine:
    """The conversation's committed state with its held revisions applied (a copy to check a
    new change on; one held revision that no longer applies is skipped, as it will be)."""
    entries = list(conv.committed)
    if not entries or not isinstance(entries[0], PlanEntry):
        raise HttpError(409, f"conversation {conv.key} has no plan yet", "conversation_conflict")
    machine = TaskMachine.from_ledger(entries)
    for held in conv.held:
        if held.revision is not None:
            try:
                check_strands(machine, held.revision)
                machine.revise(held.revision)
            except TaskgateError:
                continue  # it will be dropped when given, so the next change is checked without it
    return machine


def checked(conv: Conversation, body: RevisionBody | ApprovalBody) -> HeldEvent:
    """The held event for ``body``, checked against the conversation (a 400 naming what is
    wrong, nothing written)."""
    machine = scratch(conv)
    try:
        if isinstance(body, ApprovalBody):
            step = step_named(machine.graph, body.step)
            waiting = [h.approval.step for h in conv.held if h.approval is not None]
            live = [machine.approved] if machine.approved is not None else []
            if waiting or live:  # one approval at a time: it is used, or lapses, first
                raise HttpError(
                    409,
                    f"an approval of {(waiting or live)[0]} is already "
                    f"{'held' if waiting else 'given'} in conversation {conv.key}: one approval "
                    "at a time (post this one once that call has run or its request has ended)",
                    "conversation_conflict",
                )
            return HeldEvent(approval=Approval(step=step, by=body.by.strip(), reason=body.reason))
        revision = revision_of(machine, body)
        names_steps(machine, revision)
        check_strands(machine, revision)
        machine.revise(revision)  # on the copy
        graph = machine.graph
        cycle = find_cycle({s: graph.prerequisites(s) for s in graph.steps})
        if cycle:  # a compiled brief's graph is lenient; an operator's change is not
            raise CycleError(cycle, "the revision")
    except HttpError as exc:
        if exc.status != 400:
            raise
        raise HttpError(400, f"the change was refused: {exc}") from None
    except TaskgateError as exc:
        raise HttpError(400, f"the change was refused: {exc}") from None
    return HeldEvent(revision=revision)


async def hold(proxy: Proxy, key: str, raw: bytes, model: type[Body]) -> Response:
    """Check the change and write it to the conversation's journal, held (under its lock)."""
    body = parsed(raw, model)
    async with proxy.lock(key):
        conv = await proxy.readable(key)
        event = checked(conv, body)
        try:
            await proxy.store.append(key, len(conv.events), [event])
        except StaleJournal:
            proxy.conversations.pop(key, None)
            raise HttpError(
                409, f"conversation {key} moved on elsewhere; retry", "conversation_conflict"
            ) from None
        except TaskgateError as exc:
            raise HttpError(503, f"the proxy could not record the change: {exc}") from None
        conv.apply(event)
        conv.written = len(conv.events)
    log.info("taskgate proxy: conversation %s: an operator's change is held: %s", key,
             event.model_dump_json(exclude_none=True))  # fmt: skip
    data = {"conversation": key, "held": [h.model_dump(mode="json", exclude_none=True)
                                          for h in conv.held]}  # fmt: skip
    return Response(orjson.dumps(data), media_type="application/json")


def give(call: Call, *, approvals: bool) -> None:
    """Give the conversation's held revisions (``approvals=False``) or approvals (``True``),
    in the order they were held; one the state no longer allows is dropped with its reason."""
    conv = call.conv
    taken: list[int] = []
    dropped: list[str] = []
    for i, held in enumerate(conv.held):
        if (held.approval is not None) != approvals:
            continue
        taken.append(i)
        machine = conv.machine
        try:
            if held.approval is not None:
                a = held.approval
                machine.approve(a.step, a.by, a.reason)  # one at a time: the machine's rule
            elif held.revision is not None:
                check_strands(machine, held.revision)
                machine.revise(held.revision)
        except TaskgateError as exc:
            dropped.append(str(exc))
            log.warning("taskgate proxy: conversation %s: a held change was dropped: %s",
                        conv.key, exc)  # fmt: skip
            continue
        call.add(LedgerEvent(entry=machine.last_entry()))
    if taken:
        call.add(GivenEvent(taken=tuple(taken), dropped=tuple(dropped)))
