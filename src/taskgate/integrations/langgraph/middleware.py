"""The tool gate in LangGraph: a ``langchain.agents`` middleware, and the same gate for ToolNode.

``TaskGateMiddleware(plan)`` goes into ``create_agent(model, tools, middleware=[...])``. Each
user message opens a request: the matcher resolves it to a step and the gate issues a work order.
Each tool call is judged before the tool runs; a refused call is answered with a
``ToolMessage(status="error")`` naming the reason and the tool never runs; an admitted call runs,
and its success is the receipt. Every tool call id gets its answer.

The receipts ledger lives in graph state (``taskgate_ledger``, appended through a reducer), so a
checkpointer makes it durable per thread; the gate in memory is rebuilt from that state whenever
it is behind (a new process, another replica). Tool calls of one model turn run concurrently, and
the gate's judge-and-reserve is one critical section, so two calls of one step never both run.
"""

from __future__ import annotations

import asyncio
import json
import operator
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, NotRequired

from langchain.agents import AgentState
from langchain.agents.middleware import AgentMiddleware, ToolCallRequest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.config import get_config
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from ...agents.base import Matcher
from ...agents.lexical import LexicalMatcher
from ...core.ledger import LedgerEntry, dump_ledger, load_ledger
from ...core.plan import Plan
from ...core.verdict import Policy
from ...gate.tool_gate import Ticket, ToolGate

LEDGER_KEY = "taskgate_ledger"
Handler = Callable[[ToolCallRequest], Any]
AsyncHandler = Callable[[ToolCallRequest], Awaitable[Any]]


class GateState(AgentState):
    """The agent's state plus the gate's receipts ledger (one JSON object per entry)."""

    taskgate_ledger: NotRequired[Annotated[list[dict[str, Any]], operator.add]]


def _dump(entries: list[LedgerEntry]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in dump_ledger(entries).splitlines()]


def _load(rows: list[dict[str, Any]]) -> list[LedgerEntry]:
    return load_ledger("".join(json.dumps(r) + "\n" for r in rows))


class TaskGateMiddleware(AgentMiddleware[GateState, Any]):
    """Gate an agent's tools by a tool-bound plan (steps bound to the agent's tool names).

    ``matcher`` resolves each user message to a step (default: the lexical matcher, no model);
    ``policy`` is state-bound or request-bound enforcement.
    """

    state_schema = GateState

    def __init__(
        self,
        plan: Plan,
        matcher: Matcher | None = None,
        policy: Policy = Policy.STATE_BOUND,
    ) -> None:
        super().__init__()
        ToolGate(plan, policy)  # refuses a plan that is not tool-bound, before any run
        self.plan, self.policy = plan, policy
        self.matcher: Matcher = matcher or LexicalMatcher()
        self._gates: dict[str, ToolGate] = {}
        self._lock = threading.Lock()

    # -- the gate of a thread, in step with the graph state --------------------------------------
    def gate(self, state: Any) -> ToolGate:
        """This thread's gate, rebuilt from the state's ledger when the state is ahead of it."""
        thread = str(get_config().get("configurable", {}).get("thread_id", ""))
        rows: list[dict[str, Any]] = list(state.get(LEDGER_KEY) or [])
        with self._lock:
            gate = self._gates.get(thread)
            if gate is None or len(gate.ledger) < len(rows):
                gate = ToolGate.from_ledger(_load(rows), self.policy) if rows else None
                gate = gate or ToolGate(self.plan, self.policy)
                self._gates[thread] = gate
            return gate

    # -- a request per user message --------------------------------------------------------------
    def before_agent(self, state: GateState, runtime: Any) -> dict[str, Any] | None:
        return asyncio.run(self.open_request(state))  # sync invoke: no loop is running here

    async def abefore_agent(self, state: GateState, runtime: Any) -> dict[str, Any] | None:
        return await self.open_request(state)

    async def open_request(self, state: Any) -> dict[str, Any] | None:
        """Open a request for the newest user message; the state update that records it.

        A hand-built graph runs this as its first node (see :func:`gated_tool_node`).
        """
        gate = self.gate(state)
        fresh = not state.get(LEDGER_KEY)
        human = [m for m in state.get("messages", []) if isinstance(m, HumanMessage)]
        if not human:
            return {LEDGER_KEY: _dump(list(gate.ledger))} if fresh else None
        match = await self.matcher.match(gate.machine.graph.to_plan(), str(human[-1].content))
        before = len(gate.ledger)
        gate.open_request(match.step, explicit_redo=match.explicit_redo)
        new = list(gate.ledger) if fresh else list(gate.ledger[before:])
        return {LEDGER_KEY: _dump(new)}

    # -- each tool call --------------------------------------------------------------------------
    def wrap_tool_call(self, request: ToolCallRequest, handler: Handler) -> Any:
        gate = self.gate(request.state)
        ticket = gate.begin(request.tool_call["name"])
        if not ticket.admitted:
            return _refusal(request, ticket)
        ok, result = False, None
        try:
            result = handler(request)
            ok = _succeeded(result)
        finally:
            receipt = gate.finish(ticket, ok)
        return _with_entries(result, [receipt] if receipt is not None else [])

    async def awrap_tool_call(self, request: ToolCallRequest, handler: AsyncHandler) -> Any:
        gate = self.gate(request.state)
        ticket = gate.begin(request.tool_call["name"])
        if not ticket.admitted:
            return _refusal(request, ticket)
        ok, result = False, None
        try:
            result = await handler(request)
            ok = _succeeded(result)
        finally:
            receipt = gate.finish(ticket, ok)
        return _with_entries(result, [receipt] if receipt is not None else [])


def _succeeded(result: Any) -> bool:
    return not (isinstance(result, ToolMessage) and result.status == "error")


def _refusal(request: ToolCallRequest, ticket: Ticket) -> Command[Any]:
    call = request.tool_call
    message = ToolMessage(
        content=ticket.notice, tool_call_id=call["id"], name=call["name"], status="error"
    )
    entries = [ticket.entry] if ticket.entry is not None else []
    return Command(update={"messages": [message], LEDGER_KEY: _dump(entries)})


def _with_entries(result: Any, entries: list[LedgerEntry]) -> Any:
    """The tool's answer, carrying the ledger entries it made (as a state update)."""
    if not entries:
        return result
    if isinstance(result, Command):
        update = dict(result.update or {}) if isinstance(result.update, dict) else {}
        update[LEDGER_KEY] = [*update.get(LEDGER_KEY, []), *_dump(entries)]
        return Command(update=update, goto=result.goto, graph=result.graph)
    return Command(update={"messages": [result], LEDGER_KEY: _dump(entries)})


def gated_tool_node(tools: Sequence[Any], gate: TaskGateMiddleware) -> ToolNode:
    """The same gate for a hand-built graph: a ``ToolNode`` whose calls the gate judges.

    The graph's state needs the ``taskgate_ledger`` key (use :class:`GateState`), and a node
    that runs ``gate.open_request`` on each new user message before the model.
    """
    return ToolNode(tools, wrap_tool_call=gate.wrap_tool_call, awrap_tool_call=gate.awrap_tool_call)
