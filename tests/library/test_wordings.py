"""Steps with no text of their own are matched by their tools' descriptions, on every surface:
what an ordinary agent already has makes its users' ordinary requests resolvable."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from taskgate import FakeServer, Plan, Reply, ToolGate, script
from taskgate.llm.fake import ToolCall
from taskgate.matching.wordings import worded, wording, wordings

PLAN = Plan.model_validate({"binding": "tool", "steps": {
    "s1": {"tool": "collect_requirements"},
    "s2": {"tool": "send_rfq", "deps": ["s1"]},
    "s3": {"tool": "place_order", "text": "place the order", "deps": ["s2"]},
}})  # fmt: skip
DESCRIBED = [
    ("collect_requirements", "Collect the buyer requirements: items, quantities, budget."),
    ("send_rfq", "Ask the vendors for quotes by sending them the request for quotation. Slow."),
    ("place_order", "Place the purchase order with the chosen vendor."),
]


def test_a_description_words_only_the_steps_without_text() -> None:
    got = wordings(PLAN, DESCRIBED)
    assert got == {
        "s1": "Collect the buyer requirements: items, quantities, budget",
        "s2": "Ask the vendors for quotes by sending them the request for quotation",
    }  # s3 has its own text; a description's first sentence only
    assert worded(PLAN, got).steps["s3"].text == "place the order"
    assert wording("  Do   it.\nThen more.") == "Do it"


def test_the_tool_gate_matches_an_ordinary_request_by_the_tools_description() -> None:
    gate = ToolGate(PLAN)
    assert gate.user_message("get quotes from a few vendors").request.step is None  # type: ignore[union-attr]
    gate.wordings = wordings(PLAN, DESCRIBED)
    assert gate.user_message("get quotes from a few vendors").request.step == "s2"  # type: ignore[union-attr]


def test_the_middleware_words_steps_by_the_agents_tools() -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain.agents import create_agent
    from langchain_core.tools import StructuredTool

    from taskgate.integrations.langgraph import LEDGER_KEY, ScriptedChatModel, TaskGateMiddleware

    tools = [StructuredTool.from_function(lambda note="": "ok", name=n, description=d)
             for n, d in DESCRIBED]  # fmt: skip
    gate = TaskGateMiddleware(PLAN, tools=tools)
    model = ScriptedChatModel(["ok"])
    agent = create_agent(model, tools, middleware=[gate])
    result = agent.invoke({"messages": [("user", "note the budget and quantities")]},
                          {"configurable": {"thread_id": "w"}})  # fmt: skip
    request = [r for r in result[LEDGER_KEY] if r.get("kind") == "request"][-1]
    assert request["step"] == "s1"


def test_the_proxy_words_steps_by_the_requests_tools() -> None:
    from proxy_helpers import post
    from taskgate.proxy import ProxyConfig
    from taskgate.proxy.testing import ProxyServer

    tools: list[dict[str, Any]] = [
        {"type": "function", "function": {"name": n, "description": d, "parameters": {}}}
        for n, d in DESCRIBED
    ]
    call = Reply("", tool_calls=(ToolCall("collect_requirements", {}, id="c1"),))
    messages = [{"role": "system", "content": "You buy equipment."},
                {"role": "user", "content": "note the budget and quantities"}]  # fmt: skip
    with FakeServer(script([call])) as upstream, httpx.Client() as client, ProxyServer(
        ProxyConfig(upstream.base_url, plan=PLAN)
    ) as proxy:  # fmt: skip
        reply = post(client, proxy.base_url, messages, tools=tools)
    calls = reply["choices"][0]["message"].get("tool_calls") or []
    assert [c["function"]["name"] for c in calls] == ["collect_requirements"]  # resolved: it runs
