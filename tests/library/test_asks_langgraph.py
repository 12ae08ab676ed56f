"""A held call on the LangGraph middleware: asked back to the agent by default, or through
LangGraph's interrupt in LangChain's human-in-the-loop format with ``confirm="interrupt"``; real
LangGraph, a checkpointer, and a restart between the ask and the answer."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph", reason="needs the langgraph extra")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from plans import tool_chain
from taskgate.integrations.langgraph import (
    LEDGER_KEY,
    ScriptedChatModel,
    TaskGateMiddleware,
    state_entries,
)

RAN: list[dict[str, Any]] = []


@tool
def collect_requirements(scope: str) -> str:
    """Collect the requirements."""
    RAN.append({"scope": scope})
    return "collected"


PLAN = tool_chain(1)
TOOLS = [collect_requirements]
UNSURE = "Sounds interesting."  # asks for nothing clearly: a call now is held


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def call(cid: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "collect_requirements", "args": args, "id": cid,
                                      "type": "tool_call"}])  # fmt: skip


def agent(script: list[AIMessage | str], gate: TaskGateMiddleware, saver: Any = None) -> Any:
    return create_agent(ScriptedChatModel(script), TOOLS, middleware=[gate],
                        checkpointer=saver or InMemorySaver())  # fmt: skip


def answers(result: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}


def kinds(graph: Any, config: dict[str, Any]) -> list[tuple[str, Any]]:
    rows = graph.get_state(config).values[LEDGER_KEY]
    entries = state_entries(rows, config["configurable"]["thread_id"])
    return [(e.kind, getattr(e, "decision", None)) for e in entries]


def test_by_default_the_held_call_asks_the_user_back_and_their_yes_runs_it() -> None:
    gate = TaskGateMiddleware(PLAN, tools=TOOLS)
    config: Any = {"configurable": {"thread_id": "askback"}}
    graph = agent([call("a", scope="laptops"), "Shall I?", call("b", scope="laptops"), "done"],
                  gate)  # fmt: skip
    first = graph.invoke({"messages": [HumanMessage(UNSURE)]}, config)
    notice = str(answers(first)["a"].content)
    assert "Shall I collect the requirements (scope: laptops)? Yes or no?" in notice and RAN == []
    second = graph.invoke({"messages": [HumanMessage("Yes, please.")]}, config)
    assert answers(second)["b"].status == "success" and RAN == [{"scope": "laptops"}]
    assert ("ask", None) in kinds(graph, config) and ("answer", "approve") in kinds(graph, config)


@pytest.mark.parametrize(
    ("decision", "ran", "status"),
    [
        ({"type": "approve"}, [{"scope": "laptops"}], "success"),
        ({"type": "edit", "edited_action": {"name": "collect_requirements",
                                            "args": {"scope": "desks"}}},
         [{"scope": "desks"}], "success"),
        ({"type": "reject", "message": "not now"}, [], "error"),
        ({"decisions": [{"type": "approve"}]}, [{"scope": "laptops"}], "success"),
        ({"type": "edit", "edited_action": {"name": "delete_everything", "args": {}}}, [], "error"),
        ({"type": "maybe"}, [], "error"),
        ("yes", [], "error"),
    ],
)  # fmt: skip
def test_an_interrupt_in_langchains_format_runs_exactly_what_the_person_decided(
    decision: Any, ran: list[dict[str, Any]], status: str
) -> None:
    gate = TaskGateMiddleware(PLAN, tools=TOOLS, confirm="interrupt")
    config: Any = {"configurable": {"thread_id": f"hitl-{decision!r}"}}
    graph = agent([call("a", scope="laptops"), "ok"], gate)
    paused = graph.invoke({"messages": [HumanMessage(UNSURE)]}, config)
    (asked,) = paused["__interrupt__"]
    assert asked.value == {
        "type": "tool_approval", "tool_call_id": "a", "name": "collect_requirements",
        "args": {"scope": "laptops"},
        "description": "Shall I collect the requirements (scope: laptops)? Yes or no?",
    }  # fmt: skip
    assert RAN == []
    done = graph.invoke(Command(resume=decision), config)
    assert ran == RAN and answers(done)["a"].status == status


def test_an_answer_after_a_restart_between_ask_and_answer_runs_the_call_once() -> None:
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "restart"}}
    first = TaskGateMiddleware(PLAN, tools=TOOLS, confirm="interrupt")
    agent([call("a", scope="laptops"), "ok"], first, saver).invoke(
        {"messages": [HumanMessage(UNSURE)]}, config
    )
    fresh = TaskGateMiddleware(PLAN, tools=TOOLS, confirm="interrupt")  # a new process
    graph = agent(["ok"], fresh, saver)  # the model is not called again before the tool
    done = graph.invoke(Command(resume={"type": "approve"}), config)
    assert answers(done)["a"].status == "success" and RAN == [{"scope": "laptops"}]
    assert kinds(graph, config).count(("attempt", "admit")) == 1


def test_confirm_is_checked() -> None:
    from taskgate.errors import UsageError

    with pytest.raises(UsageError, match="confirm must be"):
        TaskGateMiddleware(PLAN, confirm="popup")  # type: ignore[arg-type]
