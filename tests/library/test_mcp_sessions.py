"""The MCP gate's sessions without MCP: a tool gate per session, journaled before it acts, calls
in doubt held until settled, a restart on SQLite or PostgreSQL continuing every session."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra")

from plans import tool_chain
from taskgate.errors import UsageError
from taskgate.integrations.mcp import McpGate, McpGateConfig
from taskgate.journal.store import MemoryStore, SQLiteStore, Store
from taskgate.serving.router import Unavailable

PLAN = tool_chain(3)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def ok() -> str:
    return "done"


async def broken() -> str:
    raise ConnectionError("the upstream went away")


async def call(gate: McpGate, tool: str, forward: Any = ok) -> Any:
    return await gate.call("s~local", tool, {}, forward, lambda r: True)


def test_a_call_with_no_answer_holds_its_step_until_settled() -> None:
    gate = McpGate(McpGateConfig(PLAN, requests="plan"))

    async def go() -> list[Any]:
        with pytest.raises(ConnectionError):
            await call(gate, "collect_requirements", broken)
        held = await call(gate, "collect_requirements")  # in doubt: not run again
        with pytest.raises(UsageError, match="no call of step 's2' is in doubt"):
            await gate.settle("s~local", "s2", ran=True)
        await gate.settle("s~local", "s1", ran=False)  # it did not run: free again
        again = await call(gate, "collect_requirements")
        return [held, again]

    held, again = run(go())
    assert held.refused and "may have run" in held.text
    assert not again.refused and again.result == "done"


def test_settled_as_run_books_the_receipt_without_running_it() -> None:
    gate = McpGate(McpGateConfig(PLAN, requests="plan"))

    async def go() -> Any:
        with pytest.raises(ConnectionError):
            await call(gate, "collect_requirements", broken)
        await gate.settle("s~local", "s1", ran=True)
        return await call(gate, "draft_rfq")

    assert not run(go()).refused  # s1 has its receipt: s2 runs
    assert gate.sessions["s~local"].gate.machine.status("s1").name == "DONE"


def continued(store_a: Store, store_b: Store) -> tuple[Any, Any]:
    """A session on one gate, then the same journal read by a fresh one."""
    first = McpGate(McpGateConfig(PLAN, requests="plan"), store_a)

    async def one() -> None:
        assert not (await call(first, "collect_requirements")).refused
        with pytest.raises(ConnectionError):
            await call(first, "draft_rfq", broken)  # in doubt when the gate "dies"

    async def two() -> tuple[Any, Any]:
        fresh = McpGate(McpGateConfig(PLAN, requests="plan"), store_b)
        return await call(fresh, "collect_requirements"), await call(fresh, "draft_rfq")

    run(one())
    return run(two())


def test_a_restart_on_sqlite_continues_the_session(tmp_path: Path) -> None:
    done, doubt = continued(SQLiteStore(tmp_path / "j.db"), SQLiteStore(tmp_path / "j.db"))
    assert done.refused and "already done" in done.text
    assert doubt.refused and "may have run" in doubt.text


def test_a_restart_on_postgresql_continues_the_session(postgres: str) -> None:
    from taskgate.journal.postgres import PostgresStore

    done, doubt = continued(PostgresStore(postgres), PostgresStore(postgres))
    assert done.refused and "already done" in done.text
    assert doubt.refused and "may have run" in doubt.text


def test_a_journal_started_with_another_plan_is_refused() -> None:
    store = MemoryStore()
    run(McpGate(McpGateConfig(PLAN), store).session("s~local"))
    other = McpGate(McpGateConfig(tool_chain(2)), store)
    with pytest.raises(UsageError, match="started with another plan"):
        run(other.session("s~local"))


def test_bad_options_are_one_line_each() -> None:
    with pytest.raises(UsageError, match="requests must be tool, plan or application"):
        McpGateConfig(PLAN, requests="always")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unbound must be run or refuse"):
        McpGateConfig(PLAN, unbound="maybe")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="tool-bound"):
        from taskgate import Plan

        McpGateConfig(Plan.model_validate({"steps": {"s1": {"code": "RC-1"}}}))


def test_a_call_still_being_forwarded_cannot_be_settled() -> None:
    gate = McpGate(McpGateConfig(PLAN, requests="plan"))

    async def go() -> Any:
        release = asyncio.Event()

        async def slow() -> str:
            await release.wait()
            return "done"

        running = asyncio.create_task(call(gate, "collect_requirements", slow))
        await asyncio.sleep(0.01)
        with pytest.raises(UsageError, match="still running"):
            await gate.settle("s~local", "s1", ran=False)
        release.set()
        return await running

    assert not run(go()).refused
    session = gate.sessions["s~local"]
    assert session.gate.machine.status("s1").name == "DONE" and not session.in_doubt()


class FailingOnce(MemoryStore):
    """A journal whose next append fails (a full disk, a dropped connection)."""

    fail = False

    async def append(self, key: str, seq: int, events: Any) -> None:
        if self.fail:
            self.fail = False
            raise OSError("disk full")
        await super().append(key, seq, events)


def test_a_failed_journal_write_leaves_no_phantom_state() -> None:
    store = FailingOnce()
    gate = McpGate(McpGateConfig(PLAN, requests="plan"), store)

    async def go() -> Any:
        await gate.session("s~local")
        store.fail = True
        with pytest.raises(Unavailable, match="could not record it: disk full"):
            await call(gate, "collect_requirements")  # its start could not be journaled
        return await call(gate, "collect_requirements")  # read back: never begun, free

    assert not run(go()).refused
    assert not gate.sessions["s~local"].conv.in_flight


def test_idle_sessions_beyond_the_cap_leave_memory_and_come_back_from_the_journal() -> None:
    store = MemoryStore()
    gate = McpGate(McpGateConfig(PLAN, requests="plan"), store, max_sessions=2)

    async def go() -> Any:
        for key in ("a~x", "b~x", "c~x"):
            await gate.call(key, "collect_requirements", {}, ok, lambda r: True)
        assert list(gate.sessions) == ["b~x", "c~x"]
        return await gate.call("a~x", "collect_requirements", {}, ok, lambda r: True)

    again = run(go())
    assert again.refused and "already done" in again.text  # its state came back


def test_requests_from_the_application_hide_the_request_tool_and_bind_calls() -> None:
    """``--requests application``: the model is not offered ``taskgate_request`` (a call of it
    reaches no tool), and what the application posts is the request calls are judged on (here
    request-bound: only the step it asks for runs)."""
    import mcp_types as types

    from taskgate.integrations.mcp.server import GateState
    from taskgate.integrations.mcp.server import call as mcp_call

    class Upstream:
        async def call_tool(self, name: str, args: Any, meta: Any = None) -> types.CallToolResult:
            return types.CallToolResult(content=[types.TextContent(text=f"{name}: done")])

    from taskgate.core.verdict import Policy

    gate = McpGate(McpGateConfig(PLAN, requests="application", policy=Policy.REQUEST_BOUND))
    route: Any = {"collect_requirements": Upstream(), "draft_rfq": Upstream()}
    state = GateState(gate, [], route, "stdio")

    def params(name: str, **args: Any) -> types.CallToolRequestParams:
        return types.CallToolRequestParams(name=name, arguments=args)

    async def go() -> list[types.CallToolResult]:
        hidden = await mcp_call(state, "k~anon", params("taskgate_request", message="Collect."))
        before = await mcp_call(state, "k~anon", params("collect_requirements"))
        await gate.request("k~anon", "Collect the requirements, please.")  # the application
        asked = await mcp_call(state, "k~anon", params("collect_requirements"))
        other = await mcp_call(state, "k~anon", params("draft_rfq"))
        return [hidden, before, asked, other]

    hidden, before, asked, other = run(go())
    assert hidden.is_error and "no server behind this gate has that tool" in hidden.content[0].text
    assert before.is_error and "no request from the user" in before.content[0].text
    assert not asked.is_error
    assert other.is_error and "has not asked for" in other.content[0].text


@pytest.mark.parametrize(
    ("code", "doubt"),
    [(-32000, ["s1"]), (-32001, ["s1"]), (-32603, ["s1"]), (-32602, []), (-32601, [])],
)
def test_an_upstream_error_frees_the_step_only_when_it_says_the_call_never_ran(
    code: int, doubt: list[str]
) -> None:
    """The SDK's client raises its own "connection closed" (-32000) or timeout (-32001) when a
    stdio upstream dies mid-call, and a server may answer an internal error (-32603) after doing
    the work: the call is in doubt, its step not run again until settled. Only an error that says
    the request was refused before it ran (invalid params, unknown method) frees the step."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    from taskgate.integrations.mcp.server import GateState, call

    ran: list[str] = []

    class Dying:
        async def call_tool(self, name: str, args: Any, meta: Any = None) -> Any:
            ran.append(name)
            raise MCPError(code=code, message="gone")

    gate = McpGate(McpGateConfig(plan=PLAN, requests="application"))
    state = GateState(gate, [], {"collect_requirements": Dying()}, "stdio")  # type: ignore[dict-item]
    params = types.CallToolRequestParams(name="collect_requirements", arguments={})

    async def go() -> tuple[list[str], str]:
        await gate.request("stdio~local", "Collect the requirements.")
        try:
            first = await call(state, "stdio~local", params)
            said = first.content[0].text  # type: ignore[union-attr]
        except MCPError as exc:
            said = exc.error.message
        session = await gate.session("stdio~local")
        return sorted(session.gate.in_doubt()), said

    in_doubt, said = asyncio.run(go())
    assert in_doubt == doubt and ran == ["collect_requirements"]
    assert ("no answer that says whether it ran" in said) == bool(doubt)


@pytest.mark.parametrize("requests", ["application", "plan"])
def test_a_call_in_doubt_over_stdio_is_settled_from_the_command_line(
    tmp_path: Path, requests: str
) -> None:
    """A stdio gate without --status-port still has a way to settle: ``taskgate mcp --settle STEP
    --ran|--not-run`` on its --db (with the options the gate ran with), no upstream started."""
    import json

    from typer.testing import CliRunner

    from taskgate.cli import app

    db, plan_file = tmp_path / "gate.db", tmp_path / "plan.json"
    plan_file.write_text(json.dumps(PLAN.model_dump(mode="json")))

    async def crash() -> None:
        store = SQLiteStore(db)
        gate = McpGate(McpGateConfig(PLAN, requests=requests), store)  # type: ignore[arg-type]
        if requests == "application":
            await gate.request("stdio~local", "Collect the requirements.")

        async def gone() -> str:
            raise ConnectionError("the upstream exited")

        with pytest.raises(ConnectionError):
            await gate.call("stdio~local", "collect_requirements", {}, gone, lambda r: True)
        await store.close()

    async def state() -> tuple[list[str], str]:
        store = SQLiteStore(db)
        config = McpGateConfig(PLAN, requests=requests)  # type: ignore[arg-type]
        session = await McpGate(config, store).session("stdio~local")
        await store.close()
        return sorted(session.gate.in_doubt()), session.gate.machine.status("s1").value

    asyncio.run(crash())
    assert asyncio.run(state()) == (["s1"], "TODO")
    argv = ["mcp", "--plan", str(plan_file), "--db", str(db), "--requests", requests,
            "--settle", "collect_requirements"]  # fmt: skip
    missing = CliRunner().invoke(app, argv)
    assert missing.exit_code != 0 and "--ran or --not-run" in missing.output
    done = CliRunner().invoke(app, [*argv, "--ran"])
    assert done.exit_code == 0, done.output
    assert "settled" in done.output
    assert asyncio.run(state()) == ([], "DONE")


def test_an_approval_waits_for_a_request_and_is_refused_for_a_step_in_doubt() -> None:
    """An operator's approval held before any request stays held until one opens (never dropped
    for want of a request); one of a step whose call is in doubt is refused when it is posted."""
    from taskgate.journal.held import held_approval

    gate = McpGate(McpGateConfig(PLAN, requests="application"))
    key = "k~local"

    async def go() -> tuple[bool, int, bool, str]:
        await gate.hold(key, lambda conv, m: held_approval(conv, m, "draft_rfq", "ops", ""))
        early = await call_on(gate, key, "draft_rfq")  # no request yet: refused, still held
        session = await gate.session(key)
        still_held = len(session.conv.held)
        await gate.request(key, "Thanks!")
        approved = await call_on(gate, key, "draft_rfq")  # blocked, but approved: runs

        async def gone() -> str:
            raise ConnectionError("the upstream exited")

        await gate.request(key, "Collect the requirements.")
        with pytest.raises(ConnectionError):
            await gate.call(key, "collect_requirements", {}, gone, lambda r: True)
        with pytest.raises(UsageError, match="running or in doubt"):
            await gate.hold(key, lambda conv, m: held_approval(
                conv, m, "collect_requirements", "ops", ""))  # fmt: skip
        return early.refused, still_held, approved.refused, approved.text

    early, still_held, refused, said = asyncio.run(go())
    assert early and still_held == 1
    assert not refused, said


async def call_on(gate: McpGate, key: str, tool: str) -> Any:
    async def run() -> str:
        return f"{tool}: done"

    return await gate.call(key, tool, {}, run, lambda r: True)


def test_a_journal_that_fails_under_an_operators_change_is_a_503_as_on_the_proxy() -> None:
    """The operators' router answers a change the MCP gate could not record with 503, as the
    proxy does (not a 400 saying the change itself was refused); nothing is held."""
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from taskgate.integrations.mcp.operator import routes

    store = FailingOnce()
    gate = McpGate(McpGateConfig(PLAN, requests="plan", status_token="ops"), store)
    run(gate.session("s~local"))
    store.fail = True
    with TestClient(Starlette(routes=routes(gate, "testserver"))) as client:
        answer = client.post("/taskgate/sessions/s~local/approvals",
                             json={"step": "s1", "by": "dana", "reason": "checked"},
                             headers={"Authorization": "Bearer ops"})  # fmt: skip
        assert answer.status_code == 503, answer.text
        assert "could not record" in answer.json()["error"]["message"]
        shown = client.get("/taskgate/sessions/s~local", headers={"Authorization": "Bearer ops"})
    assert shown.status_code == 200 and shown.json()["held"] == []
