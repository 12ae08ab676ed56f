"""The gate fails closed: when what it depends on fails (the compiler's reply, the helper model,
a revision it cannot read), it refuses, says so once in its log, counts it in the metrics, and
never lets a call run that it would otherwise refuse. Each test injects one failure."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from plans import PROPOSAL, TABLES
from taskgate import FakeServer, Plan, Reply, harness_brief, render_brief, script
from taskgate.llm.fake import ToolCall
from taskgate.proxy import ProxyConfig
from taskgate.proxy.testing import ProxyServer

PROSE = "Sure! First you should collect the requirements, and then draft the RFQ."
TOOLS_PLAN = Plan.model_validate({"binding": "tool", "steps": {
    "s1": {"tool": "collect_requirements", "text": "collect the requirements"},
    "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"]},
}})  # fmt: skip
CODES_PLAN = Plan.model_validate({"steps": {
    "s1": {"code": "RC-1001", "text": "collect the requirements"},
    "s2": {"code": "RC-1002", "text": "draft the RFQ", "deps": ["s1"]},
}})  # fmt: skip


def _draft() -> Reply:
    return Reply("", tool_calls=(ToolCall("draft_rfq", {"work_order": "#W3001"}, id="c1"),))


def _chat(proxy: ProxyServer, brief: str, message: str) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "system", "content": brief},
                                       {"role": "user", "content": message}]}  # fmt: skip
    return httpx.post(f"{proxy.base_url}/chat/completions", json=body, timeout=30)


@pytest.mark.parametrize("brief", ["native", "codes"])
def test_attack_a_compiler_answering_in_prose_refuses_the_brief_and_runs_nothing(
    brief: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The model answers the compile prompt (and its re-ask) in prose: the proxy used to fall
    back to the brief's step texts, a plan binding no tool and no code, so ``draft_rfq`` passed
    as a tool no step is bound to (and booking lines were stripped as unknown)."""
    text = harness_brief(TOOLS_PLAN, "native") if brief == "native" else render_brief(CODES_PLAN)
    with FakeServer(script([PROSE, PROSE, _draft()])) as upstream:
        with ProxyServer(ProxyConfig(upstream.base_url)) as proxy:
            answer = _chat(proxy, text, "Draft the RFQ (#W3001).")
            metrics = httpx.get(f"{proxy.url}/taskgate/metrics").json()
            listed = httpx.get(f"{proxy.url}/taskgate/conversations").json()
        asked = len(upstream.requests)
    assert answer.status_code == 422
    said = answer.json()["error"]["message"]
    assert "could not be compiled" in said and "unusable after a re-ask" in said
    assert "--on-compile-error forward" in said  # the operator's explicit choice, named
    assert "tool_calls" not in answer.text  # the agent's call never reached the client
    assert asked == 2  # the compile and its re-ask; the agent's turn was never asked for
    assert metrics["refused"] == {"compile-failed": 1} and metrics["ungated"] == {}
    assert listed["conversations"] == [] or all(not c["started"] for c in listed["conversations"])
    lines = [r.getMessage() for r in caplog.records if "could not be compiled" in r.getMessage()]
    assert len(lines) == 1


def test_a_compile_failure_is_forwarded_only_where_the_operator_chose_it() -> None:
    text = harness_brief(TOOLS_PLAN, "native")
    with FakeServer(script([PROSE, PROSE, _draft()])) as upstream:
        config = ProxyConfig(upstream.base_url, on_compile_error="forward")
        with ProxyServer(config) as proxy:
            answer = _chat(proxy, text, "Draft the RFQ (#W3001).")
            metrics = httpx.get(f"{proxy.url}/taskgate/metrics").json()
    assert answer.status_code == 200  # ungated, as the operator chose, and counted
    assert metrics["ungated"] == {"compile-failed": 1}


def test_attack_a_plan_the_validator_rejects_is_never_installed() -> None:
    """A compiler reply that parses but binds steps to nothing (empty tools), or loops, is
    refused like an unreadable one."""
    empty = '{"steps": {"s1": {"deps": [], "tool": ""}, "s2": {"deps": ["s1"], "tool": ""}}}'
    looped = (
        '{"steps": {"s1": {"deps": ["s2"], "tool": "collect_requirements"}, '
        '"s2": {"deps": ["s1"], "tool": "draft_rfq"}}}'
    )
    for reply, why in ((empty, "is bound to ''"), (looped, "cycle")):
        with FakeServer(script([reply, _draft()])) as upstream, \
                ProxyServer(ProxyConfig(upstream.base_url)) as proxy:  # fmt: skip
            answer = _chat(proxy, harness_brief(TOOLS_PLAN, "native"), "Draft it (#W3001).")
        assert answer.status_code == 422, why
        assert why in answer.json()["error"]["message"]


def test_attack_a_revision_the_helper_cannot_read_changes_nothing_and_is_refused() -> None:
    """A cancel the compiler's model answers in prose used to be read as no change at all,
    leaving the cancelled step runnable; now the turn is refused (nothing written) and the same
    request sent again, with the model back, cancels it."""
    compiled = '{"steps": {"s1": {"deps": [], "code": "RC-1001"}, "s2": {"deps": ["s1"], "code": "RC-1002"}}}'  # fmt: skip
    cancel = '{"cancel": "s2", "rewires": {}, "relax": null}'
    brief = render_brief(CODES_PLAN)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": brief},
        {"role": "user", "content": "Drop the RFQ draft, we no longer need it."},
    ]
    replies = [compiled, PROSE, PROSE, compiled, cancel, "Understood."]
    with FakeServer(script(replies)) as upstream, \
            ProxyServer(ProxyConfig(upstream.base_url)) as proxy, httpx.Client() as client:  # fmt: skip
        url = f"{proxy.base_url}/chat/completions"
        first = client.post(url, json={"model": "m", "messages": messages}, timeout=30)
        before = client.get(f"{proxy.url}/taskgate/conversations").json()["conversations"]
        again = client.post(url, json={"model": "m", "messages": messages}, timeout=30)
        key = client.get(f"{proxy.url}/taskgate/conversations").json()["conversations"]
        state = client.get(f"{proxy.url}/taskgate/conversations/{key[0]['id']}").json()
        metrics = client.get(f"{proxy.url}/taskgate/metrics").json()
    assert first.status_code == 502 and "no usable revision" in first.text
    assert before == [] or before[0]["turns"] == 0  # nothing of the refused turn was written
    assert again.status_code == 200
    assert state["statuses"]["s2"] == "CANCELLED"
    assert metrics["refused"].get("revision-unreadable") == 1


# -- calls judged with every argument, on every surface --------------------------------------------
FORTY = {"restaurant": "Chez Pierre", "party_size": 40, "time": "19:00"}


def _reserve(ran: list[int]) -> Any:
    def reserve_table(restaurant: str, party_size: int, time: str) -> str:
        """Reserve a table at a restaurant."""
        ran.append(party_size)
        return "reserved"

    return reserve_table


def _agreed() -> Any:
    from taskgate import ToolGate

    gate = ToolGate(TABLES)
    gate.user_message("Yes.", agent=PROPOSAL)
    return gate


def test_attack_a_call_passed_by_position_is_judged_with_its_values() -> None:
    """``ToolGate.call`` judged only keyword arguments: a yes to a table for 2 ran one for 40
    when the values came by position."""
    from taskgate import ToolRefused

    ran: list[int] = []
    with pytest.raises(ToolRefused):
        _agreed().call("reserve_table", _reserve(ran), *FORTY.values())
    with pytest.raises(ToolRefused):
        _agreed().call("reserve_table", _reserve(ran), "Chez Pierre", 40, time="19:00")
    assert ran == []
    _agreed().call("reserve_table", _reserve(ran), "Chez Pierre", 2, "19:00")
    assert ran == [2]


def test_attack_the_sdk_adapters_judge_a_call_with_its_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The OpenAI Agents SDK and PydanticAI adapters judged a call by its tool's name alone."""
    import asyncio

    pytest.importorskip("agents", reason="needs the openai-agents extra")
    pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    from agents import Agent, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from taskgate.integrations.openai_agents import gated
    from taskgate.integrations.pydantic_ai import TaskGate

    ran: list[int] = []
    model = ScriptedModel([[function_call("reserve_table", FORTY, call_id="c1")],
                           [assistant_message("done")]])  # fmt: skip
    agent = Agent(name="a", instructions="x", tools=[function_tool(_reserve(ran))], model=model)
    asyncio.run(Runner.run(gated(agent, _agreed()), "Yes."))

    def scripted(messages: Any, info: Any) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("reserve_table", FORTY, tool_call_id="c1")])

    pydantic = PydanticAgent(FunctionModel(scripted), tools=[_reserve(ran)],
                             capabilities=[TaskGate(_agreed())])  # fmt: skip
    asyncio.run(pydantic.run("Yes."))
    assert ran == []


def test_attack_a_model_turn_whose_calls_share_an_id_is_judged_with_arguments() -> None:
    """The middleware judged a call outside its batch (no id, or one shared with another call)
    by its name alone."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from taskgate.integrations.langgraph import ScriptedChatModel, TaskGateMiddleware

    ran: list[int] = []

    @tool
    def reserve_table(restaurant: str, party_size: int, time: str) -> str:
        """Reserve a table at a restaurant."""
        ran.append(party_size)
        return "reserved"

    @tool
    def look_up(name: str) -> str:
        """Look up a restaurant."""
        return "open"

    calls = [{"name": "reserve_table", "args": FORTY, "id": "c1", "type": "tool_call"},
             {"name": "look_up", "args": {"name": "x"}, "id": "c1", "type": "tool_call"}]  # fmt: skip
    model = ScriptedChatModel([PROPOSAL, AIMessage("", tool_calls=calls), "Done."])
    agent = create_agent(model, [reserve_table, look_up], checkpointer=InMemorySaver(),
                         middleware=[TaskGateMiddleware(TABLES)])  # fmt: skip
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [("user", "Dinner for two tomorrow.")]}, config)
    agent.invoke({"messages": [("user", "Yes.")]}, config)
    assert ran == []


# -- the proxy ------------------------------------------------------------------------------------
def _completion(arguments: object, status: int = 200) -> bytes:
    import orjson

    call = {"id": "c1", "type": "function",
            "function": {"name": "reserve_table", "arguments": arguments}}  # fmt: skip
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "finish_reason": "tool_calls", "message": message}
    return orjson.dumps({"id": "x", "object": "chat.completion", "model": "m", "created": 0,
                         "choices": [choice]})  # fmt: skip


def _handed_out(answer: httpx.Response) -> list[str]:
    message = answer.json()["choices"][0]["message"]
    return [c["function"]["name"] for c in message.get("tool_calls") or []]


def test_attack_call_arguments_sent_as_an_object_are_read() -> None:
    """Some servers send a call's arguments as a JSON object, not its text: the gate read them
    as none, and a yes to a table for 2 handed out one for 40."""
    from proxy_helpers import RawUpstream

    messages = [{"role": "system", "content": "You book tables."},
                {"role": "assistant", "content": PROPOSAL}, {"role": "user", "content": "Yes."}]  # fmt: skip
    for arguments in (FORTY, '{"restaurant": "Chez Pierre", "party_size": 40, "time": "19:00"}'):
        with RawUpstream([_completion(arguments)]) as upstream, \
                ProxyServer(ProxyConfig(upstream.base_url, plan=TABLES)) as proxy:  # fmt: skip
            answer = httpx.post(f"{proxy.base_url}/chat/completions",
                                json={"model": "m", "messages": messages})  # fmt: skip
        assert answer.status_code == 200 and _handed_out(answer) == [], arguments


@pytest.mark.parametrize("stream", [False, True])
def test_attack_an_upstream_success_other_than_200_is_not_passed_on(stream: bool) -> None:
    """A 203 (any 2xx but 200) was relayed unjudged, tool calls and all: client SDKs take any
    2xx for a completion."""
    from proxy_helpers import RawUpstream

    body = _completion("{}")
    if stream:
        body = b"data: " + body + b"\n\ndata: [DONE]\n\n"
    with RawUpstream([body], status=203) as upstream, \
            ProxyServer(ProxyConfig(upstream.base_url, plan=TABLES)) as proxy:  # fmt: skip
        answer = httpx.post(f"{proxy.base_url}/chat/completions", json={
            "model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
    assert answer.status_code == 502 and "HTTP 203" in answer.text
    assert "reserve_table" not in answer.text


def test_attack_a_plan_mode_request_without_a_user_message_is_refused_not_forwarded() -> None:
    """It was forwarded ungated: the calls of blocked steps in its reply reached the client."""
    with FakeServer(script([_draft()])) as upstream, \
            ProxyServer(ProxyConfig(upstream.base_url, plan=TOOLS_PLAN)) as proxy:  # fmt: skip
        for messages in ([{"role": "system", "content": "Draft the RFQ now."}],
                         [{"role": "developer", "content": "Draft it."},
                          {"role": "assistant", "content": "On it."}]):  # fmt: skip
            answer = httpx.post(f"{proxy.base_url}/chat/completions",
                                json={"model": "m", "messages": messages})  # fmt: skip
            assert answer.status_code == 400 and "user's message" in answer.text
        metrics = httpx.get(f"{proxy.url}/taskgate/metrics").json()
        asked = len(upstream.requests)
    assert asked == 0 and metrics["refused"] == {"no-user-turn": 2}


def test_attack_a_revision_naming_steps_the_plan_lacks_is_refused_not_dropped() -> None:
    """A revision naming a step the plan lacks was dropped whole (its right cancel with it),
    silently: the cancelled step's booking was then admitted."""
    compiled = '{"steps": {"s1": {"deps": [], "code": "RC-1001"}, "s2": {"deps": ["s1"], "code": "RC-1002"}}}'  # fmt: skip
    wrong = '{"cancel": "s2", "rewires": {"s3": ["s1"]}, "relax": null}'
    messages = [{"role": "system", "content": render_brief(CODES_PLAN)},
                {"role": "user", "content": "Drop the RFQ draft, we no longer need it."}]  # fmt: skip
    with FakeServer(script([compiled, wrong])) as upstream, \
            ProxyServer(ProxyConfig(upstream.base_url)) as proxy:  # fmt: skip
        answer = httpx.post(f"{proxy.base_url}/chat/completions",
                            json={"model": "m", "messages": messages}, timeout=30)  # fmt: skip
        metrics = httpx.get(f"{proxy.url}/taskgate/metrics").json()
    assert answer.status_code == 502 and "steps the plan does not have" in answer.text
    assert metrics["refused"] == {"revision-unreadable": 1}


def test_attack_a_compiled_plan_that_leaves_out_what_the_brief_says_is_refused() -> None:
    """The compiler's plan was checked only against itself: one leaving out a step (its tool
    then unbound, so it ran) or a prerequisite (its step unblocked) was installed."""
    left_out = '{"steps": {"s1": {"deps": [], "tool": "collect_requirements"}}}'
    no_deps = ('{"steps": {"s1": {"deps": [], "tool": "collect_requirements"}, '
               '"s2": {"deps": [], "tool": "draft_rfq"}}}')  # fmt: skip
    renamed = ('{"steps": {"s1": {"deps": [], "tool": "collect_requirements"}, '
               '"s2": {"deps": ["s1"], "tool": "send_rfq"}}}')  # fmt: skip
    for reply, said in ((left_out, "leaves out step s2"), (no_deps, "lost its prerequisites s1"),
                        (renamed, "bound to 'send_rfq'")):  # fmt: skip
        with FakeServer(script([reply, _draft()])) as upstream, \
                ProxyServer(ProxyConfig(upstream.base_url)) as proxy:  # fmt: skip
            answer = _chat(proxy, harness_brief(TOOLS_PLAN, "native"), "Draft it (#W3001).")
        assert answer.status_code == 422 and said in answer.text, said


def test_attack_a_code_bound_briefs_native_calls_follow_the_unbound_policy() -> None:
    """With a code-bound brief, native tool calls were never judged: ``--unbound refuse`` was
    ignored and every call passed."""
    compiled = '{"steps": {"s1": {"deps": [], "code": "RC-1001"}, "s2": {"deps": ["s1"], "code": "RC-1002"}}}'  # fmt: skip
    pay = Reply("", tool_calls=(ToolCall("pay_vendor", {"amount": 9000}, id="c1"),))
    for unbound, handed in (("refuse", []), ("run", ["pay_vendor"])):
        with FakeServer(script([compiled, pay])) as upstream, \
                ProxyServer(ProxyConfig(upstream.base_url, matcher="lexical",
                                        unbound=unbound)) as proxy:  # fmt: skip
            answer = _chat(proxy, render_brief(CODES_PLAN), "Collect them (#W1001).")
        message = answer.json()["choices"][0]["message"]
        assert [c["function"]["name"] for c in message.get("tool_calls") or []] == handed
        if not handed:
            assert "pay_vendor was not run" in message["content"]


def test_attack_a_retried_reply_is_judged_after_the_operators_held_cancel() -> None:
    """A client's retry of a hop whose reply handed out nothing asked the upstream again and
    judged its new reply without the operator's cancel held since."""
    plan = Plan.model_validate({"binding": "tool", "steps": {
        "s1": {"tool": "collect_requirements", "text": "collect the requirements"},
        "s2": {"tool": "send_rfq", "text": "send the RFQ to the vendors"}}})  # fmt: skip
    send = Reply("", tool_calls=(ToolCall("send_rfq", {}, id="c2"),))
    messages = [{"role": "system", "content": "You buy things."},
                {"role": "user", "content": "Send the RFQ to the vendors."}]  # fmt: skip
    config = ProxyConfig("", plan=plan, status_token="ops")
    with FakeServer(script([Reply("Let me check first."), send])) as upstream:
        config.upstream = upstream.base_url
        with ProxyServer(config) as proxy, httpx.Client() as client:
            url = f"{proxy.base_url}/chat/completions"
            first = client.post(url, json={"model": "m", "messages": messages})
            assert first.status_code == 200 and _handed_out(first) == []
            ops = {"Authorization": "Bearer ops"}
            key = client.get(f"{proxy.url}/taskgate/conversations", headers=ops).json()
            held = client.post(f"{proxy.url}/taskgate/conversations/{key['conversations'][0]['id']}"
                               "/revisions", json={"cancel": "s2"}, headers=ops)  # fmt: skip
            assert held.status_code == 200, held.text
            retried = client.post(url, json={"model": "m", "messages": messages})
    assert retried.status_code == 200 and _handed_out(retried) == []
    assert "cancel" in (retried.json()["choices"][0]["message"]["content"] or "")


# -- the core and the MCP gate --------------------------------------------------------------------
def test_attack_a_message_the_reader_fails_on_does_not_leave_the_last_request_open() -> None:
    """A matcher that raised (a judge's model down) left the previous message's request open,
    so the step it asked for ran after a "stop" the gate never read."""
    from taskgate import ToolGate, ToolRefused
    from taskgate.understanding.reader import ConversationReader

    class Flaky(ConversationReader):
        calls = 0

        async def aread(self, *args: Any, **kwargs: Any) -> Any:
            Flaky.calls += 1
            if Flaky.calls > 1:
                raise ConnectionError("the judge's model is down")
            return await super().aread(*args, **kwargs)

    plan = Plan.model_validate({"binding": "tool", "steps": {
        "s2": {"tool": "send_rfq", "text": "send the RFQ to the vendors"}}})  # fmt: skip
    gate, reader = ToolGate(plan), Flaky()
    gate.user_message("Send the RFQ to the vendors.", reader)
    with pytest.raises(ConnectionError):
        gate.user_message("STOP. Do not send the RFQ.", reader)
    with pytest.raises(ToolRefused):
        gate.call("send_rfq", lambda: "sent")


def test_attack_a_user_message_the_mcp_gate_could_not_record_refuses_the_calls_after_it() -> None:
    """The journal write of a new message failed: the session was read again from the journal,
    whose last request (the message before) still stood, and its step ran."""
    import asyncio

    from taskgate.errors import LogFormatError
    from taskgate.integrations.mcp.sessions import McpGate, McpGateConfig
    from taskgate.journal.store import MemoryStore

    plan = Plan.model_validate({"binding": "tool", "steps": {
        "s2": {"tool": "send_rfq", "text": "send the RFQ to the vendors"}}})  # fmt: skip

    class FailingOnce(MemoryStore):
        at: int | None = None

        async def append(self, key: str, seq: int, events: Any) -> None:
            if self.at is not None and seq >= self.at:
                self.at = None
                raise LogFormatError("disk full")
            await super().append(key, seq, events)

    async def go() -> tuple[list[str], Any]:
        store = FailingOnce()
        gate = McpGate(McpGateConfig(plan, requests="application"), store)
        await gate.request("k", "Send the RFQ to the vendors.")
        store.at = len(await store.load("k"))
        with pytest.raises(LogFormatError):
            await gate.request("k", "STOP. Do not send the RFQ.")
        sent: list[str] = []

        async def forward() -> str:
            sent.append("send_rfq")
            return "ok"

        answer = await gate.call("k", "send_rfq", {}, forward, lambda r: True)
        return sent, answer

    sent, answer = asyncio.run(go())
    assert sent == [] and answer.refused and "send it again" in answer.text


def test_attack_a_thread_with_a_call_in_doubt_is_not_evicted_and_run_again() -> None:
    """The middleware's thread registry evicted a gate with a call in doubt; rebuilt from the
    state (which holds no doubts), it ran the step again."""
    from taskgate.gate.registry import SessionRegistry
    from taskgate.integrations.langgraph import TaskGateMiddleware

    middleware = TaskGateMiddleware(TOOLS_PLAN, max_threads=1)
    registry: SessionRegistry[Any, Any] = middleware._threads
    first = middleware.gate({"messages": []}, thread="t1")
    first.open_request("s1")
    ticket = first.begin("collect_requirements")
    assert ticket.admitted
    first.finish(ticket, "unknown")  # no answer came: held in doubt
    middleware.gate({"messages": []}, thread="t2")  # a second thread, over max_threads
    assert registry.peek("t1") is not None
    again = middleware.gate({"messages": []}, thread="t1").begin("collect_requirements")
    assert not again.admitted and "may have run" in again.notice


def test_a_journal_that_cannot_be_read_is_one_error_naming_it(tmp_path: Any) -> None:
    import asyncio
    import sqlite3

    from taskgate.errors import LogFormatError
    from taskgate.journal.store import SQLiteStore

    store = SQLiteStore(tmp_path / "j.db")
    with sqlite3.connect(tmp_path / "j.db") as db:
        db.execute("DROP TABLE journal")
    with pytest.raises(LogFormatError, match="cannot be read"):
        asyncio.run(store.keys())
    with pytest.raises(LogFormatError, match="cannot be read"):
        asyncio.run(store.load("k"))
    asyncio.run(store.close())


def test_a_brief_over_its_budget_is_refused_before_it_compiles() -> None:
    """A 40,000-step brief cost the gate seconds of CPU per request, and its status documents as
    much on the event loop: a brief is held to 500 steps and 256 KiB, whatever the operator's
    choice for briefs it cannot compile."""
    steps = {f"s{i}": {"code": f"RC-{1000 + i}", "text": f"step {i}"} for i in range(1, 502)}
    brief = render_brief(Plan.model_validate({"steps": steps}))
    padded = render_brief(CODES_PLAN) + "\n" + "x" * (256 * 1024)
    for text, said in ((brief, "has 501 steps"), (padded, "over 262144 characters")):
        with FakeServer(script([])) as upstream, \
                ProxyServer(ProxyConfig(upstream.base_url, on_compile_error="forward")) as proxy:  # fmt: skip
            answer = _chat(proxy, text, "Go (#W1001).")
            asked = len(upstream.requests)
        assert answer.status_code == 413 and said in answer.text
        assert asked == 0


def test_what_failed_shows_in_the_metrics() -> None:
    """Every chat request answered with an error is counted by its status, beside the reasons a
    conversation was refused, so an operator sees a helper, an upstream or a journal failing."""
    with FakeServer(script([PROSE, PROSE])) as upstream, \
            ProxyServer(ProxyConfig(upstream.base_url)) as proxy:  # fmt: skip
        assert _chat(proxy, render_brief(CODES_PLAN), "Go (#W1001).").status_code == 422
        metrics = httpx.get(f"{proxy.url}/taskgate/metrics").json()
    gone = ProxyConfig(upstream.base_url, compiler="parser", matcher="lexical")
    with ProxyServer(gone) as proxy:  # the upstream is gone
        assert _chat(proxy, render_brief(CODES_PLAN), "Go (#W1001).").status_code == 502
        down = httpx.get(f"{proxy.url}/taskgate/metrics").json()
    assert metrics["errors"] == {"422": 1} and metrics["refused"] == {"compile-failed": 1}
    assert down["errors"] == {"502": 1}
