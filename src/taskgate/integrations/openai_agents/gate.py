"""A :class:`~taskgate.ToolGate` around an OpenAI Agents SDK agent's function tools.

The hook is each ``FunctionTool``'s ``on_invoke_tool(ctx, args_json)``, which the SDK documents
as the place a tool may "return a string error message (which will be sent back to the LLM)".
The runner awaits it once per call, in the call's own task, after approvals and the tool input
guardrails, so judging and booking pair up in one ``try``/``finally`` even for parallel calls,
timeouts and cancellation. A cancelled call (a timeout) is held in doubt, not freed: a sync
tool's thread runs on after it, so its step is not run again until ``gate.settle(step, ran=...)``. (Tool guardrails can block a call but see no failure, and the run
hooks cannot block; neither can book a receipt only on success.) A refused call returns the
plain-words notice as the call's output and the tool never runs. Success: the SDK turns a
tool's exception into text inside ``on_invoke_tool`` and marks the context; the adapter reads that
mark (and marks it for a tool's own ``failure_error_function``), so a failed call books nothing.
Those marks are private fields of the SDK: the extra pins its minor version.

A call the gate holds (the state allows it, but it cannot tell the user agreed to exactly this
call) is asked about. By default its answer to the model is the question to put to the user, whose
next message is read against it. With ``confirm="approval"`` it goes through the SDK's own tool
approvals instead: the gated tool's ``needs_approval`` says yes for it, the run stops with a
``ToolApprovalItem`` in ``result.interruptions``, and after ``state.approve(item)`` the resumed
run executes exactly the call shown (``state.reject(item)`` runs nothing, and the next user
message drops the ask). :func:`question` gives the plain-words question for an interruption.

Hosted tools, MCP servers' tools and handoffs are not function tools and pass ungated: gate MCP
servers with ``taskgate mcp``, and apply :func:`gated` to every agent of a handoff graph.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import inspect
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

import orjson
from agents import Agent, FunctionTool

from taskgate.errors import UsageError
from taskgate.gate.asking import canonical
from taskgate.gate.session import Outcome, Ticket
from taskgate.gate.tool_gate import ToolGate

A = TypeVar("A")
log = logging.getLogger("taskgate.openai_agents")
#: set on the tool context by the SDK when its default failure handler turned an exception into
#: text, and by this adapter when a tool's own failure handler did
_SDK_FAILED = "_function_tool_default_failure_handled"
_OWN_FAILED = "_taskgate_failure_handled"
#: the channel of the asks that go through the SDK's tool approvals, as the ledger names it
CHANNEL = "openai-agents-approval"
#: how a held call is put to the person: the question answered to the model (the default), or
#: the SDK's tool approvals
Confirm = Literal["ask-back", "approval"]
#: refused calls judged by ``needs_approval`` and not yet invoked, and approvals taken, kept at most
_KEPT = 1024


def json_arguments(raw: object) -> dict[str, object] | None:
    """A call's arguments as the SDK hands them (a JSON object's text): judged with every value
    (a text that is no JSON object is judged as it stands, never as no arguments)."""
    if not isinstance(raw, str | bytes) or not raw.strip():
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {"arguments": raw if isinstance(raw, str) else raw.decode("utf-8", "replace")}
    if isinstance(value, dict):
        return value or None
    return {"arguments": value}


def gate_tool(tool: FunctionTool, gate: ToolGate, *, confirm: Confirm = "ask-back") -> FunctionTool:
    """A copy of ``tool`` whose calls ``gate`` judges (the original is left as it was); with
    ``confirm="approval"`` a held call is asked through the SDK's tool approvals."""
    if confirm not in ("ask-back", "approval"):
        raise UsageError(f"confirm must be 'ask-back' or 'approval', not {confirm!r}")
    gated_tool = copy.copy(tool)  # the SDK's copy rebinds its error handler to the copy
    inner = gated_tool.on_invoke_tool
    formatter = gated_tool._failure_error_function
    if not gated_tool._use_default_failure_error_function and formatter is not None:

        def marking(ctx: Any, error: Exception) -> Any:
            setattr(ctx, _OWN_FAILED, True)
            return formatter(ctx, error)

        gated_tool._failure_error_function = marking

    judged: OrderedDict[str, Ticket] = OrderedDict()  # refused by needs_approval, by call id
    if confirm == "approval":
        gated_tool.needs_approval = _needs_approval(tool, gate, judged)

    async def on_invoke_tool(ctx, args_json):  # type: ignore[no-untyped-def]  # the SDK reads the signature
        call_id = getattr(ctx, "tool_call_id", None)
        refused = judged.pop(call_id, None) if isinstance(call_id, str) else None
        if refused is not None:
            return refused.notice
        ticket = _approved(ctx, gate, tool.name, json_arguments(args_json), confirm)
        if not ticket.admitted:
            return ticket.notice  # the model reads it as the call's output; the tool never runs
        outcome: Outcome = "unknown"
        try:
            result = await inner(ctx, args_json)
            failed = getattr(ctx, _SDK_FAILED, False) or getattr(ctx, _OWN_FAILED, False)
            outcome = "failed" if failed else "ok"
            return result
        except Exception:
            outcome = "failed"
            raise
        except asyncio.CancelledError:  # a sync tool's thread runs on: it may still run
            log.warning("taskgate: a call of %s was cancelled; its step is held in doubt until "
                        "gate.settle(step, ran=...)", tool.name)  # fmt: skip
            raise
        finally:  # a failure books nothing and frees the step; a cancellation holds it
            gate.finish(ticket, outcome)

    gated_tool.on_invoke_tool = on_invoke_tool
    return gated_tool


def _needs_approval(tool: FunctionTool, gate: ToolGate, judged: OrderedDict[str, Ticket]) -> Any:
    """The gated tool's ``needs_approval``: yes where the tool's own says so, and for a call the
    gate holds (its ask recorded on the SDK's channel). An admitted call is freed again (it is
    judged anew when invoked); a refused one is kept for its invocation, so it is recorded once."""
    own = tool.needs_approval

    async def needs_approval(ctx: Any, params: dict[str, Any], call_id: str) -> bool:
        if own is True:
            return True
        if callable(own):
            verdict = own(ctx, params, call_id)
            if bool(await verdict if inspect.isawaitable(verdict) else verdict):
                return True
        ticket = gate.begin(tool.name, arguments=params or None, channel=CHANNEL)
        if ticket.held:
            return True
        if ticket.admitted:
            gate.finish(ticket, "failed")  # books nothing: judged again when it is invoked
        elif ticket.gated:
            judged[call_id] = ticket
            while len(judged) > _KEPT:
                judged.popitem(last=False)
        return False

    return needs_approval


def _approved(
    ctx: Any, gate: ToolGate, name: str, arguments: dict[str, object] | None, confirm: Confirm
) -> Ticket:
    """The call's ticket; a held call the person approved in the SDK (this very call id) is
    answered so, and judged again under that yes."""
    if confirm != "approval":
        return gate.begin(name, arguments=arguments)
    waiting = {a.id for a in gate.waiting()}
    ticket = gate.begin(name, arguments=arguments, channel=CHANNEL)
    call_id, approver = getattr(ctx, "tool_call_id", None), getattr(ctx, "is_tool_approved", None)
    if ticket.ask is None or not isinstance(call_id, str) or not callable(approver):
        return ticket
    if approver(getattr(ctx, "tool_name", name), call_id) is not True:
        return ticket
    if ticket.ask.id not in waiting:  # approved late, or in another conversation: not this ask
        log.warning("taskgate: an approval of %s came for a question no longer waiting: it does "
                    "not run", name)  # fmt: skip
        return dataclasses.replace(ticket, ask=None, refusal=(
            f'"{name}" was not run: the approval came after the conversation moved on. Call it '
            "again to ask the user."))  # fmt: skip
    if not _spend(gate, call_id):  # a run state resumed again: one approval, one run
        return dataclasses.replace(ticket, ask=None, refusal=(
            f'"{name}" was not run again: the user\'s yes to this call was given already.'))  # fmt: skip
    call = gate.answer(ticket.ask.id, "approve", by="user", channel=CHANNEL)
    assert call is not None
    return gate.begin(call.tool, arguments=call.arguments)


#: each gate's approvals taken, by the SDK's call id (the last ``_KEPT``)
_SPENT: weakref.WeakKeyDictionary[ToolGate, OrderedDict[str, None]] = weakref.WeakKeyDictionary()
_SPENDING = threading.Lock()


def _spend(gate: ToolGate, call_id: str) -> bool:
    """Whether the SDK's approval of ``call_id`` is taken for the first time (in this process):
    a run state resumed twice approves its call once."""
    with _SPENDING:
        spent = _SPENT.setdefault(gate, OrderedDict())
        if call_id in spent:
            log.warning("taskgate: the approval of call %s was taken already (its run state "
                        "was resumed again): it does not run again", call_id)  # fmt: skip
            return False
        spent[call_id] = None
        while len(spent) > _KEPT:
            spent.popitem(last=False)
        return True


def question(gate: ToolGate, item: Any) -> str | None:
    """The plain-words question for an SDK ``ToolApprovalItem`` the gate asked for (the action
    and every argument), to show beside it; None for one the gate did not ask."""
    name = getattr(item, "tool_name", None) or getattr(item, "name", None)
    shown = canonical(json_arguments(getattr(item, "arguments", None)))
    for ask in reversed(gate.waiting()):
        if ask.tool == name and canonical(ask.arguments) == shown:
            return ask.question
    return None


def gated(agent_or_tools: A, gate: ToolGate, *, confirm: Confirm = "ask-back") -> A:
    """``agent.clone(...)`` with its function tools gated, or a list of tools gated; other tools
    pass through as they are. ``confirm="approval"`` asks held calls through the SDK's tool
    approvals (see the module's text)."""
    if confirm not in ("ask-back", "approval"):
        raise UsageError(f"confirm must be 'ask-back' or 'approval', not {confirm!r}")
    if isinstance(agent_or_tools, Agent):
        tools = gated(list(agent_or_tools.tools), gate, confirm=confirm)
        return agent_or_tools.clone(tools=tools)  # type: ignore[return-value]
    if isinstance(agent_or_tools, Sequence):
        return [  # type: ignore[return-value]
            gate_tool(t, gate, confirm=confirm) if isinstance(t, FunctionTool) else t
            for t in agent_or_tools
        ]
    raise UsageError(
        f"gated() takes an Agent or a list of tools, not {type(agent_or_tools).__name__}"
    )
