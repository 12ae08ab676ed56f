"""One turn of the harness as a compiled LangGraph ``StateGraph`` (Appendix G).

The agent node asks the agent for its reply; if the reply calls tools, the tool node dispatches
each call and answers it, and a conditional edge loops back to the agent, at most
:data:`MAX_HOPS` hops (tool-node visits) per turn. Two modes:

* ``actions``: the agent writes the TOOLS clause's ``ACTION {...}`` lines; the results and
  refusals come back as one user-role message, as in the paper;
* ``native``: the agent calls the 18 tools as OpenAI function tools; each call is answered by a
  ``ToolMessage`` (``status="error"`` for a refusal), as tool-calling models expect.

The graph is compiled once; what a turn needs (the actor, the dispatcher, the mode) travels in the
run's ``configurable`` config, so concurrent episodes share it.
"""

from __future__ import annotations

import operator
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from taskgate.lab.harness.dispatch import Dispatcher, Outcome
from taskgate.protocol.actions import RESULTS_HEADER, ToolCall, from_arguments, parse_actions

Mode = Literal["actions", "native"]
#: tool-node visits per turn at most (the paper's three hops)
MAX_HOPS = 3
#: the agent: (messages so far, hop) -> its reply
Actor = Callable[[list[AnyMessage], int], Awaitable[AIMessage]]


class HopState(TypedDict):
    messages: Annotated[list[AnyMessage], operator.add]
    hops: int
    outcomes: Annotated[list[Outcome], operator.add]


@dataclass(frozen=True)
class TurnContext:
    actor: Actor
    dispatcher: Dispatcher
    mode: Mode


def calls_of(message: AIMessage, mode: Mode) -> list[ToolCall]:
    """The tool calls a reply makes: its ACTION lines, or its native calls (unparsable ones
    included, so that every call id is answered)."""
    if mode == "actions":
        return parse_actions(message_text(message))
    calls = [
        from_arguments(c["name"], c["args"], call_id=c["id"] or "") for c in message.tool_calls
    ]
    calls += [
        ToolCall(
            str(c.get("name") or ""),
            "",
            call_id=c.get("id") or "",
            problem="its arguments are not JSON",
        )
        for c in message.invalid_tool_calls
    ]
    return calls


def results_message(outcomes: list[Outcome]) -> str:
    """The user-role message that answers one hop's ACTION lines."""
    return "\n".join([RESULTS_HEADER, *(o.result for o in outcomes)])


async def _agent(state: HopState, config: RunnableConfig) -> dict[str, Any]:
    ctx: TurnContext = config["configurable"]["turn"]
    reply = await ctx.actor(state["messages"], state["hops"])
    return {"messages": [reply]}


async def _tools(state: HopState, config: RunnableConfig) -> dict[str, Any]:
    ctx: TurnContext = config["configurable"]["turn"]
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    hop = state["hops"]
    outcomes = [ctx.dispatcher.dispatch(c, hop) for c in calls_of(last, ctx.mode)]
    answers: list[AnyMessage]
    if ctx.mode == "actions":
        answers = [HumanMessage(results_message(outcomes))]
    else:
        answers = [
            ToolMessage(
                o.result, tool_call_id=o.call_id, status="success" if o.executed else "error"
            )
            for o in outcomes
        ]
    return {"messages": answers, "hops": hop + 1, "outcomes": outcomes}


def _after_agent(state: HopState, config: RunnableConfig) -> str:
    ctx: TurnContext = config["configurable"]["turn"]
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    return "tools" if calls_of(last, ctx.mode) else END


def _after_tools(state: HopState) -> str:
    return "agent" if state["hops"] < MAX_HOPS else END


@cache
def turn_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled turn graph: agent -> (calls? tools : end); tools -> (hops left? agent : end)."""
    graph = StateGraph(HopState)
    graph.add_node("agent", _agent)
    graph.add_node("tools", _tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", _after_agent, ["tools", END])
    graph.add_conditional_edges("tools", _after_tools, ["agent", END])
    return graph.compile()


def message_text(message: AnyMessage) -> str:
    """A message's text (the text parts of a content list, joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        part if isinstance(part, str) else str(part.get("text", ""))
        for part in content
        if isinstance(part, str) or part.get("type") == "text"
    )
