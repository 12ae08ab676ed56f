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

Hosted tools, MCP servers' tools and handoffs are not function tools and pass ungated: gate MCP
servers with ``taskgate mcp``, and apply :func:`gated` to every agent of a handoff graph.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Sequence
from typing import Any, TypeVar

import orjson
from agents import Agent, FunctionTool

from taskgate.errors import UsageError
from taskgate.gate.session import Outcome
from taskgate.gate.tool_gate import ToolGate

A = TypeVar("A")
log = logging.getLogger("taskgate.openai_agents")
#: set on the tool context by the SDK when its default failure handler turned an exception into
#: text, and by this adapter when a tool's own failure handler did
_SDK_FAILED = "_function_tool_default_failure_handled"
_OWN_FAILED = "_taskgate_failure_handled"


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


def gate_tool(tool: FunctionTool, gate: ToolGate) -> FunctionTool:
    """A copy of ``tool`` whose calls ``gate`` judges (the original is left as it was)."""
    gated_tool = copy.copy(tool)  # the SDK's copy rebinds its error handler to the copy
    inner = gated_tool.on_invoke_tool
    formatter = gated_tool._failure_error_function
    if not gated_tool._use_default_failure_error_function and formatter is not None:

        def marking(ctx: Any, error: Exception) -> Any:
            setattr(ctx, _OWN_FAILED, True)
            return formatter(ctx, error)

        gated_tool._failure_error_function = marking

    async def on_invoke_tool(ctx, args_json):  # type: ignore[no-untyped-def]  # the SDK reads the signature
        ticket = gate.begin(tool.name, arguments=json_arguments(args_json))
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


def gated(agent_or_tools: A, gate: ToolGate) -> A:
    """``agent.clone(...)`` with its function tools gated, or a list of tools gated; other tools
    pass through as they are."""
    if isinstance(agent_or_tools, Agent):
        return agent_or_tools.clone(tools=gated(list(agent_or_tools.tools), gate))  # type: ignore[return-value]
    if isinstance(agent_or_tools, Sequence):
        return [  # type: ignore[return-value]
            gate_tool(t, gate) if isinstance(t, FunctionTool) else t for t in agent_or_tools
        ]
    raise UsageError(
        f"gated() takes an Agent or a list of tools, not {type(agent_or_tools).__name__}"
    )
