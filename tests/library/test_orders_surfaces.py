"""Several things in one message, and a confirmed proposal, on the surfaces that store the
ledger: the request the gate opens as it judges a call (one more thing of the order, the
proposal's call) is stored with that call, so the conversation reads back whole (the LangGraph
state, the proxy's journal, the MCP gate's journal) and nothing runs twice after a reload."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from taskgate import FakeServer, Plan, Reply
from taskgate.journal.store import SQLiteStore
from taskgate.llm.fake import ToolCall

COFFEE = Plan.model_validate({"binding": "tool", "steps": {
    "add": {"tool": "add_order_item", "text": "add order item", "repeatable": True},
    "finish": {"tool": "finish_order", "text": "finish order"},
}})  # fmt: skip
MOCHA = {"menu_item_id": "mocha", "quantity": "1"}
LATTE = {"menu_item_id": "latte", "quantity": "1"}
TABLES = Plan.model_validate({"binding": "tool", "steps": {
    "reserve": {"tool": "reserve_table", "text": "reserve a table at a restaurant"}}})  # fmt: skip
PROPOSAL = "Please confirm: a table for 2 at Chez Pierre at 7 pm."
TABLE = {"restaurant": "Chez Pierre", "party_size": 2, "time": "19:00"}
RAN: list[str] = []


@tool
def add_order_item(menu_item_id: str, quantity: str) -> str:
    """Add an item to the order."""
    RAN.append(menu_item_id)
    return "added"


@tool
def reserve_table(restaurant: str, party_size: int, time: str) -> str:
    """Reserve a table."""
    RAN.append(restaurant)
    return "reserved"


def _call(name: str, call_id: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id}


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def test_langgraph_stores_the_request_each_further_thing_opens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two drinks in one message, each added in its own model turn: both requests and receipts
    are rows of the state, a restarted middleware reads them all (none ignored), and the same
    latte again on the next message is refused."""
    from taskgate.integrations.langgraph import (
        ScriptedChatModel,
        TaskGateMiddleware,
        state_entries,
    )

    script: list[Any] = [
        AIMessage("", tool_calls=[_call("add_order_item", "a", MOCHA)]),
        AIMessage("", tool_calls=[_call("add_order_item", "b", LATTE)]),
        "Done.",
        AIMessage("", tool_calls=[_call("add_order_item", "c", LATTE)]),
        "Done.",
    ]
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "t"}}
    agent = create_agent(ScriptedChatModel(script[:3]), [add_order_item],
                         middleware=[TaskGateMiddleware(COFFEE)], checkpointer=saver)  # fmt: skip
    agent.invoke({"messages": [HumanMessage("A mocha and a latte, please.")]}, config)
    assert RAN == ["mocha", "latte"]
    restarted = create_agent(ScriptedChatModel(script[3:]), [add_order_item],
                             middleware=[TaskGateMiddleware(COFFEE)], checkpointer=saver)  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="taskgate"):
        out = restarted.invoke({"messages": [HumanMessage("Thanks, that's all.")]}, config)
    assert not [r for r in caplog.records if "ignored" in r.getMessage()]
    assert RAN == ["mocha", "latte"]
    (refused,) = [
        m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "c"
    ]
    assert refused.status == "error"
    rows = restarted.get_state(config).values["taskgate_ledger"]
    kinds = [(e.kind, getattr(e, "step", None)) for e in state_entries(rows, "t")]
    assert kinds.count(("request", "add")) == 2


def test_langgraph_stores_the_request_a_confirmed_proposal_opens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A yes to the agent's proposal opens the proposed call's request as the call comes: the
    request is stored with the call's rows, so the reservation counts after a restart."""
    from taskgate.integrations.langgraph import ScriptedChatModel, TaskGateMiddleware

    script: list[Any] = [
        PROPOSAL,
        AIMessage("", tool_calls=[_call("reserve_table", "r1", TABLE)]),
        "Booked.",
        AIMessage("", tool_calls=[_call("reserve_table", "r2", TABLE)]),
        "Done.",
    ]
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "t"}}
    agent = create_agent(ScriptedChatModel(script[:3]), [reserve_table],
                         middleware=[TaskGateMiddleware(TABLES)], checkpointer=saver)  # fmt: skip
    agent.invoke({"messages": [HumanMessage("Dinner for two tomorrow?")]}, config)
    agent.invoke({"messages": [HumanMessage("Yes, that's right.")]}, config)
    assert RAN == ["Chez Pierre"]
    restarted = create_agent(ScriptedChatModel(script[3:]), [reserve_table],
                             middleware=[TaskGateMiddleware(TABLES)], checkpointer=saver)  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="taskgate"):
        restarted.invoke({"messages": [HumanMessage("Please reserve the table.")]}, config)
    assert not [r for r in caplog.records if "ignored" in r.getMessage()]
    assert RAN == ["Chez Pierre"]  # done already: not booked twice


def test_the_proxy_runs_each_thing_once_and_reads_it_back() -> None:
    """Each reply is judged by a fresh core session: what the message's order took travels with
    the conversation's reading, so a latte again in the same message is refused, and after a
    reload from the journal (the reading lost) no further thing runs."""
    from proxy_helpers import post, repeating
    from taskgate.proxy import ProxyConfig
    from taskgate.proxy.testing import ProxyServer

    calls = [("c1", MOCHA), ("c2", LATTE), ("c3", LATTE), ("c4", MOCHA)]
    replies = iter([Reply("", tool_calls=(ToolCall("add_order_item", a, id=i),)) for i, a in calls]
                   + [Reply("Done."), Reply("", tool_calls=(ToolCall("add_order_item", LATTE,
                                                                     id="c5"),))])  # fmt: skip
    messages: list[dict[str, Any]] = [{"role": "user", "content": "A mocha and a latte, please."}]
    handed = []
    with (
        FakeServer(repeating(lambda body: next(replies))) as upstream,
        httpx.Client(timeout=60) as client,
    ):
        config = ProxyConfig(upstream.base_url, plan=COFFEE, status_token="ops")
        with ProxyServer(config) as proxy:
            for call_id, _ in calls:
                reply = post(client, proxy.base_url, messages)["choices"][0]["message"]
                handed.append(bool(reply.get("tool_calls")))
                if reply.get("tool_calls"):
                    messages += [reply, {"role": "tool", "tool_call_id": call_id,
                                         "content": "added"}]  # fmt: skip
                else:
                    messages += [reply, {"role": "user", "content": "Go on."}]
                    break
            post(client, proxy.base_url, messages)
            proxy.app.state.proxy.conversations.clear()  # read back from the journal
            messages += [{"role": "assistant", "content": "Done."},
                         {"role": "user", "content": "Thanks!"}]  # fmt: skip
            last = post(client, proxy.base_url, messages)["choices"][0]["message"]
            ops = {"Authorization": "Bearer ops"}
            (row,) = client.get(f"{proxy.url}/taskgate/conversations", headers=ops).json()[
                "conversations"
            ]
            shown = client.get(f"{proxy.url}/taskgate/conversations/{row['id']}", headers=ops)
    assert handed == [True, True, False]  # the latte again is refused (the turn ends there)
    assert not last.get("tool_calls")
    ledger = shown.json()["ledger"]
    admitted = [e for e in ledger if e["kind"] == "attempt" and e["decision"] == "admit"]
    assert len(admitted) == 2
    assert [e["step"] for e in ledger if e["kind"] == "request"][:2] == ["add", "add"]


def test_the_mcp_gate_journals_each_further_thing_and_reads_it_back(tmp_path: Any) -> None:
    from taskgate.integrations.mcp import McpGate, McpGateConfig

    config = McpGateConfig(plan=COFFEE, requests="application")

    async def play() -> tuple[list[bool], bool]:
        store = SQLiteStore(tmp_path / "mcp.sqlite")
        gate = McpGate(config, store)
        await gate.request("k", "A mocha and a latte, please.")
        ran = []
        for args in (MOCHA, LATTE):
            answer = await gate.call("k", "add_order_item", args,
                                     _forward(args), lambda r: True)  # fmt: skip
            ran.append(not answer.refused)
        again = McpGate(config, SQLiteStore(tmp_path / "mcp.sqlite"))  # a restart
        third = await again.call("k", "add_order_item", LATTE, _forward(LATTE), lambda r: True)
        return ran, third.refused

    ran, refused = asyncio.run(play())
    assert ran == [True, True] and refused
    assert RAN == ["mocha", "latte"]


def _forward(args: dict[str, Any]) -> Any:
    async def run() -> str:
        RAN.append(args["menu_item_id"])
        return "added"

    return run


def test_the_mcp_gate_reads_a_message_back_after_a_restart(tmp_path: Any) -> None:
    """The reading is journaled with the message (a ``message`` event) and what each call took
    with the call: a gate restarted after "A mocha and a latte, please." adds no muffin and no
    second mocha, and still adds the latte (before, a restart lost the reading: any item ran)."""
    from taskgate.integrations.mcp import McpGate, McpGateConfig

    config = McpGateConfig(plan=COFFEE, requests="application")
    muffin = {"menu_item_id": "muffin-0001", "quantity": "1"}

    def gate() -> McpGate:  # a fresh process on the same journal
        return McpGate(config, SQLiteStore(tmp_path / "mcp.sqlite"))

    async def call(args: dict[str, Any]) -> bool:
        answer = await gate().call("k", "add_order_item", args, _forward(args), lambda r: True)
        return not answer.refused

    async def play() -> list[bool]:
        await gate().request("k", "A mocha and a latte, please.")
        return [await call(muffin), await call(MOCHA), await call(MOCHA), await call(LATTE),
                await call(LATTE)]  # fmt: skip

    RAN.clear()
    assert asyncio.run(play()) == [False, True, False, True, False]
    assert RAN == ["mocha", "latte"]


def test_the_proxy_reloaded_mid_turn_judges_by_the_turn_s_reading() -> None:
    """The turn's reading is journaled with it: a proxy reloaded after "A latte, please." got a
    reply with no call, asked again (a client retry of the hop), still refuses a muffin, and
    adds the latte (before, the reading was lost with the reload: the muffin ran)."""
    from proxy_helpers import post, repeating
    from taskgate.proxy import ProxyConfig
    from taskgate.proxy.testing import ProxyServer

    muffin = {"menu_item_id": "muffin-0001", "quantity": "1"}
    replies = iter([Reply("One moment."),
                    Reply("", tool_calls=(ToolCall("add_order_item", muffin, id="c1"),)),
                    Reply("", tool_calls=(ToolCall("add_order_item", LATTE, id="c2"),))])  # fmt: skip
    messages: list[dict[str, Any]] = [{"role": "user", "content": "A latte, please."}]
    handed = []
    with (
        FakeServer(repeating(lambda body: next(replies))) as upstream,
        httpx.Client(timeout=60) as client,
        ProxyServer(ProxyConfig(upstream.base_url, plan=COFFEE)) as proxy,
    ):
        for _ in range(3):
            proxy.app.state.proxy.conversations.clear()  # read back from the journal
            reply = post(client, proxy.base_url, messages)["choices"][0]["message"]
            handed.append([c["function"]["name"] + c["function"]["arguments"]
                           for c in reply.get("tool_calls") or []])  # fmt: skip
    assert handed[:2] == [[], []]
    assert len(handed[2]) == 1 and "latte" in handed[2][0]


def test_the_mcp_gate_journals_a_message_with_a_lone_surrogate(tmp_path: Any) -> None:
    """A lone surrogate ("\\ud800", which no UTF-8 holds) in a message is read as the
    replacement character: the message is read and journaled, so "cancel the latte" takes
    effect (it raised before, and the latte then ran under the earlier order)."""
    from taskgate.integrations.mcp import McpGate, McpGateConfig

    config = McpGateConfig(plan=COFFEE, requests="application")

    async def play() -> tuple[str, bool]:
        gate = McpGate(config, SQLiteStore(tmp_path / "mcp.sqlite"))
        await gate.request("k", "A mocha and a latte, please.")
        await gate.call("k", "add_order_item", MOCHA, _forward(MOCHA), lambda r: True)
        said = await gate.request("k", "No wait, cancel the latte, I don't want it \ud800")
        answer = await gate.call("k", "add_order_item", LATTE, _forward(LATTE), lambda r: True)
        return said, answer.refused

    RAN.clear()
    said, refused = asyncio.run(play())
    assert said and refused and RAN == ["mocha"]
