"""The MCP gate's lean stdio transports (:mod:`taskgate.integrations.mcp.stdio`): the front that
serves a desktop client, the client that calls an upstream child process, and the line splitter
under both."""

from __future__ import annotations

import asyncio
import sys
import time
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


async def ran(
    state: Any, key: str | None, params: types.CallToolRequestParams, elicit: Any = None
) -> Any:
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

    async def slow(
        state: Any, key: str | None, params: types.CallToolRequestParams, elicit: Any = None
    ) -> Any:
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
    async def broken(state: Any, key: str | None, params: Any, elicit: Any = None) -> Any:
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


# -- after an attack review ----------------------------------------------------------------------
def test_a_cancel_naming_an_odd_id_or_a_reused_id_leaves_the_front_serving() -> None:
    out = asyncio.run(answered(
        ran,
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}},
        request(1, "ping"),
    ))  # fmt: skip
    assert out == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


HOSTILE_SERVER = r"""
import json, sys
def send(m): sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m or "method" not in m: continue
    if m["method"] == "initialize":
        if "refuse" in sys.argv:
            send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32600, "message": "no"}})
        elif "mute" not in sys.argv:
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18",
                  "capabilities": {}, "serverInfo": {"name": "h", "version": "1"}}})
        continue
    send({"jsonrpc": "2.0", "id": [m["id"]], "result": {}})  # an answer with an odd id
    send({"jsonrpc": "2.0", "id": 999, "result": {}})  # an answer to nothing asked
    send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": []}})
"""


def hostile_server(tmp_path: Path, *how: str) -> StdioServerParameters:
    script = tmp_path / "hostile_server.py"
    script.write_text(HOSTILE_SERVER)
    return StdioServerParameters(command=sys.executable, args=[str(script), *how])


def test_odd_answers_from_a_child_leave_its_reader_running_and_are_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def go() -> int:
        async with StdioUpstream(hostile_server(tmp_path)) as up:
            first = await up.call_tool("x", {})
            second = await up.call_tool("x", {})
        return len(first.content) + len(second.content)

    assert asyncio.run(go()) == 0
    assert "answered request 999 after the gate stopped waiting" in caplog.text


def test_a_child_that_refuses_or_never_answers_initialize_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import taskgate.integrations.mcp.stdio as stdio

    async def start(*how: str) -> None:
        async with StdioUpstream(hostile_server(tmp_path, *how)):
            pass

    with pytest.raises(UpstreamError, match="refused to initialize: no"):
        asyncio.run(start("refuse"))
    monkeypatch.setattr(stdio, "INITIALIZE_S", 0.5)
    with pytest.raises(UpstreamError, match=r"did not answer initialize in 0\.5 s"):
        asyncio.run(start("mute"))


def test_a_call_that_never_left_the_gate_failed_and_is_not_held_in_doubt(tmp_path: Path) -> None:
    """Arguments nested deeper than the gate reads (refused as unreadable), or an upstream
    already gone: the call never reached the server, so it failed (its step free), not in
    doubt."""
    from plans import tool_chain
    from taskgate.integrations.mcp import McpGate, McpGateConfig
    from taskgate.integrations.mcp.server import GateState
    from taskgate.integrations.mcp.server import call as mcp_call

    deep: Any = "x"
    for _ in range(300):
        deep = {"a": deep}

    async def go() -> list[Any]:
        gate = McpGate(McpGateConfig(tool_chain(2), requests="plan"))
        async with StdioUpstream(raw_server(tmp_path)) as up:
            state = GateState(gate, [], {"collect_requirements": up, "die": up}, "s")
            nested = await mcp_call(state, "s~local", types.CallToolRequestParams(
                name="collect_requirements", arguments={"note": deep}))  # fmt: skip
            with pytest.raises(MCPError):  # the child exits mid-call: this one is in doubt
                await mcp_call(state, "s~local", types.CallToolRequestParams(name="die"))
            gone = await mcp_call(state, "s~local", types.CallToolRequestParams(
                name="collect_requirements", arguments={}))  # fmt: skip
        return [nested, gone, gate.sessions["s~local"].in_doubt()]

    nested, gone, doubt = asyncio.run(go())
    assert nested.is_error and "could not be read" in nested.content[0].text
    assert gone.is_error and "was not run" in gone.content[0].text
    assert doubt == {}  # "die" is bound to no step; nothing of s1 is in doubt


def test_calls_to_an_upstream_that_exited_are_refused_naming_it_and_nothing_is_admitted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A stdio upstream that died: each later call of its tools, gated or not, is one tool error
    that says its server is gone, before the gate judges it: no admission, no journal event, no
    call counted as forwarded; the death is logged once."""
    from plans import tool_chain
    from taskgate.integrations.mcp import McpGate, McpGateConfig
    from taskgate.integrations.mcp.server import GateState
    from taskgate.integrations.mcp.server import call as mcp_call

    gate = McpGate(McpGateConfig(tool_chain(2), requests="plan"))

    async def go() -> tuple[list[Any], int]:
        async with StdioUpstream(raw_server(tmp_path)) as up:
            state = GateState(gate, [], {"collect_requirements": up, "die": up}, "s")
            with pytest.raises(MCPError):  # the child exits mid-call
                await mcp_call(state, "s~local", types.CallToolRequestParams(name="die"))
            session = await gate.session("s~local")
            before = len(session.conv.events)
            answers = [await mcp_call(state, "s~local", types.CallToolRequestParams(name=n))
                       for n in ("collect_requirements", "die", "collect_requirements")]  # fmt: skip
            return answers, len(session.conv.events) - before

    with caplog.at_level("ERROR", logger="taskgate.mcp"):
        answers, written = asyncio.run(go())
    for answer in answers:
        said = answer.content[0].text
        assert answer.is_error and "was not run: its MCP server is gone" in said
        assert "exited" in said and "restart the gate" in said
    assert written == 0  # nothing admitted or journaled for a call that could not be sent
    assert "admitted" not in gate.metrics.verdicts and "forwarded" not in gate.metrics.calls
    assert gate.metrics.calls["upstream-gone"] == 3
    assert [r for r in caplog.records if "calls are refused from now on" in r.getMessage()]


def gate_command(tmp_path: Path, *upstream_args: str) -> list[str]:
    plan = tmp_path / "plan.json"
    plan.write_text('{"binding": "tool", "steps": {"s1": {"tool": "collect_requirements"}}}')
    return [sys.executable, "-m", "taskgate", "mcp", "--plan", str(plan), "--",
            sys.executable, "-m", "taskgate.integrations.mcp.testing", *upstream_args]  # fmt: skip


def test_a_gate_writing_to_a_file_answers_every_request(tmp_path: Path) -> None:
    """stdout a regular file (a transcript): both ends are read and written in threads, and
    every request is answered."""
    import subprocess

    pings = [request(i, "ping") for i in range(1, 201)]
    lines = b"".join(orjson.dumps(m) + b"\n" for m in [request(0, "initialize", {}), *pings])
    out = tmp_path / "transcript.jsonl"
    with out.open("wb") as sink:
        done = subprocess.run(gate_command(tmp_path), input=lines, stdout=sink,
                              stderr=subprocess.PIPE, timeout=120)  # fmt: skip
    answers = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert sorted(a["id"] for a in answers) == list(range(201))


def test_sigterm_stops_the_gate_and_its_upstream(tmp_path: Path) -> None:
    """A client that gives up on the gate sends SIGTERM: the upstream it started goes too."""
    import signal
    import subprocess

    log = tmp_path / "calls.jsonl"
    gate = subprocess.Popen(gate_command(tmp_path, "--log", str(log)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        assert gate.stdin is not None and gate.stdout is not None
        gate.stdin.write(orjson.dumps(request(1, "initialize", {})) + b"\n")
        gate.stdin.flush()
        assert orjson.loads(gate.stdout.readline())["id"] == 1  # the upstream is up
        children = _children(gate.pid)
        assert children, "the gate started no upstream"
        gate.send_signal(signal.SIGTERM)
        gate.wait(timeout=30)
    finally:
        gate.kill()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in children)


def _children(pid: int) -> list[int]:
    found = Path(f"/proc/{pid}/task/{pid}/children")
    if not found.exists():
        pytest.skip("no /proc: the child processes cannot be listed here")
    return [int(c) for c in found.read_text().split()]


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def test_an_answer_too_deep_to_write_is_one_error_for_its_request() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]

    async def nested(state: Any, key: str | None, params: Any, elicit: Any = None) -> Any:
        return types.CallToolResult(content=[], structured_content={"a": deep})

    (out,) = asyncio.run(answered(nested, request(4, "tools/call", {"name": "draft_rfq"})))
    assert out["id"] == 4 and out["error"]["code"] == types.INTERNAL_ERROR  # answered, once
