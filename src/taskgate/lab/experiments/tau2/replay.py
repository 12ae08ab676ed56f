"""Gold replay: the benchmark's own reference solutions, asked of the gate.

For each task, its gold actions run in order on a fresh database; the gate is asked about every
WRITE and the write executes regardless, so the database stays on the gold path. A gold write the
gate would refuse is an *overblock*; each needs a reason (or the rule is wrong).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taskgate.errors import LogFormatError
from taskgate.files import read_json
from taskgate.lab.experiments.tau2.envs import FreshEnvironments
from taskgate.lab.experiments.tau2.facts import DbView
from taskgate.lab.experiments.tau2.rules import WRITE_TOOLS, Ruleset
from taskgate.lab.experiments.tau2.verdict import judge


@dataclass(frozen=True)
class Overblock:
    action_id: str
    tool: str
    rules: tuple[str, ...]


@dataclass
class TaskReplay:
    task_id: str
    writes: int = 0
    overblocks: list[Overblock] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # gold actions the tools themselves rejected


def load_tasks(path: Path) -> list[dict[str, Any]]:
    tasks = read_json(path, "tau2 tasks file")
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and "id" in t for t in tasks):
        raise LogFormatError(f"{path} is not a tau2 tasks file: expected a list of tasks with ids")
    return tasks


def gold_replay(tasks: list[dict[str, Any]], ruleset: Ruleset, db_path: Path) -> list[TaskReplay]:
    envs = FreshEnvironments(db_path)
    out = []
    for task in tasks:
        env = envs.get()
        replay = TaskReplay(str(task["id"]))
        for action in (task.get("evaluation_criteria") or {}).get("actions") or []:
            name, args = action["name"], action.get("arguments") or {}
            if name in WRITE_TOOLS:
                envs.written()
                replay.writes += 1
                verdict = judge(ruleset, DbView.of(env.tools.db), name, args)
                if verdict.refused:
                    replay.overblocks.append(
                        Overblock(str(action.get("action_id")), name, verdict.ids)
                    )
            try:
                env.make_tool_call(name, requestor=action.get("requestor", "assistant"), **args)
                env.sync_tools()
            except Exception as exc:  # the benchmark's own tools rejected a gold action
                replay.errors.append(f"{action.get('action_id')} {name}: {exc}")
        out.append(replay)
    return out
