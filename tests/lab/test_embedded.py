"""End to end on the real embedded model (SmolLM2-135M via llama.cpp), through its local server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from taskgate import ChatClient, Endpoint, LocalServer, gguf_path
from taskgate.lab import LadderConfig, run_ladder
from taskgate.lab.rundir import LOG, read_log
from taskgate.lab.runner.config import Variant
from taskgate.lab.scoring.index import score_run
from taskgate.lab.scoring.summary import summarize
from taskgate.llm.local import MODEL_NAME

pytestmark = pytest.mark.slow  # the real model on 2 cores: minutes, bounded by tokens and turns


def run_embedded(
    config: LadderConfig, out: Path, reply_budget: int, variant: Variant | None = None
) -> None:
    """Run ``config`` on the embedded model: one server for the agent, one for the matcher and
    compiler, so that each keeps its own KV prefix (as the CLI does)."""
    with LocalServer() as agent_srv, LocalServer() as helper_srv:

        async def go() -> None:
            agent = Endpoint(
                base_url=agent_srv.base_url, model=MODEL_NAME, reply_budget=reply_budget
            )
            async with (
                ChatClient(agent) as client,
                ChatClient(Endpoint(base_url=helper_srv.base_url, model=MODEL_NAME)) as helper,
            ):
                await run_ladder(config, out, client=client, helper=helper, variant=variant)

        asyncio.run(go())


def test_the_gguf_ships_in_a_wheel() -> None:
    path = gguf_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


def test_an_episode_on_the_real_model_through_the_local_server(tmp_path: Path) -> None:
    config = LadderConfig(
        arms=("enforcement",), agent="llm", compiler="parser", matcher="llm", steps=(5,), episodes=1
    )
    run_embedded(config, tmp_path, reply_budget=24)
    (run,) = read_log(tmp_path / LOG).values()
    assert [t.index for t in run.turns] == list(range(44))
    agent = [c for c in run.calls if c.purpose == "agent"]
    matcher = [c for c in run.calls if c.purpose == "matcher"]
    asked = [c for c in matcher if not c.reask]  # each matched turn: one call, maybe one re-ask
    assert len(agent) >= 44 and len(asked) == sum(t.matched is not None for t in run.turns)
    assert all(c.error is None and c.prompt_tokens > 0 for c in run.calls)
    assert sum(bool(t.replies[-1].strip()) for t in run.turns) > 22  # the model answers
    (scored,) = score_run(tmp_path)
    (row,) = summarize([scored], ["enforcement"])
    errors = sum(scored.score.primary.channels.values())
    assert row.n == 1 and row.rate == (1.0 if errors == 0 else 0.0)  # strict: no error at all
    booked = sum(len(t.bookings) for t in run.turns)
    refused = sum(b.decision == "refuse" for t in run.turns for b in t.bookings)
    assert scored.score.refused == refused <= booked  # every refusal is a logged booking


def test_the_model_in_process() -> None:
    from taskgate import InProcessModel

    model = InProcessModel(n_ctx=512)
    text = asyncio.run(model.achat([{"role": "user", "content": "Say hello."}], max_tokens=8))
    assert isinstance(text, str) and text.strip()


def test_a_tau2_smoke_run_on_the_real_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tau2's orchestrator, agent and user simulator on SmolLM2, all four arms: it completes."""
    pytest.importorskip("tau2")
    from typer.testing import CliRunner

    from taskgate.cli import app

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out = tmp_path / "smoke"
    result = CliRunner().invoke(app, ["tau2", "run", "--out", str(out), "--max-steps", "4"])
    assert result.exit_code == 0, result.output
    for arm in ("ungated", "state-block", "advisory", "gated"):
        (sim,) = json.loads((out / f"{arm}.json").read_text())["simulations"]
        assert sim["termination_reason"] in {"max_steps", "user_stop", "agent_stop"}
        assert sim["reward_info"] is not None and len(sim["messages"]) >= 2
    assert "| Paired delta, gated |" in result.output


def test_a_harness_episode_on_the_real_model_calls_tools(tmp_path: Path) -> None:
    """The tool harness on SmolLM2, constrained by llama.cpp's grammar: it calls tools every
    turn, the workspace holds what it executed, and the enforcement gate refuses what it must."""
    pytest.importorskip("langgraph")
    from taskgate.lab.harness.runner import ToolHarness

    config = LadderConfig(
        arms=("enforcement",), agent="llm:constrained", compiler="parser", matcher="llm",
        steps=(5,), episodes=1, first_seed=300,
    )  # fmt: skip
    run_embedded(config, tmp_path, reply_budget=64, variant=ToolHarness(tmp_path))
    (run,) = read_log(tmp_path / LOG).values()
    assert run.header.harness is not None and [t.index for t in run.turns] == list(range(44))
    asked = [t for t in run.turns if t.work_order is not None]
    calls = [b for t in asked for b in t.bookings if b.reply_index == 0]
    assert len(calls) >= len(asked) - 2  # the grammar makes the reply to a request a call
    assert all(b.work_order == t.work_order for t in asked for b in t.bookings)
    assert all(b.tool for b in calls)
    refused = [b for t in run.turns for b in t.bookings if b.decision == "refuse"]
    executed = [e for t in run.turns for e in t.executions or []]
    assert len(executed) + len(refused) == sum(len(t.bookings) for t in run.turns) > 0
    (scored,) = score_run(tmp_path)
    work_order = ("stale-work-order", "unknown-work-order", "no-request")
    assert scored.harness == "actions"
    assert scored.score.refused == sum(b.reason not in work_order for b in refused)


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def test_a_terminated_command_stops_its_model_servers(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    cmd = [sys.executable, "-m", "taskgate", "ladder", "--arms", "raw", "--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    servers: set[int] = set()
    while time.monotonic() < deadline and len(servers) < 2:
        servers = _children(proc.pid)
        time.sleep(0.5)
    assert len(servers) == 2, "the embedded model's two servers did not start"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    gone = time.monotonic() + 10
    while time.monotonic() < gone and any(Path(f"/proc/{pid}").exists() for pid in servers):
        time.sleep(0.2)
    assert not any(Path(f"/proc/{pid}").exists() for pid in servers)  # stopped, not orphaned
