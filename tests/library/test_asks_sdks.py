"""A held call in the agent SDKs, through each SDK's own tool approvals (``confirm="approval"``):
the OpenAI Agents SDK's ``needs_approval`` interruptions (``state.approve`` / ``state.reject``)
and PydanticAI's deferred tool approvals (``DeferredToolResults``), on their real runners with
scripted models. What runs is exactly the call the person approved; a rejection runs nothing,
and a later "yes" in the conversation is not read as its answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from taskgate import Plan, ToolGate
from taskgate.core.ledger import AnswerEntry, AskEntry
from taskgate.errors import UsageError

#: paying asks the person every time, however clear the words
PLAN = Plan.model_validate({"binding": "tool", "steps": {
    "pay": {"tool": "pay_invoice", "text": "pay the invoice", "confirm": "always"}}})  # fmt: skip
#: the same, repeatable: the state alone would let a replayed approval run it again
AGAIN = Plan.model_validate({"binding": "tool", "steps": {"pay": {
    "tool": "pay_invoice", "text": "pay the invoice", "confirm": "always",
    "repeatable": True}}})  # fmt: skip
ASKED = "pay the invoice INV-7 for 120"
QUESTION = "Shall I pay the invoice (invoice: INV-7; amount: 120)? Yes or no?"
RAN: list[tuple[str, int]] = []


def pay_invoice(invoice: str, amount: int) -> str:
    """Pay an invoice."""
    RAN.append((invoice, amount))
    return "paid"


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def answers(gate: ToolGate) -> list[tuple[str, str]]:
    return [(e.decision, e.channel) for e in gate.ledger if isinstance(e, AnswerEntry)]


# -- the OpenAI Agents SDK ------------------------------------------------------------------------
def agents_run(gate: ToolGate, monkeypatch: pytest.MonkeyPatch, confirm: str = "approval") -> Any:
    """The agent's first run on ``ASKED``: the model calls pay_invoice once, then says "done"."""
    pytest.importorskip("agents", reason="needs the openai-agents extra")
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    from agents import Agent, Runner, function_tool
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from taskgate.integrations.openai_agents import gated

    model = ScriptedModel([
        [function_call("pay_invoice", {"invoice": "INV-7", "amount": 120}, call_id="c1")],
        *[ModelStep.respond(lambda call: [assistant_message("done")])] * 2,  # a resume again
    ])  # fmt: skip
    agent = gated(Agent(name="payer", tools=[function_tool(pay_invoice)], model=model), gate,
                  confirm=confirm)  # type: ignore[arg-type]  # fmt: skip
    gate.user_message(ASKED)
    return agent, asyncio.run(Runner.run(agent, ASKED)), Runner


def test_agents_sdk_approval_runs_exactly_the_call_approved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = ToolGate(PLAN)
    agent, paused, runner = agents_run(gate, monkeypatch)
    from taskgate.integrations.openai_agents import CHANNEL, question

    (item,) = paused.interruptions
    assert RAN == [] and question(gate, item) == QUESTION
    asked = [e for e in gate.ledger if isinstance(e, AskEntry)]
    assert [a.channel for a in asked] == [CHANNEL]
    state = paused.to_state()
    state.approve(item)
    done = asyncio.run(runner.run(agent, state))
    assert RAN == [("INV-7", 120)] and done.final_output == "done"
    assert answers(gate) == [("approve", CHANNEL)] and gate.machine.status("pay").value == "DONE"


def test_agents_sdk_rejection_runs_nothing_and_a_later_yes_is_not_its_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = ToolGate(PLAN)
    agent, paused, runner = agents_run(gate, monkeypatch)
    state = paused.to_state()
    state.reject(paused.interruptions[0])
    asyncio.run(runner.run(agent, state))
    assert RAN == [] and gate.waiting() and answers(gate) == []
    gate.user_message("Yes.")  # to whatever the agent said next: the ask is dropped, unread
    assert gate.waiting() == [] and [d for d, _ in answers(gate)] == ["dropped"]
    assert not gate.begin("pay_invoice", arguments={"invoice": "INV-7", "amount": 120}).admitted


def test_agents_sdk_run_state_resumed_twice_runs_the_approved_call_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = ToolGate(AGAIN)
    agent, paused, runner = agents_run(gate, monkeypatch)
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    saved = state.to_json()
    asyncio.run(runner.run(agent, state))
    assert RAN == [("INV-7", 120)]
    from agents import RunState

    gate.user_message(ASKED)  # asked for again: a new call is asked about anew
    again = asyncio.run(RunState.from_json(agent, saved))  # not with the first call's approval
    asyncio.run(runner.run(agent, again))
    assert RAN == [("INV-7", 120)]


def test_agents_sdk_without_approvals_asks_back_through_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = ToolGate(PLAN)
    _, result, _ = agents_run(gate, monkeypatch, confirm="ask-back")
    outputs = [str(i.output) for i in result.new_items if i.type == "tool_call_output_item"]
    assert not result.interruptions and RAN == [] and any(QUESTION in o for o in outputs)


def test_agents_sdk_confirm_is_checked() -> None:
    pytest.importorskip("agents", reason="needs the openai-agents extra")
    from taskgate.integrations.openai_agents import gated

    with pytest.raises(UsageError, match="confirm must be"):
        gated([], ToolGate(PLAN), confirm="popup")  # type: ignore[arg-type]


# -- PydanticAI -----------------------------------------------------------------------------------
def pydantic_agent(gate: ToolGate, confirm: str = "approval") -> Any:
    pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from taskgate.integrations.pydantic_ai import TaskGate

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        results = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if results:
            return ModelResponse(parts=[TextPart(" | ".join(p.model_response_str()
                                                           for p in results))])  # fmt: skip
        call = ToolCallPart("pay_invoice", {"invoice": "INV-7", "amount": 120}, tool_call_id="c1")
        return ModelResponse(parts=[call])

    gate.user_message(ASKED)
    return Agent(FunctionModel(model), tools=[pay_invoice], output_type=[str, DeferredToolRequests],
                 capabilities=[TaskGate(gate, confirm=confirm)])  # type: ignore[arg-type]  # fmt: skip


@pytest.mark.parametrize(
    ("approval", "ran", "decision"),
    [(True, [("INV-7", 120)], "approve"),
     ("edit", [("INV-7", 100)], "edit"),
     (False, [], None)],
)  # fmt: skip
def test_pydantic_ai_approval_runs_exactly_the_call_approved(
    approval: Any, ran: list[tuple[str, int]], decision: str | None
) -> None:
    gate = ToolGate(PLAN)
    agent = pydantic_agent(gate)
    from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved

    from taskgate.integrations.pydantic_ai import CHANNEL

    paused = agent.run_sync(ASKED)
    assert isinstance(paused.output, DeferredToolRequests) and RAN == []
    assert paused.output.metadata["c1"]["question"] == QUESTION
    given = ToolApproved(override_args={"invoice": "INV-7", "amount": 100}) if approval == "edit" \
        else approval  # fmt: skip
    agent.run_sync(message_history=paused.all_messages(),
                   deferred_tool_results=DeferredToolResults(approvals={"c1": given}))  # fmt: skip
    assert ran == RAN
    assert answers(gate) == ([(decision, CHANNEL)] if decision else [])


def test_pydantic_ai_deferred_results_given_twice_run_the_approved_call_once() -> None:
    gate = ToolGate(AGAIN)
    agent = pydantic_agent(gate)
    from pydantic_ai import DeferredToolResults

    paused = agent.run_sync(ASKED)
    results = DeferredToolResults(approvals={"c1": True})
    agent.run_sync(message_history=paused.all_messages(), deferred_tool_results=results)
    assert RAN == [("INV-7", 120)]
    gate.user_message(ASKED)  # asked for again: a new call is asked about anew, not with these
    agent.run_sync(message_history=paused.all_messages(), deferred_tool_results=results)
    assert RAN == [("INV-7", 120)]


def test_pydantic_ai_without_approvals_asks_back_through_the_model() -> None:
    gate = ToolGate(PLAN)
    result = pydantic_agent(gate, confirm="ask-back").run_sync(ASKED)
    assert RAN == [] and QUESTION in str(result.output)


def test_pydantic_ai_confirm_is_checked() -> None:
    pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")
    from taskgate.integrations.pydantic_ai import TaskGate

    with pytest.raises(UsageError, match="confirm must be"):
        TaskGate(ToolGate(PLAN), confirm="popup")  # type: ignore[arg-type]


def test_attack_an_sdk_approval_that_comes_late_runs_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Approved after the conversation moved on (the user wrote again, which drops the ask): the
    approval answers no question still waiting, on either SDK."""
    gate = ToolGate(PLAN)
    agent, paused, runner = agents_run(gate, monkeypatch)
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    gate.user_message("What's the weather like?")
    asyncio.run(runner.run(agent, state))
    assert RAN == []
    gate = ToolGate(PLAN)
    pydantic = pydantic_agent(gate)
    from pydantic_ai import DeferredToolResults

    stopped = pydantic.run_sync(ASKED)
    gate.user_message("What's the weather like?")
    pydantic.run_sync(message_history=stopped.all_messages(),
                      deferred_tool_results=DeferredToolResults(approvals={"c1": True}))  # fmt: skip
    assert RAN == []


def test_attack_a_pydantic_ai_approval_given_to_another_conversation_runs_nothing() -> None:
    first, second = ToolGate(PLAN), ToolGate(PLAN)
    stopped = pydantic_agent(first).run_sync(ASKED)
    from pydantic_ai import DeferredToolResults

    other = pydantic_agent(second)  # another conversation's gate, given the first's approval
    second.user_message("Hi, what can you do?")
    other.run_sync(message_history=stopped.all_messages(),
                   deferred_tool_results=DeferredToolResults(approvals={"c1": True}))  # fmt: skip
    assert RAN == [] and len(first.waiting()) == 1
