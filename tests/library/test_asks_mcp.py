"""A held call through the MCP gate, with the official SDK's client over stdio and a real
upstream: asked through the client's elicitation when it declares the capability (accept runs
it, decline drops it), and asked back to the agent otherwise (the user's yes runs it)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="needs the mcp extra")

from mcp import Client, StdioServerParameters, types

from taskgate.integrations.mcp.testing import calls

pytestmark = pytest.mark.slow  # real subprocesses: the gate and its upstream

PLAN = {"binding": "tool", "steps": {"s1": {"tool": "collect_requirements",
                                            "text": "collect the requirements"}}}  # fmt: skip
UNSURE = "Sounds interesting."  # asks for nothing clearly: a call now is held


def params(tmp: Path) -> StdioServerParameters:
    (tmp / "plan.json").write_text(json.dumps(PLAN))
    args = ["-m", "taskgate", "mcp", "--plan", str(tmp / "plan.json"), "--",
            sys.executable, "-m", "taskgate.integrations.mcp.testing", "--log",
            str(tmp / "upstream.log")]  # fmt: skip
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def held_call(tmp: Path, elicit: Any) -> tuple[bool, str]:
    """An unclear message, then a call the gate holds, from a client with ``elicit``."""
    async with Client(params(tmp), elicitation_callback=elicit) as client:
        await client.call_tool("taskgate_request", {"message": UNSURE})
        result = await client.call_tool("collect_requirements", {"note": "laptops"})
        return bool(result.is_error), text(result)


@pytest.mark.parametrize(("action", "ran"), [("accept", True), ("decline", False),
                                             ("cancel", False)])  # fmt: skip
def test_an_elicitation_asks_the_clients_user_and_runs_only_on_accept(
    tmp_path: Path, action: str, ran: bool
) -> None:
    shown: list[str] = []

    async def elicit(context: Any, request: Any) -> types.ElicitResult:
        shown.append(request.message)
        return types.ElicitResult(action=action, content={} if action == "accept" else None)  # type: ignore[arg-type]

    failed, said = anyio.run(held_call, tmp_path, elicit)
    assert shown == ["Shall I collect the requirements (note: laptops)? Yes or no?"]
    assert failed is not ran
    upstream = calls(tmp_path / "upstream.log") if (tmp_path / "upstream.log").exists() else []
    assert [c["tool"] for c in upstream] == (["collect_requirements"] if ran else [])
    if not ran:
        assert "the user said no" in said


def test_without_elicitation_the_agent_asks_and_the_users_yes_runs_the_call(
    tmp_path: Path,
) -> None:
    async def go() -> list[tuple[bool, str]]:
        out = []
        async with Client(params(tmp_path)) as client:
            await client.call_tool("taskgate_request", {"message": UNSURE})
            first = await client.call_tool("collect_requirements", {"note": "laptops"})
            out.append((bool(first.is_error), text(first)))
            said = await client.call_tool("taskgate_request", {"message": "Yes, go ahead."})
            out.append((False, text(said)))
            second = await client.call_tool("collect_requirements", {"note": "laptops"})
            out.append((bool(second.is_error), text(second)))
        return out

    (held, asked), (_, noted), (failed, _) = anyio.run(go)
    assert held and "Shall I collect the requirements (note: laptops)? Yes or no?" in asked
    assert noted.startswith("Noted: the user said yes to the call you asked about")
    assert not failed
    assert [c["tool"] for c in calls(tmp_path / "upstream.log")] == ["collect_requirements"]


def test_an_elicitation_the_client_fails_falls_back_to_asking_through_the_agent(
    tmp_path: Path,
) -> None:
    async def elicit(context: Any, request: Any) -> types.ErrorData:
        return types.ErrorData(code=types.INTERNAL_ERROR, message="no user here")

    failed, said = anyio.run(held_call, tmp_path, elicit)
    assert failed and "Shall I collect the requirements (note: laptops)? Yes or no?" in said
