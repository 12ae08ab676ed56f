"""tau2 airline: what the gate costs at dispatch, and how fast the replays and the live runner go.

Prints: the median time of one gate check (every gold WRITE of the current task set, against the
live database) and of one state block; gold replay wall time per task set; transcript replay
throughput; and the live runner on the scripted agent and user served by the fake server (tau2's
own run_task, four arms), against the same simulations run stock, with peak RSS.
Run: make bench   (or .venv/bin/python bench/bench_tau2.py [TASKS])
"""

from __future__ import annotations

import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from taskgate.lab.experiments.tau2.facts import DbView
from taskgate.lab.experiments.tau2.live import LiveConfig, Role, load_task_file, run_live
from taskgate.lab.experiments.tau2.replay import gold_replay, load_tasks
from taskgate.lab.experiments.tau2.rules import RULESETS, WRITE_TOOLS, named_ruleset
from taskgate.lab.experiments.tau2.scripted import cancelling_responder
from taskgate.lab.experiments.tau2.state_block import state_block
from taskgate.lab.experiments.tau2.transcripts import replay_results
from taskgate.lab.experiments.tau2.verdict import judge
from taskgate.llm.fake import FakeServer

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tau2-airline"


def median_us(fn: object, calls: list[tuple[str, dict[str, object]]], rounds: int = 21) -> float:
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for name, args in calls:
            fn(name, args)  # type: ignore[operator]
        samples.append((time.perf_counter_ns() - t0) / len(calls) / 1000)
    return statistics.median(samples)


def dispatch_costs() -> None:
    from tau2.domains.airline.data_model import FlightDB

    rules = named_ruleset()
    db = DbView.of(FlightDB.load(str(DATA / "db.json")))
    calls = [
        (a["name"], a.get("arguments") or {})
        for t in load_tasks(DATA / "tasks.json")
        for a in (t.get("evaluation_criteria") or {}).get("actions") or []
        if a["name"] in WRITE_TOOLS
    ]
    check = median_us(lambda n, a: judge(rules, db, n, a), calls)  # parse, look up, rules
    block = median_us(lambda n, a: state_block(rules, db, a), calls)
    print(f"gate check, one WRITE ({len(calls)} gold writes):  {check:8.1f} us median")
    print(f"state block, one entity:           {block:8.1f} us median")


def replays() -> None:
    for ruleset in RULESETS:
        rules = named_ruleset(ruleset)
        for name in ("tasks.json", "tasks_release_37199f3.json"):
            tasks = load_tasks(DATA / name)
            t0 = time.perf_counter()
            out = gold_replay(tasks, rules, DATA / "db.json")
            wall = time.perf_counter() - t0
            over = sum(len(r.overblocks) for r in out)
            writes = sum(r.writes for r in out)
            print(
                f"gold replay {ruleset:<10} {name:<28} {len(tasks)} tasks in {wall:5.1f} s "
                f"({wall / len(tasks) * 1000:.0f} ms/task), {over}/{writes} gold writes overblocked"
            )


def live(n_tasks: int) -> None:
    tasks = load_task_file(DATA / "tasks.json")[:n_tasks]
    targets = {"raj_sanchez_7340": "Q69X3R"}
    with tempfile.TemporaryDirectory() as tmp, FakeServer(cancelling_responder(targets)) as srv:
        role = Role.openai_compatible(srv.base_url, "fake")
        walls = {}
        for arms in (("ungated",), ("ungated", "state-block", "advisory", "gated")):
            out = Path(tmp) / "-".join(arms)
            t0 = time.perf_counter()
            run_live(LiveConfig(role, role, arms, max_steps=30), tasks, named_ruleset(), out)
            walls[len(arms)] = time.perf_counter() - t0
        sims = len(tasks) * 4
        t0 = time.perf_counter()
        summary = replay_results(
            [out / f"{a}.json" for a in arms], named_ruleset(), DATA / "db.json"
        )
        replay_wall = time.perf_counter() - t0
    per_stock = walls[1] / len(tasks)
    per_arm = walls[4] / sims
    print(
        f"live runner, scripted fake, {len(tasks)} tasks x 4 arms: {walls[4]:.1f} s wall, "
        f"{per_arm * 1000:.0f} ms per simulation (stock arm alone: {per_stock * 1000:.0f} ms)"
    )
    print(
        f"transcript replay: {len(summary.episodes)} episodes in {replay_wall:.1f} s "
        f"({len(summary.episodes) / replay_wall:.1f} episodes/s)"
    )


def main() -> None:
    n_tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    print("taskgate tau2 benchmark")
    dispatch_costs()
    replays()
    live(n_tasks)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    main()
