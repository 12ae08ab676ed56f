"""The gate in the agent SDKs beyond LangGraph, on their real runners with scripted models: the
OpenAI Agents SDK (its ``ScriptedModel``) and PydanticAI (a ``FunctionModel``). A blocked call
never runs and the model reads why; a failed call books nothing and frees its step; a call that
succeeded is the receipt; a dependent called in the same turn as its running prerequisite is
refused."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from taskgate import Plan, Status, ToolGate

PLAN = Plan.model_validate({"binding": "tool", "steps": {
    "s1": {"tool": "collect_requirements", "text": "collect the requirements"},
    "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"]},
}})  # fmt: skip
RAN: list[str] = []
FAIL: set[str] = set()


def collect_requirements(project: str) -> str:
    """Collect the requirements of a project."""
    RAN.append("collect_requirements")
    if "collect_requirements" in FAIL:
        FAIL.clear()
        raise RuntimeError("the requirements database is down")
    return f"requirements for {project}: 3 items"


async def draft_rfq(project: str) -> str:
    """Draft the RFQ for a project."""
    RAN.append("draft_rfq")
    return f"RFQ for {project} drafted"


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()
    FAIL.clear()


Turn = Callable[[ToolGate, str, tuple[str, ...]], list[str]]


def scenario(turn: Turn) -> None:
    """The same five turns on each SDK; ``turn`` runs one and returns what the model read."""
    RAN.clear()
    gate = ToolGate(PLAN)
    seen = turn(gate, "draft the RFQ", ("draft_rfq",))
    assert RAN == [] and gate.machine.status("s2") is Status.BLOCKED
    assert any("draft_rfq was not run: it needs 'collect the requirements' done first" in s
               for s in seen), seen  # fmt: skip
    FAIL.add("collect_requirements")
    RAN.clear()
    turn(gate, "collect the requirements", ("collect_requirements",))
    assert RAN == ["collect_requirements"] and gate.machine.status("s1") is not Status.DONE
    RAN.clear()
    turn(gate, "collect the requirements", ("collect_requirements",))
    assert RAN == ["collect_requirements"] and gate.machine.status("s1") is Status.DONE
    RAN.clear()
    turn(gate, "draft the RFQ", ("draft_rfq",))
    assert RAN == ["draft_rfq"] and gate.machine.status("s2") is Status.DONE
    fresh = ToolGate(PLAN)  # both in one model turn: the draft waits for the requirements' receipt
    RAN.clear()
    turn(fresh, "collect the requirements", ("collect_requirements", "draft_rfq"))
    assert "draft_rfq" not in RAN and fresh.machine.status("s1") is Status.DONE
    assert fresh.machine.status("s2") is not Status.DONE


def test_the_openai_agents_sdk_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("agents", reason="needs the openai-agents extra")
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    from agents import Agent, Runner, function_tool
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from taskgate.integrations.openai_agents import gated

    base = Agent(name="buyer", instructions="You buy equipment for ACME.",
                 tools=[function_tool(collect_requirements), function_tool(draft_rfq)])  # fmt: skip

    def echo(call: Any) -> list[Any]:
        outs = [i["output"] for i in call.input
                if isinstance(i, dict) and i.get("type") == "function_call_output"]  # fmt: skip
        return [assistant_message(" | ".join(map(str, outs)))]

    def turn(gate: ToolGate, message: str, tools: tuple[str, ...]) -> list[str]:
        gate.user_message(message)
        model = ScriptedModel([
            [function_call(n, {"project": ""}, call_id=f"c{i}") for i, n in enumerate(tools)],
            ModelStep.respond(echo),
        ])  # fmt: skip
        result = asyncio.run(Runner.run(gated(base.clone(model=model), gate), message))
        return [str(it.output) for it in result.new_items if it.type == "tool_call_output_item"]

    scenario(turn)


def test_the_pydantic_ai_adapter_as_a_capability_and_as_a_toolset() -> None:
    pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")
    from pydantic_ai import Agent, FunctionToolset
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from taskgate.integrations.pydantic_ai import TaskGate, TaskGateToolset

    def scripted(tools: tuple[str, ...]) -> FunctionModel:
        def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
            results = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
            if not results:
                return ModelResponse(parts=[ToolCallPart(n, {"project": ""}, tool_call_id=f"c{i}")
                                            for i, n in enumerate(tools)])  # fmt: skip
            return ModelResponse(parts=[TextPart(" | ".join(p.model_response_str()
                                                           for p in results))])  # fmt: skip

        return FunctionModel(model)

    for make in (
        lambda m, g: Agent(m, tools=[collect_requirements, draft_rfq], capabilities=[TaskGate(g)]),
        lambda m, g: Agent(m, toolsets=[
            TaskGateToolset(FunctionToolset([collect_requirements, draft_rfq]), g)]),
    ):  # fmt: skip

        def turn(
            gate: ToolGate, message: str, tools: tuple[str, ...], make: Any = make
        ) -> list[str]:
            gate.user_message(message)
            try:
                result = asyncio.run(make(scripted(tools), gate).run(message))
            except RuntimeError:  # PydanticAI ends the run on a tool's exception
                return []
            return [str(result.output)]

        scenario(turn)
