"""An operator's revisions and approvals of a LangGraph thread, and a person's approval through
LangGraph's interrupt: each a row of the thread's receipts ledger, nothing touched but the state."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="needs the langgraph extra")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from plans import tool_chain
from taskgate import ToolGate
from taskgate.errors import PlanError, TaskgateError, UsageError
from taskgate.integrations.langgraph import (
    LEDGER_KEY,
    ScriptedChatModel,
    TaskGateMiddleware,
    state_entries,
)

RAN: list[str] = []


@tool
def collect_requirements(scope: str) -> str:
    """Collect the requirements."""
    RAN.append("collect_requirements")
    return "collected"


@tool
def draft_rfq(title: str) -> str:
    """Draft the RFQ."""
    RAN.append("draft_rfq")
    return "drafted"


@tool
def send_rfq(to: str) -> str:
    """Send the RFQ."""
    RAN.append("send_rfq")
    return "sent"


PLAN = tool_chain(3)
TOOLS = [collect_requirements, draft_rfq, send_rfq]


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def call(name: str, cid: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": cid, "type": "tool_call"}])


def graph(script: list[AIMessage | str], gate: TaskGateMiddleware) -> Any:
    return create_agent(
        ScriptedChatModel(script), TOOLS, middleware=[gate], checkpointer=InMemorySaver()
    )


def answers(result: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}


def ledger(agent: Any, config: dict[str, Any]) -> list[Any]:
    thread = config["configurable"]["thread_id"]
    return state_entries(agent.get_state(config).values[LEDGER_KEY], thread)


def test_an_operator_cancels_a_step_on_a_thread_and_its_call_is_refused() -> None:
    gate = TaskGateMiddleware(PLAN, tools=TOOLS)
    config = {"configurable": {"thread_id": "cancel"}}
    agent = graph([call("collect_requirements", "a", scope=""), "ok",
                   call("send_rfq", "b", to=""), "ok",
                   call("draft_rfq", "c", title=""), "ok"], gate)  # fmt: skip
    agent.invoke({"messages": [HumanMessage("collect the requirements")]}, config)
    revision = gate.cancel(agent, config, "s2", inherit=True)  # send_rfq now waits on s1 only
    assert revision.cancel == "s2" and revision.rewires == {"s3": ("s1",)}
    assert ledger(agent, config)[-1].kind == "revision"
    result = agent.invoke({"messages": [HumanMessage("send the RFQ")]}, config)
    assert answers(result)["b"].status == "success" and RAN == ["collect_requirements", "send_rfq"]
    refused = agent.invoke({"messages": [HumanMessage("draft the RFQ")]}, config)
    notice = str(answers(refused)["c"].content)
    assert notice.startswith("draft_rfq was not run: 'draft the RFQ' was cancelled.")
    assert RAN == ["collect_requirements", "send_rfq"]
    rebuilt = ToolGate.from_ledger(ledger(agent, config), plan=PLAN)  # the ledger says why
    assert rebuilt.machine.graph.is_cancelled("s2")


def test_a_fresh_process_reads_the_operators_revision_from_the_state() -> None:
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "restart"}}
    script: list[AIMessage | str] = ["ok", call("draft_rfq", "c", title=""), "ok"]
    first = TaskGateMiddleware(PLAN)
    agent = create_agent(ScriptedChatModel(script), TOOLS, middleware=[first], checkpointer=saver)
    agent.invoke({"messages": [HumanMessage("hello")]}, config)
    first.cancel(agent, config, "s2", rewire={"s3": ["s1"]})
    fresh = TaskGateMiddleware(PLAN)  # nothing in memory: the state is the whole truth
    again = create_agent(ScriptedChatModel(script[1:]), TOOLS, middleware=[fresh],
                         checkpointer=saver)  # fmt: skip
    refused = again.invoke({"messages": [HumanMessage("draft the RFQ")]}, config)
    assert "was cancelled" in str(answers(refused)["c"].content) and RAN == []


def test_a_revision_that_would_strand_a_step_or_names_none_writes_nothing() -> None:
    gate = TaskGateMiddleware(PLAN, tools=TOOLS)
    config = {"configurable": {"thread_id": "strand"}}
    agent = graph(["ok"], gate)
    agent.invoke({"messages": [HumanMessage("hello")]}, config)
    before = len(agent.get_state(config).values[LEDGER_KEY])
    with pytest.raises(PlanError, match="s2 waiting forever on cancelled s1"):
        gate.cancel(agent, config, "s1")
    with pytest.raises(TaskgateError, match="s9"):
        gate.rewire(agent, config, "s9", ["s1"])
    with pytest.raises(PlanError, match="nothing to approve: 'buy_laptops'"):
        gate.approve(agent, config, "buy_laptops", by="ops")
    with pytest.raises(UsageError, match="names who gave it"):
        gate.approve(agent, config, "send_rfq", by=" ")
    with pytest.raises(UsageError, match="names its thread"):
        gate.cancel(agent, {}, "s3")
    assert len(agent.get_state(config).values[LEDGER_KEY]) == before


def test_an_operator_approval_is_held_for_the_threads_next_request() -> None:
    gate = TaskGateMiddleware(PLAN, tools=TOOLS)
    config = {"configurable": {"thread_id": "approve"}}
    agent = graph([call("send_rfq", "b", to=""), "It needs the draft first.",
                   call("send_rfq", "c", to=""), call("send_rfq", "d", to="w"), "sent"],
                  gate)  # fmt: skip
    first = agent.invoke({"messages": [HumanMessage("send the RFQ")]}, config)
    assert answers(first)["b"].status == "error" and RAN == []
    assert gate.approve(agent, config, "send_rfq", by="ops-lead", reason="deadline") == "s3"
    result = agent.invoke({"messages": [HumanMessage("it is approved, send it")]}, config)
    assert answers(result)["c"].status == "success"  # the approved call ran, once
    assert answers(result)["d"].status == "error" and RAN == ["send_rfq"]
    entries = ledger(agent, config)
    approval = next(e for e in entries if e.kind == "approval")
    assert (approval.step, approval.by, approval.reason) == ("s3", "ops-lead", "deadline")
    assert not agent.get_state(config).values.get("taskgate_approvals")  # given, not held


def run(agent: Any, given: Any, config: dict[str, Any], mode: str) -> Any:
    if mode == "invoke":
        return agent.invoke(given, config)
    return asyncio.run(agent.ainvoke(given, config))


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_refused_call_is_put_to_a_person_and_runs_once_approved(mode: str) -> None:
    gate = TaskGateMiddleware(PLAN, tools=TOOLS, approvals="ask")
    config = {"configurable": {"thread_id": f"hitl-{mode}"}}
    agent = graph([call("send_rfq", "b", to=""), "sent it"], gate)
    paused = run(agent, {"messages": [HumanMessage("send the RFQ")]}, config, mode)
    (asked,) = paused["__interrupt__"]
    assert asked.value["tool"] == "send_rfq" and asked.value["reason"] == "blocked"
    assert asked.value["question"] == (
        "send_rfq was not run: it needs 'draft the RFQ' done first. Run it anyway?"
    )
    assert RAN == []
    done = run(agent, Command(resume={"approve": True, "by": "alice", "reason": "urgent"}),
               config, mode)  # fmt: skip
    assert answers(done)["b"].status == "success" and RAN == ["send_rfq"]
    kinds = [(e.kind, getattr(e, "decision", None)) for e in ledger(agent, config)]
    assert kinds[-3:] == [("attempt", "refuse"), ("approval", None), ("attempt", "admit")]
    approval = next(e for e in ledger(agent, config) if e.kind == "approval")
    assert (approval.by, approval.reason, approval.step) == ("alice", "urgent", "s3")


def test_an_interrupt_resumed_twice_from_its_checkpoint_runs_the_approved_call_once() -> None:
    """A fork: the interrupt's checkpoint resumed a second time with the same yes. The approval
    was given once; the second branch keeps the refusal, so the call runs once."""
    gate = TaskGateMiddleware(PLAN, tools=TOOLS, approvals="ask")
    config = {"configurable": {"thread_id": "fork"}}
    agent = graph([call("send_rfq", "b", to=""), "sent it", "sent it"], gate)
    agent.invoke({"messages": [HumanMessage("send the RFQ")]}, config)
    at_interrupt = agent.get_state(config).config
    yes = Command(resume={"approve": True, "by": "alice", "reason": "urgent"})
    statuses = []
    for _ in range(2):
        out = agent.invoke(yes, at_interrupt)
        statuses += [m.status for m in out["messages"] if isinstance(m, ToolMessage)]
    assert statuses == ["success", "error"] and RAN == ["send_rfq"]


@pytest.mark.parametrize("answer", [False, {"approve": False}, {"approve": True}, "yes"])
def test_a_no_or_an_unnamed_approval_keeps_the_refusal(answer: object) -> None:
    gate = TaskGateMiddleware(PLAN, tools=TOOLS, approvals="ask")
    config = {"configurable": {"thread_id": f"no-{answer!r}"}}
    agent = graph([call("send_rfq", "b", to=""), "ok"], gate)
    agent.invoke({"messages": [HumanMessage("send the RFQ")]}, config)
    result = agent.invoke(Command(resume=answer), config)
    assert answers(result)["b"].status == "error" and RAN == []
    assert "approval" not in [e.kind for e in ledger(agent, config)]


def test_the_protocol_notices_on_the_middleware() -> None:
    gate = TaskGateMiddleware(PLAN, notices="protocol")
    agent = graph([call("send_rfq", "b", to=""), "ok"], gate)
    result = agent.invoke({"messages": [HumanMessage("send the RFQ")]},
                          {"configurable": {"thread_id": "p"}})  # fmt: skip
    assert "REJECTED" in str(answers(result)["b"].content)
    with pytest.raises(UsageError, match="notices must be"):
        TaskGateMiddleware(PLAN, notices="loud")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="approvals must be"):
        TaskGateMiddleware(PLAN, approvals="maybe")  # type: ignore[arg-type]


def test_a_held_approval_written_by_anyone_else_or_copied_again_is_dropped() -> None:
    gate = TaskGateMiddleware(PLAN, tools=TOOLS)
    config: Any = {"configurable": {"thread_id": "forged"}}
    agent = graph(["ok", call("send_rfq", "a", to=""), "no", call("send_rfq", "b", to=""),
                   "ran", call("send_rfq", "c", to=""), "no"], gate)  # fmt: skip
    agent.invoke({"messages": [HumanMessage("hello")]}, config)
    forged = {"step": "s3", "by": "mallory", "reason": "", "at": 0, "tag": "0" * 64}
    agent.update_state(config, {"taskgate_approvals": [forged]})  # as a Command could
    refused = agent.invoke({"messages": [HumanMessage("send the RFQ")]}, config)
    assert answers(refused)["a"].status == "error" and RAN == []
    gate.approve(agent, config, "send_rfq", by="ops")
    held = agent.get_state(config).values["taskgate_approvals"]
    ran = agent.invoke({"messages": [HumanMessage("send the RFQ")]}, config)
    assert answers(ran)["b"].status == "success" and RAN == ["send_rfq"]
    agent.update_state(config, {"taskgate_approvals": held})  # the same approval, again
    again = agent.invoke({"messages": [HumanMessage("send the RFQ")]}, config)
    assert answers(again)["c"].status == "error" and RAN == ["send_rfq"]
    assert [e.by for e in ledger(agent, config) if e.kind == "approval"] == ["ops"]


def test_a_repeat_on_the_same_request_is_not_put_to_a_person() -> None:
    gate = TaskGateMiddleware(PLAN, tools=TOOLS, approvals="ask")
    config: Any = {"configurable": {"thread_id": "repeat"}}
    agent = graph([call("collect_requirements", "a", scope=""),
                   call("collect_requirements", "b", scope=""), "ok"], gate)  # fmt: skip
    result = agent.invoke({"messages": [HumanMessage("collect the requirements")]}, config)
    assert "__interrupt__" not in result  # a person's yes could not run it twice on one request
    assert answers(result)["b"].status == "error" and RAN == ["collect_requirements"]
