"""The MCP gate's lean client of HTTP upstreams, against real loopback servers that answer in
every way the transport allows and in ways it does not: an answer after a request the server
makes of the client (declined), a session the server lost (opened again, the call sent once
more), a stream cut short, a body that is not JSON-RPC, an answer over the size limit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra")

from aiohttp import web
from mcp.shared.exceptions import MCPError

from taskgate.integrations.mcp import upstream as upstream_module
from taskgate.integrations.mcp.upstream import HttpUpstream, UpstreamError

Reply = Callable[[web.Request, dict[str, Any]], Awaitable[web.StreamResponse]]
RESULT = {"content": [{"type": "text", "text": "done"}], "isError": False}


def answer(ident: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def event(message: dict[str, Any]) -> bytes:
    return f"event: message\r\ndata: {json.dumps(message)}\r\n\r\n".encode()


async def stream(request: web.Request, *chunks: bytes) -> web.StreamResponse:
    """An event-stream answer made of ``chunks``, in order."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for chunk in chunks:
        await resp.write(chunk)
    return resp


async def served(
    on_call: Reply, seen: list[dict[str, Any]], lost_answers: bool = False
) -> tuple[web.AppRunner, str]:
    """A streamable-HTTP server whose ``initialize`` is ordinary and whose other requests
    ``on_call`` answers; every message it receives is appended to ``seen``."""
    sessions = iter(["A", "B", "C"])

    async def mcp(request: web.Request) -> web.StreamResponse:
        message = await request.json()
        seen.append({**message, "session": request.headers.get("mcp-session-id")})
        if message.get("method") == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "hostile", "version": "1"}}  # fmt: skip
            return web.json_response(
                answer(message["id"], result), headers={"mcp-session-id": next(sessions)}
            )
        if "method" not in message and lost_answers:  # the client's answer: session forgotten
            return web.Response(status=404, text="Session not found")
        if "id" not in message or "method" not in message:
            return web.Response(status=202)
        return await on_call(request, message)

    app = web.Application()
    app.router.add_post("/mcp", mcp)

    async def end(request: web.Request) -> web.Response:
        return web.Response()

    app.router.add_delete("/mcp", end)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}/mcp"


def call_against(on_call: Reply, lost_answers: bool = False) -> tuple[Any, list[dict[str, Any]]]:
    """``tools/call`` through :class:`HttpUpstream`: its result or the error it raised, and what
    the server received."""
    seen: list[dict[str, Any]] = []

    async def go() -> Any:
        runner, url = await served(on_call, seen, lost_answers)
        try:
            async with HttpUpstream(url) as up:
                try:
                    return await up.call_tool("place_order", {"note": ""})
                except (UpstreamError, MCPError) as exc:
                    return exc
        finally:
            await runner.cleanup()

    return asyncio.run(go()), seen


def test_an_answer_after_a_request_to_the_client_declines_the_request() -> None:
    async def on_call(request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        return await stream(
            request,
            event({"jsonrpc": "2.0", "id": "ask-1", "method": "sampling/createMessage", "params": {}}),
            event({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": 1, "progress": 0.5}}),
            event(answer(message["id"], RESULT)),
        )  # fmt: skip

    result, seen = call_against(on_call)
    assert not isinstance(result, Exception) and result.content[0].text == "done"
    declined = [m for m in seen if m.get("id") == "ask-1"]
    assert declined and declined[0]["error"]["code"] == -32601


def test_a_session_the_server_lost_is_opened_again_and_the_call_left_in_doubt() -> None:
    """A 404 to a tool call: the server lost the session, perhaps after doing the call's work,
    so the call is in doubt (never sent twice) and the session is opened again for the next."""

    async def on_call(request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        if request.headers.get("mcp-session-id") == "A":  # restarted: it forgot session A
            return web.Response(status=404, text="Session not found")
        return web.json_response(answer(message["id"], RESULT))

    result, seen = call_against(on_call)
    assert isinstance(result, UpstreamError) and "not sent again" in str(result)
    assert [m.get("method") for m in seen if m.get("method") in ("initialize", "tools/call")] == [
        "initialize", "tools/call", "initialize"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "reply", "says"),
    [
        (
            "cut short",
            lambda m: web.Response(body=b"event: message\r\n", content_type="text/event-stream"),
            "closed its event stream before answering",
        ),
        (
            "not JSON",
            lambda m: web.Response(body=b"<html>oops", content_type="application/json"),
            "did not answer",
        ),
        (
            "another id",
            lambda m: web.json_response(answer(999, RESULT)),
            "something other than the JSON-RPC answer",
        ),
        ("HTTP 500", lambda m: web.Response(status=500, text="boom"), "answered HTTP 500: boom"),
        (
            "no result",
            lambda m: web.json_response({"jsonrpc": "2.0", "id": m["id"]}),
            "with no result",
        ),
    ],
)
def test_an_answer_that_is_not_mcp_is_one_upstream_error(name: str, reply: Any, says: str) -> None:
    async def on_call(request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        return reply(message)  # type: ignore[no-any-return]

    result, _ = call_against(on_call)
    assert isinstance(result, UpstreamError), name
    assert says in str(result) and "\n" not in str(result)


def test_a_json_rpc_error_is_the_sdks_error() -> None:
    async def on_call(request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        error = {"code": -32602, "message": "unknown tool: place_order"}
        return web.json_response({"jsonrpc": "2.0", "id": message["id"], "error": error})

    result, _ = call_against(on_call)
    assert isinstance(result, MCPError) and result.error.code == -32602


def test_an_answer_over_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream_module, "MAX_ANSWER", 1000)

    async def on_call(request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        big = {**RESULT, "content": [{"type": "text", "text": "x" * 5000}]}
        return web.json_response(answer(message["id"], big))

    result, _ = call_against(on_call)
    assert isinstance(result, UpstreamError) and "over 1,000 bytes" in str(result)


def test_a_priming_event_and_a_large_answer_are_read_whole() -> None:
    big = {**RESULT, "content": [{"type": "text", "text": "y" * (3 << 20)}]}

    async def primed(request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        priming = b"id: 0\r\ndata: \r\n\r\n: a comment\r\n\r\n"  # no JSON in it
        return await stream(request, priming, event(answer(message["id"], RESULT)))

    async def large(request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        return web.json_response(answer(message["id"], big))

    result, _ = call_against(primed)
    assert not isinstance(result, Exception), result
    result, _ = call_against(large)
    assert not isinstance(result, Exception), result
    assert len(result.content[0].text) == 3 << 20


def test_a_session_lost_mid_call_is_in_doubt_and_the_call_is_not_sent_again() -> None:
    async def on_call(request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        ask = {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": {}}
        return await stream(request, event(ask), event(answer(message["id"], RESULT)))

    result, seen = call_against(on_call, lost_answers=True)
    assert isinstance(result, UpstreamError) and "lost the session during a call" in str(result)
    assert [m.get("method") for m in seen].count("tools/call") == 1


def test_odd_error_codes_and_malformed_results_are_one_error() -> None:
    async def odd(request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        error = {"code": "boom", "message": "no"}
        return web.json_response({"jsonrpc": "2.0", "id": message["id"], "error": error})

    async def malformed(request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        return web.json_response(answer(message["id"], {"content": "not a list"}))

    result, _ = call_against(odd)
    assert isinstance(result, MCPError) and result.error.code == -32603
    result, _ = call_against(malformed)
    assert isinstance(result, UpstreamError) and "malformed result: content" in str(result)
