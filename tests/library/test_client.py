"""The chat client against a real HTTP server on loopback that injects faults."""

from __future__ import annotations

import asyncio

import pytest

from taskgate.errors import ModelError
from taskgate.llm.client import CallInfo, ChatClient, _content
from taskgate.llm.endpoint import Endpoint
from taskgate.llm.fake import NOT_REPLIES, FakeServer, Fault, Reply, script


def client(srv: FakeServer, **kw: object) -> tuple[ChatClient, list[float]]:
    delays: list[float] = []

    async def no_sleep(s: float) -> None:
        delays.append(s)

    ep = Endpoint(base_url=srv.base_url, model="fake", **kw)  # type: ignore[arg-type]
    return ChatClient(ep, sleep=no_sleep), delays


def ask(c: ChatClient, purpose: str = "agent") -> tuple[str, list[CallInfo]]:
    calls: list[CallInfo] = []

    async def go() -> str:
        try:
            r = await c.complete([{"role": "user", "content": "hi"}], purpose, calls.append)  # type: ignore[arg-type]
            return r.text
        finally:
            await c.close()

    return asyncio.run(go()), calls


@pytest.mark.parametrize(
    ("purpose", "think", "budget"),
    [("agent", False, 400), ("matcher", False, 200), ("compiler", False, 3000),
     ("agent", True, 2500), ("matcher", True, 2500), ("compiler", True, 6000)],
)  # fmt: skip
def test_decoding_and_budgets(purpose: str, think: bool, budget: int) -> None:
    with FakeServer(script(["hello"])) as srv:
        c, _ = client(srv, think=think)
        text, calls = ask(c, purpose)
    assert text == "hello"
    (req,) = srv.requests
    assert req["temperature"] == 0 and req["max_tokens"] == budget and req["model"] == "fake"
    assert (
        calls[0].prompt_tokens >= 0 and calls[0].completion_tokens >= 1 and calls[0].error is None
    )


def test_retries_with_backoff_on_transient_faults() -> None:
    faults = [Fault.error(500), Fault.error(429), Fault.drop(), Fault.malformed(), Fault.error(503)]
    with FakeServer(script(["finally"]), faults=faults) as srv:
        c, delays = client(srv)
        text, calls = ask(c)
    assert text == "finally"
    assert len(srv.requests) == 6 and calls[0].attempts == 6
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert len(calls) == 1 and len(calls[0].events) == 5


def test_a_reply_cut_half_way_is_retried() -> None:
    """The fake's broken fault on a request that is not streamed: half the promised body, then
    the connection cut; the client retries and gets the next reply."""
    with FakeServer(script(["cut", "whole"]), faults=[Fault.broken()]) as srv:
        c, _ = client(srv)
        text, calls = ask(c)
    assert text == "whole" and calls[0].attempts == 2 and len(calls[0].events) == 1


def test_a_slow_reply_past_the_timeout_is_retried() -> None:
    with FakeServer(script(["late", "on time"]), faults=[Fault.slow(1.5)]) as srv:
        c, _ = client(srv, timeout=0.5)
        text, calls = ask(c)
    assert (
        text == "on time" and calls[0].attempts == 2 and "timeout after 0.5 s" in calls[0].events[0]
    )


def test_six_failures_raise_a_clear_error() -> None:
    with FakeServer(script([]), faults=[Fault.error(500)] * 6) as srv:
        c, _ = client(srv)
        with pytest.raises(ModelError, match=r"fake at http://127\.0\.0\.1.*500"):
            ask(c)
    assert len(srv.requests) == 6


@pytest.mark.parametrize("fault", Fault.not_replies(), ids=NOT_REPLIES)
def test_a_200_that_is_not_a_reply_is_retried(fault: Fault) -> None:
    with FakeServer(script(["finally"]), faults=[fault, fault]) as srv:
        c, delays = client(srv)
        text, calls = ask(c)
    assert text == "finally" and delays == [1.0, 2.0]
    assert len(calls) == 1 and calls[0].attempts == 3 and calls[0].error is None
    assert len(calls[0].events) == 2
    assert all(e.startswith("retry after MalformedReply: a ") for e in calls[0].events)


@pytest.mark.parametrize("fault", Fault.not_replies(), ids=NOT_REPLIES)
def test_six_200s_that_are_not_replies_are_a_one_line_model_error(fault: Fault) -> None:
    calls: list[CallInfo] = []

    async def go(c: ChatClient) -> None:
        async with c:
            await c.complete([{"role": "user", "content": "hi"}], "agent", calls.append)

    with FakeServer(script(["never"]), faults=[fault] * 6) as srv:
        c, _ = client(srv)
        with pytest.raises(ModelError, match=r"agent call failed: MalformedReply: a ") as err:
            asyncio.run(go(c))
    assert len(srv.requests) == 6 and "\n" not in str(err.value)
    (info,) = calls
    assert info.attempts == 6 and info.error is not None and "\n" not in info.error
    assert (info.prompt_tokens, info.completion_tokens) == (0, 0)


def test_what_each_200_that_is_not_a_reply_is_called() -> None:
    seen = []
    for fault in Fault.not_replies():
        with FakeServer(script(["ok"]), faults=[fault]) as srv:
            c, _ = client(srv)
            _, calls = ask(c)
        seen.append(calls[0].events[0].removeprefix("retry after MalformedReply: "))
    assert seen == [
        "a reply with no choices (keys: none)",
        "a reply with no choices (keys: hello)",
        "a reply with empty choices (keys: id, object, created, model, choices)",
        "a reply whose message content is null, not text",
        "a 200 whose body is not JSON (text/html, 85 bytes)",
    ]


def test_an_empty_string_is_a_reply() -> None:
    with FakeServer(script([""])) as srv:
        c, _ = client(srv)
        text, calls = ask(c)
    assert text == "" and calls[0].attempts == 1 and calls[0].error is None
    assert calls[0].events == ()


def test_null_content_is_a_reply_only_with_reasoning() -> None:
    msg = {"role": "assistant", "content": None, "reasoning_content": "ran out"}
    assert _content({"choices": [{"message": msg}]}) == ("", "ran out")
    for body in (
        {"choices": [{"message": {"content": None}}]},
        {"choices": [{"message": {"content": ["part"]}}]},
        {"choices": [{"text": "completions API"}]},
        {"choices": "x"},
        {"error": {"message": "overloaded\nretry later"}},
        [],
        "text",
    ):
        with pytest.raises(ModelError) as err:
            _content(body)
        assert "\n" not in str(err.value)


def test_a_client_is_an_async_context_manager() -> None:
    async def go(srv: FakeServer) -> tuple[ChatClient, str]:
        async with ChatClient(Endpoint(base_url=srv.base_url, model="fake")) as c:
            reply = await c.complete([{"role": "user", "content": "hi"}], "agent")
        return c, reply.text

    with FakeServer(script(["inside"])) as srv:
        c, text = asyncio.run(go(srv))
    assert text == "inside" and c.closed


def test_a_client_error_is_not_retried() -> None:
    with FakeServer(script(["never"]), faults=[Fault.error(401, "bad key")]) as srv:
        c, _ = client(srv)
        with pytest.raises(ModelError, match="401"):
            ask(c)
    assert len(srv.requests) == 1


def test_an_exhausted_script_fails_loudly() -> None:
    with FakeServer(script(["one"])) as srv:
        c, _ = client(srv)
        ask(c)
        c2, _ = client(srv)
        with pytest.raises(ModelError, match="418"):
            ask(c2)


def test_empty_thinking_reply_doubles_the_budget() -> None:
    with FakeServer(
        script(["answer"]), faults=[Fault.empty(), Fault.empty(), Fault.empty()]
    ) as srv:
        c, _ = client(srv, think=True)
        text, calls = ask(c, "agent")
    assert text == "answer"
    assert [r["max_tokens"] for r in srv.requests] == [2500, 5000, 10000, 12000]
    assert calls[0].max_tokens == 12000


def test_context_overflow_halves_the_budget_to_a_floor() -> None:
    with FakeServer(script(["fits"]), faults=[Fault.overflow()] * 3) as srv:
        c, _ = client(srv)
        text, _ = ask(c, "compiler")
    assert text == "fits"
    assert [r["max_tokens"] for r in srv.requests] == [3000, 1500, 750, 512]


def test_overflow_at_the_floor_is_an_error() -> None:
    with FakeServer(script(["x"]), faults=[Fault.overflow()]) as srv:
        c, _ = client(srv)
        with pytest.raises(ModelError, match="400"):
            ask(c, "matcher")  # 200 tokens: already below the floor


def test_thinking_switch_and_reasoning_kept_out() -> None:
    replies = [Reply("visible", reasoning="hidden chain"), Reply("<think>plan</think>answer")]
    with FakeServer(script(replies)) as srv:
        c, _ = client(srv, think=True, enable_thinking=True)
        first, calls = ask(c)
        c2, _ = client(srv, think=True, enable_thinking=True)
        second, _ = ask(c2)
    assert (first, second) == ("visible", "answer")
    assert calls[0].reasoning_chars == len("hidden chain")
    assert srv.requests[0]["chat_template_kwargs"] == {"enable_thinking": True}


def test_endpoint_from_flags_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("TASKGATE_MODEL", raising=False)
    with pytest.raises(ModelError, match="--base-url"):
        Endpoint.from_env()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TASKGATE_MODEL", "m")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    ep = Endpoint.from_env()
    assert (ep.base_url, ep.model, ep.api_key) == ("http://127.0.0.1:9/v1", "m", "k")
    assert Endpoint.from_env(model="other").model == "other"


def test_an_overflow_said_anywhere_in_the_error_body_halves_the_budget() -> None:
    long = "Invalid request. " * 20 + "This model's maximum context length is 4096 tokens."
    with FakeServer(script(["fits"]), faults=[Fault.error(400, long)]) as srv:
        c, _ = client(srv)
        text, _ = ask(c, "compiler")
    assert text == "fits" and [r["max_tokens"] for r in srv.requests] == [3000, 1500]


def test_an_error_nested_past_any_recursion_limit_is_one_malformed_reply() -> None:
    deep: object = "x"
    for _ in range(1020):
        deep = [deep]
    with pytest.raises(ModelError, match="no choices but an error: a JSON list"):
        _content({"error": deep})
    with pytest.raises(ModelError, match="no choices but an error: a JSON list"):
        _content({"error": {"message": deep}})


def test_a_reply_past_64_mib_is_a_failed_call_not_exhausted_memory() -> None:
    """Told by Content-Length, streamed without one, or a gzip bomb: one line each."""
    import gzip

    from aiohttp import web

    big = b"x" * ((64 << 20) + 1)
    bomb = gzip.compress(b" " * (80 << 20))

    async def reply(request: web.Request) -> web.StreamResponse:
        kind = request.path.split("/")[1]
        if kind == "told":
            return web.Response(body=big, content_type="application/json")
        if kind == "bomb":
            headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
            return web.Response(body=bomb, headers=headers)
        stream = web.StreamResponse()
        await stream.prepare(request)
        for i in range(0, len(big), 1 << 20):
            try:
                await stream.write(big[i : i + (1 << 20)])
            except ConnectionError:  # the client stopped reading: as it should
                break
        return stream

    async def go() -> list[str]:
        app = web.Application()
        app.router.add_route("*", "/{kind}/{tail:.*}", reply)
        runner = web.AppRunner(app, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        said = []
        for kind in ("told", "streamed", "bomb"):
            ep = Endpoint(base_url=f"http://127.0.0.1:{port}/{kind}/v1", model="m", attempts=1)
            async with ChatClient(ep) as c:
                with pytest.raises(ModelError) as err:
                    await c.complete([{"role": "user", "content": "hi"}], "agent")
            said.append(str(err.value))
        await runner.cleanup()
        return said

    said = asyncio.run(go())
    assert all("over the 64 MiB limit" in s and "\n" not in s for s in said), said
