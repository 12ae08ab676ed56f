"""What an operator sees of a gated conversation: one status JSON for the proxy's conversations
and the MCP gate's sessions (``GET /taskgate/{conversations|sessions}/{id}``, ``taskgate
proxy-status``, the console).

    id, label, turns     the conversation's key; whose it is; how many user messages it has had
    rung                 the proxy's rung (absent on the MCP gate)
    plan, statuses       the plan as the revisions left it; each step's status
    request              the current request: work_order, step, explicit_redo (or null)
    checklist            the checklist as the model is shown it at the text-checklist rung
    ledger               the receipts ledger, sealed rows
    refusals             the refused attempts
    notices              each refusal's notice in plain words, by its ledger ``seq``
    pending              the last reply's attempts, not yet settled by a tool message (proxy);
                         a refused one with its ``notice``
    in_doubt, running    steps whose calls began and never ended: no one waits on them (settle
                         them), or they are being forwarded now (MCP gate)
    held                 an operator's changes waiting for the next request
    asks                 held calls waiting on the person's answer
    said                 the user's words beside each request they opened, by its ``seq``,
                         and what the gate read them as
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from taskgate.core.booking import Booking
from taskgate.core.ledger import AttemptEntry, sealed_rows
from taskgate.core.machine import TaskMachine
from taskgate.core.verdict import Verdict
from taskgate.gate.notices import plain_checklist, plain_refusal, why_refused
from taskgate.journal.events import Conversation
from taskgate.protocol.render import render_checklist

#: at most this many characters of a conversation's first user message in a list, and of the
#: words beside a request in its status
FIRST_CHARS, SAID_CHARS = 120, 500


def key_label(key: str) -> str:
    """Whose a conversation is, in a few characters: ``anonymous`` (a client with no API key),
    ``local`` (the MCP gate's stdio client), else ``key`` and the first eight characters of the
    API key's hash (never the key itself)."""
    who = key.rpartition("~")[2] if "~" in key else "local"
    if who in ("anon", "local"):
        return "anonymous" if who == "anon" else "local"
    return f"key {who[:8]}"


def listing_row(conv: Conversation) -> dict[str, Any]:
    """One conversation in a list: its key and whose it is (``label``), its first user message,
    when its first and last came (seconds since the epoch, 0 where not recorded), how many user
    messages it has had, whether it has a plan, what waits and what is in doubt."""
    return {
        "id": conv.key,
        "label": key_label(conv.key),
        "first": conv.first[:FIRST_CHARS],
        "since": conv.since,
        "last": conv.last,
        "turns": conv.messages,
        "started": conv.started,
        "held": len(conv.held),
        "in_flight": len(conv.in_flight),
        "asks": len(conv.machine.asks) if conv.started else 0,
    }


def status_json(
    conv: Conversation,
    *,
    rung: str | None = None,
    live: Collection[str] = (),
    plain: bool = False,
) -> dict[str, Any]:
    """The conversation's status (see the module); ``live``: the call ids being forwarded now;
    ``plain``: its checklist in plain words (an engineer's surface: the proxy's plan mode, the
    MCP gate), else the paper's."""
    out: dict[str, Any] = {"id": conv.key, "label": key_label(conv.key), "turns": conv.messages}
    if rung is not None:
        out["rung"] = rung
    if not conv.started:
        return out
    machine = conv.machine
    req = machine.request
    pending = conv.pending.attempts if conv.pending is not None else ()
    flying = conv.in_flight
    out.update(
        plan=machine.graph.to_plan().model_dump(mode="json"),
        statuses={s: str(v) for s, v in machine.statuses().items()},
        request=None
        if req is None
        else {"work_order": req.work_order, "step": req.step, "explicit_redo": req.explicit_redo},
        checklist=plain_checklist(machine) if plain else render_checklist(machine),
        ledger=sealed_rows(conv.committed, scope=conv.key),
        refusals=[
            e.model_dump(mode="json")
            for e in conv.committed
            if isinstance(e, AttemptEntry) and e.decision == "refuse"
        ],
        notices={
            str(seq): _notice(e, machine)
            for seq, e in enumerate(conv.committed)
            if isinstance(e, AttemptEntry) and e.decision == "refuse"
        },
        pending=[
            {
                **e.model_dump(mode="json"),
                **({"notice": _notice(e, machine)} if e.decision == "refuse" else {}),
            }
            for e in pending
        ],
        in_doubt=sorted({e.step for c, e in flying.items() if c not in live}),
        running=sorted({e.step for c, e in flying.items() if c in live}),
        held=[h.model_dump(mode="json", exclude_none=True) for h in conv.held],
        #: held calls waiting on the person's answer: the question shown, and since when
        asks=[a.model_dump(mode="json") for a in machine.asks.values()],
        #: the user's words beside each request they opened, by its ledger ``seq``, and what the
        #: gate read them as (a reading's kind: confirm, request, decline, ...; "" unread)
        said={
            str(seq): {"user": text[:SAID_CHARS], "read_as": kind}
            for seq, (text, kind) in conv.words.items()
        },
    )
    return out


def _notice(entry: AttemptEntry, machine: TaskMachine) -> str:
    """A refused attempt's notice, in the plain words a person reads."""
    if entry.reason is None:  # a refusal always has its reason; a hand-made journal may not
        return "The call was not run."
    verdict = Verdict("refuse", entry.step, entry.reason, entry.missing)
    call = Booking(entry.code, entry.work_order, tool=entry.tool)
    return why_refused(plain_refusal(verdict, call, machine.graph))
