"""Probe overhead: what the trap-turn probe costs per re-ask beyond the model call, on a 128-episode
raw-transcript run (S=10, always-book: every redo probe is a trap turn), with a scripted agent that
answers at once, so every second measured is the probe's own: finding the trap turns, building
each variant's messages, judging the reply and writing its line.

Run: make bench   (or .venv/bin/python bench/bench_probe.py [--episodes N])
Target: under 1 ms per re-ask on a 2-core machine (a model call takes 100 ms or more).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from taskgate.lab import LadderConfig, run_ladder
from taskgate.lab.experiments.probe import (
    ProbeConfig,
    ScriptedProbeAgent,
    plan_probe,
    probe_table,
    run_probe,
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=128)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run, out = Path(tmp) / "run", Path(tmp) / "probe"
        config = LadderConfig(arms=("raw",), agent="scripted:always-book", episodes=args.episodes)
        asyncio.run(run_ladder(config, run))
        agent = ScriptedProbeAgent(["confirm"])
        probe = ProbeConfig(samples=8)
        t0 = time.perf_counter()
        plan = plan_probe(run, out, agent.name, probe)
        plan_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        asyncio.run(run_probe(run, out, agent, probe, plan=plan))
        run_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        probe_table([out])
        table_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = plan_probe(run, out, agent.name, probe)
        resume_s = time.perf_counter() - t0
    traps = len({a.key[:2] for a in plan.asks})
    asks = len(plan.asks)
    print(
        f"probe: {traps} trap turns in {args.episodes} episodes, {asks} re-asks "
        f"(11 variants x 8 samples + greedy)"
    )
    print(f"  finding the trap turns and planning: {plan_s:.2f} s")
    print(
        f"  re-asking: {run_s / asks * 1e3:.3f} ms per re-ask beyond the model call ({run_s:.2f} s)"
    )
    print(f"  the table from the directory: {table_s:.2f} s; a resumed plan: {resume_s:.2f} s")
    assert not again.asks


if __name__ == "__main__":
    main()
