"""The measurement of how requests open at the MCP gate (bench/mcp_requests.py), scored with
scripted clients instead of a model: an obedient one whose every call is the user's step (each
way lets the asked steps run, and the request tool way sees it called first), and a careless one
that calls the plan's next step whatever the user said (only the plan's way lets those run)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from taskgate.core.verdict import Policy

pytest.importorskip("mcp", reason="needs the mcp extra")

spec = importlib.util.spec_from_file_location(
    "mcp_requests", Path(__file__).parents[2] / "bench" / "mcp_requests.py"
)
assert spec is not None and spec.loader is not None
bench = importlib.util.module_from_spec(spec)
sys.modules["mcp_requests"] = bench  # its dataclasses look their module up
spec.loader.exec_module(bench)


class Scripted:
    """A client whose choice is the user's step (``obedient``) or the plan's next step."""

    def __init__(self, obedient: bool) -> None:
        self.obedient = obedient
        self.done: list[str] = []

    async def complete(self, messages: list[dict[str, str]], *args: Any) -> Any:
        said = next(m["content"] for m in messages if m["role"] == "user")
        asked = next((t for t, text in bench.ASK.items() if text == said), None)
        offered = args[2]["response_format"]["schema"]["properties"]["tool"]["enum"]
        called = [json.loads(m["content"])["tool"] for m in messages if m["role"] == "assistant"]
        if "taskgate_request" in offered and not called:
            tool = "taskgate_request"
        elif self.obedient:
            tool = asked if asked and asked not in called else "none"
        else:
            pending = [s for s in bench.STEPS if s not in self.done]
            tool = pending[0] if pending and called[-1:] != pending[:1] else "none"
        last = messages[-1]["content"]
        if last.endswith(": done") and called:
            self.done.append(called[-1])
        return type("Reply", (), {"text": json.dumps({"tool": tool})})()


def counts(way: str, obedient: bool, policy: Policy = Policy.REQUEST_BOUND) -> Counter[str]:
    out: Counter[str] = Counter()
    for seed in range(3):
        asyncio.run(bench.episode(Scripted(obedient), way, seed, out, policy))
    return out


@pytest.mark.parametrize(("way", "policy"), bench.ROWS)
def test_an_obedient_client_runs_every_asked_step_and_nothing_else(way: str, policy: Any) -> None:
    c = counts(way, obedient=True, policy=policy)
    assert c["run, as asked"] == c["calls to run"] > 0
    assert c["unasked ran"] == 0
    if way == "tool":
        assert c["request first"] == c["turns"]


def test_a_careless_client_runs_unasked_steps_only_under_the_plans_order() -> None:
    """Request-bound, the ways that know the user's words stop every step not asked for; the
    plan's order (state-bound, as the state-bound policy of the others) lets ready ones run."""
    assert counts("plan", obedient=False, policy=Policy.STATE_BOUND)["unasked ran"] > 0
    assert counts("tool", obedient=False, policy=Policy.STATE_BOUND)["unasked ran"] > 0
    for way in ("tool", "application"):
        c = counts(way, obedient=False)
        assert c["unasked ran"] == 0 and c["stopped"] == c["calls to stop"] > 0
