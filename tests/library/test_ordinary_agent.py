"""An ordinary LangGraph agent (its own system prompt, native tool calls through ``ChatOpenAI`` on
a real HTTP server, no brief, no work orders) gated three ways: ``ToolGate`` around its tools, the
middleware, and the proxy in plan mode. The same eight user turns do the same thing on each:
a blocked call, a finished step called again, an authorized redo, a cancelled step, an
unrequested side effect and an approved override; the receipts ledger says why each time.

The lines each surface adds to the agent's code are marked ``# gate:``; the issue allows about
ten per surface.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import count
from typing import Any

import httpx
import pytest

pytest.importorskip("langgraph", reason="needs the langgraph extra")
pytest.importorskip("langchain_openai", reason="needs langchain-openai (the dev extra)")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from proxy_helpers import repeating
from taskgate import FakeServer, Plan, Reply, ToolGate
from taskgate.llm.fake import ToolCall
from taskgate.proxy import ProxyConfig
from taskgate.proxy.testing import ProxyServer

SYSTEM = (
    "You are a procurement assistant for ACME Corp. Help the user buy equipment: collect the "
    "requirements, draft and send the RFQ, select the vendor and place the order, using the tools."
)
PLAN = Plan.model_validate({"binding": "tool", "steps": {
    "s1": {"tool": "collect_requirements", "text": "collect the requirements"},
    "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"]},
    "s3": {"tool": "send_rfq", "text": "send the RFQ", "deps": ["s2"]},
    "s4": {"tool": "select_vendor", "text": "select the vendor", "deps": ["s3"]},
    "s5": {"tool": "place_order", "text": "place the order", "deps": ["s4"]},
}})  # fmt: skip

#: the user's turns, and the tool the (obedient, careless) model calls on each
TURNS = [
    ("Please place the order for 40 laptops.", "place_order"),  # blocked
    ("First collect the requirements: 40 laptops.", "collect_requirements"),  # runs
    ("Collect the requirements.", "collect_requirements"),  # done already: refused
    ("Redo the requirements, the count changed to 50.", "collect_requirements"),  # redo: runs
    ("Draft the RFQ.", "draft_rfq"),  # runs
    ("Send the RFQ.", "send_rfq"),  # cancelled by the operator before this turn: refused
    ("Thanks!", "select_vendor"),  # asked for nothing: the side effect is refused
    ("Place the order now, it is approved.", "place_order"),  # approved: runs though blocked
]
CANCEL_BEFORE, APPROVE_BEFORE = 5, 7
RAN_EXPECTED = ["collect_requirements", "collect_requirements", "draft_rfq", "place_order"]
WHY_EXPECTED = ["blocked", "already-done", "cancelled", "no-resolved-step"]

RAN: list[str] = []


def _tool(name: str) -> Callable[[str], str]:
    def run(note: str) -> str:
        RAN.append(name)
        return f"{name}: done ({note})"

    run.__name__ = name
    run.__doc__ = f"{name.replace('_', ' ').capitalize()}."
    return run


FUNCTIONS = [_tool(n) for n in (s.tool for s in PLAN.steps.values())]


def responder() -> Callable[[dict[str, Any]], Reply]:
    """The model: calls the turn's tool once per user message, then says it is done."""
    ids = count()
    tool_for = dict(TURNS)

    def respond(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if messages[-1]["role"] == "tool":
            return Reply("Done.")
        last = next(m for m in reversed(messages) if m["role"] == "user")
        name = tool_for[str(last["content"]).strip()]
        return Reply("", tool_calls=(ToolCall(name, {"note": ""}, id=f"call_{next(ids)}"),))

    return respond


@pytest.fixture
def upstream() -> Iterator[FakeServer]:
    RAN.clear()
    with FakeServer(repeating(responder())) as server:
        yield server


def chat_model(base_url: str) -> ChatOpenAI:
    return ChatOpenAI(base_url=base_url, api_key="sk-test", model="fake", max_retries=0)  # type: ignore[arg-type]


def refusal_reasons(entries: list[Any]) -> list[str]:
    rows = [e if isinstance(e, dict) else e.model_dump(mode="json") for e in entries]
    return [r["reason"] for r in rows if r.get("kind") == "attempt" and r["decision"] == "refuse"]


def approvals(entries: list[Any]) -> list[tuple[str, str]]:
    rows = [e if isinstance(e, dict) else e.model_dump(mode="json") for e in entries]
    return [(r["step"], r["by"]) for r in rows if r.get("kind") == "approval"]


def test_tool_gate_around_the_agents_tools(upstream: FakeServer) -> None:
    gate = ToolGate(PLAN)  # gate:
    tools = [tool(gate.guard(f)) for f in FUNCTIONS]  # gate:
    agent = create_agent(chat_model(upstream.base_url), tools, system_prompt=SYSTEM)
    history: list[Any] = []
    for i, (text, _) in enumerate(TURNS):
        if i == CANCEL_BEFORE:
            gate.cancel("s3", inherit=True)  # gate: the user said "we won't send the RFQ"
        gate.user_message(text)  # gate:
        if i == APPROVE_BEFORE:
            gate.approve("place_order", by="ops-lead", reason="pre-approved vendor")  # gate:
        history = agent.invoke({"messages": [*history, HumanMessage(text)]})["messages"]
    assert RAN == RAN_EXPECTED
    assert refusal_reasons(list(gate.ledger)) == WHY_EXPECTED
    assert approvals(list(gate.ledger)) == [("s5", "ops-lead")]
    refused = [m for m in history if getattr(m, "name", None) == "send_rfq"]
    assert str(refused[-1].content).startswith(
        "send_rfq was not run: 'send the RFQ' was cancelled."
    )


def test_the_langgraph_middleware(upstream: FakeServer) -> None:
    from taskgate.integrations.langgraph import TaskGateMiddleware, state_entries

    tools = [tool(f) for f in FUNCTIONS]
    middleware = TaskGateMiddleware(PLAN, tools=tools)  # gate:
    agent = create_agent(chat_model(upstream.base_url), tools, system_prompt=SYSTEM,
                         middleware=[middleware],  # gate:
                         checkpointer=InMemorySaver())  # fmt: skip
    config: Any = {"configurable": {"thread_id": "procurement-1"}}
    for i, (text, _) in enumerate(TURNS):
        if i == CANCEL_BEFORE:
            middleware.cancel(agent, config, "s3", inherit=True)  # gate:
        if i == APPROVE_BEFORE:
            middleware.approve(agent, config, "place_order", by="ops-lead")  # gate:
        agent.invoke({"messages": [HumanMessage(text)]}, config)
    assert RAN == RAN_EXPECTED
    entries = state_entries(agent.get_state(config).values["taskgate_ledger"], "procurement-1")
    assert refusal_reasons(entries) == WHY_EXPECTED
    assert approvals(entries) == [("s5", "ops-lead")]


def test_the_proxy_in_plan_mode(upstream: FakeServer) -> None:
    token = {"Authorization": "Bearer ops"}
    config = ProxyConfig(upstream.base_url, plan=PLAN, status_token="ops")  # gate: (the proxy's)
    tools = [tool(f) for f in FUNCTIONS]
    with ProxyServer(config) as proxy, httpx.Client() as ops:
        model = chat_model(proxy.base_url)  # gate: the base URL is the proxy's
        agent = create_agent(model, tools, system_prompt=SYSTEM, checkpointer=InMemorySaver())
        thread: Any = {"configurable": {"thread_id": "procurement-1"}}
        key = ""
        for i, (text, _) in enumerate(TURNS):
            if i == CANCEL_BEFORE:  # the operator's endpoint
                body = {"cancel": "s3", "inherit": True}
                ops.post(f"{proxy.url}/taskgate/conversations/{key}/revisions", json=body,
                         headers=token).raise_for_status()  # fmt: skip
            if i == APPROVE_BEFORE:
                body2 = {"step": "place_order", "by": "ops-lead"}
                ops.post(f"{proxy.url}/taskgate/conversations/{key}/approvals", json=body2,
                         headers=token).raise_for_status()  # fmt: skip
            result = agent.invoke({"messages": [HumanMessage(text)]}, thread)
            if i == 0:
                listed = ops.get(f"{proxy.url}/taskgate/conversations", headers=token).json()
                key = listed["conversations"][0]["id"]
                last = result["messages"][-1]
                assert isinstance(last, AIMessage) and str(last.content).startswith(
                    "place_order was not run: it needs 'select the vendor' done first."
                )
        shown = ops.get(f"{proxy.url}/taskgate/conversations/{key}", headers=token).json()
    assert RAN == RAN_EXPECTED
    assert refusal_reasons(shown["ledger"]) == WHY_EXPECTED
    assert approvals(shown["ledger"]) == [("s5", "ops-lead")]
    sent = upstream.requests
    assert all("#W" not in str(m.get("content")) for r in sent for m in r["messages"])
