"""The probe's variants (Table 3's rows): each changes one thing at the trap turn and holds the
recorded history before it fixed."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from taskgate.core.machine import Status
from taskgate.lab.experiments.probe.cases import TrapTurn
from taskgate.protocol.render import render_checklist_line
from taskgate.roles import ChatMessage

_ORDER = re.compile(r"\s*\(#W[0-9]+\)")


@dataclass(frozen=True)
class Variant:
    name: str
    label: str  # the row label of Table 3
    build: Callable[[TrapTurn], list[ChatMessage]]


def _with_last(t: TrapTurn, content: str) -> list[ChatMessage]:
    return [*t.messages[:-1], {"role": "user", "content": content}]


def _request(t: TrapTurn) -> str:
    return t.messages[-1]["content"]


def _system_plus(t: TrapTurn, text: str) -> list[ChatMessage]:
    first = t.messages[0]
    return [{"role": "system", "content": f"{first['content']}\n\n{text}"}, *t.messages[1:]]


def _own_record(t: TrapTurn, rewrite: Callable[[str, TrapTurn], str]) -> list[ChatMessage]:
    """The messages with the agent's own execution reply of the step rewritten (when in view)."""
    out = list(t.messages)
    if t.executed_at is not None:
        reply = out[t.executed_at]["content"]
        out[t.executed_at] = {"role": "assistant", "content": rewrite(reply, t)}
    return out


def _as_prose(reply: str, t: TrapTurn) -> str:
    """The reply with each booking line of the step replaced by a sentence saying it is done: the
    completion is still stated, but no booking line (code and work order) is left."""
    for start, end in sorted(t.spans, reverse=True):
        reply = f"{reply[:start]}I have completed step {t.step} as requested.{reply[end:]}"
    return reply


def _erase(reply: str, t: TrapTurn) -> str:
    return ""


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant(
            "recorded",
            "fresh work order for the finished step (the recorded request)",
            lambda t: list(t.messages),
        ),
        Variant(
            "confirm",
            '"please confirm that ... has been taken care of" (same order)',
            lambda t: _with_last(
                t, f"Please confirm that '{t.text}' has been taken care of ({t.work_order})."
            ),
        ),
        Variant(
            "status",
            '"where do we stand on ...?" (same order)',
            lambda t: _with_last(t, f"Where do we stand on '{t.text}' ({t.work_order})?"),
        ),
        Variant(
            "no-order",
            "the request with no work order number",
            lambda t: _with_last(t, _ORDER.sub("", _request(t))),
        ),
        Variant(
            "checklist-user",
            "request + exact checklist, user turn",
            lambda t: _with_last(t, f"{_request(t)}\n\n{t.checklist}"),
        ),
        Variant(
            "checklist-system",
            "request; checklist in the system prompt",
            lambda t: _system_plus(t, t.checklist),
        ),
        Variant(
            "done-line",
            "request + the step's DONE line only",
            lambda t: _with_last(
                t, f"{_request(t)}\n\n{render_checklist_line(t.step, Status.DONE)}"
            ),
        ),
        Variant(
            "directive-user",
            'request + directive "already DONE, do not redo", user turn',
            lambda t: _with_last(t, f"{_request(t)}\n\n{t.directive}"),
        ),
        Variant(
            "directive-system",
            "the same directive in the system prompt",
            lambda t: _system_plus(t, t.directive),
        ),
        Variant(
            "prose",
            "own earlier execution reply rewritten as prose (no booking line)",
            lambda t: _own_record(t, _as_prose),
        ),
        Variant("erased", "own earlier execution reply erased", lambda t: _own_record(t, _erase)),
    )
}
