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

from taskgate.errors import TaskgateError
from taskgate.gate.session import GateSession
from taskgate.journal.events import Conversation, HeldEvent
from taskgate.journal.held import (
    NoPlanYet,
    OneApprovalAtATime,
    give_held,
    held_approval,
    held_revision,
    scratch,
)
from taskgate.journal.store import StaleJournal
from taskgate.proxy.session import Call, Proxy, log
from taskgate.serving.errors import HttpError
from taskgate.serving.operator import ApprovalBody, RevisionBody, revision_of


def checked(conv: Conversation, body: RevisionBody | ApprovalBody) -> HeldEvent:
    """The held event for ``body``, checked against the conversation (see
    :mod:`taskgate.journal.held`): a 400 naming what is wrong, a 409 for a second approval
    while one waits; nothing written."""
    try:
        machine = scratch(conv)
        if isinstance(body, ApprovalBody):
            return held_approval(conv, machine, body.step, body.by, body.reason)
        return held_revision(machine, revision_of(machine, body))
    except (OneApprovalAtATime, NoPlanYet) as exc:
        raise HttpError(409, str(exc), "conversation_conflict") from None
    except HttpError as exc:
        if exc.status != 400:
            raise
        raise HttpError(400, f"the change was refused: {exc}") from None
    except TaskgateError as exc:
        raise HttpError(400, f"the change was refused: {exc}") from None


async def hold(proxy: Proxy, key: str, body: RevisionBody | ApprovalBody) -> list[HeldEvent]:
    """Check the change and write it to the conversation's journal, held (under its lock); the
    conversation's held changes, this one last."""
    async with proxy.lock(key):
        conv = await proxy.readable(key)
        event = checked(conv, body)
        try:
            await proxy.store.append(key, len(conv.events), [event])
        except StaleJournal:
            proxy.conversations.pop(key)
            raise HttpError(
                409, f"conversation {key} moved on elsewhere; retry", "conversation_conflict"
            ) from None
        except TaskgateError as exc:
            raise HttpError(503, f"the proxy could not record the change: {exc}") from None
        conv.apply(event)
        conv.written = len(conv.events)
    log.info("taskgate proxy: conversation %s: an operator's change is held: %s", key,
             event.model_dump_json(exclude_none=True))  # fmt: skip
    return list(conv.held)


def give(call: Call, *, approvals: bool) -> None:
    """Give the conversation's held revisions (``approvals=False``) or approvals (``True``), as
    every journaling surface does (:func:`taskgate.journal.held.give_held`)."""
    gate = GateSession.around(call.conv.machine, call.proxy.arm.policy)
    for event in give_held(call.conv, gate, approvals=approvals):
        call.add(event)
