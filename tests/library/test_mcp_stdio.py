"""The MCP gate's lean stdio transports (:mod:`taskgate.integrations.mcp.stdio`): the front that
serves a desktop client, the client that calls an upstream child process, and the line splitter
under both."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest

pytest.importorskip("mcp", reason="needs the mcp extra")

import mcp_types as types
from mcp import StdioServerParameters
from mcp.shared.exceptions import MCPError

from taskgate.integrations.mcp.stdio import Lines, StdioFront, StdioUpstream
from taskgate.integrations.mcp.upstream import UpstreamError
from timing import assert_linear


def chunks(*parts: bytes) -> Any:
    """A byte stream that yields ``parts`` one read at a time, then its end."""
    queue = list(parts)

    async def read(n: int) -> bytes:
        return queue.pop(0) if queue else b""

    return read


async def lines_of(read: Any, limit: int = 1 << 20) -> list[bytes | None]:
    return [line async for line in Lines(read, limit)]


# -- the line splitter ---------------------------------------------------------------------------
def test_lines_join_across_reads_and_keep_a_last_line_without_its_newline() -> None:
    got = asyncio.run(lines_of(chunks(b'{"a"', b':1}\n{"b":2}\n{"c"', b":3}")))
    assert got == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


def test_a_line_over_the_limit_is_dropped_whole_once_and_the_next_one_is_read() -> None:
    big = b"x" * 5000
    got = asyncio.run(lines_of(chunks(b"ok\n" + big[:3000], big[3000:] + b"\nnext\n"), 1000))
    assert got == [b"ok", None, b"next"]


def test_a_long_line_read_in_small_pieces_costs_time_linear_in_its_length() -> None:
    """Splitting is linear: each byte is scanned once, whatever the reads' sizes (a line
    re-scanned at every read would cost quadratic time)."""

    def split(text: str) -> object:
        data = text.encode() + b"\n"
        return asyncio.run(lines_of(chunks(*(data[i : i + 64] for i in range(0, len(data), 64)))))

    assert_linear(split, lambda size: "y" * size)


# -- the gate's front ----------------------------------------------------------------------------
class Wire:
    """A client's side of the front: messages in, answers out."""

    def __init__(self, *messages: object) -> None:
        self.inbox = asyncio.Queue[bytes]()
        for m in messages:
            self.push(m)
        self.out: list[dict[str, Any]] = []

    def push(self, message: object) -> None:
        raw = message if isinstance(message, bytes) else orjson.dumps(message) + b"\n"
        self.inbox.put_nowait(raw)

    def close(self) -> None:
        self.inbox.put_nowait(b"")

    async def read(self, n: int) -> bytes:
        return await self.inbox.get()

    async def write(self, data: bytes) -> None:
        self.out += [orjson.loads(line) for line in data.splitlines()]


class State:
    tools: ClassVar[list[types.Tool]] = [
        types.Tool(name="draft_rfq", input_schema={"type": "object"})
    ]


def request(ident: object, method: str, params: object = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def answered(call: Any, *messages: object, close: bool = True) -> list[dict[str, Any]]:
    wire = Wire(*messages)
    if close:
        wire.close()
    await StdioFront(State(), call, "stdio~local").serve(wire.read, wire.write)
    return wire.out


async def ran(state: Any, key: str | None, params: types.CallToolRequestParams) -> Any:
    return types.CallToolResult(content=[types.TextContent(text=f"{params.name} for {key}")])


def test_the_front_answers_the_handshake_lists_tools_and_judges_calls() -> None:
    out = asyncio.run(answered(
        ran,
        request(1, "server/discover"),
        request(2, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "c", "version": "1"}}),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        request(3, "tools/list"),
        request(4, "tools/call", {"name": "draft_rfq", "arguments": {}}),
        request(5, "ping"),
    ))  # fmt: skip
    by_id = {m["id"]: m for m in out}
    assert by_id[1]["error"]["code"] == types.METHOD_NOT_FOUND  # the client falls back
    assert by_id[2]["result"]["protocolVersion"] == "2025-06-18"
    assert [t["name"] for t in by_id[3]["result"]["tools"]] == ["draft_rfq"]
    assert by_id[4]["result"]["content"][0]["text"] == "draft_rfq for stdio~local"
    assert by_id[5]["result"] == {}
    assert len(out) == 5  # a notification is never answered


def test_hostile_lines_are_each_one_json_rpc_error_and_the_front_goes_on() -> None:
    out = asyncio.run(answered(
        ran,
        b"not json\n",
        b"[1, 2]\n",
        b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}\n',
        request(True, "ping"),
        request(7, "resources/list"),
        request(8, "tools/call", {"arguments": {}}),
        {"jsonrpc": "2.0", "id": 99, "result": {}},  # a response to nothing: ignored
        request(9, "ping"),
    ))  # fmt: skip
    errors = [(m["id"], m["error"]["code"]) for m in out if "error" in m]
    assert errors == [
        (None, types.PARSE_ERROR),
        (None, types.INVALID_REQUEST),
        (None, types.INVALID_REQUEST),
        (None, types.INVALID_REQUEST),
        (7, types.METHOD_NOT_FOUND),
        (8, types.INVALID_PARAMS),
    ]
    assert out[-1] == {"jsonrpc": "2.0", "id": 9, "result": {}}


def test_a_cancelled_request_gets_no_answer_and_others_are_answered_meanwhile() -> None:
    started = asyncio.Event()

    async def slow(state: Any, key: str | None, params: types.CallToolRequestParams) -> Any:
        if params.name == "slow":
            started.set()
            await asyncio.sleep(60)
        return await ran(state, key, params)

    async def go() -> list[dict[str, Any]]:
        wire = Wire(request(1, "tools/call", {"name": "slow"}))
        serving = asyncio.create_task(
            StdioFront(State(), slow, "stdio~local").serve(wire.read, wire.write)
        )
        await started.wait()
        wire.push(request(2, "tools/call", {"name": "draft_rfq"}))
        wire.push({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 1}})  # fmt: skip
        wire.close()
        await asyncio.wait_for(serving, 30)
        return wire.out

    out = asyncio.run(go())
    assert [m["id"] for m in out] == [2]


def test_a_fault_of_the_gate_is_one_error_naming_no_internals() -> None:
    async def broken(state: Any, key: str | None, params: Any) -> Any:
        raise KeyError("secret internals")

    (out,) = asyncio.run(answered(broken, request(1, "tools/call", {"name": "draft_rfq"})))
    assert out["error"] == {
        "code": types.INTERNAL_ERROR,
        "message": "the gate failed on this request",
    }


# -- the upstream client -------------------------------------------------------------------------
RAW_SERVER = r"""
import json, sys
def send(m): sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m:
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"seen": m}})
        continue
    if "id" not in m: continue
    if m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}})
    elif m["method"] == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [
            {"name": n, "inputSchema": {"type": "object"}} for n in ("ask", "die", "bad")]}})
    elif m["params"]["name"] == "ask":  # asks the client first, then answers
        send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}})
        send({"jsonrpc": "2.0", "id": "s2", "method": "ping"})
        reply = [json.loads(sys.stdin.readline()) for _ in range(2)]
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [
            {"type": "text", "text": json.dumps(reply)}]}})
    elif m["params"]["name"] == "die":
        sys.exit(3)
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": "not a list"}})
"""


def raw_server(tmp_path: Path) -> StdioServerParameters:
    script = tmp_path / "raw_server.py"
    script.write_text(RAW_SERVER)
    return StdioServerParameters(command=sys.executable, args=[str(script)])


def test_the_upstream_client_calls_a_child_and_answers_what_the_child_asks(tmp_path: Path) -> None:
    async def go() -> tuple[list[str], str]:
        async with StdioUpstream(raw_server(tmp_path)) as up:
            listed = [t.name for t in (await up.list_tools()).tools]
            result = await up.call_tool("ask", {})
        return listed, result.content[0].text  # type: ignore[union-attr]

    listed, text = asyncio.run(go())
    assert listed == ["ask", "die", "bad"]
    asked, pinged = orjson.loads(text)
    assert asked["id"] == "s1" and asked["error"]["code"] == types.METHOD_NOT_FOUND
    assert pinged == {"jsonrpc": "2.0", "id": "s2", "result": {}}


def test_a_child_that_exits_mid_call_fails_the_call_and_a_malformed_result_is_named(
    tmp_path: Path,
) -> None:
    async def go() -> tuple[str, str]:
        async with StdioUpstream(raw_server(tmp_path)) as up:
            with pytest.raises(UpstreamError) as malformed:
                await up.call_tool("bad", {})
            with pytest.raises(UpstreamError) as died:
                await up.call_tool("die", {})
            with pytest.raises(UpstreamError):  # and every call after it
                await up.call_tool("ask", {})
        return str(malformed.value), str(died.value)

    malformed, died = asyncio.run(go())
    assert "malformed result: content" in malformed
    assert "closed its output" in died


def test_a_json_rpc_error_from_the_child_is_the_sdks_error(tmp_path: Path) -> None:
    async def go() -> MCPError:
        async with StdioUpstream(StdioServerParameters(
            command=sys.executable, args=["-m", "taskgate.integrations.mcp.testing"]
        )) as up:  # fmt: skip
            with pytest.raises(MCPError) as raised:
                await up.request("resources/nonesuch", None)
            return raised.value

    assert asyncio.run(go()).error.code == types.METHOD_NOT_FOUND


def test_a_command_that_cannot_start_is_one_line() -> None:
    async def go() -> None:
        async with StdioUpstream(StdioServerParameters(command="/nonexistent/mcp-server")):
            pass

    with pytest.raises(UpstreamError, match="could not be reached: /nonexistent/mcp-server"):
        asyncio.run(go())
