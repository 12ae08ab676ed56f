"""PM-Bench adapter overhead: what each rung costs per step beyond the model's calls, with
scripted roles that answer at once (every second measured is the adapter's and the checkout's
own: the benchmark's menus and due sets, the intention record, the couplings, the scorer).

The week is the checkout at $PMBENCH_PATH (the released v9 week, 80 steps) when it is set, else
taskgate's stand-in checkout and its two-day week (not PM-Bench; its figures are the adapter's
cost on a smaller week).

Run: make bench   (or .venv/bin/python bench/bench_pmbench.py [--rounds N])
Target: under 2 ms per step on every rung on a 2-core machine (a model call takes 100 ms or more).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from taskgate.lab.experiments.pmbench import (
    PMBENCH_RUNGS,
    STANDIN,
    TINY_WEEK,
    Limits,
    PMConfig,
    PMRoles,
    ScriptedDueJudge,
    ScriptedIntentionCompiler,
    StepRecord,
    Week,
    load_checkout,
    pmbench_table,
    run_pmbench,
    run_week,
    scripted_agent,
)

TARGET_MS = 2.0


def roles() -> PMRoles:
    return PMRoles(
        scripted_agent("scripted:perfect"), ScriptedIntentionCompiler(), ScriptedDueJudge()
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20, help="weeks per rung")
    args = parser.parse_args()
    real = os.environ.get("PMBENCH_PATH")
    checkout = load_checkout(Path(real)) if real else load_checkout(STANDIN, TINY_WEEK)
    what = "the released v9 week" if real else "the stand-in's two-day week (not PM-Bench)"
    print(f"pmbench: {what}, {args.rounds} weeks per rung, scripted perfect agent and roles")
    worst = 0.0
    for rung in PMBENCH_RUNGS:
        if (
            rung == "self-ledger"
        ):  # the benchmark's own scaffold in a subprocess: not the adapter's cost
            continue
        steps: list[StepRecord] = []
        t0 = time.perf_counter()
        for _ in range(args.rounds):
            asyncio.run(run_week(Week(checkout), rung, roles(), steps.append, Limits()))
        per_step = (time.perf_counter() - t0) / len(steps) * 1e3
        worst = max(worst, per_step)
        print(f"  {rung:<18} {per_step:.3f} ms per step ({len(steps)} steps)")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        config = PMConfig(rungs=tuple(r for r in PMBENCH_RUNGS if r != "self-ledger"))
        asyncio.run(run_pmbench(checkout, config, Path(tmp), lambda s: roles(), ("s", "s", "s")))
        run_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        pmbench_table(Path(tmp))
        table_s = time.perf_counter() - t0
    print(f"  five rungs run, scored and written: {run_s:.2f} s; the table: {table_s * 1e3:.1f} ms")
    print(
        f"  worst rung {worst:.3f} ms per step: target < {TARGET_MS} ms {'met' if worst < TARGET_MS else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
