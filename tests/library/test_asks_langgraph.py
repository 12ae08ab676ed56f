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
from taskgate import Plan
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


@tool
def draft_rfq(scope: str) -> str:
    """Draft the RFQ."""
    RAN.append({"scope": scope, "draft": True})
    return "drafted"


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
    relayed = "Shall I collect the requirements (scope: laptops)? Yes or no?"  # as told to
    graph = agent([call("a", scope="laptops"), relayed, call("b", scope="laptops"), "done"], gate)
    first = graph.invoke({"messages": [HumanMessage(UNSURE)]}, config)
    notice = str(answers(first)["a"].content)
    assert "Shall I collect the requirements (scope: laptops)? Yes or no?" in notice and RAN == []
    second = graph.invoke({"messages": [HumanMessage("Yes, please.")]}, config)
    assert answers(second)["b"].status == "success" and RAN == [{"scope": "laptops"}]
    assert ("ask", None) in kinds(graph, config) and ("answer", "approve") in kinds(graph, config)


DECISIONS = [
    ({"type": "approve"}, [{"scope": "laptops"}], "success"),
    ({"type": "edit", "edited_action": {"name": "collect_requirements",
                                        "args": {"scope": "desks"}}},
     [{"scope": "desks"}], "success"),
    ({"type": "reject", "message": "not now"}, [], "error"),
    ({"type": "edit", "edited_action": {"name": "delete_everything", "args": {}}}, [], "error"),
    ({"type": "maybe"}, [], "error"),
]  # fmt: skip
QUESTION = "Shall I collect the requirements (scope: laptops)? Yes or no?"


@pytest.mark.parametrize(
    ("decision", "ran", "status"),
    [*DECISIONS, ({"decisions": [{"type": "approve"}]}, [{"scope": "laptops"}], "success"),
     ("yes", [], "error")],
)  # fmt: skip
def test_a_per_call_interrupt_in_langchains_format_runs_exactly_what_the_person_decided(
    decision: Any, ran: list[dict[str, Any]], status: str
) -> None:
    gate = TaskGateMiddleware(PLAN, tools=TOOLS, confirm="interrupt", interrupt_mode="per_call")
    config: Any = {"configurable": {"thread_id": f"hitl-{decision!r}"}}
    graph = agent([call("a", scope="laptops"), "ok"], gate)
    paused = graph.invoke({"messages": [HumanMessage(UNSURE)]}, config)
    (asked,) = paused["__interrupt__"]
    assert asked.value == {
        "type": "tool_approval", "tool_call_id": "a", "name": "collect_requirements",
        "args": {"scope": "laptops"}, "description": QUESTION,
    }  # fmt: skip
    assert RAN == []
    done = graph.invoke(Command(resume=decision), config)
    assert ran == RAN and answers(done)["a"].status == status


@pytest.mark.parametrize(
    ("decision", "ran", "status"),
    [*[({"decisions": [d]}, r, st) for d, r, st in DECISIONS],
     ({"decisions": []}, [], "error"), ({"type": "approve"}, [], "error"), ("yes", [], "error")],
)  # fmt: skip
def test_a_batched_interrupt_in_langchains_format_runs_exactly_what_the_person_decided(
    decision: Any, ran: list[dict[str, Any]], status: str
) -> None:
    gate = TaskGateMiddleware(PLAN, tools=TOOLS, confirm="interrupt")  # batched by default
    config: Any = {"configurable": {"thread_id": f"batch-{decision!r}"}}
    graph = agent([call("a", scope="laptops"), "ok"], gate)
    paused = graph.invoke({"messages": [HumanMessage(UNSURE)]}, config)
    (asked,) = paused["__interrupt__"]
    assert asked.value == {
        "action_requests": [{"name": "collect_requirements", "args": {"scope": "laptops"},
                             "description": QUESTION}],
        "review_configs": [{"action_name": "collect_requirements",
                            "allowed_decisions": ["approve", "edit", "reject"]}],
    }  # fmt: skip
    assert RAN == []
    done = graph.invoke(Command(resume=decision), config)
    assert ran == RAN and answers(done)["a"].status == status
    assert kinds(graph, config).count(("ask", None)) == 1  # each row once in the state


def test_a_batched_interrupt_asks_every_held_call_of_the_turn_at_once() -> None:
    plan = Plan.model_validate({"binding": "tool", "steps": {
        "s1": {"tool": "collect_requirements", "text": "collect the requirements"},
        "s2": {"tool": "draft_rfq", "text": "draft the RFQ"}}})  # fmt: skip
    tools = [collect_requirements, draft_rfq]
    gate = TaskGateMiddleware(plan, tools=tools, confirm="interrupt")
    config: Any = {"configurable": {"thread_id": "two"}}
    both = AIMessage("", tool_calls=[
        {"name": "collect_requirements", "args": {"scope": "laptops"}, "id": "a", "type": "tool_call"},
        {"name": "draft_rfq", "args": {"scope": "laptops"}, "id": "b", "type": "tool_call"}])  # fmt: skip
    graph = create_agent(ScriptedChatModel([both, "ok"]), tools, middleware=[gate],
                         checkpointer=InMemorySaver())  # fmt: skip
    paused = graph.invoke({"messages": [HumanMessage(UNSURE)]}, config)
    (asked,) = paused["__interrupt__"]
    assert [r["name"] for r in asked.value["action_requests"]] == ["collect_requirements",
                                                                   "draft_rfq"]  # fmt: skip
    done = graph.invoke(Command(resume={"decisions": [{"type": "reject"}, {"type": "approve"}]}),
                        config)  # fmt: skip
    assert RAN == [{"scope": "laptops", "draft": True}]
    assert answers(done)["a"].status == "error" and answers(done)["b"].status == "success"


@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_an_answer_after_a_restart_between_ask_and_answer_runs_the_call_once(mode: Any) -> None:
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": f"restart-{mode}"}}
    first = TaskGateMiddleware(PLAN, tools=TOOLS, confirm="interrupt", interrupt_mode=mode)
    agent([call("a", scope="laptops"), "ok"], first, saver).invoke(
        {"messages": [HumanMessage(UNSURE)]}, config
    )
    fresh = TaskGateMiddleware(PLAN, tools=TOOLS, confirm="interrupt", interrupt_mode=mode)
    graph = agent(["ok"], fresh, saver)  # a new process; the model is not called again
    approve = {"type": "approve"}
    done = graph.invoke(Command(resume={"decisions": [approve]} if mode == "batched" else approve),
                        config)  # fmt: skip
    assert answers(done)["a"].status == "success" and RAN == [{"scope": "laptops"}]
    assert kinds(graph, config).count(("attempt", "admit")) == 1


def test_a_yes_after_an_interrupt_left_unanswered_is_not_its_answer() -> None:
    """The person was asked in the interrupt, not in the conversation: a "yes" in a later
    message answers nothing, and the same call is asked about again."""
    gate = TaskGateMiddleware(PLAN, tools=TOOLS, confirm="interrupt")
    config: Any = {"configurable": {"thread_id": "left"}}
    graph = agent([call("a", scope="laptops"), call("b", scope="laptops"), "ok"], gate)
    graph.invoke({"messages": [HumanMessage(UNSURE)]}, config)
    graph.update_state(config, {"messages": [ToolMessage("left", tool_call_id="a")]},
                       as_node="tools")  # fmt: skip
    again = graph.invoke({"messages": [HumanMessage("Yes.")]}, config)
    (asked,) = again["__interrupt__"]
    assert RAN == [] and asked.value["action_requests"][0]["description"] == QUESTION


def test_confirm_is_checked() -> None:
    from taskgate.errors import UsageError

    with pytest.raises(UsageError, match="confirm must be"):
        TaskGateMiddleware(PLAN, confirm="popup")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="interrupt_mode must be"):
        TaskGateMiddleware(PLAN, confirm="interrupt", interrupt_mode="all")  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_a_fork_resumed_again_with_the_yes_does_not_run_the_call_twice(mode: Any) -> None:
    """The same interrupt resumed twice (a fork from its checkpoint, as time travel does): the
    step is repeatable, so the state alone would run it again; one interrupt is one yes."""
    plan = Plan.model_validate({"binding": "tool", "steps": {"s1": {
        "tool": "collect_requirements", "text": "collect the requirements",
        "repeatable": True}}})  # fmt: skip
    gate = TaskGateMiddleware(plan, tools=TOOLS, confirm="interrupt", interrupt_mode=mode)
    config: Any = {"configurable": {"thread_id": f"fork-{mode}"}}
    graph = agent([call("a", scope="laptops"), "ok", "ok"], gate)
    graph.invoke({"messages": [HumanMessage(UNSURE)]}, config)
    paused = next(iter(graph.get_state_history(config))).config  # the checkpoint that asked
    approve = {"type": "approve"}
    resume = Command(resume={"decisions": [approve]} if mode == "batched" else approve)
    graph.invoke(resume, config)
    assert RAN == [{"scope": "laptops"}]
    graph.invoke(resume, paused)  # the fork
    assert RAN == [{"scope": "laptops"}]
