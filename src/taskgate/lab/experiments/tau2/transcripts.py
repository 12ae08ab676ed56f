"""Transcript replay: every WRITE of every simulation in tau2 results files, through the ruleset.

Each simulation's tool calls are replayed in order on a fresh database: every WRITE is judged
against the database state at that point, then executed if it executed in the transcript, so the
database follows the transcript. Reported, per file or together:

* executed state-violating writes (the ruleset denies them) and the *catchable* episodes (any);
* executed malformed writes: arguments the gate refuses as malformed (:mod:`.arguments`);
* wrongful writes: an executed WRITE outside the task's gold write multiset, by tool name and
  normalized arguments; a wrongful episode has one, split into wrong-arguments (its tool is among
  the gold writes), extra-only (it is not), or both;
* the gate's precision against wrongful episodes: per episode (catchable episodes that are
  wrongful) and per call (violating writes that are wrongful);
* the refusal subset: tasks whose gold has no write, where any executed write is wrongful.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from taskgate.errors import LogFormatError
from taskgate.lab.experiments.tau2.envs import FreshEnvironments
from taskgate.lab.experiments.tau2.facts import DbView
from taskgate.lab.experiments.tau2.gate import canonical
from taskgate.lab.experiments.tau2.rules import WRITE_TOOLS, Ruleset
from taskgate.lab.experiments.tau2.verdict import judge


class _Call(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = ""
    name: str
    arguments: dict[str, Any]


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: str
    id: str | None = None
    content: str | None = None
    tool_calls: list[_Call] | None = None
    error: bool = False


class Simulation(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    task_id: str
    messages: list[_Message]
    trial: int | None = None
    termination_reason: str | None = None
    reward_info: dict[str, Any] | None = None

    @property
    def reward(self) -> float:
        return float((self.reward_info or {}).get("reward") or 0.0)


class ResultsFile(BaseModel):
    model_config = ConfigDict(extra="ignore")
    tasks: list[dict[str, Any]]
    simulations: list[Simulation]


def load_results(path: Path) -> ResultsFile:
    try:
        return ResultsFile.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LogFormatError(
            f"{path} is not a tau2 results file (expected tasks and simulations with messages): {detail}"
        ) from None


@dataclass
class Episode:
    simulation: str
    task_id: str
    writes: int = 0
    violating: int = 0  # executed writes the ruleset denies
    violating_wrongful: int = 0
    malformed: int = 0  # executed writes the gate refuses as malformed
    wrong_args: int = 0
    extra: int = 0
    gold_has_writes: bool = True
    divergences: list[str] = field(default_factory=list)  # writes our replay could not repeat

    @property
    def catchable(self) -> bool:
        return self.violating > 0

    @property
    def wrongful(self) -> bool:
        return self.wrong_args + self.extra > 0

    @property
    def kind(self) -> str:
        if self.wrong_args and self.extra:
            return "both"
        return "wrong-arguments" if self.wrong_args else "extra-only" if self.extra else "none"


@dataclass
class Summary:
    episodes: list[Episode] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        eps = self.episodes
        catch = [e for e in eps if e.catchable]
        wrong = [e for e in eps if e.wrongful]
        violating = sum(e.violating for e in eps)
        refusal = [e for e in eps if not e.gold_has_writes]
        return {
            "episodes": len(eps),
            "catchable_episodes": len(catch),
            "executed_violating_writes": violating,
            "executed_malformed_writes": sum(e.malformed for e in eps),
            "wrongful_episodes": len(wrong),
            "wrongful_split": dict(Counter(e.kind for e in wrong)),
            "episode_precision": (sum(e.wrongful for e in catch) / len(catch)) if catch else None,
            "call_precision": (sum(e.violating_wrongful for e in eps) / violating)
            if violating
            else None,
            "replay_divergences": sum(len(e.divergences) for e in eps),
            "refusal_subset": {
                "episodes": len(refusal),
                "with_executed_writes": sum(1 for e in refusal if e.writes),
                "catchable": sum(1 for e in refusal if e.catchable),
            },
        }


def _gold_writes(task: dict[str, Any]) -> Counter[tuple[str, str]]:
    actions = (task.get("evaluation_criteria") or {}).get("actions") or []
    return Counter(
        (a["name"], canonical(a.get("arguments") or {}))
        for a in actions
        if a["name"] in WRITE_TOOLS
    )


def replay_results(paths: list[Path], ruleset: Ruleset, db: Path | FreshEnvironments) -> Summary:
    """Replay every WRITE of the results files through ``ruleset`` on the airline database
    ``db`` (a ``db.json`` path, or environments already made from one)."""
    summary = Summary()
    envs = db if isinstance(db, FreshEnvironments) else FreshEnvironments(db)
    for path in paths:
        summary.episodes += replay_loaded(load_results(path), ruleset, envs, str(path))
    return summary


def replay_loaded(
    results: ResultsFile, ruleset: Ruleset, envs: FreshEnvironments, source: str = "results"
) -> list[Episode]:
    """The replay of one results file already read (``source`` names it in errors)."""
    tasks = {str(t["id"]): t for t in results.tasks}
    episodes = []
    for sim in results.simulations:
        task = tasks.get(sim.task_id)
        if task is None:
            raise LogFormatError(
                f"{source}: simulation {sim.id} names task {sim.task_id!r}, absent from the file"
            )
        episode = _replay(sim, task, ruleset, envs.get())
        if episode.writes:
            envs.written()
        episodes.append(episode)
    return episodes


def _replay(sim: Simulation, task: dict[str, Any], ruleset: Ruleset, env: Any) -> Episode:
    gold = _gold_writes(task)
    gold_tools = {name for name, _ in gold}
    ep = Episode(sim.id, sim.task_id, gold_has_writes=bool(gold))
    for call, executed in _dispatched(sim.messages):
        if call.name not in WRITE_TOOLS or not executed:
            continue  # reads change nothing; a failed write changed nothing
        ep.writes += 1
        verdict = judge(ruleset, DbView.of(env.tools.db), call.name, call.arguments)
        denied = bool(verdict.rules)
        ep.malformed += verdict.malformed is not None
        key = (call.name, canonical(call.arguments))
        wrongful = gold[key] <= 0
        if not wrongful:
            gold[key] -= 1
        elif call.name in gold_tools:
            ep.wrong_args += 1
        else:
            ep.extra += 1
        ep.violating += denied
        ep.violating_wrongful += denied and wrongful
        try:
            env.make_tool_call(call.name, **call.arguments)
            env.sync_tools()
        except Exception as exc:  # it executed in the transcript but not here: say so
            ep.divergences.append(f"{call.id} {call.name}: {exc}")
    return ep


def _dispatched(messages: list[_Message]) -> list[tuple[_Call, bool]]:
    """Every tool call with whether it executed: paired with the tool results that follow it by
    position, as tau2 pairs them (some servers reuse call ids). A call is executed unless its
    result is an error; a call whose result is missing was still dispatched."""
    out = []
    i = 0
    while i < len(messages):
        calls = messages[i].tool_calls or []
        i += 1
        for call in calls:
            result = messages[i] if i < len(messages) and messages[i].role == "tool" else None
            i += result is not None
            out.append((call, result is None or not result.error))
    return out


def dump_report(summary: Summary) -> str:
    return json.dumps(summary.report(), indent=1)
