"""A held call asked through LangGraph's ``interrupt``, in LangChain's human-in-the-loop format.

With ``TaskGateMiddleware(..., confirm="interrupt")`` a call the gate holds (it cannot tell the
user agreed to exactly this call) pauses the run with the value ``HumanInTheLoopMiddleware``
raises in its ``per_call`` mode, so a front-end that serves that middleware serves the gate
unchanged::

    {"type": "tool_approval", "tool_call_id": "...", "name": "reserve_table",
     "args": {...}, "description": "Shall I reserve a table (party size: 2; ...)? Yes or no?"}

and the run is resumed with one decision: ``{"type": "approve"}``, ``{"type": "edit",
"edited_action": {"name": "reserve_table", "args": {...}}}`` (the same tool; the edited call is
judged again), or ``{"type": "reject", "message": "..."}`` (``"respond"`` reads as a reject with
its message). Anything else is one clear line in the log, and the call does not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taskgate.errors import UsageError
from taskgate.gate.asking import Ask, Decision

#: the decisions a person may give a held call (LangChain's ``DecisionType`` less ``respond``,
#: which is read as a reject with a message)
DECISIONS = ("approve", "edit", "reject")


def tool_approval(ask: Ask, call_id: str) -> dict[str, Any]:
    """The interrupt's value for one held call: LangChain's ``ToolApprovalRequest``, with the
    exact call the gate holds and its question as the description."""
    return {
        "type": "tool_approval",
        "tool_call_id": call_id,
        "name": ask.tool,
        "args": dict(ask.arguments),
        "description": ask.question,
    }


def response_schema(ask: Ask) -> dict[str, Any]:
    """The JSON schema of an answer (LangGraph checks a resume against it where it can)."""
    action = {
        "type": "object",
        "properties": {"name": {"const": ask.tool}, "args": {"type": "object"}},
        "required": ["name", "args"],
    }
    return {
        "oneOf": [
            {"type": "object", "properties": {"type": {"const": "approve"}}, "required": ["type"]},
            {
                "type": "object",
                "properties": {"type": {"const": "edit"}, "edited_action": action},
                "required": ["type", "edited_action"],
            },
            {
                "type": "object",
                "properties": {
                    "type": {"enum": ["reject", "respond"]},
                    "message": {"type": "string"},
                },
                "required": ["type"],
            },
        ]
    }


def decision(answer: object, ask: Ask) -> tuple[Decision, dict[str, Any] | None, str]:
    """The person's decision on ``ask`` from a resume value: (decision, edited arguments,
    their message). A value of another shape, an unknown decision, or an edit of another tool
    is a :class:`UsageError` naming what was wrong. A batched answer (``{"decisions": [d]}``)
    of exactly one decision is read as that decision."""
    if isinstance(answer, Mapping) and "decisions" in answer and "type" not in answer:
        decisions = answer["decisions"]
        if not (isinstance(decisions, list) and len(decisions) == 1):
            raise UsageError("the answer to one held call has exactly one decision")
        answer = decisions[0]
    if not isinstance(answer, Mapping):
        raise UsageError(
            f"an answer to a held call is a decision object, not {type(answer).__name__}"
        )
    kind = answer.get("type")
    message = answer.get("message", "")
    message = message if isinstance(message, str) else ""
    if kind in ("reject", "respond"):
        return "reject", None, message
    if kind == "approve":
        return "approve", None, message
    if kind != "edit":
        raise UsageError(f"a decision's type is approve, edit or reject, not {kind!r}")
    action = answer.get("edited_action")
    if not isinstance(action, Mapping) or not isinstance(action.get("args"), Mapping):
        raise UsageError("an edit gives edited_action: {name, args} with args an object")
    if action.get("name") != ask.tool:
        raise UsageError(
            f"an edit of the held {ask.tool!r} call names another tool ({action.get('name')!r}): "
            "an edit changes the call's arguments, never its tool"
        )
    return "edit", dict(action["args"]), message
