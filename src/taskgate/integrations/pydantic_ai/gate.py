"""A :class:`~taskgate.ToolGate` around a PydanticAI agent's tools.

The hook is a capability's ``wrap_tool_execute``: it runs once per tool call (concurrently for
parallel calls), after the arguments are validated, around the whole execution; not calling the
handler skips the tool. A refused call raises ``ToolFailed`` with the plain-words notice, which
the model reads as a failed tool result (it does not spend the tool's retries). The receipt is
booked when the handler returns; an exception, ``ModelRetry``, ``ToolFailed`` or a deferral
books nothing and frees the step; a cancelled call is held in doubt (a sync tool's thread runs on),
its step not run again until ``gate.settle(step, ran=...)``. It covers every toolset of the agent (function
tools, MCP servers), not output tools. ``TaskGateToolset`` does the same for one toolset.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_ai import RunContext, ToolFailed
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.toolsets import ToolsetTool, WrapperToolset

from taskgate.gate.session import Outcome
from taskgate.gate.tool_gate import ToolGate

log = logging.getLogger("taskgate.pydantic_ai")


async def _gated(gate: ToolGate, name: str, args: object, run: Callable[[], Awaitable[Any]]) -> Any:
    ticket = gate.begin(name, arguments=_arguments(args))
    if not ticket.admitted:
        raise ToolFailed(ticket.notice)
    outcome: Outcome = "unknown"
    try:
        result = await run()
        outcome = "ok"
        return result
    except Exception:
        outcome = "failed"
        raise
    except asyncio.CancelledError:  # a sync tool's thread runs on: it may still run
        log.warning("taskgate: a call of %s was cancelled; its step is held in doubt until "
                    "gate.settle(step, ran=...)", name)  # fmt: skip
        raise
    finally:
        gate.finish(ticket, outcome)


def _arguments(args: object) -> dict[str, object] | None:
    """The validated arguments PydanticAI hands a tool (a dict, or a model of them), every value
    judged."""
    if isinstance(args, BaseModel):
        args = args.model_dump()
    if isinstance(args, dict):
        return dict(args) or None
    return None if args is None else {"arguments": args}


@dataclass
class TaskGate(AbstractCapability[Any]):
    """``Agent(..., capabilities=[TaskGate(gate)])``: every tool call judged by ``gate``."""

    gate: ToolGate

    async def wrap_tool_execute(
        self, ctx: RunContext[Any], *, call: Any, tool_def: Any, args: Any, handler: Any
    ) -> Any:
        return await _gated(self.gate, call.tool_name, args, lambda: handler(args))


@dataclass
class TaskGateToolset(WrapperToolset[Any]):
    """``Agent(..., toolsets=[TaskGateToolset(toolset, gate)])``: one toolset's calls judged."""

    gate: ToolGate | None = None

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if self.gate is None:
            raise ToolFailed("the task gate is not set up: TaskGateToolset(toolset, gate)")
        return await _gated(
            self.gate, name, tool_args, lambda: self.wrapped.call_tool(name, tool_args, ctx, tool)
        )
