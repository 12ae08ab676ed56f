"""A :class:`~taskgate.ToolGate` around a PydanticAI agent's tools.

The hook is a capability's ``wrap_tool_execute``: it runs once per tool call (concurrently for
parallel calls), after the arguments are validated, around the whole execution; not calling the
handler skips the tool. A refused call raises ``ToolFailed`` with the plain-words notice, which
the model reads as a failed tool result (it does not spend the tool's retries). The receipt is
booked when the handler returns; an exception, ``ModelRetry``, ``ToolFailed`` or a deferral
books nothing and frees the step; a cancelled call is held in doubt (a sync tool's thread runs on),
its step not run again until ``gate.settle(step, ran=...)``. It covers every toolset of the agent (function
tools, MCP servers), not output tools. ``TaskGateToolset`` does the same for one toolset.

A call the gate holds (the state allows it, but it cannot tell the user agreed to exactly this
call) is asked about. By default the model reads the question to put to the user, whose next
message is read against it. With ``confirm="approval"`` it is PydanticAI's own human-in-the-loop
tool approval: the call raises ``ApprovalRequired`` (its metadata carries the plain-words
``question`` and the gate's ``ask`` id), the run ends with ``DeferredToolRequests`` (put it among
the agent's output types, or resolve it inline with a ``HandleDeferredToolCalls`` capability),
and the next run with ``DeferredToolResults(approvals={call_id: True})`` executes exactly the call
approved (``ToolApproved(override_args=...)``: the arguments the person gave, still judged by the
state). A denial runs nothing, and the next user message drops the ask.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_ai import RunContext, ToolFailed
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.toolsets import ToolsetTool, WrapperToolset

from taskgate.errors import UsageError
from taskgate.gate.asking import canonical
from taskgate.gate.session import Outcome, Ticket
from taskgate.gate.tool_gate import ToolGate

log = logging.getLogger("taskgate.pydantic_ai")
#: the channel of the asks that go through PydanticAI's tool approvals, as the ledger names it
CHANNEL = "pydantic-ai-approval"
#: how a held call is put to the person: the question the model reads (the default), or
#: PydanticAI's deferred tool approvals
Confirm = Literal["ask-back", "approval"]
_KEPT = 1024


@dataclass
class _Approvals:
    """The asks put to PydanticAI's approvals, by call id, and the approvals taken (the last
    ``_KEPT`` of each)."""

    asked: OrderedDict[str, str] = field(default_factory=OrderedDict)
    spent: OrderedDict[str, None] = field(default_factory=OrderedDict)


def _confirm(confirm: object) -> None:
    if confirm not in ("ask-back", "approval"):
        raise UsageError(f"confirm must be 'ask-back' or 'approval', not {confirm!r}")


def _judged(
    gate: ToolGate, name: str, args: object, ctx: RunContext[Any], confirm: str, kept: _Approvals
) -> Ticket:
    """The call's ticket. With approvals, a held call the person has not approved raises
    ``ApprovalRequired``; one PydanticAI resumed as approved (this very call id, with the
    arguments approved) is answered so (an edit where the person gave other arguments) and
    judged again under that yes."""
    arguments = _arguments(args)
    if confirm != "approval":
        return gate.begin(name, arguments=arguments)
    call_id, asked, spent = ctx.tool_call_id or "", kept.asked, kept.spent
    if ctx.tool_call_approved and call_id in spent:  # the same results given again: run once
        log.warning("taskgate: the approval of call %s was taken already (the deferred results "
                    "were given again): it does not run again", call_id)  # fmt: skip
        raise ToolFailed(f'"{name}" was not run again: the user\'s yes to this call was given '
                         "already.")  # fmt: skip
    if ctx.tool_call_approved:
        spent[call_id] = None
        while len(spent) > _KEPT:
            spent.popitem(last=False)
    if ctx.tool_call_approved and (shown := asked.pop(call_id, None)) is not None:
        held = {a.id: a for a in gate.waiting()}
        if shown in held and held[shown].tool == name:  # the ask made for this call, waiting
            same = canonical(held[shown].arguments) == canonical(arguments)
            call = gate.answer(shown, "approve" if same else "edit", by="user", channel=CHANNEL,
                               arguments=None if same else dict(arguments or {}))  # fmt: skip
            assert call is not None
            return gate.begin(call.tool, arguments=call.arguments)
    waiting = {a.id for a in gate.waiting()}
    ticket = gate.begin(name, arguments=arguments, channel=CHANNEL)
    if ticket.ask is None:
        return ticket
    if not ctx.tool_call_approved:
        asked[call_id] = ticket.ask.id
        while len(asked) > _KEPT:
            asked.popitem(last=False)
        raise ApprovalRequired(metadata={"question": ticket.ask.question, "ask": ticket.ask.id})
    if ticket.ask.id not in waiting:  # approved late, or in another conversation: not this ask
        log.warning("taskgate: an approval of %s came for a question no longer waiting: it does "
                    "not run", name)  # fmt: skip
        raise ToolFailed(f'"{name}" was not run: the approval came after the conversation moved '
                         "on. Call it again to ask the user.")  # fmt: skip
    call = gate.answer(ticket.ask.id, "approve", by="user", channel=CHANNEL)
    assert call is not None
    return gate.begin(call.tool, arguments=call.arguments)


async def _gated(
    gate: ToolGate,
    name: str,
    args: object,
    run: Callable[[], Awaitable[Any]],
    ctx: RunContext[Any],
    confirm: str,
    kept: _Approvals,
) -> Any:
    ticket = _judged(gate, name, args, ctx, confirm, kept)
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
    """``Agent(..., capabilities=[TaskGate(gate)])``: every tool call judged by ``gate``;
    ``confirm="approval"`` asks held calls through PydanticAI's tool approvals."""

    gate: ToolGate
    confirm: Confirm = "ask-back"
    _kept: _Approvals = field(default_factory=_Approvals, init=False, repr=False)

    def __post_init__(self) -> None:
        _confirm(self.confirm)

    async def wrap_tool_execute(
        self, ctx: RunContext[Any], *, call: Any, tool_def: Any, args: Any, handler: Any
    ) -> Any:
        return await _gated(self.gate, call.tool_name, args, lambda: handler(args), ctx,
                            self.confirm, self._kept)  # fmt: skip


@dataclass
class TaskGateToolset(WrapperToolset[Any]):
    """``Agent(..., toolsets=[TaskGateToolset(toolset, gate)])``: one toolset's calls judged."""

    gate: ToolGate | None = None
    confirm: Confirm = "ask-back"
    _kept: _Approvals = field(default_factory=_Approvals, init=False, repr=False)

    def __post_init__(self) -> None:
        _confirm(self.confirm)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if self.gate is None:
            raise ToolFailed("the task gate is not set up: TaskGateToolset(toolset, gate)")
        return await _gated(self.gate, name, tool_args,
                            lambda: self.wrapped.call_tool(name, tool_args, ctx, tool), ctx,
                            self.confirm, self._kept)  # fmt: skip
