"""The gate in real LangGraph: create_agent with the middleware, a ToolNode, a SQLite checkpointer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="needs the langgraph extra")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from plans import tool_chain
from taskgate import Plan, Status
from taskgate.integrations.langgraph import (
    LEDGER_KEY,
    GateState,
    ScriptedChatModel,
    TaskGateMiddleware,
    gated_tool_node,
)

RAN: list[str] = []


@tool
def collect_requirements(scope: str) -> str:
    """Collect the requirements."""
    RAN.append("collect_requirements")
    return f"collected {scope}"


@tool
def draft_rfq(title: str) -> str:
    """Draft the RFQ."""
    RAN.append("draft_rfq")
    return f"drafted {title}"


PLAN = tool_chain(2)


def call(name: str, cid: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": cid, "type": "tool_call"}


def agent(replies: list[AIMessage | str], gate: TaskGateMiddleware, **kw: Any) -> Any:
    tools = [collect_requirements, draft_rfq, search_notes]
    return create_agent(ScriptedChatModel(replies), tools, middleware=[gate], **kw)


def tool_messages(result: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def test_invoke_admits_the_requested_step_and_refuses_a_blocked_one() -> None:
    gate = TaskGateMiddleware(PLAN)
    # one call per model turn: calls of one turn run concurrently, and a draft judged after the
    # collect finished would be admitted (the state is correct at that instant), so the order
    # of two parallel calls would decide the test
    script = [AIMessage("", tool_calls=[call("draft_rfq", "c1", title="")]),
              AIMessage("", tool_calls=[call("collect_requirements", "c2", scope="requirements")]),
              "done"]  # fmt: skip
    config = {"configurable": {"thread_id": "t"}}
    result = agent(script, gate).invoke(
        {"messages": [HumanMessage("please collect the requirements")]}, config
    )
    answers = tool_messages(result)
    assert RAN == ["collect_requirements"]  # the blocked draft never ran
    assert answers[
        "c1"
    ].status == "error" and "it needs 'collect the requirements' done first" in str(
        answers["c1"].content
    )
    assert answers["c2"].status == "success" and set(answers) == {"c1", "c2"}
    assert len(result[LEDGER_KEY]) == 4  # plan, request, refused attempt, receipt


def test_ainvoke_two_parallel_calls_of_a_finished_step_execute_neither_then_one() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    gate = TaskGateMiddleware(PLAN)
    twice = AIMessage("", tool_calls=[call("collect_requirements", "a", scope="requirements"),
                                      call("collect_requirements", "b", scope="the requirements")])  # fmt: skip
    config = {"configurable": {"thread_id": "t"}}
    graph = agent([twice, "ok", twice, "ok"], gate, checkpointer=InMemorySaver())

    async def go() -> list[dict[str, Any]]:
        first = await graph.ainvoke(
            {"messages": [HumanMessage("collect the requirements")]}, config
        )
        second = await graph.ainvoke(
            {"messages": [HumanMessage("collect the requirements")]}, config
        )
        return [first, second]

    first, second = asyncio.run(go())
    assert RAN == ["collect_requirements"]  # the fresh request: exactly one of the two ran
    assert sorted(m.status for m in tool_messages(first).values()) == ["error", "success"]
    done = [m for k, m in tool_messages(second).items() if k in ("a", "b")][-2:]
    assert [m.status for m in done] == ["error", "error"]  # finished: neither ran
    assert all("already" in str(m.content) for m in done)


def test_the_ledger_is_durable_in_a_sqlite_checkpointer(tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    config = {"configurable": {"thread_id": "conversation-1"}}
    once = AIMessage("", tool_calls=[call("collect_requirements", "a", scope="requirements")])
    with SqliteSaver.from_conn_string(str(tmp_path / "state.sqlite")) as saver:
        agent([once, "ok"], TaskGateMiddleware(PLAN), checkpointer=saver).invoke(
            {"messages": [HumanMessage("collect the requirements")]}, config
        )
    with SqliteSaver.from_conn_string(str(tmp_path / "state.sqlite")) as saver:
        fresh = TaskGateMiddleware(PLAN)  # a new process: nothing in memory
        again = AIMessage(
            "", tool_calls=[call("collect_requirements", "b", scope="the requirements")]
        )
        graph = agent([again, "ok"], fresh, checkpointer=saver)
        result = graph.invoke({"messages": [HumanMessage("collect the requirements")]}, config)
        assert tool_messages(result)["b"].status == "error"
        state = graph.get_state(config).values
    assert RAN == ["collect_requirements"]
    from taskgate import ToolGate
    from taskgate.integrations.langgraph import state_entries

    rebuilt = ToolGate.from_ledger(state_entries(state[LEDGER_KEY], "conversation-1"), plan=PLAN)
    assert rebuilt.machine.status("s1") is Status.DONE


def test_a_hand_built_graph_with_the_gated_tool_node() -> None:
    from langgraph.graph import END, START, StateGraph

    gate = TaskGateMiddleware(PLAN)
    model = ScriptedChatModel(
        [AIMessage("", tool_calls=[call("draft_rfq", "d", title="")]), "stop"]
    )

    def think(state: GateState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def requests(state: GateState) -> dict[str, Any] | None:
        return await gate.open_request(state)

    def route(state: GateState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    g = StateGraph(GateState)
    g.add_node("requests", requests)
    g.add_node("think", think)
    g.add_node("tools", gated_tool_node([collect_requirements, draft_rfq], gate))
    g.add_edge(START, "requests")
    g.add_edge("requests", "think")
    g.add_conditional_edges("think", route)
    g.add_edge("tools", "think")
    result = asyncio.run(
        g.compile().ainvoke({"messages": [HumanMessage("draft the RFQ")]},
                            {"configurable": {"thread_id": "h"}})
    )  # fmt: skip
    assert RAN == [] and tool_messages(result)["d"].status == "error"


def test_a_plan_that_is_not_tool_bound_is_refused_up_front() -> None:
    from taskgate import PlanError

    with pytest.raises(PlanError, match="tool-bound"):
        TaskGateMiddleware(Plan.model_validate({"steps": {"s1": {"code": "RC-1"}}}))


def test_a_plan_naming_a_tool_the_agent_lacks_is_named_before_any_run() -> None:
    from taskgate import PlanError

    lacking = Plan.model_validate(
        {
            "binding": "tool",
            "steps": {"s1": {"tool": "collect_requirements"}, "s2": {"tool": "sned_rfq"}},
        }
    )
    with pytest.raises(PlanError, match=r"does not have: s2 \(sned_rfq\)"):
        TaskGateMiddleware(lacking, tools=[collect_requirements, draft_rfq])
    with pytest.raises(PlanError, match="sned_rfq"):
        gated_tool_node([collect_requirements, draft_rfq], TaskGateMiddleware(lacking))
    TaskGateMiddleware(PLAN, tools=[collect_requirements, draft_rfq, search_notes])  # all there
    assert RAN == []


@tool
def search_notes(query: str) -> str:
    """Search the notes (a tool no step is bound to)."""
    RAN.append("search_notes")
    return "nothing"


def test_conversations_without_a_thread_id_do_not_share_state() -> None:
    gate = TaskGateMiddleware(PLAN)
    once = AIMessage("", tool_calls=[call("collect_requirements", "a", scope="requirements")])
    for _ in range(2):  # two users, one after the other, no thread id
        result = agent([once, "ok"], gate).invoke(
            {"messages": [HumanMessage("collect the requirements")]}
        )
        assert tool_messages(result)["a"].status == "success"
        assert len(result[LEDGER_KEY]) == 3  # its own plan, request and receipt only
    assert RAN == ["collect_requirements", "collect_requirements"]


def test_an_earlier_checkpoint_rebuilds_the_gate_from_its_own_ledger() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    gate = TaskGateMiddleware(PLAN)
    once = AIMessage("", tool_calls=[call("collect_requirements", "a", scope="")])
    config = {"configurable": {"thread_id": "fork"}}
    graph = agent([once, "ok", once, "ok"], gate, checkpointer=InMemorySaver())
    first = graph.invoke({"messages": [HumanMessage("collect it")]}, config)
    assert tool_messages(first)["a"].status == "success"
    # the first checkpoint that holds the ledger: the plan and the request, s1 not done there
    early = [s for s in graph.get_state_history(config) if s.values.get(LEDGER_KEY)][-1]
    assert len(early.values[LEDGER_KEY]) == 2
    again = graph.invoke({"messages": [HumanMessage("collect the requirements")]}, early.config)
    assert tool_messages(again)["a"].status == "success"  # not refused as already done
    assert RAN == ["collect_requirements", "collect_requirements"]


def test_unbound_tools_run_ungated_unless_refused_and_unknown_matches_are_no_step() -> None:
    from taskgate import Match

    class Wrong:
        async def match(self, plan: Plan, message: str) -> Match:
            return Match("s99")  # a step the plan lacks: treated as no step

    script = [AIMessage("", tool_calls=[call("search_notes", "q", query="x")]), "ok"]
    result = agent(script, TaskGateMiddleware(PLAN, Wrong())).invoke(
        {"messages": [HumanMessage("look something up")]}
    )
    assert tool_messages(result)["q"].status == "success" and RAN == ["search_notes"]
    tools = [collect_requirements, draft_rfq, search_notes]
    strict = create_agent(ScriptedChatModel(script), tools,
                          middleware=[TaskGateMiddleware(PLAN, unbound="refuse")])  # fmt: skip
    refused = strict.invoke({"messages": [HumanMessage("look something up")]})
    assert tool_messages(refused)["q"].status == "error" and RAN == ["search_notes"]


def test_sync_invoke_from_inside_a_running_event_loop() -> None:
    once = AIMessage("", tool_calls=[call("collect_requirements", "a", scope="requirements")])

    async def caller() -> dict[str, Any]:
        return agent([once, "ok"], TaskGateMiddleware(PLAN)).invoke(  # type: ignore[no-any-return]
            {"messages": [HumanMessage("collect the requirements")]}
        )

    assert tool_messages(asyncio.run(caller()))["a"].status == "success"


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_an_ambiguous_message_is_asked_back_and_the_model_is_not_called(mode: str) -> None:
    from taskgate import EmbeddingMatcher, HashEmbedder
    from taskgate.matching.embedding import HASH_THRESHOLDS

    gate = TaskGateMiddleware(PLAN, EmbeddingMatcher(HashEmbedder(), HASH_THRESHOLDS))
    model_turns = [AIMessage("", tool_calls=[call("collect_requirements", "c1", scope="")]), "ok"]
    graph = agent(model_turns, gate)
    ask = "Either 'collect the requirements' or 'draft the RFQ', whichever you like."
    config = {"configurable": {"thread_id": f"amb-{mode}"}}
    state = {"messages": [HumanMessage(ask)]}
    result = (
        graph.invoke(state, config)
        if mode == "invoke"
        else asyncio.run(graph.ainvoke(state, config))
    )
    last = result["messages"][-1]
    assert isinstance(last, AIMessage) and "Before I act on this" in str(last.content)
    assert "'collect the requirements'" in str(last.content)
    assert "'draft the RFQ'" in str(last.content)
    assert RAN == [] and len(result["messages"]) == 2  # no model turn, no tool ran
    assert result[LEDGER_KEY][-1]["work_order"] is None  # no request is open
    # the user's answer resolves to one step, and the agent runs
    answer = {"messages": [*result["messages"], HumanMessage("collect the requirements")],
              LEDGER_KEY: result[LEDGER_KEY]}  # fmt: skip
    after = (
        graph.invoke(answer, config)
        if mode == "invoke"
        else asyncio.run(graph.ainvoke(answer, config))
    )
    assert RAN == ["collect_requirements"] and str(after["messages"][-1].content) == "ok"


def test_tool_gate_open_message_asks_back_or_opens() -> None:
    from taskgate import EmbeddingMatcher, HashEmbedder, ToolGate
    from taskgate.matching.embedding import HASH_THRESHOLDS

    gate = ToolGate(PLAN)
    matcher = EmbeddingMatcher(HashEmbedder(), HASH_THRESHOLDS)
    both = asyncio.run(gate.open_message("'collect the requirements' or 'draft the RFQ'", matcher))
    assert both.request is None and both.ask_back is not None and gate.machine.request is None
    one = asyncio.run(gate.open_message("collect the requirements", matcher))
    assert one.request is not None and one.request.step == "s1" and one.ask_back is None
    quiet = asyncio.run(gate.open_message("'collect the requirements' or 'draft the RFQ'",
                                          matcher, ask_back=False))  # fmt: skip
    assert quiet.request is not None and quiet.request.step is None
