"""The MCP gate end to end: the official SDK's client, ``taskgate mcp`` as a subprocess over stdio,
and a real upstream MCP server it starts as its own subprocess. The upstream's log shows that no
refused call reached it."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp", reason="needs the mcp extra")

from mcp import Client, StdioServerParameters

from taskgate.integrations.mcp.testing import calls

#: real subprocesses (the gate, the upstream) over stdio and HTTP: the full suite runs them
pytestmark = pytest.mark.slow

PLAN = {"binding": "tool", "steps": {
    "s1": {"tool": "collect_requirements", "text": "collect the requirements"},
    "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"]},
    "s3": {"tool": "send_rfq", "text": "send the RFQ", "deps": ["s2"]},
    "s4": {"tool": "select_vendor", "text": "select the vendor", "deps": ["s3"]},
    "s5": {"tool": "place_order", "text": "place the order", "deps": ["s4"]},
}}  # fmt: skip
TOKEN = "ops-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gate_params(tmp: Path, *extra: str, db: Path | None = None) -> StdioServerParameters:
    (tmp / "plan.json").write_text(json.dumps(PLAN))
    args = ["-m", "taskgate", "mcp", "--plan", str(tmp / "plan.json"), *extra]
    if db is not None:
        args += ["--db", str(db)]
    args += ["--", sys.executable, "-m", "taskgate.integrations.mcp.testing", "--log",
             str(tmp / "upstream.log")]  # fmt: skip
    env = {**os.environ, "TASKGATE_STATUS_TOKEN": TOKEN}
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@asynccontextmanager
async def gate(tmp: Path, *extra: str, db: Path | None = None) -> AsyncIterator[Client]:
    async with Client(gate_params(tmp, *extra, db=db)) as client:
        yield client


def operator(port: int, path: str, body: dict[str, Any]) -> httpx.Response:
    deadline = time.monotonic() + 20
    while True:
        try:
            return httpx.post(f"http://127.0.0.1:{port}/taskgate/sessions/stdio/{path}",
                              json=body, headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
        except httpx.ConnectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _mcp_status(port: int) -> str:
    """``taskgate mcp-status``, the proxy-status twin: the list, then the session."""
    from typer.testing import CliRunner

    from taskgate.cli import app

    url = ["--url", f"http://127.0.0.1:{port}"]
    env = {"TASKGATE_STATUS_TOKEN": TOKEN}
    listed = CliRunner().invoke(app, ["mcp-status", *url], env=env)
    shown = CliRunner().invoke(app, ["mcp-status", "stdio", *url], env=env)
    nothing = CliRunner().invoke(app, ["mcp-status", "nobody", *url], env=env)
    assert listed.exit_code == 0 and listed.stdout.startswith("stdio"), listed.output
    assert nothing.exit_code == 2 and "TASKGATE_STATUS_TOKEN" in nothing.stderr
    return shown.stdout


def test_a_session_through_the_gate_does_what_the_state_says(tmp_path: Path) -> None:
    port = free_port()

    async def go() -> dict[str, str]:
        out: dict[str, str] = {}
        async with gate(tmp_path, "--status-port", str(port)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "taskgate_request" in names and "place_order" in names

            async def say(message: str) -> str:
                return text(await client.call_tool("taskgate_request", {"message": message}))

            async def call(tool: str, note: str = "") -> tuple[bool, str]:
                result = await client.call_tool(tool, {"note": note})
                return bool(result.is_error), text(result)

            out["before any request"] = (await call("collect_requirements"))[1]
            assert (await say("Please draft the RFQ.")).startswith("Noted")
            out["blocked"] = (await call("draft_rfq", "blocked"))[1]
            await say("Collect the requirements first.")
            assert await call("collect_requirements", "first") == (
                False, "collect_requirements: done (first)")  # fmt: skip
            await say("Collect the requirements.")
            out["done again"] = (await call("collect_requirements", "twice"))[1]
            await say("Please redo the requirements, the budget changed.")
            assert not (await call("collect_requirements", "redo"))[0]
            assert not (await call("search_catalog", "laptops"))[0]  # unbound: a read
            resp = await anyio.to_thread.run_sync(
                lambda: operator(port, "revisions", {"cancel": "s3", "inherit": True})
            )
            assert resp.status_code == 200, resp.text
            await say("Send the RFQ.")
            out["cancelled"] = (await call("send_rfq", "cancelled"))[1]
            await say("Place the order now, approved.")
            out["blocked order"] = (await call("place_order", "blocked"))[1]
            resp = await anyio.to_thread.run_sync(
                lambda: operator(port, "approvals", {"step": "place_order", "by": "dana"})
            )
            assert resp.status_code == 200, resp.text
            assert await call("place_order", "approved") == (
                False, "place_order: done (approved)")  # fmt: skip
            ledger = httpx.get(f"http://127.0.0.1:{port}/taskgate/sessions/stdio",
                               headers={"Authorization": f"Bearer {TOKEN}"}).json()["ledger"]  # fmt: skip
            out["reasons"] = ",".join(
                r["reason"] for r in ledger if r["kind"] == "attempt" and r["decision"] == "refuse"
            )
            out["mcp-status"] = await anyio.to_thread.run_sync(lambda: _mcp_status(port))
        return out

    out = anyio.run(go)
    assert out["mcp-status"].startswith("session stdio~local (")
    assert "Task steps, as the gate recorded them" in out["mcp-status"]  # plain words
    assert "work order" not in out["mcp-status"] and "#W" not in out["mcp-status"]
    assert out["before any request"].startswith(
        "collect_requirements was not run: there is no request from the user"
    )
    assert out["blocked"].startswith(
        "draft_rfq was not run: it needs 'collect the requirements' done first."
    )
    assert out["done again"].startswith(
        "collect_requirements was not run: 'collect the requirements' is already done"
    )
    assert out["cancelled"].startswith("send_rfq was not run: 'send the RFQ' was cancelled.")
    assert out["blocked order"].startswith("place_order was not run: it needs 'select the vendor'")
    assert out["reasons"] == "no-request,blocked,already-done,cancelled,blocked"
    reached = [(c["tool"], c["note"]) for c in calls(tmp_path / "upstream.log")]
    assert reached == [("collect_requirements", "first"), ("collect_requirements", "redo"),
                       ("search_catalog", "laptops"), ("place_order", "approved")]  # fmt: skip


def test_a_restarted_gate_continues_the_session_from_its_journal(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"

    async def first() -> None:
        async with gate(tmp_path, db=db) as client:
            await client.call_tool(
                "taskgate_request", {"message": "Collect the requirements once."}
            )
            result = await client.call_tool("collect_requirements", {"note": "once"})
            assert not result.is_error

    async def second() -> tuple[str, bool]:
        async with gate(tmp_path, db=db) as client:  # a new process, the same journal
            await client.call_tool("taskgate_request", {"message": "Collect the requirements."})
            again = await client.call_tool("collect_requirements", {"note": "twice"})
            await client.call_tool("taskgate_request", {"message": "Draft the RFQ now."})
            draft = await client.call_tool("draft_rfq", {"note": "now"})
            return text(again), bool(draft.is_error)

    anyio.run(first)
    again, draft_refused = anyio.run(second)
    assert "is already done" in again and not draft_refused
    assert [c["note"] for c in calls(tmp_path / "upstream.log")] == ["once", "now"]


def test_the_plan_must_name_tools_the_upstream_has(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "plan.json").write_text(json.dumps(
        {"binding": "tool", "steps": {"a": {"tool": "buy_laptops"}}}))  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "taskgate", "mcp", "--plan", str(tmp_path / "plan.json"), "--",
         sys.executable, "-m", "taskgate.integrations.mcp.testing"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "buy_laptops" in proc.stderr and "Traceback" not in proc.stderr
    for bad, says in ((["--", "/nonexistent/mcp-server"], "could not be reached"),
                      (["--upstream", 'python "x'], "No closing quotation")):  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "taskgate", "mcp", "--plan", str(tmp_path / "plan.json"), *bad],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_the_plan_compiled_at_start_from_the_task_and_the_upstreams_tools(tmp_path: Path) -> None:
    from taskgate import FakeServer, Reply

    plan = {"steps": {"s1": {"tool": "collect_requirements", "text": "collect the requirements"},
                      "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"]}},
            "lookups": ["place_order", "search_catalog", "select_vendor", "send_rfq"]}  # fmt: skip
    prompts: list[str] = []

    def helper(body: dict[str, Any]) -> Reply:
        prompts.append(str(body["messages"][-1]["content"]))
        return Reply(json.dumps(plan))

    (tmp_path / "task.txt").write_text("Buy 40 laptops for the new office.")
    with FakeServer(helper) as fake:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "taskgate", "mcp", "--plan", "compile", "--task", str(tmp_path / "task.txt"),
                  "--helper-url", fake.base_url, "--helper-model", "fake", "--requests", "plan",
                  "--", sys.executable, "-m", "taskgate.integrations.mcp.testing"],
            env=dict(os.environ),
        )  # fmt: skip

        async def go() -> str:
            async with Client(params) as client:
                return text(await client.call_tool("draft_rfq", {"note": ""}))

        refused = anyio.run(go)
    assert refused.startswith("draft_rfq was not run: it needs 'collect the requirements'")
    assert (
        "Buy 40 laptops" in prompts[0] and "- place_order: Place the purchase order" in prompts[0]
    )


def test_the_applications_first_message_opens_the_sessions_first_request(tmp_path: Path) -> None:
    """``--requests application`` from nothing: the application posts the user's first message
    before the client has made any call (by the session's name, over stdio), and the client's
    first call runs on it."""
    port = free_port()

    async def go() -> tuple[int, str, bool, str]:
        args = ("--requests", "application", "--status-port", str(port))
        async with gate(tmp_path, *args) as client:
            posted = await anyio.to_thread.run_sync(
                lambda: operator(port, "requests", {"message": "Collect the requirements first."})
            )
            result = await client.call_tool("collect_requirements", {"note": "first"})
            return (
                posted.status_code,
                posted.json().get("session", ""),
                bool(result.is_error),
                text(result),
            )

    status, session, failed, said = anyio.run(go)
    assert (status, session) == (200, "stdio~local")
    assert not failed and said == "collect_requirements: done (first)"
    assert calls(tmp_path / "upstream.log") == [{"tool": "collect_requirements", "note": "first"}]
