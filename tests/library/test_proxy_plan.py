"""The proxy in plan mode (``taskgate proxy --plan FILE``): an ordinary agent's conversation (its
own system prompt, no brief, no work orders) gated at its native tool calls."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from plans import tool_chain
from proxy_helpers import post
from taskgate import FakeServer, Plan, Reply, script
from taskgate.cli import app
from taskgate.llm.fake import ToolCall
from taskgate.proxy import ProxyConfig
from taskgate.proxy.testing import ProxyServer

SYSTEM = "You are a procurement assistant for ACME Corp. Use the tools to do what the user asks."


def calls(*names: str) -> Reply:
    return Reply("", tool_calls=tuple(ToolCall(n, {"note": ""}, id=f"call_{n}") for n in names))


def conversation(url: str, client: httpx.Client) -> Any:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]

    def say(text: str) -> dict[str, Any]:
        messages.append({"role": "user", "content": text})
        return answer()

    def answer() -> dict[str, Any]:
        message = post(client, url, messages)["choices"][0]["message"]
        kept = {"role": "assistant", "content": message["content"]}
        if message.get("tool_calls"):
            kept["tool_calls"] = message["tool_calls"]
        messages.append(kept)
        return dict(message)

    def result(call_id: str, content: str = "ok") -> dict[str, Any]:
        messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return answer()

    return say, result, messages


def test_an_ordinary_conversation_is_gated_with_the_plan_and_forwarded_as_written() -> None:
    replies = [
        calls("draft_rfq"),  # asked for the draft before the requirements: refused
        Reply("I need the requirements collected first."),  # told of it, in its own words
        calls("collect_requirements"),
        Reply("Collected."),
        calls("draft_rfq"),  # eligible now, but "thanks!" asked for nothing: refused
    ]
    with FakeServer(script(replies)) as upstream:
        config = ProxyConfig(upstream.base_url, matcher="lexical", plan=tool_chain(3))
        with ProxyServer(config) as proxy, httpx.Client() as client:
            say, result, _ = conversation(proxy.base_url, client)
            first = say("Please draft the RFQ.")
            assert not first.get("tool_calls")  # the user reads the agent, not the gate
            assert first["content"] == "I need the requirements collected first."
            second = say("OK, collect the requirements first.")
            assert [c["function"]["name"] for c in second["tool_calls"]] == ["collect_requirements"]
            assert result("call_collect_requirements")["content"] == "Collected."
            thanks = say("thanks!")
            assert not thanks.get("tool_calls")
            # held: the user reads the gate's question, with the exact call, and no instruction
            assert thanks["content"] == "Shall I draft the RFQ (note: )? Yes or no?"
            sent = [r["messages"] for r in upstream.requests]
    assert sent[0][0]["content"] == SYSTEM and sent[0][1]["content"] == "Please draft the RFQ."
    told, notice = sent[1][-2:]  # the refused call, answered by the gate's notice
    assert [c["id"] for c in told["tool_calls"]] == ["call_draft_rfq"]
    assert notice["role"] == "tool" and notice["tool_call_id"] == "call_draft_rfq"
    assert notice["content"].startswith(
        "draft_rfq was not run: it needs 'collect the requirements'"
    )
    assert all("#W" not in str(m.get("content")) for m in sent[-1])  # no work order anywhere


def test_a_plan_file_the_cli_cannot_read_is_one_line(tmp_path: Any) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text('{"steps": {"a": {"tool": ""}}}')
    result = CliRunner().invoke(
        app, ["proxy", "--upstream", "http://127.0.0.1:9/v1", "--plan", str(bad)]
    )
    assert result.exit_code == 2
    assert result.output.startswith(
        f"taskgate: error: {bad}: 1 defect(s): step a has an empty tool"
    )


@pytest.mark.parametrize("arm", ["checklist", "directive"])
def test_plan_mode_takes_only_the_rungs_that_gate_calls(tmp_path: Any, arm: str) -> None:
    good = tmp_path / "plan.json"
    good.write_text('{"steps": {"a": {"tool": "t"}}}')
    result = CliRunner().invoke(
        app, ["proxy", "--upstream", "http://127.0.0.1:9/v1", "--plan", str(good), "--arm", arm]
    )
    assert result.exit_code == 2 and "--plan gates tool calls" in result.output


def test_plan_mode_tracks_at_the_raw_rung_and_leaves_tools_their_own_work_order_argument() -> None:
    work_order_tool = Reply("", tool_calls=(
        ToolCall("collect_requirements", {"work_order": "WO-1234"}, id="c1"),
    ))  # fmt: skip
    replies = [work_order_tool, Reply("Done."), calls("collect_requirements"), Reply("Done.")]
    with FakeServer(script(replies)) as up:
        for rung in ("enforcement", "raw"):
            config = ProxyConfig(up.base_url, rung, matcher="lexical", plan=tool_chain(2))
            with ProxyServer(config) as proxy, httpx.Client() as client:
                say, result, _ = conversation(proxy.base_url, client)
                if rung == "enforcement":  # a tool's own work_order argument is not the gate's
                    first = say("Collect the requirements for WO-1234, please.")
                    assert [c["function"]["name"] for c in first["tool_calls"]] == [
                        "collect_requirements"
                    ]
                    assert result("c1")["content"] == "Done."
                else:  # raw tracks: a call on "hi" is handed out and booked as it ran
                    got = say("hi there")
                    assert got.get("tool_calls")
                    result("call_collect_requirements")
                    status = httpx.get(f"{proxy.url}/taskgate/conversations").json()
                    key = status["conversations"][0]["id"]
                    detail = httpx.get(f"{proxy.url}/taskgate/conversations/{key}").json()
                    assert detail["statuses"]["s1"] == "DONE"


class _Broken:
    def __init__(self, error: Exception) -> None:
        self.error = error

    async def compile_plan(self, brief: str) -> Any:
        raise self.error


@pytest.mark.parametrize(
    ("choice", "failure", "forwarded"),
    [
        ("refuse", "unreadable", False),
        ("forward", "unreadable", True),
        ("forward", "helper down", False),  # an outage never opens the gate
    ],
)
def test_a_brief_that_cannot_be_compiled_is_the_operators_choice_said_once(
    choice: str,
    failure: str,
    forwarded: bool,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from taskgate import BriefError, ModelError, Plan, render_brief
    from taskgate.proxy.session import Proxy

    error = BriefError("no plan lines") if failure == "unreadable" else ModelError("timed out")
    monkeypatch.setattr(Proxy, "compiler", lambda self, model, key, on_problem=None: _Broken(error))
    brief = render_brief(Plan.model_validate({"steps": {"s1": {"code": "RC-1001", "text": "x"}}}))
    with FakeServer(script([Reply("one"), Reply("two")])) as upstream:
        config = ProxyConfig(upstream.base_url, on_compile_error=choice)
        with ProxyServer(config) as proxy, httpx.Client() as client:
            body = {"model": "m", "messages": [{"role": "system", "content": brief},
                                               {"role": "user", "content": "go (#W1001)"}]}  # fmt: skip
            answers = [client.post(f"{proxy.base_url}/chat/completions", json=body) for _ in "ab"]
            metrics = httpx.get(f"{proxy.url}/taskgate/metrics").json()
    if forwarded:
        assert [a.json()["choices"][0]["message"]["content"] for a in answers] == ["one", "two"]
        assert metrics["ungated"] == {"compile-failed": 2} and metrics["refused"] == {}
    else:
        assert [a.status_code for a in answers] == [400 if failure == "unreadable" else 502] * 2
        hint = "--on-compile-error forward" in answers[0].json()["error"]["message"]
        assert hint is (failure == "unreadable")  # no hint that would not help an outage
        assert metrics["refused"] == {"compile-failed": 2} and metrics["ungated"] == {}
    said = [r for r in caplog.records if "could not be compiled" in r.getMessage()]
    assert len(said) == 1  # said once, however many requests


def test_a_proxy_configuration_it_cannot_serve_is_one_error() -> None:
    from taskgate import Plan, UsageError

    code = Plan.model_validate({"steps": {"a": {"code": "RC-1"}}})
    for kw in ({"plan": code}, {"plan": tool_chain(2), "rung": "checklist"},
               {"on_compile_error": "maybe"}):  # fmt: skip
        with pytest.raises(UsageError):
            ProxyConfig("http://127.0.0.1:9/v1", **kw)  # type: ignore[arg-type]


def test_requests_the_proxy_does_not_gate_are_counted_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    replies = script([Reply("a"), Reply("b")])
    with (
        FakeServer(replies) as upstream,
        ProxyServer(ProxyConfig(upstream.base_url)) as proxy,
        httpx.Client() as client,
    ):
        for text in ("hi", "again"):
            post(client, proxy.base_url, [{"role": "system", "content": SYSTEM},
                                          {"role": "user", "content": text}])  # fmt: skip
        metrics = httpx.get(f"{proxy.url}/taskgate/metrics").json()
    assert metrics["ungated"] == {"no-brief": 2}
    said = [r for r in caplog.records if "system prompt is no brief" in r.getMessage()]
    assert len(said) == 1 and "--plan FILE" in said[0].getMessage()


def test_the_same_script_run_again_starts_a_new_conversation_not_a_409() -> None:
    """A script whose conversation opens the same way every time (its system prompt and first
    user message, no header) got a 409 on its first request when run a second time: every
    newcomer met it at once. Each run is now its own conversation (``NAME.2~OWNER``, ...), and a
    request that continues none of them still gets the 409; the header keeps one conversation
    across runs for those who want continuity. (A run whose history repeats an earlier run's
    word for word, a scripted model's, is that run's retry: a retry is never run twice.)"""
    replies = [Reply(f"Hello ({i}).") for i in range(12)]  # a model's words differ run to run
    with FakeServer(script(replies)) as upstream, \
            ProxyServer(ProxyConfig(upstream.base_url, plan=tool_chain(3))) as proxy, \
            httpx.Client() as client:  # fmt: skip
        for _ in range(3):  # the same script, three times: two turns each
            say, _, _ = conversation(proxy.base_url, client)
            say("Hello there.")
            say("What can you do?")
        keys = sorted(
            c["id"]
            for c in client.get(f"{proxy.url}/taskgate/conversations").json()["conversations"]
        )
        turns = [
            client.get(f"{proxy.url}/taskgate/conversations/{k}").json()["turns"] for k in keys
        ]
        stray = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hello there."},
                 *[{"role": r, "content": "x"} for _ in range(3) for r in ("assistant", "user")]]  # fmt: skip
        conflict = client.post(f"{proxy.base_url}/chat/completions",
                               json={"model": "m", "messages": stray})  # fmt: skip
        named = {"x-taskgate-conversation": "desk"}
        first = client.post(f"{proxy.base_url}/chat/completions", headers=named,
                            json={"model": "m", "messages": stray[:2]})  # fmt: skip
        again = client.post(f"{proxy.base_url}/chat/completions", headers=named,
                            json={"model": "m", "messages": stray[:2]})  # fmt: skip
    assert len(keys) == 3 and turns == [2, 2, 2]
    name, _, who = min(keys, key=len).partition("~")
    assert set(keys) == {f"{name}~{who}", f"{name}.2~{who}", f"{name}.3~{who}"}
    assert conflict.status_code == 409 and "does not continue" in conflict.text
    assert first.status_code == 200 and again.status_code == 200  # a retry of the named one


def _streamed(client: httpx.Client, url: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A streamed reply read whole: its content and the tool calls' names."""
    body = {"model": "fake", "messages": messages, "stream": True}
    resp = client.post(f"{url}/chat/completions", json=body)
    assert resp.status_code == 200, resp.text
    content, names = [], []
    for line in resp.text.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        choices = orjson.loads(line[6:]).get("choices") or [{}]
        delta = choices[0].get("delta", {})
        content.append(delta.get("content") or "")
        names += [c["function"]["name"] for c in delta.get("tool_calls") or []]
    return {"content": "".join(content), "names": names}


@pytest.mark.parametrize("stream", [False, True])
def test_a_refused_call_is_told_to_the_agent_as_its_result_and_the_user_reads_the_agent(
    stream: bool,
) -> None:
    """Plan mode: a reply whose every call was refused goes back to the model with each call
    answered by the gate's notice, and the user gets the model's next reply, judged like any,
    never the notice (streamed or not)."""
    replies = [calls("draft_rfq"), Reply("First I need to collect the requirements.")]
    with FakeServer(script(replies)) as upstream:
        config = ProxyConfig(upstream.base_url, matcher="lexical", plan=tool_chain(3))
        with ProxyServer(config) as proxy, httpx.Client() as client:
            messages = [{"role": "system", "content": SYSTEM},
                        {"role": "user", "content": "Please draft the RFQ."}]  # fmt: skip
            if stream:
                got = _streamed(client, proxy.base_url, messages)
            else:
                message = post(client, proxy.base_url, messages)["choices"][0]["message"]
                got = {"content": message["content"], "names": message.get("tool_calls") or []}
            sent = [r["messages"] for r in upstream.requests]
    assert got == {"content": "First I need to collect the requirements.", "names": []}
    assert "was not run" not in got["content"]
    assert sent[1][-1]["role"] == "tool" and sent[1][-1]["content"].startswith(
        "draft_rfq was not run: it needs 'collect the requirements' done first."
    )
    assert "stream" not in upstream.requests[1]


def test_a_refused_call_beside_one_handed_out_is_told_with_the_next_request() -> None:
    """One reply, two calls: the one the state allows is handed out, the other refused; the
    user's reply carries no notice, and the model reads it as that call's tool result when the
    client sends the handed-out call's result."""
    both = Reply("", tool_calls=(ToolCall("collect_requirements", {"note": ""}, id="c1"),
                                 ToolCall("draft_rfq", {"note": ""}, id="c2")))  # fmt: skip
    replies = [both, Reply("Collected; the draft needs them done first.")]
    with FakeServer(script(replies)) as upstream:
        config = ProxyConfig(upstream.base_url, matcher="lexical", plan=tool_chain(3))
        with ProxyServer(config) as proxy, httpx.Client() as client:
            say, result, _ = conversation(proxy.base_url, client)
            first = say("Collect the requirements, please.")
            assert [c["id"] for c in first["tool_calls"]] == ["c1"]
            assert "was not run" not in str(first["content"])
            assert result("c1", "requirements: 3 items")["content"].startswith("Collected")
            sent = upstream.requests[-1]["messages"]
    (told,) = [m for m in sent if m.get("tool_calls")]
    assert [c["id"] for c in told["tool_calls"]] == ["c1", "c2"]
    answers = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert answers["c1"] == "requirements: 3 items"
    assert answers["c2"].startswith("draft_rfq was not run: ")


def test_when_the_upstream_fails_on_the_telling_the_user_gets_the_refusal_and_nothing_runs() -> (
    None
):
    """The upstream's failure on the round that tells it of its refused calls opens nothing: the
    calls stay stopped, and the client gets the reply before it with the notice as its text."""
    with FakeServer(script([calls("draft_rfq")])) as upstream:  # the second request: a 418
        config = ProxyConfig(upstream.base_url, matcher="lexical", plan=tool_chain(3))
        with ProxyServer(config) as proxy, httpx.Client() as client:
            say, _, _ = conversation(proxy.base_url, client)
            first = say("Please draft the RFQ.")
            assert len(upstream.requests) == 2
    assert not first.get("tool_calls")
    assert first["content"].startswith("draft_rfq was not run: it needs 'collect the requirements'")


def test_an_agent_that_calls_again_after_being_told_is_told_at_most_twice() -> None:
    """A model that answers its refusal with the same call again is told again, at most
    :data:`~taskgate.proxy.telling.ROUNDS` times; then the client gets the notice."""
    from taskgate.proxy.telling import ROUNDS

    with FakeServer(lambda body: calls("draft_rfq")) as upstream:
        config = ProxyConfig(upstream.base_url, matcher="lexical", plan=tool_chain(3))
        with ProxyServer(config) as proxy, httpx.Client() as client:
            say, _, _ = conversation(proxy.base_url, client)
            first = say("Please draft the RFQ.")
            asked = len(upstream.requests)
    assert asked == 1 + ROUNDS
    assert not first.get("tool_calls")
    assert first["content"].startswith("draft_rfq was not run")


def test_a_request_a_yes_opened_is_journaled_once_when_its_refused_call_is_told() -> None:
    """A yes to a proposal that names no step opens the request its call resolves; when that
    call is refused and told, the reply after it is judged again, and the request must not be
    journaled twice (a journal that does not fold is a 500 after every restart)."""
    from taskgate.journal.store import MemoryStore

    plan = Plan.model_validate({"binding": "tool", "steps": {
        "find": {"tool": "check_availability", "text": "check the restaurant's availability"},
        "reserve": {"tool": "reserve_table", "text": "reserve a table at a restaurant",
                    "deps": ["find"]}}})  # fmt: skip
    table = {"restaurant": "Chez Pierre", "party_size": 2, "time": "19:00"}
    replies = [Reply("Please confirm: a table for 2 at Chez Pierre at 7 pm."),
               Reply("", tool_calls=(ToolCall("reserve_table", table, id="c1"),)),
               Reply("", tool_calls=(ToolCall("check_availability", {"restaurant": "x"}, id="c2"),)),
               Reply("Checked."), Reply("Bye.")]  # fmt: skip
    store = MemoryStore()
    with FakeServer(script(replies)) as upstream, httpx.Client(timeout=30) as client:
        config = ProxyConfig(upstream.base_url, plan=plan)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Dinner for two tomorrow."}]
        with ProxyServer(config, store) as proxy:
            first = post(client, proxy.base_url, messages)["choices"][0]["message"]
            messages += [{"role": "assistant", "content": first["content"]},
                         {"role": "user", "content": "Yes, that's correct."}]  # fmt: skip
            second = post(client, proxy.base_url, messages)["choices"][0]["message"]
        messages += [{"role": "assistant", "content": second["content"]},
                     {"role": "user", "content": "Thanks, bye."}]  # fmt: skip
        with ProxyServer(config, store) as proxy:  # a restart: the journal folds again
            assert post(client, proxy.base_url, messages)["choices"][0]["message"]["content"]


@pytest.mark.parametrize("odd", [["x"], [5], [None]], ids=["text", "number", "null"])
def test_a_tool_call_that_is_no_object_is_refused_in_the_replys_text(odd: list[Any]) -> None:
    """A tool call that is no object cannot be answered by a tool message: the client gets the
    notice as the reply's text (a 200, never a 500), and the upstream is not asked again."""
    from proxy_helpers import RawUpstream

    message = {"role": "assistant", "content": None, "tool_calls": odd}
    body = orjson.dumps({"id": "x", "object": "chat.completion", "model": "m", "created": 0,
                         "choices": [{"index": 0, "finish_reason": "tool_calls",
                                      "message": message}]})  # fmt: skip
    raw = RawUpstream([body, body])
    with raw as upstream:
        config = ProxyConfig(upstream.base_url, matcher="lexical", plan=tool_chain(3))
        with ProxyServer(config) as proxy, httpx.Client() as client:
            say, _, _ = conversation(proxy.base_url, client)
            first = say("Please draft the RFQ.")
    assert len(raw.bodies) == 1  # asked once
    assert not first.get("tool_calls") and "was not run" in first["content"]


def test_refused_calls_sharing_an_id_are_refused_in_the_replys_text() -> None:
    """Two refused calls under one id cannot each be answered by a tool message: the notices
    are the reply's text, and the upstream is not asked again."""
    reply = Reply("", tool_calls=(ToolCall("draft_rfq", {"note": ""}, id="c1"),
                                  ToolCall("send_rfq", {"note": ""}, id="c1")))  # fmt: skip
    with FakeServer(script([reply])) as upstream:
        config = ProxyConfig(upstream.base_url, matcher="lexical", plan=tool_chain(3))
        with ProxyServer(config) as proxy, httpx.Client() as client:
            say, _, _ = conversation(proxy.base_url, client)
            first = say("Please draft the RFQ.")
            asked = len(upstream.requests)
    assert asked == 1
    assert not first.get("tool_calls") and "was not run" in first["content"]
