"""The gate for ordinary agents: refusals of native tool calls in plain words, and revisions
(cancel, rewire, relax) in the public API, refused when they would strand a step."""

from __future__ import annotations

import re

import pytest

from plans import tool_chain
from taskgate import (
    Plan,
    PlanError,
    Policy,
    Revision,
    Status,
    TaskgateError,
    ToolGate,
    ToolRefused,
)
from taskgate.core.ledger import RevisionEntry

#: the paper's protocol vocabulary, which no plain-words notice may use
PROTOCOL = re.compile(r"ACTION|BOOKING|booked|booking|work order|#W\d|REJECTED", re.I)


def refusal(gate: ToolGate, tool: str) -> str:
    with pytest.raises(ToolRefused) as caught:
        gate.call(tool, lambda: None)
    return caught.value.notice


def test_refusals_name_the_tool_and_the_step_in_plain_words() -> None:
    gate = ToolGate(tool_chain(3))
    gate.open_request("s2")
    blocked = refusal(gate, "draft_rfq")
    assert blocked.startswith(
        "draft_rfq was not run: it needs 'collect the requirements' done first."
    )
    gate.open_request("s1")
    gate.call("collect_requirements", lambda: "ok")
    done = refusal(gate, "collect_requirements")
    assert done.startswith(
        "collect_requirements was not run: 'collect the requirements' is already done"
    )
    gate.cancel("s3")
    gate.open_request("s3")
    assert refusal(gate, "send_rfq").startswith(
        "send_rfq was not run: 'send the RFQ' was cancelled."
    )
    assert (
        refusal(gate, "search_web") == "search_web was not run: it is not one of this task's tools."
    )
    for notice in (blocked, done):
        assert PROTOCOL.search(notice) is None, notice


def test_request_bound_refusals_and_calls_before_any_request_read_plainly() -> None:
    gate = ToolGate(tool_chain(2), Policy.REQUEST_BOUND)
    assert refusal(gate, "collect_requirements") == (
        "collect_requirements was not run: there is no request from the user to act on yet."
    )
    gate.open_request("s2")
    assert refusal(gate, "collect_requirements") == (
        "collect_requirements was not run: the user has not asked for 'collect the requirements' now."
    )


def test_the_protocol_notices_stay_available() -> None:
    gate = ToolGate(tool_chain(2), notices="protocol")
    gate.open_request("s2")
    assert refusal(gate, "draft_rfq").startswith("[BOOKING REJECTED]")
    with pytest.raises(TaskgateError, match="notices must be"):
        ToolGate(tool_chain(2), notices="loud")  # type: ignore[arg-type]


def test_a_cancel_that_would_strand_a_step_is_refused_naming_it_and_changes_nothing() -> None:
    gate = ToolGate(tool_chain(3))
    before = len(gate.ledger)
    with pytest.raises(PlanError) as caught:
        gate.cancel("s2")
    assert str(caught.value) == (
        "cancelling s2 would leave s3 waiting on it forever: rewire it in the same revision, "
        "or cancel it too"
    )
    with pytest.raises(PlanError, match="leave s3"):
        gate.revise(Revision(cancel="s2"))
    assert len(gate.ledger) == before and gate.machine.status("s2") is Status.BLOCKED


def test_a_cancel_with_its_rewire_or_inherited_prerequisites_applies_as_one_entry() -> None:
    gate = ToolGate(tool_chain(3))
    revision = gate.cancel("s2", inherit=True)
    assert revision == Revision(cancel="s2", rewires={"s3": ("s1",)})
    assert isinstance(gate.ledger[-1], RevisionEntry) and gate.ledger[-1].revision == revision
    assert gate.machine.graph.prerequisites("s3") == frozenset({"s1"})
    other = ToolGate(tool_chain(3))
    other.cancel("s2", rewire={"s3": []})
    assert other.machine.status("s3") is Status.TODO


def test_a_finished_dependent_is_not_stranded() -> None:
    gate = ToolGate(tool_chain(2))
    gate.open_request("s1")
    gate.call("collect_requirements", lambda: "ok")
    gate.open_request("s2")
    gate.call("draft_rfq", lambda: "ok")
    gate.cancel("s1")  # s2 is done: nothing waits on s1
    assert gate.machine.status("s1") is Status.CANCELLED


def test_rewire_and_relax_are_one_entry_each_and_bad_ones_change_nothing() -> None:
    gate = ToolGate(tool_chain(3))
    gate.relax("s3", "s2")
    assert gate.machine.graph.prerequisites("s3") == frozenset()
    gate.rewire("s3", ["s1"])
    assert gate.machine.graph.prerequisites("s3") == frozenset({"s1"})
    before = len(gate.ledger)
    with pytest.raises(TaskgateError, match="s9"):
        gate.cancel("s9")
    with pytest.raises(TaskgateError, match="cycle"):
        gate.rewire("s1", ["s3"])
    assert len(gate.ledger) == before


def test_the_plan_needs_no_step_ids_of_the_papers_shape() -> None:
    plan = Plan.model_validate({"binding": "tool", "steps": {
        "requirements": {"tool": "collect_requirements", "text": "collect the requirements"},
        "order": {"tool": "place_order", "text": "place the order", "deps": ["requirements"]},
    }})  # fmt: skip
    gate = ToolGate(plan)
    gate.open_request("order")
    assert refusal(gate, "place_order").startswith(
        "place_order was not run: it needs 'collect the requirements' done first."
    )


def test_nothing_runs_on_a_message_that_asked_for_no_step() -> None:
    gate = ToolGate(tool_chain(2))
    gate.open_request(None)  # "thanks!": the matcher found no step in it
    assert refusal(gate, "collect_requirements") == (
        "collect_requirements was not run: the user's last message asks for none of the task's "
        "steps."
    )
    papers = ToolGate(tool_chain(2), unrequested="run")  # the paper's state-bound enforcement
    papers.open_request(None)
    assert papers.call("collect_requirements", lambda: "ran") == "ran"
    with pytest.raises(TaskgateError, match="unrequested must be"):
        ToolGate(tool_chain(2), unrequested="sometimes")  # type: ignore[arg-type]


def test_the_middleware_runs_nothing_on_a_thanks_and_says_why() -> None:
    pytest.importorskip("langgraph", reason="the LangGraph middleware needs the extra")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from taskgate.integrations.langgraph import ScriptedChatModel, TaskGateMiddleware

    ran: list[str] = []

    @tool
    def collect_requirements(scope: str) -> str:
        """Collect the requirements."""
        ran.append(scope)
        return "collected"

    call = {
        "name": "collect_requirements",
        "args": {"scope": "all"},
        "id": "c1",
        "type": "tool_call",
    }
    model = ScriptedChatModel([AIMessage("", tool_calls=[call]), "You're welcome."])
    agent = create_agent(
        model, [collect_requirements], middleware=[TaskGateMiddleware(tool_chain(2))]
    )
    out = agent.invoke({"messages": [("user", "thanks!")]}, {"configurable": {"thread_id": "t"}})
    answer = out["messages"][2]
    assert ran == [] and answer.status == "error"
    assert str(answer.content).startswith(
        "collect_requirements was not run: the user's last message asks for none of the task's"
    )
