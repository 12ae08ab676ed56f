"""Held calls asked through LangGraph's ``interrupt``, in LangChain's human-in-the-loop format.

With ``TaskGateMiddleware(..., confirm="interrupt")`` the calls the gate holds (it cannot tell the
user agreed to exactly these calls) pause the run with the value ``HumanInTheLoopMiddleware``
raises, so a front-end that serves that middleware serves the gate unchanged. In its default
``interrupt_mode="batched"``, one interrupt per model turn, LangChain's ``HITLRequest``::

    {"action_requests": [{"name": "reserve_table", "args": {...},
                          "description": "Shall I reserve a table (party size: 2; ...)? Yes or no?"}],
     "review_configs": [{"action_name": "reserve_table",
                         "allowed_decisions": ["approve", "edit", "reject"]}]}

resumed with ``{"decisions": [...]}``, one decision per action request, in order. In
``interrupt_mode="per_call"``, one ``ToolApprovalRequest`` per held call::

    {"type": "tool_approval", "tool_call_id": "...", "name": "reserve_table",
     "args": {...}, "description": "Shall I reserve a table (party size: 2; ...)? Yes or no?"}

resumed with one decision. A decision is ``{"type": "approve"}``, ``{"type": "edit",
"edited_action": {"name": "reserve_table", "args": {...}}}`` (the same tool; the edited call is
judged again), or ``{"type": "reject", "message": "..."}`` (``"respond"`` reads as a reject with
its message). Anything else is one clear line in the log, and no held call runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from taskgate.errors import UsageError
from taskgate.gate.asking import Ask, Decision

#: the decisions a person may give a held call (LangChain's ``DecisionType`` less ``respond``,
#: which is read as a reject with a message)
DECISIONS = ("approve", "edit", "reject")
#: the channel of these asks and their answers, as the ledger names it
CHANNEL = "langgraph-interrupt"


def hitl_request(asks: Sequence[Ask]) -> dict[str, Any]:
    """The interrupt's value for the held calls of one model turn: LangChain's ``HITLRequest``,
    each call exactly as held, its question as the description."""
    return {
        "action_requests": [
            {"name": a.tool, "args": dict(a.arguments), "description": a.question} for a in asks
        ],
        "review_configs": [
            {"action_name": a.tool, "allowed_decisions": list(DECISIONS)} for a in asks
        ],
    }


def decisions(
    answer: object, asks: Sequence[Ask]
) -> list[tuple[Decision, dict[str, Any] | None, str]]:
    """The person's decisions on ``asks`` from a batched resume value (``{"decisions": [...]}``,
    one per held call, in order): see :func:`decision`. Another shape, or another number of
    decisions, is a :class:`UsageError`."""
    found = answer.get("decisions") if isinstance(answer, Mapping) else None
    if not isinstance(found, list):
        raise UsageError('the answer to held calls is {"decisions": [...]}, one per call')
    if len(found) != len(asks):
        raise UsageError(f"{len(found)} decisions were given for {len(asks)} held calls")
    return [decision(d, a) for d, a in zip(found, asks, strict=True)]


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
