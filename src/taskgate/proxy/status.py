"""What an operator sees of a conversation: ``GET /taskgate/conversations/{id}`` and
``taskgate proxy-status``."""

from __future__ import annotations

from typing import Any

from taskgate.core.ledger import AttemptEntry, sealed_rows
from taskgate.journal.events import Conversation
from taskgate.protocol.render import render_checklist


def conversation_json(conv: Conversation, rung: str) -> dict[str, Any]:
    """The plan, statuses, current request, receipts ledger, refusals and pending attempts."""
    out: dict[str, Any] = {"id": conv.key, "rung": rung, "turns": len(conv.turns)}
    if not conv.started:
        return out
    machine = conv.machine
    req = machine.request
    ledger = sealed_rows(conv.committed, scope=conv.key)
    pending = conv.pending.attempts if conv.pending is not None else ()
    out.update(
        plan=machine.graph.to_plan().model_dump(mode="json"),
        statuses={s: str(v) for s, v in machine.statuses().items()},
        request=None
        if req is None
        else {"work_order": req.work_order, "step": req.step, "explicit_redo": req.explicit_redo},
        checklist=render_checklist(machine),
        ledger=ledger,
        refusals=[
            e.model_dump(mode="json")
            for e in conv.committed
            if isinstance(e, AttemptEntry) and e.decision == "refuse"
        ],
        pending=[e.model_dump(mode="json") for e in pending],
        held=[h.model_dump(mode="json", exclude_none=True) for h in conv.held],
    )
    return out
