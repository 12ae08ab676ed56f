"""The real-tool harness's runner overhead per turn, and its dispatcher's cost per tool call.

Scripted agents (no model), seeds 300-309 at S=10, the five harness arms: the same grid runs
through the testbed's text loop and through the harness (the LangGraph turn graph, the
dispatcher, the workspace writes and their inspection after every turn), in both agent modes.
The harness's overhead is its time per turn minus the testbed's. Targets: under 5 ms per turn of
overhead (a model call takes hundreds), and under 1 ms per dispatched call.

Run: .venv/bin/python bench/bench_harness.py
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from taskgate import Booking, Policy
from taskgate.core.machine import TaskMachine
from taskgate.lab import EpisodeParams, LadderConfig, generate_episode, run_ladder
from taskgate.lab.arms.registry import TOOL_LADDER
from taskgate.lab.episodes.tools import harness_episode
from taskgate.lab.harness.dispatch import Dispatcher
from taskgate.lab.harness.runner import ToolHarness
from taskgate.lab.harness.workspace import Workspace
from taskgate.protocol.actions import ToolCall

EPISODES, TURNS = 10, 44
TARGET_TURN_MS, TARGET_CALL_MS = 5.0, 1.0


def per_turn(mode: str | None) -> float:
    """Seconds per turn of the grid, scripted always-book agent (it calls a tool every turn)."""
    config = LadderConfig(
        arms=TOOL_LADDER, agent="scripted:always-book", steps=(10,), episodes=EPISODES,
        first_seed=300,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        variant = ToolHarness(out, mode) if mode else None  # type: ignore[arg-type]
        start = time.perf_counter()
        asyncio.run(run_ladder(config, out, variant=variant))
        wall = time.perf_counter() - start
    return wall / (EPISODES * len(TOOL_LADDER) * TURNS)


def per_call(n: int = 2000) -> float:
    """Seconds per dispatched call: judged by the state-bound gate, executed, receipt recorded."""
    ep = harness_episode(generate_episode(EpisodeParams(seed=300, steps=10)))
    sid, spec = next((s, spec) for s, spec in ep.plan.steps.items() if not spec.deps)
    machine = TaskMachine(ep.plan)
    booked: list[Booking] = []
    with tempfile.TemporaryDirectory() as tmp:
        dispatcher = Dispatcher(Workspace(Path(tmp)), machine, Policy.STATE_BOUND, booked.append)
        start = time.perf_counter()
        for i in range(n):  # each call under a fresh request that authorizes a redo: all execute
            wo = f"#W{10000 + i}"
            machine.open_request(sid, explicit_redo=True, work_order=wo)
            assert dispatcher.dispatch(ToolCall(spec.tool, wo), 0).executed
        return (time.perf_counter() - start) / n


def main() -> None:
    testbed = per_turn(None)
    actions = per_turn("actions")
    native = per_turn("native")
    call = per_call()
    print(f"testbed loop (text protocol):  {testbed * 1e3:6.2f} ms per turn")
    for name, t in (("actions", actions), ("native", native)):
        over = (t - testbed) * 1e3
        verdict = "ok" if over <= TARGET_TURN_MS else "OVER TARGET"
        print(
            f"harness, {name:7s} mode:        {t * 1e3:6.2f} ms per turn "
            f"(overhead {over:5.2f} ms; target <= {TARGET_TURN_MS:g}: {verdict})"
        )
    verdict = "ok" if call * 1e3 <= TARGET_CALL_MS else "OVER TARGET"
    print(
        f"dispatched call (gate + workspace write + receipt): {call * 1e6:7.1f} us "
        f"(target <= {TARGET_CALL_MS * 1e3:g} us: {verdict})"
    )


if __name__ == "__main__":
    main()
