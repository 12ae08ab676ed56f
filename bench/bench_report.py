"""Report speed: `taskgate report` on a 128-episode x 11-arm run (S=10, always-book), split into
reading and scoring the log, the tables, the figures and the HTML page; and the scorer's
throughput: alone (episode-arms per second on records already read), through the score index
(`score_run`, `taskgate score`) and from the log.

Run: make bench   (or .venv/bin/python bench/bench_report.py)
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from taskgate.lab.arms.registry import ARMS, memory_kind
from taskgate.lab.reporting import build_report, load_runs
from taskgate.lab.reporting.figures import write_figures
from taskgate.lab.reporting.html import render_html
from taskgate.lab.rundir import EPISODES, LOG, read_episodes, read_log
from taskgate.lab.runner.config import LadderConfig
from taskgate.lab.runner.ladder import run_ladder
from taskgate.lab.scoring.index import score_run
from taskgate.lab.scoring.scorer import score_episode

#: every arm but ``hybrid`` (an arm of a model-backed matcher) and the memory baselines (a model
#: and an embedder each; bench_memory.py): the paper's 11 text and gate arms
BENCH_ARMS = tuple(a for a in ARMS if a != "hybrid" and memory_kind(a) is None)


def _timed(fn):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    config = LadderConfig(arms=BENCH_ARMS, agent="scripted:always-book", steps=(10,), episodes=128)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        _, run_s = _timed(lambda: asyncio.run(run_ladder(config, out)))
        size = (out / LOG).stat().st_size
        runs, read_s = _timed(lambda: read_log(out / LOG))
        episodes = {e.id: e for e in read_episodes(out / EPISODES)}
        items = [(episodes[r.header.source], r.turns) for r in runs.values()]
        best = min(
            _timed(lambda: [score_episode(ep, turns) for ep, turns in items])[1] for _ in range(3)
        )
        _, index_s = _timed(lambda: score_run(out))
        loaded, load_s = _timed(lambda: load_runs([out]))
        report, tables_s = _timed(lambda: build_report(loaded))
        _, figures_s = _timed(lambda: write_figures(report, Path(tmp) / "figures"))
        page, html_s = _timed(lambda: render_html(report))
    n = len(runs)
    print(
        f"run: {n} episode-arms ({len(BENCH_ARMS)} arms x 128 episodes, S=10) in {run_s:.1f} s, "
        f"log {size / 1e6:.1f} MB"
    )
    print(f"scorer alone: {n / best:8.0f} episode-arms/s  (records in memory, best of 3)")
    print(
        f"score_run:    {n / index_s:8.0f} episode-arms/s  (the score index, checked against the log)"
    )
    print(
        f"read + score: {n / load_s:8.0f} episode-arms/s  (log read alone {read_s:.2f} s of "
        f"{load_s:.2f} s)"
    )
    total = load_s + tables_s + figures_s + html_s
    print(
        f"report: {total:.2f} s  (read + score {load_s:.2f}, tables {tables_s:.2f}, "
        f"figures {figures_s:.2f}, HTML {html_s:.2f} s, {len(page) / 1e6:.1f} MB page, "
        f"{len(report.tables)} tables)"
    )


if __name__ == "__main__":
    main()
