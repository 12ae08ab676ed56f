"""Testbed speed: generator and scorer throughput, and one 128-episode x 4-arm scripted cell.

Run: make bench   (or .venv/bin/python bench/bench_testbed.py)
"""

from __future__ import annotations

import asyncio
import resource
import tempfile
import time
from pathlib import Path

from taskgate.lab import (
    EpisodeParams,
    LadderConfig,
    generate_episode,
    run_ladder,
    score_run,
    summarize,
)
from taskgate.lab.rundir import LOG, read_log
from taskgate.lab.scoring.summary import score_entries


def main() -> None:
    params = [EpisodeParams(seed=s, steps=n) for s in range(100, 228) for n in (5, 10, 15, 18)]
    t0 = time.perf_counter()
    for p in params:
        generate_episode(p)
    gen = len(params) / (time.perf_counter() - t0)
    print(f"generator: {gen:8.0f} episodes/s  ({len(params)} episodes, S in 5/10/15/18)")

    arms = ("raw", "checklist", "directive", "enforcement")
    config = LadderConfig(arms=arms, agent="scripted:always-book", steps=(10,), episodes=128)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        t0 = time.perf_counter()
        asyncio.run(run_ladder(config, out))
        run_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        runs = read_log(out / LOG)
        read_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = summarize(score_run(out), arms)
        score_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        from_log = [e.scored for e in score_entries(out)]
        log_s = time.perf_counter() - t0
        size = (out / LOG).stat().st_size
    n = len(runs)
    print(
        f"cell 128 episodes x 4 arms (S=10, always-book): run {run_s:.2f} s wall, "
        f"{n * 44 / run_s:.0f} turns/s, log {size / 1e6:.1f} MB"
    )
    print(
        f"scorer: {n / score_s:8.0f} episode-arms/s from the score index (score_run); "
        f"{n / log_s:.0f}/s scoring the log itself (its read alone {read_s:.2f} s of {log_s:.2f} s)"
    )
    assert len(from_log) == n
    print("rates: " + ", ".join(f"{r.arm}={r.rate:.2f}" for r in rows))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:.0f} MB")


if __name__ == "__main__":
    main()
