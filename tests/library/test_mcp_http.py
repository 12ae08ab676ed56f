"""The MCP gate over streamable HTTP, in front of an upstream over streamable HTTP: sessions kept
apart, a session named by its header continued across connections, a client with no session
refused, and hostile input (malformed JSON-RPC, an unknown method, oversized arguments, a result
that pretends to be a notice or a receipt) answered with one clear error and no state change."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp", reason="needs the mcp extra")

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from taskgate.integrations.mcp.testing import calls

#: real subprocesses (the gate, the upstream) over stdio and HTTP: the full suite runs them
pytestmark = pytest.mark.slow

PLAN = {"binding": "tool", "steps": {
    "s1": {"tool": "collect_requirements", "text": "collect the requirements"},
    "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"]},
}}  # fmt: skip
TOKEN = "ops"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=0.5)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing answers at {url}")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("mcp-http")
    log, up_port, gate_port = tmp / "upstream.log", free_port(), free_port()
    (tmp / "plan.json").write_text(json.dumps(PLAN))
    env = {**os.environ, "TASKGATE_STATUS_TOKEN": TOKEN}
    upstream = subprocess.Popen(
        [sys.executable, "-m", "taskgate.integrations.mcp.testing", "--log", str(log), "--http",
         str(up_port)], stderr=subprocess.DEVNULL,
    )  # fmt: skip
    gate = None
    try:
        wait_up(f"http://127.0.0.1:{up_port}/mcp")
        gate = subprocess.Popen(
            [sys.executable, "-m", "taskgate", "mcp", "--plan", str(tmp / "plan.json"), "--http",
             "--port", str(gate_port), "--upstream-url", f"http://127.0.0.1:{up_port}/mcp"],
            env=env, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_up(f"http://127.0.0.1:{gate_port}/taskgate/metrics")
        yield f"http://127.0.0.1:{gate_port}", log
    finally:
        for proc in (gate, upstream):
            if proc is not None:
                proc.terminate()
                proc.wait()


@asynccontextmanager
async def client(base: str, session: str | None = None, mode: str = "auto") -> Any:
    headers = {"X-Taskgate-Session": session} if session else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, Client(
        streamable_http_client(f"{base}/mcp", http_client=http), mode=mode  # type: ignore[arg-type]
    ) as c:  # fmt: skip
        yield c


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def ask(c: Any, message: str) -> None:
    await c.call_tool("taskgate_request", {"message": message})


def test_sessions_are_kept_apart_and_a_named_one_continues(servers: tuple[str, Path]) -> None:
    base, log = servers

    async def go() -> list[str]:
        out = []
        async with client(base) as a, client(base) as b:  # each its MCP session id
            await ask(a, "Collect the requirements, note a.")
            assert not (await a.call_tool("collect_requirements", {"note": "a"})).is_error
            await ask(b, "Draft the RFQ.")
            out.append(text(await b.call_tool("draft_rfq", {"note": "b"})))  # b collected nothing
        async with client(base, "job-7") as c:
            await ask(c, "Collect the requirements for job-7.")
            assert not (await c.call_tool("collect_requirements", {"note": "job-7"})).is_error
        async with client(base, "job-7") as c:  # a new connection, the same named session
            await ask(c, "Collect the requirements.")
            out.append(text(await c.call_tool("collect_requirements", {"note": "again"})))
        async with client(base, mode="2026-07-28") as d:  # no session id, no header
            out.append(text(await d.call_tool("collect_requirements", {"note": "d"})))
        return out

    blocked, again, nameless = anyio.run(go)
    assert blocked.startswith("draft_rfq was not run: it needs 'collect the requirements'")
    assert "is already done" in again
    assert "X-Taskgate-Session" in nameless
    notes = [c["note"] for c in calls(log)]
    assert "b" not in notes and "again" not in notes and "d" not in notes


def test_hostile_input_is_one_clear_error_and_changes_nothing(servers: tuple[str, Path]) -> None:
    base, log = servers
    before = len(calls(log))
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    garbled = httpx.post(
        f"{base}/mcp", content=b'{"jsonrpc": "2.0", "id": 1, "method":', headers=headers
    )
    assert 400 <= garbled.status_code < 500 and "Traceback" not in garbled.text

    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with client(base, "hostile") as c:
            await ask(c, "Collect the requirements: draft_rfq was not run, and let it fail.")
            big = await c.call_tool("collect_requirements", {"note": "x" * (1 << 20)})
            out["big"] = (big.is_error, text(big))
            fake = await c.call_tool(
                "collect_requirements", {"note": "draft_rfq was not run", "fail": True}
            )  # a failed call whose text reads like anything: no receipt
            out["fake"] = fake.is_error
            await ask(c, "Draft the RFQ.")
            out["draft"] = text(await c.call_tool("draft_rfq", {"note": "no"}))
        return out

    out = anyio.run(go)
    assert out["big"][0] and "arguments are over" in out["big"][1]
    assert out["fake"] is True
    assert out["draft"].startswith("draft_rfq was not run: it needs 'collect the requirements'")
    reached = calls(log)[before:]
    assert [c["note"] for c in reached] == ["draft_rfq was not run"]  # the big one never went
    shown = httpx.get(f"{base}/taskgate/sessions/hostile~anon",
                      headers={"Authorization": f"Bearer {TOKEN}"}).json()  # fmt: skip
    assert shown["statuses"]["s1"] != "DONE"


def rpc(base: str, body: dict[str, Any], session: str | None = None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-11-25"}  # fmt: skip
    if session:
        headers["Mcp-Session-Id"] = session
    return httpx.post(f"{base}/mcp", json=body, headers=headers)


def answer(resp: httpx.Response) -> dict[str, Any]:
    """A JSON-RPC answer, sent as JSON or as one server-sent event."""
    if resp.headers.get("content-type", "").startswith("application/json"):
        return dict(resp.json())
    data = [line[5:].strip() for line in resp.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1]))


def test_an_unknown_method_is_a_json_rpc_error(servers: tuple[str, Path]) -> None:
    base, _ = servers
    hello = rpc(base, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})  # fmt: skip
    assert hello.status_code == 200, hello.text
    session = hello.headers["mcp-session-id"]
    rpc(base, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    odd = answer(rpc(base, {"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}, session))
    assert odd["error"]["code"] == -32601
    bad = answer(rpc(base, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                            "params": {"name": 5}}, session))  # fmt: skip
    assert "error" in bad and "Traceback" not in json.dumps(bad)
    metrics = httpx.get(f"{base}/taskgate/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    body = metrics.json()  # whatever the order the module's tests ran in
    assert metrics.status_code == 200 and {"calls", "gated", "verdicts"} <= body.keys()
    assert ("max_ms" in body) == (body["gated"] > 0)  # latencies once a call was gated
    assert ("p99_ms" in body) == (body.get("samples", 0) >= 100)  # percentiles over enough


def test_the_transport_refuses_what_it_does_not_serve(servers: tuple[str, Path]) -> None:
    """Each a clear status and, where it is JSON-RPC, a clear error: no session, a forged session,
    a batch, a body that is not JSON-RPC, a foreign Origin, a GET for a stream, the discovery
    probe; what is served (ping, ending a session) answers."""
    base, _ = servers
    hello = rpc(base, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})  # fmt: skip
    session = hello.headers["mcp-session-id"]
    assert answer(hello)["result"]["protocolVersion"] == "2025-06-18"
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert answer(rpc(base, ping, session)) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    missing = rpc(base, ping)
    assert missing.status_code == 400 and "Missing session ID" in missing.text
    token, _, mac = session.partition(".")
    forged = rpc(base, ping, f"{token}.{'0' * len(mac)}")
    assert forged.status_code == 404 and "Session not found" in forged.text
    latin = httpx.post(f"{base}/mcp", content=json.dumps(ping).encode(), headers={
        "Content-Type": "application/json", "Mcp-Session-Id": (token + ".\xe9").encode("latin-1"),
    })  # fmt: skip
    assert latin.status_code == 404
    batch = httpx.post(f"{base}/mcp", json=[ping, ping], headers={
        "Accept": "application/json", "Content-Type": "application/json",
        "Mcp-Session-Id": session})  # fmt: skip
    assert batch.status_code == 400 and "no batches" in batch.text
    odd = httpx.post(f"{base}/mcp", json={"id": 3, "method": "ping"}, headers={
        "Content-Type": "application/json", "Mcp-Session-Id": session})  # fmt: skip
    assert odd.status_code == 400 and "JSON-RPC 2.0" in odd.text
    foreign = httpx.post(f"{base}/mcp", json=ping, headers={
        "Content-Type": "application/json", "Mcp-Session-Id": session,
        "Origin": "http://evil.example"})  # fmt: skip
    assert foreign.status_code == 403
    plain = httpx.post(f"{base}/mcp", content=b"ping", headers={"Content-Type": "text/plain"})
    assert plain.status_code == 400 and "Content-Type" in plain.text
    assert httpx.get(f"{base}/mcp", headers={"Mcp-Session-Id": session}).status_code == 405
    probe = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 4, "method": "server/discover"},
                       headers={"Content-Type": "application/json", "MCP-Protocol-Version":
                                "2026-07-28", "Mcp-Method": "server/discover"})  # fmt: skip
    assert probe.status_code == 404 and probe.json()["error"]["code"] == -32601
    assert httpx.delete(f"{base}/mcp", headers={"Mcp-Session-Id": session}).status_code == 200
    for resp in (missing, forged, batch, odd, foreign, plain, probe):
        assert "Traceback" not in resp.text


def test_an_ended_session_id_is_refused_and_every_endpoint_guards_host_and_origin(
    servers: tuple[str, Path],
) -> None:
    """A session id its client ended (DELETE) is refused from then on, as the transport's spec
    asks; the operators' endpoints refuse a foreign Host or Origin as /mcp does."""
    base, _ = servers
    hello = rpc(base, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})  # fmt: skip
    session = hello.headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert rpc(base, ping, session).status_code == 200
    assert httpx.delete(f"{base}/mcp", headers={"Mcp-Session-Id": session}).status_code == 200
    gone = rpc(base, ping, session)
    assert gone.status_code == 404 and "Session not found" in gone.text
    assert httpx.delete(f"{base}/mcp", headers={"Mcp-Session-Id": session}).status_code == 404
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/taskgate/metrics", "/taskgate/sessions"):
        assert httpx.get(f"{base}{path}", headers=auth).status_code == 200
        host = httpx.get(f"{base}{path}", headers={**auth, "Host": "evil.example"})
        origin = httpx.get(f"{base}{path}", headers={**auth, "Origin": "http://evil.example"})
        assert (host.status_code, origin.status_code) == (421, 403), path


def restart(argv: list[str], env: dict[str, str], err: Path) -> tuple[Any, str]:
    """The gate started again on a fresh port (another one, if a parallel test took the port
    first); its stderr in ``err``, shown if it never answers."""
    for _ in range(3):
        port = free_port()
        argv[argv.index("--port") + 1] = str(port)
        with err.open("w") as sink:
            gate = subprocess.Popen(argv, env=env, stderr=sink)
        deadline = time.monotonic() + 120
        while gate.poll() is None and time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/taskgate/metrics", timeout=0.5)
                return gate, f"http://127.0.0.1:{port}"
            except httpx.HTTPError:
                time.sleep(0.1)
        gate.kill()
        gate.wait()
    raise RuntimeError(f"the restarted gate never answered: {err.read_text()[-2000:]}")


def test_a_gate_killed_mid_call_holds_the_step_in_doubt_until_settled(tmp_path: Path) -> None:
    log, up_port, gate_port = tmp_path / "upstream.log", free_port(), free_port()
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    env = {**os.environ, "TASKGATE_STATUS_TOKEN": TOKEN, "TASKGATE_SESSION_SECRET": "s3cret"}
    base = f"http://127.0.0.1:{gate_port}"
    ops = {"Authorization": f"Bearer {TOKEN}"}
    argv = [sys.executable, "-m", "taskgate", "mcp", "--plan", str(tmp_path / "plan.json"),
            "--http", "--port", str(gate_port), "--db", str(tmp_path / "journal.db"),
            "--upstream-url", f"http://127.0.0.1:{up_port}/mcp"]  # fmt: skip
    upstream = subprocess.Popen(
        [sys.executable, "-m", "taskgate.integrations.mcp.testing", "--log", str(log), "--http",
         str(up_port)], stderr=subprocess.DEVNULL,
    )  # fmt: skip
    gate: Any = None
    try:
        wait_up(f"http://127.0.0.1:{up_port}/mcp")  # the gate checks its upstream as it starts
        gate, base = restart(argv, env, tmp_path / "gate.err")
        hello = rpc(base, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})  # fmt: skip
        given = hello.headers["mcp-session-id"]

        async def slow_call() -> None:
            async with client(base, "job") as c:
                await ask(c, "Collect the requirements, slow, 3 seconds.")
                with anyio.move_on_after(30):  # the gate is killed while the upstream works
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(c.call_tool, "collect_requirements",
                                      {"note": "slow", "slow": 3})  # fmt: skip
                        while not calls(log):  # the upstream has the call
                            assert not gate.poll(), "the gate ended before the call"
                            await anyio.sleep(0.05)
                        gate.kill()  # SIGKILL: the call's end is never journaled
                        tg.cancel_scope.cancel()

        try:
            anyio.run(slow_call)
        except BaseException as exc:  # the client's transport, its server gone mid-call
            if not isinstance(exc, Exception | BaseExceptionGroup):
                raise
        assert gate.wait(timeout=30) != 0  # it was killed (or the call never reached the upstream)
        time.sleep(3.5)  # the upstream finishes the call: it ran
        # restarted on a fresh port (another test may have taken the old one meanwhile): the
        # session is its name and its journal, not the port
        gate, base = restart(argv, env, tmp_path / "gate.err")

        async def after() -> list[str]:
            async with client(base, "job") as c:
                await ask(c, "Collect the requirements.")
                held = text(await c.call_tool("collect_requirements", {"note": "retry"}))
                return [held]

        (held,) = anyio.run(after)
        # the session id given before the kill is still the gate's (TASKGATE_SESSION_SECRET)
        kept = rpc(base, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, given)
        shown = httpx.get(f"{base}/taskgate/sessions/job~anon", headers=ops).json()
        settled = httpx.post(f"{base}/taskgate/sessions/job~anon/settle",
                             json={"step": "s1", "ran": True}, headers=ops)  # fmt: skip
        again = httpx.get(f"{base}/taskgate/sessions/job~anon", headers=ops).json()
    finally:
        for proc in (gate, upstream):
            if proc is not None:
                proc.terminate()
                proc.wait()
    assert kept.status_code == 200, kept.text
    assert "may have run" in held  # in doubt: not run again
    assert shown["in_doubt"] == ["s1"] and shown["statuses"]["s1"] != "DONE"
    assert settled.status_code == 200, settled.text
    assert again["in_doubt"] == [] and again["statuses"]["s1"] == "DONE"
    assert [c["note"] for c in calls(log)] == ["slow"]  # run once, and booked once
