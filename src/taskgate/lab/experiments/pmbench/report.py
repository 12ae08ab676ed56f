"""Table 21 from a run directory alone: per rung, Set-F1 at temperature 0 and over the
sampled runs, hits and misses as shares of the scored intentions, false alarms, update
violations, state queries, the matcher's precision and recall against the benchmark's per-step
truth, and the gate's refusals (and how many refused a due selection).

The counts are the benchmark's scorer's (kept in each run's end line); the sampled columns are
mean ± SD over the sampled runs (repeats of one week, not independent tasks). With no sampled
run, they show the run at temperature 0.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from taskgate.errors import LogFormatError
from taskgate.lab.experiments.pmbench.coupling import MATCHER_RUNGS, NAMES, PMBENCH_RUNGS
from taskgate.lab.experiments.pmbench.experiment import SETTINGS, read_run, read_settings
from taskgate.lab.experiments.pmbench.loop import StepRecord
from taskgate.lab.rundir import OnSkip
from taskgate.lab.scoring.table import Table


@dataclass(frozen=True)
class RunFigures:
    f1: float
    hit: float  # percent of the scored intentions
    miss: float
    fa: int
    uv: int
    queries: int
    precision: float | None
    recall: float | None
    refused: int
    refused_due: int
    failed: int  # steps that ended with nothing selected after invalid replies


def figures(summary: dict[str, int], steps: Sequence[StepRecord]) -> RunFigures:
    tp, fp, fn = summary.get("set_tp", 0), summary.get("set_fp", 0), summary.get("set_fn", 0)
    scored = summary.get("hit", 0) + summary.get("late", 0) + summary.get("miss", 0)
    announced = sum(len(s.announced) for s in steps)
    due = sum(len(s.due) for s in steps)
    right = sum(len(set(s.announced) & set(s.due)) for s in steps)
    return RunFigures(
        f1=2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0,
        hit=100 * summary.get("hit", 0) / scored if scored else 0.0,
        miss=100 * summary.get("miss", 0) / scored if scored else 0.0,
        fa=summary.get("false_alarm", 0),
        uv=summary.get("update_violation", 0),
        queries=summary.get("state_query_calls", 0),
        precision=right / announced if announced else None,
        recall=right / due if due else None,
        refused=sum(len(s.refused) for s in steps),
        refused_due=sum(len(set(s.refused) & set(s.due)) for s in steps),
        failed=sum(s.failed is not None for s in steps),
    )


def _stat(values: Sequence[float], digits: int) -> str:
    if not values:
        return "--"
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f}±{statistics.stdev(values):.{digits}f}"


def _pr(runs: Sequence[RunFigures]) -> str:
    p = [r.precision for r in runs if r.precision is not None]
    r = [r.recall for r in runs if r.recall is not None]
    if not p and not r:
        return "--"
    return f"{_stat(p, 2)}/{_stat(r, 2)}"


def pmbench_table(out: Path, on_skip: OnSkip | None = None) -> Table:
    """Table 21 from ``out`` alone (its runs are whole files, each written at once: no
    line to skip, so ``on_skip`` is not called)."""
    settings = read_settings(out)
    if settings is None:
        raise LogFormatError(f"{out} is not a PM-Bench run directory: it has no {SETTINGS}")
    greedy: dict[str, RunFigures] = {}
    sampled: dict[str, list[RunFigures]] = {}
    temperature = None
    for path in sorted((out / "runs").glob("*.jsonl")):
        got = read_run(path)
        if got is None:
            continue
        start, steps, end = got
        fig = figures(end.summary, steps)
        if start.sample < 0:
            greedy[start.rung] = fig
        else:
            sampled.setdefault(start.rung, []).append(fig)
            temperature = start.temperature
    body = []
    for rung in PMBENCH_RUNGS:
        if rung not in greedy and rung not in sampled:
            continue
        runs = sampled.get(rung) or [greedy[rung]]
        gated = rung in ("enforcement-judgement", "enforcement")
        body.append(
            [
                NAMES[rung],
                f"{greedy[rung].f1:.2f}" if rung in greedy else "--",
                _stat([r.f1 for r in sampled.get(rung, [])], 2),
                _stat([r.hit for r in runs], 0),
                _stat([r.miss for r in runs], 0),
                _stat([r.fa for r in runs], 0),
                _stat([r.uv for r in runs], 0),
                _stat([r.queries for r in runs], 0),
                _pr(runs) if rung in MATCHER_RUNGS else "--",
                f"{_stat([r.refused for r in runs], 1)}/{_stat([r.refused_due for r in runs], 1)}"
                if gated
                else "--",
                str(len(sampled.get(rung, [])) + (rung in greedy)),
                _failed(greedy.get(rung), sampled.get(rung, [])),
            ]
        )
    t = f"T={temperature:g}" if temperature is not None else "T>0"
    cols = [
        "rung", "Set-F1 T=0", f"Set-F1 {t}", "hit%", "miss%", "FA", "UV", "queries",
        "matcher P/R", "refused/due", "runs", "failed steps",
    ]  # fmt: skip
    title = (
        f"PM-Bench under the state-coupling ladder (agent {settings.agent}, compiler "
        f"{settings.compiler}, matcher {settings.matcher}; checkout {settings.version})"
    )
    return Table.of("pmbench", title, cols, body)


def _failed(greedy: RunFigures | None, sampled: Sequence[RunFigures]) -> str:
    runs = [*([greedy] if greedy else []), *sampled]
    return str(sum(r.failed for r in runs))
