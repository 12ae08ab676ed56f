"""The gate's promise under attack (issue 26): one regression test per defect, on the library's
own paths and through the proxy on loopback, plus the batch property."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any, ClassVar

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plans import tool_chain
from taskgate import (
    AttemptEntry,
    Booking,
    FakeServer,
    Plan,
    Policy,
    Reason,
    RequestEntry,
    Status,
    TaskMachine,
    ToolGate,
    ToolRefused,
    dump_ledger,
    load_ledger,
    script,
)
from taskgate.errors import LedgerFormatError
from taskgate.llm.fake import Reply, ToolCall

PLAN = tool_chain(3)
#: how a refusal of draft_rfq before s1's receipt reads (plain words)
NEED = "it needs 'collect the requirements' done first"


def tool_call(name: str, cid: str | None = None) -> dict[str, Any]:
    return {"id": cid or f"call_{name}", "type": "function",
            "function": {"name": name, "arguments": "{}"}}  # fmt: skip


# -- 1. a batch is judged as the state will be -----------------------------------------------------
def test_judge_calls_hands_out_no_step_whose_prerequisite_is_only_in_flight() -> None:
    from taskgate.proxy.gating import Judged, judge_calls, rung

    machine = TaskMachine(PLAN)
    machine.open_request("s1")
    calls = [tool_call("collect_requirements"), tool_call("draft_rfq"), tool_call("send_rfq"),
             tool_call("collect_requirements", "again")]  # fmt: skip
    kept, refusals = judge_calls(machine, rung("enforcement"), calls, Judged())
    assert [c["id"] for c in kept] == ["call_collect_requirements"]
    assert len(refusals) == 3
    assert refusals[0].startswith(f"draft_rfq was not run: {NEED}")
    assert refusals[1].startswith("send_rfq was not run: it needs 'draft the RFQ' done first")
    reasons = [e.reason for e in machine.ledger if isinstance(e, AttemptEntry)]
    assert reasons == [None, Reason.BLOCKED, Reason.BLOCKED, Reason.IN_PROGRESS]


def test_tool_gate_refuses_a_dependent_while_its_prerequisite_runs() -> None:
    gate = ToolGate(PLAN)
    gate.open_request("s1")
    first = gate.begin("collect_requirements")
    second = gate.begin("draft_rfq")
    assert first.admitted and second.verdict.reason is Reason.BLOCKED
    gate.finish(first, "failed")  # the prerequisite failed: nothing is booked
    assert gate.machine.statuses() == {
        "s1": Status.TODO,
        "s2": Status.BLOCKED,
        "s3": Status.BLOCKED,
    }


def test_begin_all_judges_a_turns_calls_whatever_order_they_finish_in() -> None:
    gate = ToolGate(PLAN)
    gate.open_request("s1")
    first, second, again = gate.begin_all(
        ["collect_requirements", "draft_rfq", "collect_requirements"]
    )
    assert first.admitted and second.verdict.reason is Reason.BLOCKED
    assert again.verdict.reason is Reason.IN_PROGRESS
    gate.finish(first, "ok")  # finishing first changes no verdict already given
    assert not second.admitted and gate.machine.status("s1") is Status.DONE


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_the_middleware_judges_a_turns_calls_together_whatever_the_timing(mode: str) -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from taskgate.integrations.langgraph import ScriptedChatModel, TaskGateMiddleware

    ran: list[str] = []
    collect_requirements, draft_rfq = lg_tools(ran)

    middleware = TaskGateMiddleware(LG_PLAN)
    for n in range(12):  # the collect may finish before the draft is judged: it must not matter
        calls = [{"name": "collect_requirements", "args": {"scope": ""}, "id": f"a{n}", "type": "tool_call"},
                 {"name": "draft_rfq", "args": {"title": ""}, "id": f"b{n}", "type": "tool_call"}]  # fmt: skip
        model = ScriptedChatModel([AIMessage("", tool_calls=calls), "ok"])
        agent = create_agent(model, [collect_requirements, draft_rfq], middleware=[middleware],
                             checkpointer=InMemorySaver())  # fmt: skip
        config = {"configurable": {"thread_id": f"t{n}"}}
        message = {"messages": [HumanMessage("collect the requirements")]}
        result = (agent.invoke(message, config) if mode == "invoke"
                  else asyncio.run(agent.ainvoke(message, config)))  # fmt: skip
        answers = {
            m.tool_call_id: m.status for m in result["messages"] if isinstance(m, ToolMessage)
        }
        assert answers == {f"a{n}": "success", f"b{n}": "error"}
    assert ran == ["collect"] * 12


def lg_tools(ran: list[str]) -> tuple[Any, Any]:
    """The two LangGraph tools of LG_PLAN; each run is appended to ``ran``."""
    from langchain_core.tools import tool

    @tool
    def collect_requirements(scope: str) -> str:
        """Collect the requirements."""
        ran.append("collect")
        return "collected"

    @tool
    def draft_rfq(title: str) -> str:
        """Draft the RFQ."""
        ran.append("draft")
        return "drafted"

    return collect_requirements, draft_rfq


@settings(max_examples=200, deadline=None)
@given(
    deps=st.lists(st.lists(st.integers(0, 5), max_size=3), min_size=6, max_size=6),
    rounds=st.lists(
        st.tuples(
            st.lists(st.integers(0, 5), min_size=1, max_size=6),  # the batch's steps, in order
            st.lists(st.booleans(), min_size=6, max_size=6),  # which handed calls succeed
            st.integers(0, 5),  # the step the request resolves to
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_no_step_is_admitted_before_its_prerequisites_receipts(
    deps: list[list[int]], rounds: list[tuple[list[int], list[bool], int]]
) -> None:
    """Any plan, any batches in any order, any split across requests, any results: every call the
    proxy hands out is of a step whose prerequisites all had receipts when it was judged."""
    from taskgate.core.ledger import PlanEntry
    from taskgate.journal.events import Conversation, LedgerEvent, ReplyEvent, TurnEvent
    from taskgate.proxy.gating import Judged, judge_calls, rung, settle

    steps = {f"s{i}": {"tool": f"t{i}", "text": f"step {i}",
                       "deps": sorted({f"s{d}" for d in ds if d < i})}
             for i, ds in enumerate(deps)}  # fmt: skip
    plan = Plan.model_validate({"binding": "tool", "steps": steps})
    conv = Conversation("k")
    conv.apply(LedgerEvent(entry=PlanEntry(plan=plan)))
    arm = rung("enforcement")
    for turn, (batch, results, target) in enumerate(rounds):
        machine = conv.machine
        done_before = {s for s in plan.steps if machine.status(s) is Status.DONE}
        machine.open_request(f"s{target}", work_order=f"#W{1000 + turn}")
        conv.apply(LedgerEvent(entry=machine.last_entry()), applied=True)
        conv.apply(TurnEvent(client="go", forwarded="go"))
        calls = [tool_call(f"t{i}", f"c{turn}-{n}") for n, i in enumerate(batch)]
        judged = Judged()
        kept, _ = judge_calls(machine, arm, calls, judged)
        for c in kept:
            step = c["function"]["name"].replace("t", "s")
            assert set(plan.steps[step].deps) <= done_before, (step, done_before)
        conv.apply(
            ReplyEvent(turn=turn, hop=0, original="", returned="", has_calls=True,
                       attempts=tuple(judged.attempts), call_ids=tuple(judged.call_ids)),
            applied=True,
        )  # fmt: skip
        answered = frozenset(c["id"] for n, c in enumerate(kept) if results[n % 6])
        from taskgate.journal.events import CommitEvent

        conv.apply(CommitEvent(keep=settle(conv.pending, answered)))  # type: ignore[arg-type]


# -- 4 and 1 through the proxy: batches, retries, replays --------------------------------------------
@pytest.fixture
def proxy_for() -> Any:
    pytest.importorskip("starlette", reason="needs the proxy extra")
    from taskgate.proxy import ProxyConfig
    from taskgate.proxy.testing import ProxyServer

    def make(upstream: FakeServer, **kw: Any) -> Any:
        return ProxyServer(
            ProxyConfig(upstream.base_url, compiler="parser", matcher="lexical", **kw)
        )

    return make


def brief() -> str:
    from taskgate.protocol.tools import harness_brief

    return harness_brief(PLAN, "native")


def calls_reply(*names: str, ids: tuple[str, ...] = ()) -> Reply:
    calls = tuple(
        ToolCall(n, {"work_order": "#W5001"}, id=ids[i] if ids else f"call_{n}")
        for i, n in enumerate(names)
    )
    return Reply("Working.", tool_calls=calls)


def chat(client: httpx.Client, url: str, messages: list[dict[str, Any]], stream: bool = False,
         headers: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    """One request; a streamed reply is put back together as a whole one."""
    body = {"model": "fake", "messages": messages, "stream": stream}
    if not stream:
        resp = client.post(f"{url}/chat/completions", json=body, headers=headers)
        assert resp.status_code == 200, resp.text
        return resp.json()["choices"][0]  # type: ignore[no-any-return]
    text, calls, finish = [], [], None
    with client.stream("POST", f"{url}/chat/completions", json=body, headers=headers) as resp:
        assert resp.status_code == 200
        for line in resp.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[6:]).get("choices", []):
                delta = choice["delta"]
                text.append(delta.get("content") or "")
                calls += [{k: v for k, v in c.items() if k != "index"} for c in delta.get("tool_calls", [])]  # fmt: skip
                finish = choice.get("finish_reason") or finish
    message = {"role": "assistant", "content": "".join(text), "tool_calls": calls}
    return {"message": message, "finish_reason": finish}


def status(url: str, name: str, token: str | None = None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    resp = httpx.get(f"{url}/taskgate/conversations/{name}", headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()  # type: ignore[no-any-return]


def opening() -> list[dict[str, Any]]:
    return [{"role": "system", "content": brief()},
            {"role": "user", "content": "Please collect the requirements (#W5001)."}]  # fmt: skip


@pytest.mark.parametrize("stream", [False, True])
def test_the_proxy_hands_out_no_dependent_of_a_call_in_the_same_reply(
    proxy_for: Any, stream: bool
) -> None:
    replies = [calls_reply("collect_requirements", "draft_rfq", "send_rfq"), Reply("It failed.")]
    with FakeServer(script(replies)) as upstream, proxy_for(upstream) as proxy, httpx.Client() as c:
        messages = opening()
        choice = chat(c, proxy.base_url, messages, stream)
        names = [t["function"]["name"] for t in choice["message"]["tool_calls"]]
        assert names == ["collect_requirements"]
        assert NEED in choice["message"]["content"]
        messages += [choice["message"], {"role": "tool", "tool_call_id": "call_collect_requirements",
                                          "content": "disk full", "status": "error"}]  # fmt: skip
        chat(c, proxy.base_url, messages, stream)
        now = status(proxy.url, _only(proxy.url))
    assert now["statuses"] == {"s1": "TODO", "s2": "BLOCKED", "s3": "BLOCKED"}


def _only(url: str) -> str:
    (row,) = httpx.get(f"{url}/taskgate/conversations").json()["conversations"]
    return str(row["id"])


@pytest.mark.parametrize("stream", [False, True])
def test_a_replayed_request_gets_the_same_reply_and_no_second_admission(
    proxy_for: Any, stream: bool
) -> None:
    replies = [calls_reply("collect_requirements", ids=("first",)),
               calls_reply("collect_requirements", ids=("second",)), Reply("Done.")]  # fmt: skip
    with FakeServer(script(replies)) as upstream, proxy_for(upstream) as proxy, httpx.Client() as c:
        messages = opening()
        got = [chat(c, proxy.base_url, messages, stream) for _ in range(3)]
        assert len(upstream.requests) == 1  # the retries never reached the upstream
        ids = {t["id"] for g in got for t in g["message"]["tool_calls"]}
        assert ids == {"first"} and all(g["finish_reason"] == "tool_calls" for g in got)
        messages += [got[0]["message"], {"role": "tool", "tool_call_id": "first", "content": "ok"}]
        chat(c, proxy.base_url, messages, stream)
        now = status(proxy.url, _only(proxy.url))
    admits = [e for e in now["ledger"] if e.get("decision") == "admit"]
    assert [e["tool"] for e in admits] == ["collect_requirements"]  # booked once, on its answer
    assert now["statuses"]["s1"] == "DONE"


def test_two_copies_of_a_request_sent_at_once_get_one_admission(proxy_for: Any) -> None:
    replies = [calls_reply("collect_requirements", ids=("one",)),
               calls_reply("collect_requirements", ids=("two",))]  # fmt: skip
    with FakeServer(script(replies)) as upstream, proxy_for(upstream) as proxy:
        results: list[dict[str, Any]] = []

        def send() -> None:
            with httpx.Client() as c:
                results.append(chat(c, proxy.base_url, opening()))

        threads = [threading.Thread(target=send) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(upstream.requests) == 1
    assert {r["message"]["tool_calls"][0]["id"] for r in results} == {"one"}


# -- 2. each conversation belongs to its key -------------------------------------------------------
def test_no_request_without_its_key_reaches_a_keyed_conversation(proxy_for: Any) -> None:
    replies = [calls_reply("collect_requirements"), Reply("ok"), calls_reply("collect_requirements"),
               Reply("ok")]  # fmt: skip
    owner = {"Authorization": "Bearer owner-key", "X-Taskgate-Conversation": "deal"}
    with FakeServer(script(replies)) as upstream, proxy_for(upstream) as proxy, httpx.Client() as c:
        chat(c, proxy.base_url, opening(), headers=owner)
        (mine,) = httpx.get(f"{proxy.url}/taskgate/conversations", headers=owner).json()["conversations"]  # fmt: skip
        assert httpx.get(f"{proxy.url}/taskgate/conversations").json()["conversations"] == []
        stolen = {"X-Taskgate-Conversation": mine["id"]}  # the full key, no Authorization
        assert c.post(f"{proxy.base_url}/chat/completions", headers=stolen,
                      json={"model": "f", "messages": opening()}).status_code == 400  # fmt: skip
        anon = {"X-Taskgate-Conversation": "deal"}  # the same name without the key: another one
        chat(c, proxy.base_url, opening(), headers=anon)
        assert httpx.get(f"{proxy.url}/taskgate/conversations/{mine['id']}").status_code == 404
        theirs = status(proxy.url, "deal")
        ours = httpx.get(f"{proxy.url}/taskgate/conversations/deal", headers=owner).json()
    assert theirs["id"].endswith("~anon") and ours["id"] == mine["id"] != theirs["id"]
    assert len(ours["pending"]) == 1 and ours["turns"] == 1  # untouched by the other request


# -- 3. state comes only from the gate (LangGraph) ----------------------------------------------------
def test_ledger_rows_given_as_graph_input_are_ignored() -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from taskgate import sealed_rows
    from taskgate.integrations.langgraph import LEDGER_KEY, ScriptedChatModel, TaskGateMiddleware

    ran: list[str] = []

    @tool
    def draft_rfq(title: str) -> str:
        """Draft the RFQ."""
        ran.append("draft")
        return "drafted"

    plan = Plan.model_validate({"binding": "tool", "steps": {
        "s1": {"tool": "collect_requirements", "text": "collect the requirements"},
        "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"]}}})  # fmt: skip
    forged_gate = ToolGate(plan)
    forged_gate.open_request("s1")
    forged_gate.call("collect_requirements", lambda: None)  # a history that never happened
    forged = sealed_rows(forged_gate.ledger)
    call = {"name": "draft_rfq", "args": {"title": ""}, "id": "c1", "type": "tool_call"}
    model = ScriptedChatModel([AIMessage("", tool_calls=[call]), "ok", "ok"])
    agent = create_agent(model, [draft_rfq], middleware=[TaskGateMiddleware(plan)],
                         checkpointer=InMemorySaver())  # fmt: skip
    config = {"configurable": {"thread_id": "t"}}
    result = agent.invoke({"messages": [HumanMessage("draft the RFQ")], LEDGER_KEY: forged}, config)
    (answer,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert ran == [] and answer.status == "error" and NEED in str(answer.content)
    garbage = {"messages": [HumanMessage("thanks")], LEDGER_KEY: [{"kind": "nope"}]}
    again = agent.invoke(garbage, config)  # a garbage row as input: ignored, the thread goes on
    assert isinstance(again["messages"][-1], AIMessage)
    assert all(r.get("kind") != "nope" for r in again[LEDGER_KEY])


def _lg_agent(secret: str | None, saver: Any = None) -> tuple[Any, list[str]]:
    """A create_agent whose model calls draft_rfq (needs s1) once, then says ok."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from taskgate.integrations.langgraph import ScriptedChatModel, TaskGateMiddleware

    ran: list[str] = []

    @tool
    def draft_rfq(title: str) -> str:
        """Draft the RFQ."""
        ran.append("draft")
        return "drafted"

    call = {"name": "draft_rfq", "args": {"title": ""}, "id": "c1", "type": "tool_call"}
    model = ScriptedChatModel(["ok", AIMessage("", tool_calls=[call]), "ok", "ok"])
    gate = TaskGateMiddleware(LG_PLAN, secret=secret)
    saver = saver if saver is not None else InMemorySaver()
    return create_agent(model, [draft_rfq], middleware=[gate], checkpointer=saver), ran


LG_PLAN = tool_chain(2)


def _forged_rows(
    start: list[dict[str, Any]], secret: str | None = None, thread: str = "t"
) -> list[dict[str, Any]]:
    """The thread's rows, then a forged request and receipt of s1 sealed in the chain as a
    forger without the key can seal them."""
    from taskgate import sealed_rows
    from taskgate.integrations.langgraph import state_entries

    machine = TaskMachine.from_ledger(state_entries(start, thread, secret))
    machine.open_request("s1")
    machine.submit(Booking.tool_call("collect_requirements", machine.request.work_order))  # type: ignore[union-attr]
    return sealed_rows(machine.ledger, scope=thread)[len(start) :]


@pytest.mark.parametrize("secret", [None, "k"])
def test_a_receipt_forged_through_a_command_update_never_counts(secret: str | None) -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain_core.messages import HumanMessage, ToolMessage
    from langgraph.types import Command

    from taskgate.integrations.langgraph import LEDGER_KEY

    agent, ran = _lg_agent(secret)
    config = {"configurable": {"thread_id": "t"}}
    first = agent.invoke({"messages": [HumanMessage("hello")]}, config)
    agent.invoke(Command(update={LEDGER_KEY: _forged_rows(first[LEDGER_KEY], secret)}), config)
    result = agent.invoke({"messages": [HumanMessage("draft the RFQ")]}, config)
    answers = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert ran == [] and answers[-1].status == "error" and NEED in str(answers[-1].content)


def test_a_row_edited_in_place_rolls_the_thread_back_and_adds_nothing() -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain_core.messages import HumanMessage, ToolMessage
    from langgraph.types import Overwrite

    from taskgate.integrations.langgraph import LEDGER_KEY

    agent, ran = _lg_agent("k")
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("hello")]}, config)
    rows = [dict(r) for r in agent.get_state(config).values[LEDGER_KEY]]
    rows[0]["plan"] = LG_PLAN.model_copy(  # the plan's prerequisite taken out, its seal kept
        update={"steps": {k: v.model_copy(update={"deps": ()}) for k, v in LG_PLAN.steps.items()}}
    ).model_dump(mode="json")
    agent.update_state(config, {LEDGER_KEY: Overwrite(rows)})
    result = agent.invoke({"messages": [HumanMessage("draft the RFQ")]}, config)
    answers = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert ran == [] and NEED in str(answers[-1].content)  # the edit bought nothing


def test_rows_copied_from_another_thread_never_count() -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain_core.messages import HumanMessage, ToolMessage
    from langgraph.types import Overwrite

    from taskgate.integrations.langgraph import LEDGER_KEY

    for secret in (None, "k"):
        agent, ran = _lg_agent(secret)
        a, b = {"configurable": {"thread_id": "a"}}, {"configurable": {"thread_id": "b"}}
        agent.invoke({"messages": [HumanMessage("hello")]}, a)
        agent.invoke({"messages": [HumanMessage("hello")]}, b)
        rows_a = agent.get_state(a).values[LEDGER_KEY]
        donor = [*rows_a, *_forged_rows(rows_a, secret, "a")]  # a receipt as thread a has it
        agent.update_state(b, {LEDGER_KEY: Overwrite(donor)})
        result = agent.invoke({"messages": [HumanMessage("draft the RFQ")]}, b)
        answers = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert ran == [] and NEED in str(answers[-1].content)


def test_a_new_process_ignores_a_garbage_row_in_the_stored_state(tmp_path: Any) -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    from taskgate.integrations.langgraph import LEDGER_KEY

    config = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(str(tmp_path / "state.sqlite")) as saver:
        agent, _ = _lg_agent(None, saver)
        agent.invoke({"messages": [HumanMessage("hello")]}, config)
        agent.invoke(Command(update={LEDGER_KEY: [{"kind": "nope"}, "x"]}), config)
    with SqliteSaver.from_conn_string(str(tmp_path / "state.sqlite")) as saver:
        agent, ran = _lg_agent(None, saver)  # a new process: nothing in memory
        result = agent.invoke({"messages": [HumanMessage("draft the RFQ")]}, config)
    assert ran == [] and result["messages"][-1].content == "ok"


# -- 5. results judged by their status, not their words ----------------------------------------------
def test_a_successful_result_that_begins_with_error_is_a_receipt(proxy_for: Any) -> None:
    replies = [calls_reply("collect_requirements"), Reply("Collected.")]
    with FakeServer(script(replies)) as upstream, proxy_for(upstream) as proxy, httpx.Client() as c:
        messages = opening()
        choice = chat(c, proxy.base_url, messages)
        messages += [choice["message"], {"role": "tool", "tool_call_id": "call_collect_requirements",
                                          "content": "errors found: 0 -- requirements collected"}]  # fmt: skip
        chat(c, proxy.base_url, messages)
        assert status(proxy.url, _only(proxy.url))["statuses"]["s1"] == "DONE"


def test_the_tool_gate_books_a_result_whatever_its_words_and_no_exception() -> None:
    gate = ToolGate(PLAN)
    gate.open_request("s1")
    with pytest.raises(RuntimeError):
        gate.call("collect_requirements", _fail)
    assert gate.machine.status("s1") is Status.TODO
    assert gate.call("collect_requirements", lambda: "error: none") == "error: none"
    assert gate.machine.status("s1") is Status.DONE


def _fail() -> None:
    raise RuntimeError("the tool failed")


# -- 6. a tamper-evident ledger -------------------------------------------------------------------------
def saved() -> tuple[ToolGate, str]:
    gate = ToolGate(PLAN)
    gate.open_request("s2")
    with pytest.raises(ToolRefused):
        gate.call("draft_rfq", lambda: None)
    gate.open_request("s1")
    gate.call("collect_requirements", lambda: None)
    return gate, dump_ledger(gate.ledger)


def test_an_edited_dropped_or_reordered_entry_is_named_on_load() -> None:
    gate, text = saved()
    assert load_ledger(text) == list(gate.ledger)
    lines = text.splitlines()
    edited = text.replace('"decision":"refuse"', '"decision":"admit"')
    with pytest.raises(
        LedgerFormatError, match=r"ledger line 3 .* does not fit the ledger's chain"
    ):
        load_ledger(edited)
    with pytest.raises(LedgerFormatError, match=r"ledger line 3 is entry 3 .* where entry 2"):
        load_ledger("\n".join(lines[:2] + lines[3:]))
    with pytest.raises(LedgerFormatError, match="ledger line 2 is entry 2"):
        load_ledger("\n".join([lines[0], lines[2], lines[1], *lines[3:]]))
    unsealed = json.dumps({k: v for k, v in json.loads(lines[-2]).items() if k not in ("seq", "seal")})  # fmt: skip
    with pytest.raises(LedgerFormatError, match="has no seal"):
        load_ledger("\n".join([*lines[:-2], unsealed, lines[-1]]))
    with pytest.raises(LedgerFormatError, match="cut short"):  # the last entry and the end line
        load_ledger("\n".join(lines[:-2]))
    with pytest.raises(LedgerFormatError, match="cut short"):  # the last entry, the end kept
        load_ledger("\n".join([*lines[:-2], lines[-1]]))


def test_a_keyed_ledger_refuses_a_recomputed_chain() -> None:
    gate, _ = saved()
    keyed = dump_ledger(gate.ledger, "s3cret")
    assert load_ledger(keyed, "s3cret") == list(gate.ledger)
    forged = dump_ledger(gate.ledger)  # an attacker without the key recomputes the chain
    with pytest.raises(LedgerFormatError, match="sealed with another key"):
        load_ledger(forged, "s3cret")
    with pytest.raises(LedgerFormatError, match="sealed with another key"):
        load_ledger(keyed, "other")


def test_replaying_a_ledger_judges_every_admission_again() -> None:
    gate, _ = saved()
    entries = list(gate.ledger)
    refused = next(i for i, e in enumerate(entries) if isinstance(e, AttemptEntry))
    flipped = entries[refused].model_copy(update={"decision": "admit", "reason": None})
    with pytest.raises(LedgerFormatError, match=r"admits draft_rfq .* \(blocked\)"):
        ToolGate.from_ledger([*entries[:refused], flipped, *entries[refused + 1 :]])
    unknown = AttemptEntry(code="", tool="nope", work_order=entries[-1].work_order,  # type: ignore[union-attr]
                           policy=Policy.STATE_BOUND, decision="admit", step="s9")  # fmt: skip
    with pytest.raises(LedgerFormatError, match="unknown-tool"):
        ToolGate.from_ledger([*entries, unknown])
    loose = PLAN.model_copy(update={"steps": {k: v.model_copy(update={"deps": ()})
                                              for k, v in PLAN.steps.items()}})  # fmt: skip
    plan_entry = entries[0].model_copy(update={"plan": loose})
    with pytest.raises(LedgerFormatError, match="not the plan given"):
        ToolGate.from_ledger([plan_entry, *entries[1:]], plan=PLAN)
    again = RequestEntry(work_order=entries[1].work_order, step="s3")  # type: ignore[union-attr]
    with pytest.raises(LedgerFormatError, match="a second time"):
        ToolGate.from_ledger([*entries, again])


def test_a_receipt_recorded_after_the_request_moved_on_replays() -> None:
    gate = ToolGate(PLAN)
    gate.open_request("s1")
    ticket = gate.begin("collect_requirements")
    gate.open_request("s2")  # the next message came while the tool ran
    gate.finish(ticket, "ok")
    rebuilt = ToolGate.from_ledger(load_ledger(dump_ledger(gate.ledger)), plan=PLAN)
    assert rebuilt.machine.status("s1") is Status.DONE


# -- 7. garbled calls are judged, not raised -----------------------------------------------------------
@pytest.mark.parametrize("name", [None, 123, {"a": 1}, ["draft_rfq"]])
def test_a_garbled_tool_name_is_refused_as_malformed(name: Any) -> None:
    gate = ToolGate(PLAN)
    gate.open_request("s1")
    with pytest.raises(ToolRefused) as refused:
        gate.call(name, _fail)
    assert refused.value.ticket.verdict.reason is Reason.MALFORMED_CALL
    ticket = gate.begin("collect_requirements", work_order=123)  # type: ignore[arg-type]
    assert ticket.verdict.reason is Reason.MALFORMED_CALL


def test_a_step_id_of_five_thousand_digits_is_a_step() -> None:
    a, b = "s" + "7" * 5000, "s" + "7" * 4999
    plan = Plan.model_validate({"steps": {a: {"code": "RC-1", "text": "a"},
                                          b: {"code": "RC-3", "text": "b"},
                                          "s2": {"code": "RC-2", "text": "c", "deps": [a, b]}}})  # fmt: skip
    machine = TaskMachine(plan)
    request = machine.open_request("s2")
    verdict = machine.submit(Booking.of("RC-2", request.work_order), Policy.STATE_BOUND)
    assert verdict.missing == (b, a)  # natural order: the shorter number first
    assert machine.graph.to_plan().steps["s2"].deps == (b, a)


def test_a_tampered_journal_row_is_a_500_naming_the_conversation(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("starlette", reason="needs the proxy extra")
    import sqlite3

    from taskgate.proxy import SQLiteStore

    db = tmp_path / "journal.db"
    replies = [calls_reply("collect_requirements"), Reply("ok")]
    with FakeServer(script(replies)) as upstream:
        from taskgate.proxy import ProxyConfig
        from taskgate.proxy.testing import ProxyServer

        config = ProxyConfig(upstream.base_url, compiler="parser", matcher="lexical")
        with ProxyServer(config, SQLiteStore(db)) as proxy, httpx.Client() as c:
            chat(c, proxy.base_url, opening())
        con = sqlite3.connect(db)
        con.execute("UPDATE journal SET event = ? WHERE seq = 1", (b'{"kind":"ledger","entry":{"kind":"attempt"}}',))  # fmt: skip
        con.commit()
        con.close()
        with caplog.at_level(logging.ERROR), ProxyServer(config, SQLiteStore(db)) as proxy:
            resp = httpx.post(f"{proxy.base_url}/chat/completions",
                              json={"model": "f", "messages": opening()})  # fmt: skip
            listed = httpx.get(f"{proxy.url}/taskgate/conversations")
    assert resp.status_code == 500 and "journal does not fold" in resp.json()["error"]["message"]
    assert listed.status_code == 500
    assert "Traceback" not in caplog.text


def test_an_unreachable_journal_database_is_a_503(proxy_for: Any) -> None:
    pytest.importorskip("psycopg", reason="needs the proxy extra")
    from taskgate.journal.postgres import PostgresStore
    from taskgate.proxy import ProxyConfig
    from taskgate.proxy.testing import ProxyServer

    with FakeServer(script([])) as upstream:
        config = ProxyConfig(upstream.base_url, compiler="parser", matcher="lexical")
        store = PostgresStore("postgresql://nobody@127.0.0.1:1/none")
        with ProxyServer(config, store) as proxy:
            resp = httpx.post(f"{proxy.base_url}/chat/completions",
                              json={"model": "f", "messages": opening()})  # fmt: skip
            listed = httpx.get(f"{proxy.url}/taskgate/conversations")
    assert resp.status_code == 503 and "journal cannot be read" in resp.json()["error"]["message"]
    assert listed.status_code == 503
    assert upstream.requests == []


def test_a_client_gone_mid_upload_is_one_answer() -> None:
    pytest.importorskip("starlette", reason="needs the proxy extra")
    from starlette.requests import ClientDisconnect

    from taskgate.proxy.server import read_body
    from taskgate.serving.errors import HttpError

    class Gone:
        headers: ClassVar[dict[str, str]] = {}

        async def stream(self) -> Any:
            yield b"{"
            raise ClientDisconnect()

    with pytest.raises(HttpError, match="disconnected"):
        asyncio.run(read_body(Gone()))  # type: ignore[arg-type]


# -- 8. tool-name variants are the bound tool ------------------------------------------------------------
@pytest.mark.parametrize("name", ["Draft_RFQ", "DRAFT_RFQ", "functions.draft_rfq", "draft-rfq"])
def test_a_variant_of_a_bound_tools_name_is_judged_as_that_tool(name: str) -> None:
    from taskgate.proxy.gating import Judged, judge_calls, rung

    machine = TaskMachine(PLAN)
    machine.open_request("s2")
    kept, refusals = judge_calls(machine, rung("enforcement"), [tool_call(name)], Judged())
    assert kept == [] and NEED in refusals[0]
    gate = ToolGate(PLAN)
    gate.open_request("s2")
    assert gate.begin(name).verdict.reason is Reason.BLOCKED


def test_a_steps_tool_is_checked_against_the_agents_by_the_same_variant_rule() -> None:
    """A plan step bound to ``GIT-STATUS`` runs calls of ``git_status``, so the agent's tools
    (or an MCP upstream's) offering ``git_status`` satisfy it at start; a tool none offers is
    still one line naming the step."""
    from taskgate import check_tools
    from taskgate.errors import PlanError

    plan = Plan.model_validate({"binding": "tool", "steps": {
        "s1": {"tool": "GIT-STATUS", "text": "check the repository"},
        "s2": {"tool": "git_commit", "text": "commit the change", "deps": ["s1"]},
    }})  # fmt: skip
    check_tools(plan, ["git_status", "Git.Commit"])
    with pytest.raises(PlanError, match=r"s2 \(git_commit\)"):
        check_tools(plan, ["git_status"])
    long_s = Plan.model_validate({"binding": "tool", "steps": {"s1": {"tool": "send_quote"}}})
    with pytest.raises(PlanError, match="send_quote"):
        check_tools(long_s, ["\u017fend_quote"])  # the long s casefolds to 's': no call carries it
    from taskgate.matching.wordings import wordings

    described = wordings(long_s, [("Send-Quote", "Send the customer a price quote.")])
    assert described == {"s1": "Send the customer a price quote"}  # by the variant rule too


# -- 8. run directories: one kind each, and resumes that report what an uninterrupted run does ---------
def test_tools_refuses_a_run_directory_of_the_testbed(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from taskgate.cli import app

    args = ["--agent", "scripted:perfect", "--compiler", "scripted", "--matcher", "scripted",
            "--episodes", "1", "--steps", "5", "--out", str(tmp_path)]  # fmt: skip
    assert CliRunner().invoke(app, ["ladder", *args]).exit_code == 0
    before = (tmp_path / "log.jsonl").read_bytes()
    refused = CliRunner().invoke(app, ["tools", *args])
    assert refused.exit_code != 0
    assert "holds the testbed's runs, not the tool harness's (actions mode)" in refused.output
    assert (tmp_path / "log.jsonl").read_bytes() == before


def test_a_resumed_run_reports_the_compile_cost_an_uninterrupted_one_does(tmp_path: Any) -> None:
    from taskgate import ChatClient, Endpoint, protocol_responder
    from taskgate.lab import LadderConfig, run_ladder
    from taskgate.lab.reporting.runs import load_runs
    from taskgate.lab.scoring.usage import usage_rows

    arms = ["raw", "checklist", "directive", "enforcement"]
    config = LadderConfig(arms=arms, agent="llm", compiler="llm", matcher="llm", steps=(10,),
                          episodes=2, concurrency=4)  # fmt: skip
    served = {"n": 0}

    def down_after_60(body: dict[str, Any]) -> Any:
        served["n"] += 1
        if served["n"] > 60:
            raise RuntimeError("the server went down")
        return protocol_responder(body)

    async def run(out: Any, responder: Any) -> int:
        with FakeServer(responder) as server:
            async with ChatClient(Endpoint(server.base_url, "fake", attempts=1)) as client:
                return (await run_ladder(config, out, client=client)).failed

    assert asyncio.run(run(tmp_path / "whole", protocol_responder)) == 0
    assert asyncio.run(run(tmp_path / "resumed", down_after_60)) > 0  # interrupted part-way
    assert asyncio.run(run(tmp_path / "resumed", protocol_responder)) == 0

    def cost(d: str) -> dict[str, float]:
        rows = usage_rows(load_runs([tmp_path / d]).entries, arms)
        return {r.arm: r.compiler_tokens for r in rows}

    whole = cost("whole")
    assert whole == cost("resumed")
    assert whole["directive"] == whole["enforcement"] > 0 == whole["raw"]


# -- attacks from the review of this work ---------------------------------------------------------
def late_receipts(k: int) -> ToolGate:
    """A gate whose k receipts each arrived after the next request opened (judged_at set)."""
    steps = {f"s{i}": {"tool": f"t{i}", "text": f"step {i}"} for i in range(k)}
    gate = ToolGate(Plan.model_validate({"binding": "tool", "steps": steps}))
    gate.open_request("s0")
    for i in range(k):
        ticket = gate.begin(f"t{i}")
        gate.open_request(f"s{(i + 1) % k}")  # the next message came while the tool ran
        gate.finish(ticket, "ok")
    return gate


def test_late_receipts_replay_without_nested_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    gate = late_receipts(40)
    assert all(e.judged_at for e in gate.ledger if isinstance(e, AttemptEntry))
    calls = {"n": 0}
    real = TaskMachine.from_ledger.__func__  # type: ignore[attr-defined]

    def counted(cls: Any, *args: Any, **kwargs: Any) -> TaskMachine:
        calls["n"] += 1
        return real(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(TaskMachine, "from_ledger", classmethod(counted))
    rebuilt = ToolGate.from_ledger(gate.ledger, plan=gate.machine.ledger[0].plan)  # type: ignore[union-attr]
    assert calls["n"] == 1  # one replay: the state at each judged_at is read, not rebuilt
    assert rebuilt.machine.statuses() == gate.machine.statuses()


def test_a_receipt_edited_to_name_a_weaker_policy_is_judged_by_the_gates() -> None:
    gate, _ = saved()
    entries = list(gate.ledger)
    refused = next(i for i, e in enumerate(entries) if isinstance(e, AttemptEntry))
    flipped = entries[refused].model_copy(
        update={"decision": "admit", "reason": None, "policy": Policy.UNGATED}
    )
    forged = [*entries[:refused], flipped, *entries[refused + 1 :]]
    with pytest.raises(LedgerFormatError, match=r"\(blocked\)"):
        ToolGate.from_ledger(forged, plan=PLAN)  # state-bound: at least that strict
    assert load_ledger(dump_ledger(forged))  # the chain alone, recomputed, cannot tell


def test_a_second_receipt_of_a_step_in_flight_is_refused_on_replay() -> None:
    gate = late_receipts(3)
    entries = list(gate.ledger)
    receipt = next(e for e in entries if isinstance(e, AttemptEntry))
    with pytest.raises(LedgerFormatError, match="again, though its call was in flight"):
        ToolGate.from_ledger([*entries, receipt])


@pytest.mark.parametrize("variant", ["SEND_RFQ", "Send_Rfq", "send-rfq", "functions.send_rfq"])
def test_one_redo_runs_a_step_once_whatever_its_tools_spelling(variant: str) -> None:
    from taskgate.proxy.gating import Judged, judge_calls, rung

    gate = ToolGate(PLAN, Policy.UNGATED)
    for step in ("s1", "s2", "s3"):
        gate.open_request(step)
        gate.call(str(PLAN.steps[step].tool), lambda: None)
    gate.policy = Policy.STATE_BOUND
    gate.open_request("s3", explicit_redo=True)
    gate.call("send_rfq", lambda: None)  # the redo
    assert gate.begin(variant).verdict.reason is Reason.ALREADY_DONE
    machine = gate.machine
    kept, _ = judge_calls(machine, rung("enforcement"), [tool_call(variant)], Judged())
    assert kept == []


def test_a_batch_whose_calls_share_an_id_books_neither_on_one_answer() -> None:
    from taskgate.proxy.gating import Judged, judge_calls, rung

    machine = TaskMachine(PLAN)
    machine.open_request("s1")
    twins = [tool_call("collect_requirements", "call_0"), tool_call("send_rfq", "call_0")]
    kept, refusals = judge_calls(machine, rung("enforcement"), twins, Judged())
    assert kept == [] and len(refusals) == 2
    nameless = [{k: v for k, v in tool_call("collect_requirements").items() if k != "id"}]
    kept, _ = judge_calls(machine, rung("enforcement"), nameless, Judged())
    assert kept == []


def test_a_namespace_is_dropped_only_when_it_is_a_frameworks() -> None:
    plan = Plan.model_validate({"binding": "tool", "steps": {
        "s1": {"tool": "crm.send_quote", "text": "send the quote"}}})  # fmt: skip
    graph = TaskMachine(plan).graph
    assert graph.step_for_tool("mail.send_quote") is None  # another tool
    assert graph.step_for_tool("crm_send_quote") == "s1"  # the OpenAI-legal spelling
    assert graph.step_for_tool("functions.crm.send_quote") == "s1"


def test_a_ledger_whose_text_holds_line_separators_round_trips() -> None:
    plan = Plan.model_validate({"binding": "tool", "steps": {
        "s1": {"tool": "collect", "text": "legal\u2028review\u0085now"}}})  # fmt: skip
    gate = ToolGate(plan)
    gate.open_request("s1")
    gate.call("collect", lambda: None)
    assert load_ledger(dump_ledger(gate.ledger)) == list(gate.ledger)


def test_a_header_that_is_not_ascii_is_a_400(proxy_for: Any) -> None:
    with FakeServer(script([])) as upstream, proxy_for(upstream) as proxy:
        bad = {"Authorization": "Bearer caf\u00e9".encode("latin-1")}
        gated = httpx.post(f"{proxy.base_url}/chat/completions", headers=bad,
                           json={"model": "f", "messages": opening()})  # fmt: skip
        plain = httpx.post(f"{proxy.base_url}/chat/completions", headers=bad,
                           json={"model": "f", "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
        models = httpx.get(f"{proxy.base_url}/models", headers=bad)
    for resp in (gated, plain, models):
        assert resp.status_code == 400 and "must be ASCII" in resp.json()["error"]["message"]
    assert upstream.requests == []


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=8),
       st.lists(st.booleans(), min_size=8, max_size=8))  # fmt: skip
def test_retracting_pending_attempts_equals_a_replay_of_the_committed(
    batch: list[tuple[int, bool]], keep: list[bool]
) -> None:
    machine = TaskMachine(PLAN)
    machine.open_request("s1", explicit_redo=True)
    committed = list(machine.ledger)
    wo = machine.request.work_order  # type: ignore[union-attr]
    for i, admit in batch:
        booking = Booking.tool_call(str(PLAN.steps[f"s{i + 1}"].tool), wo)
        verdict = machine.judge(booking) if admit else machine.judge(booking, Policy.REQUEST_BOUND)
        machine.record(booking, verdict, Policy.STATE_BOUND)
    pending = list(machine.ledger[len(committed) :])
    kept = [a for a, k in zip(pending, keep, strict=False) if k]
    machine.retract(len(pending))
    for entry in kept:
        machine.record(
            Booking(entry.code, entry.work_order, tool=entry.tool),  # type: ignore[union-attr]
            _verdict_of(entry),
            Policy.STATE_BOUND,
        )
    replayed = TaskMachine(PLAN)
    for entry in [*committed[1:], *kept]:
        replayed._append(entry)
    assert machine.snapshot() == replayed.snapshot()


def _verdict_of(entry: Any) -> Any:
    from taskgate import Verdict

    return Verdict(entry.decision, entry.step, entry.reason, entry.missing)


def test_the_brief_cache_keeps_no_prompt() -> None:
    pytest.importorskip("starlette", reason="needs the proxy extra")
    from taskgate.proxy import server

    huge = "x" * 1_000_000
    assert not server._is_brief(huge)
    assert all(isinstance(k, bytes) and len(k) == 16 for k in server._BRIEFS)


# -- attacks from the second review ------------------------------------------------------------------
def _collect_agent(saver: Any, middleware: Any = None, extra: list[Any] | None = None) -> tuple[Any, list[str], Any]:  # fmt: skip
    """An agent whose model calls the tool the user names, once per user message."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage

    from taskgate.integrations.langgraph import TaskGateMiddleware

    ran: list[str] = []
    collect_requirements, draft_rfq = lg_tools(ran)

    class Naming:
        """Calls the tool whose words the last user message holds, then says ok."""

        n = 0

        def __call__(self, messages: list[Any]) -> AIMessage:
            last = messages[-1] if messages else None
            if last is None or last.type == "tool":
                return AIMessage("ok")
            Naming.n += 1
            name = "draft_rfq" if "draft" in str(last.content) else "collect_requirements"
            args = {"title": ""} if name == "draft_rfq" else {"scope": ""}
            return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{Naming.n}", "type": "tool_call"}])  # fmt: skip

    from taskgate.integrations.langgraph.testing import ScriptedChatModel

    class Model(ScriptedChatModel):
        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:  # fmt: skip
            from langchain_core.outputs import ChatGeneration, ChatResult

            return ChatResult(generations=[ChatGeneration(message=Naming()(messages))])

    gate = middleware or TaskGateMiddleware(LG_PLAN)
    agent = create_agent(Model([]), [collect_requirements, draft_rfq],
                         middleware=[gate, *(extra or [])], checkpointer=saver)  # fmt: skip
    return agent, ran, gate


def _said(result: dict[str, Any]) -> str:
    from langchain_core.messages import ToolMessage

    last = [m for m in result["messages"] if isinstance(m, ToolMessage)][-1]
    return f"{last.status}: {last.content}"


def test_a_thread_books_on_after_a_stray_row_in_its_state() -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from taskgate.integrations.langgraph import LEDGER_KEY

    agent, ran, _ = _collect_agent(InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke(Command(update={LEDGER_KEY: [{"kind": "nope"}]}), config)
    assert _said(agent.invoke({"messages": [HumanMessage("collect them")]}, config)).startswith(
        "success"
    )
    assert "already" in _said(agent.invoke({"messages": [HumanMessage("collect them")]}, config))
    assert _said(agent.invoke({"messages": [HumanMessage("draft it")]}, config)).startswith(
        "success"
    )
    assert ran == ["collect", "draft"]


def test_a_refusal_whose_call_never_ran_breaks_nothing() -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain.agents.middleware import ToolCallLimitMiddleware
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    limit = ToolCallLimitMiddleware(run_limit=1)
    agent, ran, _ = _collect_agent(InMemorySaver(), extra=[limit])
    config = {"configurable": {"thread_id": "t"}}
    for words in ("collect them", "collect them", "draft it", "draft it"):
        agent.invoke({"messages": [HumanMessage(words)]}, config)
    assert ran == ["collect", "draft"]


def test_a_fork_resumed_from_an_earlier_checkpoint_books() -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    agent, ran, _ = _collect_agent(InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("collect them")]}, config)
    before_tools = next(s for s in agent.get_state_history(config) if s.next == ("tools",))
    agent.invoke(None, before_tools.config)  # time travel: the collect runs again on the fork
    now = agent.invoke({"messages": [HumanMessage("draft it")]}, config)
    assert ran == ["collect", "collect", "draft"] and _said(now).startswith("success")


def test_conversations_without_a_thread_id_have_their_own_gates() -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from unittest import mock

    from langchain_core.messages import HumanMessage

    from taskgate.integrations.langgraph import middleware as mw

    with mock.patch.object(mw, "get_config", return_value={"configurable": {}}):
        x = mw._thread_of({"messages": [HumanMessage("a", id="m-x")]})
        y = mw._thread_of({"messages": [HumanMessage("a", id="m-y")]})
        assert x != y and x.endswith("m-x")
    with mock.patch.object(mw, "get_config", return_value={"configurable": {"thread_id": 7}}):
        assert mw._thread_of({"messages": []}) == "7"


def test_a_tool_that_answers_with_a_command_carrying_an_error_books_nothing() -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain_core.messages import ToolMessage
    from langgraph.types import Command

    from taskgate.integrations.langgraph.middleware import _succeeded

    failed = Command(update={"messages": [ToolMessage("no", tool_call_id="c1", status="error")]})
    assert not _succeeded(failed, "c1") and _succeeded(failed, "c2")
    assert _succeeded(Command(update={"messages": [ToolMessage("ok", tool_call_id="c1")]}), "c1")


def test_ungated_duplicates_in_one_batch_replay() -> None:
    from taskgate.journal.events import Conversation, LedgerEvent
    from taskgate.proxy.gating import Judged, judge_calls, rung

    gate = ToolGate(PLAN, Policy.UNGATED)
    gate.open_request("s1")
    first, second = gate.begin_all(["collect_requirements", "collect_requirements"])
    assert first.admitted and second.verdict.reason is Reason.IN_PROGRESS
    gate.finish(first, "ok")
    assert ToolGate.from_ledger(gate.ledger, Policy.UNGATED).machine.status("s1") is Status.DONE
    conv = Conversation("k")
    from taskgate.core.ledger import PlanEntry

    conv.apply(LedgerEvent(entry=PlanEntry(plan=PLAN)))
    conv.machine.open_request("s1", work_order="#W1")
    twice = [tool_call("collect_requirements", "a"), tool_call("collect_requirements", "b")]
    kept, _ = judge_calls(conv.machine, rung("raw"), twice, Judged())
    assert len(kept) == 2  # the raw rung hands out everything; the second is no second receipt
    replayed = TaskMachine.from_ledger(conv.machine.ledger)  # no second receipt to refuse
    assert replayed.statuses() == conv.machine.statuses()


def test_late_receipts_across_revisions_replay_as_the_live_gate_judged() -> None:
    from taskgate import Revision

    plan = Plan.model_validate({"binding": "tool", "steps": {f"s{i}": {
        "tool": f"t{i}", "text": f"step {i}", "deps": [f"s{i - 1}"] if i else []} for i in range(6)}})  # fmt: skip
    gate = ToolGate(plan)
    for i in range(6):
        gate.open_request(f"s{i}")
        ticket = gate.begin(f"t{i}")
        if i == 2:
            gate.revise(Revision(rewires={"s4": ("s2",)}))  # while the tool runs
        if i == 3:
            gate.revise(Revision(cancel="s5", rewires={}))
        gate.open_request(None)
        gate.finish(ticket, "ok")
    rebuilt = ToolGate.from_ledger(load_ledger(dump_ledger(gate.ledger)), plan=plan)
    assert rebuilt.machine.snapshot() == gate.machine.snapshot()


def test_a_journal_written_at_one_rung_folds_at_another() -> None:
    from taskgate.core.ledger import PlanEntry
    from taskgate.journal.events import Conversation, LedgerEvent

    machine = TaskMachine(PLAN)
    request = machine.open_request("s2")
    at_raw = AttemptEntry(code="", tool="draft_rfq", work_order=request.work_order,
                          policy=Policy.UNGATED, decision="admit", step="s2")  # fmt: skip
    events = [LedgerEvent(entry=PlanEntry(plan=PLAN)), LedgerEvent(entry=machine.last_entry()),
              LedgerEvent(entry=at_raw)]  # fmt: skip
    assert Conversation("k", events).machine.status("s2") is Status.DONE  # as it was written


def test_a_call_a_person_rejected_reserves_no_step() -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from taskgate.integrations.langgraph import ScriptedChatModel, TaskGateMiddleware

    ran: list[str] = []
    collect_requirements, draft_rfq = lg_tools(ran)

    def call(name: str, cid: str, **args: Any) -> dict[str, Any]:
        return {"name": name, "args": args, "id": cid, "type": "tool_call"}

    hitl = HumanInTheLoopMiddleware(
        interrupt_on={"collect_requirements": {"allowed_decisions": ["approve", "reject"]}}
    )
    script = [AIMessage("", tool_calls=[call("collect_requirements", "c1", scope=""),
                                        call("draft_rfq", "d1", title="")]),
              AIMessage("", tool_calls=[call("collect_requirements", "c2", scope="the")]),
              "done"]  # fmt: skip
    agent = create_agent(ScriptedChatModel(script), [collect_requirements, draft_rfq],
                         middleware=[TaskGateMiddleware(LG_PLAN), hitl],
                         checkpointer=InMemorySaver())  # fmt: skip
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("please collect the requirements")]}, config)
    result = agent.invoke(
        Command(resume={"decisions": [{"type": "reject", "message": "no"}]}), config
    )
    if result.get("__interrupt__"):  # the retried collect: approved
        result = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    answers = {m.tool_call_id: m.status for m in result["messages"] if isinstance(m, ToolMessage)}
    assert ran == ["collect"] and answers["c2"] == "success" and answers["d1"] == "error"


def test_sealed_rows_read_back_in_any_order_and_only_in_their_scope() -> None:
    from taskgate import sealed_rows, unseal_rows

    gate, _ = saved()
    rows = sealed_rows(gate.ledger, scope="conv-1")
    assert unseal_rows(list(reversed(rows)), scope="conv-1") == list(gate.ledger)
    with pytest.raises(LedgerFormatError, match="belongs to another conversation"):
        unseal_rows(rows, scope="conv-2")
    edited = [dict(r) for r in rows]
    edited[2]["step"] = "s1"
    with pytest.raises(LedgerFormatError, match="ledger entry 2"):
        unseal_rows(edited, scope="conv-1")
