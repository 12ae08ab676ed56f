"""The live runs' report in Table 20's layout: pass^k, wrongful writes, what each rung did, and
each arm's paired delta against ungated with a task-level bootstrap 95% interval.

Everything is read back from the run directory's tau2 results files: rewards from tau2's own
evaluator, wrongful and state-violating writes from the transcript replay (:mod:`.transcripts`),
vetoes, notices and state blocks from the tool results the agent saw.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from taskgate.errors import LogFormatError
from taskgate.lab.experiments.tau2.envs import FreshEnvironments
from taskgate.lab.experiments.tau2.gate import REFUSAL_PREFIX
from taskgate.lab.experiments.tau2.live import read_config, ruleset_fingerprint
from taskgate.lab.experiments.tau2.replay import gold_replay
from taskgate.lab.experiments.tau2.rules import Ruleset
from taskgate.lab.experiments.tau2.state_block import STATE_BLOCK_HEADER
from taskgate.lab.experiments.tau2.transcripts import (
    ResultsFile,
    Simulation,
    load_results,
    replay_loaded,
)

Key = tuple[str, int]  # (task id, trial)


@dataclass
class ArmReport:
    arm: str
    success: dict[Key, bool] = field(default_factory=dict)
    wrongful: dict[Key, bool] = field(default_factory=dict)
    split: Counter[str] = field(default_factory=Counter)
    violating_writes: int = 0
    catchable: int = 0  # episodes with an executed write the ruleset denies
    refusals: int = 0  # gate vetoes (gated) or notices (advisory) the agent received
    refusal_episodes: int = 0
    state_blocks: int = 0
    terminations: Counter[str] = field(default_factory=Counter)

    @property
    def episodes(self) -> int:
        return len(self.success)

    def pass_k(self) -> dict[int, float]:
        """tau2's pass^k: per task, C(successes, k) / C(trials, k), averaged over tasks."""
        from tau2.metrics.agent_metrics import pass_hat_k

        by_task: dict[str, list[bool]] = defaultdict(list)
        for (task, _), ok in self.success.items():
            by_task[task].append(ok)
        if not by_task:
            return {}
        trials = min(len(v) for v in by_task.values())
        return {
            k: float(np.mean([pass_hat_k(len(v), sum(v), k) for v in by_task.values()]))
            for k in range(1, trials + 1)
        }


@dataclass(frozen=True)
class Delta:
    arm: str
    metric: str  # "pass^1" or "wrongful"
    value: float
    low: float
    high: float
    pairs: int


def arm_report(
    arm: str, results: ResultsFile, ruleset: Ruleset, envs: FreshEnvironments
) -> ArmReport:
    report = ArmReport(arm)
    replayed = replay_loaded(results, ruleset, envs, arm)
    for sim, episode in zip(results.simulations, replayed, strict=True):
        key = (sim.task_id, sim.trial or 0)
        report.success[key] = sim.reward >= 1 - 1e-6  # tau2's is_successful
        report.wrongful[key] = episode.wrongful
        if episode.wrongful:
            report.split[episode.kind] += 1
        report.violating_writes += episode.violating
        report.catchable += episode.catchable
        _count_events(report, sim)
    return report


def _count_events(report: ArmReport, sim: Simulation) -> None:
    tool_text = [m.content or "" for m in sim.messages if m.role == "tool"]
    refusals = sum(t.startswith(REFUSAL_PREFIX) for t in tool_text)
    report.refusals += refusals
    report.refusal_episodes += refusals > 0
    report.state_blocks += sum(STATE_BLOCK_HEADER in t for t in tool_text)
    report.terminations[str(sim.termination_reason)] += 1


def paired_delta(
    arm: ArmReport, base: ArmReport, metric: str, resamples: int = 10_000, seed: int = 0
) -> Delta:
    """Arm minus base over the (task, trial) pairs both ran; tasks resampled with replacement."""
    a, b = (arm.success, base.success) if metric == "pass^1" else (arm.wrongful, base.wrongful)
    keys = sorted(a.keys() & b.keys())
    if not keys:
        raise LogFormatError(f"arms {arm.arm} and {base.arm} share no (task, trial) pair")
    per_task: dict[str, list[float]] = defaultdict(list)
    for key in keys:
        per_task[key[0]].append(float(a[key]) - float(b[key]))
    d = np.array([np.mean(v) for v in per_task.values()])
    rng = np.random.default_rng(seed)
    boot = d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
    low, high = np.percentile(boot, [2.5, 97.5])
    return Delta(arm.arm, metric, float(d.mean()), float(low), float(high), len(keys))


@dataclass
class LiveReport:
    arms: list[ArmReport]
    deltas: list[Delta]
    gold_writes: int = 0  # the gold replay of the run's task set, under the same ruleset
    overblocks: list[str] = field(default_factory=list)
    ruleset_of_run: bool = True  # False: replayed under another ruleset than the run's gate


def run_report(out: Path, ruleset: Ruleset, db_path: Path) -> LiveReport:
    """Every arm of a run directory, each arm's deltas against ungated (when it ran), and the
    gold replay of the run's task set."""
    config = out / "config.json"
    if not config.exists():
        raise LogFormatError(f"{out} is not a taskgate tau2 run directory (no config.json)")
    recorded = read_config(config)
    arms = recorded.get("arms", [])
    envs = FreshEnvironments(db_path)
    files = {a: load_results(out / f"{a}.json") for a in arms if (out / f"{a}.json").exists()}
    reports = [arm_report(arm, results, ruleset, envs) for arm, results in files.items()]
    base = next((r for r in reports if r.arm == "ungated"), None)
    deltas = [
        paired_delta(r, base, metric)
        for r in reports
        if base is not None and r is not base and r.success.keys() & base.success.keys()
        for metric in ("pass^1", "wrongful")
    ]  # an arm that shares no (task, trial) with ungated yet (a partial run) gets no delta
    report = LiveReport(reports, deltas)
    report.ruleset_of_run = recorded.get("ruleset") == ruleset_fingerprint(ruleset)
    if files:
        for task in gold_replay(next(iter(files.values())).tasks, ruleset, db_path):
            report.gold_writes += task.writes
            report.overblocks += [
                f"task {task.task_id} {o.action_id} {o.tool} ({', '.join(o.rules)})"
                for o in task.overblocks
            ]
    return report


def _events(r: ArmReport) -> str:
    if r.arm == "gated":
        return f"{r.refusals} in {r.refusal_episodes} ep."
    if r.arm == "advisory":
        return f"{r.refusals} notices in {r.refusal_episodes} ep., {r.violating_writes} overridden"
    if r.arm == "state-block":
        return f"-- ({r.state_blocks} blocks)"
    return "--"


def _signed(x: float) -> str:
    return f"{x:+.3f}"


def markdown(report: LiveReport) -> str:
    reports, deltas = report.arms, report.deltas
    lines = [
        "| Arm | pass^1 | Wrongful ep. | (args / extra / both) | Live vetoes | State-viol. writes |",
        "|---|---|---|---|---|---|",
    ]
    for r in reports:
        wrong = sum(r.wrongful.values())
        rate = wrong / r.episodes if r.episodes else 0.0
        split = " / ".join(str(r.split[k]) for k in ("wrong-arguments", "extra-only", "both"))
        lines.append(
            f"| {r.arm} | {r.pass_k().get(1, 0.0):.3f} | {rate:.3f} ({wrong}/{r.episodes}) "
            f"| {split} | {_events(r)} | {r.violating_writes} |"
        )
    for d in (d for d in deltas if d.metric == "pass^1"):
        w = next(x for x in deltas if x.arm == d.arm and x.metric == "wrongful")
        lines.append(
            f"| Paired delta, {d.arm} | {_signed(d.value)} [{_signed(d.low)}, {_signed(d.high)}] "
            f"| {_signed(w.value)} [{_signed(w.low)}, {_signed(w.high)}] | | | |"
        )
    passk = "; ".join(
        f"{r.arm} " + ", ".join(f"{v:.3f}" for v in r.pass_k().values()) for r in reports
    )
    lines.append(f"| pass^k, k=1.. | {passk} | | | | |")
    over = f"{len(report.overblocks)}/{report.gold_writes}"
    lines.append(f"| gold overblock | {over} {'; '.join(report.overblocks)} | | | | |")
    if not report.ruleset_of_run:
        lines.append("\nnote: transcripts replayed under a ruleset other than the run's gate")
    return "\n".join(lines)


def as_json(report: LiveReport) -> dict[str, Any]:
    reports, deltas = report.arms, report.deltas
    return {
        "arms": [
            {
                "arm": r.arm,
                "episodes": r.episodes,
                "pass_k": {str(k): v for k, v in r.pass_k().items()},
                "wrongful_episodes": sum(r.wrongful.values()),
                "wrongful_split": dict(r.split),
                "executed_violating_writes": r.violating_writes,
                "catchable_episodes": r.catchable,
                "refusals": r.refusals,
                "refusal_episodes": r.refusal_episodes,
                "state_blocks": r.state_blocks,
                "terminations": dict(r.terminations),
            }
            for r in reports
        ],
        "paired_deltas": [asdict(d) for d in deltas],
        "gold_writes": report.gold_writes,
        "gold_overblocks": report.overblocks,
        "ruleset_of_run": report.ruleset_of_run,
    }
