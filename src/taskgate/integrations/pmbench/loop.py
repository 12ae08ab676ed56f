"""One pass of an agent through PM-Bench's week under one rung (the rungs that own a record and
the raw transcript; the self-written ledger is the benchmark's own scaffold, :mod:`.ledger`).

The loop is the benchmark's ``single_baseline``: the system prompt, the daily header, each day's
morning plan, each step's prompt, the agent's JSON actions (appended as ``json.dumps`` of the
parsed action), state responses as user messages, and the benchmark's runtime completions. On
the record rungs, the rung's block (checklist, directive lines, refusal notices) rides on the
last user message of each call only; the transcript keeps the benchmark's messages. Two
departures, both recorded: the agent's invalid replies get taskgate's corrective line (the
benchmark's are inline in its runner), and a step whose replies stay invalid after
``max_invalid`` re-asks, or whose queries pass ``max_queries``, ends with nothing selected and
is marked failed (the benchmark's runner selects the due set instead, which leaks its truth).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...agents.base import ChatMessage
from .agents import PMAgent
from .coupling import MATCHER_RUNGS, RECORD_RUNGS, Refusal, directives, notices, refuse, resolve
from .record import EVERY_DAY, IntentionRecord, Op, checklist
from .roles import Compiler, CompileTruth, Judgement, Matcher, StepView, Truth
from .scripted import add_op, update_ops
from .week import Day, Step, Week


class StepRecord(BaseModel):
    """One step of a run: the benchmark's log row and what the rung did."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = "step"
    day: str
    step_id: str
    choice: str
    task_ids: list[str]  # executed, as the benchmark's ids (its log row)
    check_time: int = 0
    state_queries: dict[str, int] = Field(default_factory=dict)
    due: list[str] = Field(default_factory=list)  # the benchmark's due set (truth)
    announced: list[str] = Field(default_factory=list)  # ids the matcher announced
    refused: list[str] = Field(default_factory=list)  # ids the gate refused
    invalid: int = 0  # invalid replies re-asked
    failed: str | None = None  # why the step ended with nothing selected
    compiled: list[str] = Field(default_factory=list)  # compile problems at this step

    def row(self) -> dict[str, Any]:
        """The benchmark's own log row, as its scorer reads it."""
        return {
            "day": self.day,
            "step_id": self.step_id,
            "choice": self.choice,
            "task_ids": self.task_ids,
            "check_time": self.check_time,
            "state_queries": self.state_queries,
        }


@dataclass
class PMRoles:
    agent: PMAgent
    compiler: Compiler | None = None
    matcher: Matcher | None = None


@dataclass(frozen=True)
class Limits:
    max_invalid: int = 2
    max_queries: int = 40
    schema: bool = True


@dataclass
class _Run:
    rung: str
    week: Week
    roles: PMRoles
    limits: Limits
    record: IntentionRecord
    history: list[ChatMessage] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)  # to report at the next step
    announced_last: set[str] = field(default_factory=set)  # handles announced, not executed
    executed_last: dict[str, str] = field(
        default_factory=dict
    )  # handle -> action, awaiting receipt
    resolved: dict[str, tuple[str, ...]] = field(default_factory=dict)


REASK = "Invalid action: {problem}. Respond again with valid JSON."


async def run_week(
    week: Week, rung: str, roles: PMRoles, sink: Callable[[StepRecord], None], limits: Limits
) -> None:
    """The whole week under ``rung``; each step's record goes to ``sink`` as it ends."""
    run = _Run(rung, week, roles, limits, IntentionRecord([c for c in week.channels]))
    header = week.daily_header()
    run.history = [
        {"role": "system", "content": week.system_prompt()},
        {"role": "user", "content": header},
    ]
    await _compile(run, header, EVERY_DAY, "daily header", CompileTruth())
    for day in week.days():
        run.history.append({"role": "user", "content": day.header()})
        run.record.new_day()
        truth = CompileTruth(tuple(_plan_ops(day)))
        await _compile(run, day.header(), day.name, "morning plan", truth)
        run.refused, run.announced_last, run.executed_last = [], set(), {}
        run.resolved = {}  # handles are the day's own
        for i in range(day.steps):
            sink(await _step(run, day, day.enter(i)))


async def _compile(run: _Run, text: str, day: str, where: str, truth: CompileTruth) -> list[str]:
    compiler = run.roles.compiler
    if run.rung not in RECORD_RUNGS or compiler is None:
        return []
    if where == "vignette" and not compiler.wants(text, truth):
        return []
    ops = await compiler.compile(text, run.record, day, where, truth)
    return run.record.apply(ops, day)


def _plan_ops(day: Day) -> list[Op]:
    """The truth the scripted compiler writes at a morning plan."""
    ops = []
    for task in day.data["tasks"]:
        if day.pm.normalize_encoding(task["encoding"])[0] == "start":
            ops.append(add_op(task, day.name))
    for update in day.updates.get("pre", []):
        ops += _update_ops(day, update)
    return ops


def _step_ops(day: Day, step: Step) -> list[Op]:
    ops = [
        add_op(t, day.name)
        for t in day.data["tasks"]
        if tuple(day.pm.normalize_encoding(t["encoding"])) == ("step", step.id)
    ]
    for update in day.updates.get("by_step", {}).get(step.id, []):
        ops += _update_ops(day, update)
    return ops


def _update_ops(day: Day, update: dict[str, Any]) -> list[Op]:
    state = day.states.get(update.get("task_id", ""))
    if state is None:
        return []
    return update_ops({**update, "day": day.name}, str(state["task"].get("label") or ""))


def _truth(day: Day, step: Step) -> Truth:
    reads = set()
    for tid in step.due:
        current = day.states[tid]["current"]
        if current["type"] in ("time", "time_check"):
            reads.add("clock")
        elif current.get("cue_channel", "narrative") != "narrative":
            reads.add(current["cue_channel"])
    return Truth(
        due=frozenset(h for h, t in step.handle_to_id.items() if t in step.due),
        task_of=step.handle_to_id,
        label_of=day.labels(),
        reads=frozenset(reads),
    )


async def _step(run: _Run, day: Day, step: Step) -> StepRecord:
    for handle, text in run.executed_last.items():  # receipts: executed, then off the menu
        if handle not in step.menu:
            run.record.done(resolve(handle, {handle: text}, run.resolved, run.record, day.name))
    problems = await _compile(
        run, step.text, day.name, "vignette", CompileTruth(tuple(_step_ops(day, step)))
    )
    view = StepView(day.name, step.id, step.text, step.menu, (), _truth(day, step))
    announced: set[str] = set()
    judgement = await _judge(run, view)
    announced |= judgement.due
    run.history.append({"role": "user", "content": step.prompt})
    still = {h for h in run.announced_last if h in step.menu} - judgement.due
    queries: dict[str, int] = {}
    invalid = 0
    while True:
        block = _block(run, day, view, judgement.due, still)
        call = _with_block(run.history, block)
        reply = await run.roles.agent.act(call, run.week.schema(sorted(step.menu)), view)
        action, problem = _parse(run, reply, step)
        if problem is not None:
            invalid += 1
            run.history.append({"role": "assistant", "content": action or reply})
            if invalid > run.limits.max_invalid:
                return _failed(run, day, step, queries, invalid, announced, problems, problem)
            run.history.append({"role": "user", "content": REASK.format(problem=problem)})
            continue
        assert action is not None
        run.history.append({"role": "assistant", "content": action})
        parsed = json.loads(action)
        if parsed["action"] != "choose":
            channel = "clock" if parsed["action"] == "check_time" else parsed["channel"]
            queries[channel] = queries.get(channel, 0) + 1
            if sum(queries.values()) > run.limits.max_queries:
                why = f"more than {run.limits.max_queries} state queries at one step"
                return _failed(run, day, step, queries, invalid, announced, problems, why)
            line = day.query(step, channel)
            run.history.append({"role": "user", "content": line})
            view = StepView(
                view.day, view.step_id, view.text, view.menu, (*view.responses, line), view.truth
            )
            judgement = await _judge(run, view)
            announced |= judgement.due
            continue
        return _choose(run, day, step, parsed, queries, invalid, announced, still, problems)


async def _judge(run: _Run, view: StepView) -> Judgement:
    if run.rung not in MATCHER_RUNGS or run.roles.matcher is None:
        return Judgement(frozenset(), {})
    judgement = await run.roles.matcher.judge(run.record, view)
    run.resolved.update(judgement.resolved)
    return judgement


def _block(run: _Run, day: Day, view: StepView, due: frozenset[str], still: set[str]) -> str:
    if run.rung not in RECORD_RUNGS:
        return ""
    parts = [checklist(run.record, day.name)]
    if run.rung in MATCHER_RUNGS:
        lines = notices(run.refused) + directives(
            sorted(due), sorted(still), view.menu, run.record, day.name, view.responses
        )
        if lines:
            parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _with_block(history: list[ChatMessage], block: str) -> list[ChatMessage]:
    if not block:
        return list(history)
    last = history[-1]
    return [*history[:-1], {"role": last["role"], "content": f"{last['content']}\n\n{block}"}]


def _parse(run: _Run, reply: str, step: Step) -> tuple[str | None, str | None]:
    """The reply as the benchmark's action (``json.dumps`` of it), or the problem with it."""
    pm = run.week.pm
    try:
        action = pm.parse_json_payload(reply)
    except Exception:  # the checkout's parser: any failure is an unparseable reply
        return None, "the reply is not a JSON object"
    if not isinstance(action, dict) or action.get("action") not in (
        "choose", "query_state", "check_time",
    ):  # fmt: skip
        return None, "action must be choose, query_state or check_time"
    dumped = json.dumps(action)
    choice, channel = action.get("choice"), action.get("channel")
    if action["action"] == "choose":
        if channel not in ("NONE", None):
            return dumped, "when action=choose, channel must be NONE"
        if choice not in ("A", "B", "C"):
            return dumped, "when action=choose, choice must be A, B or C"
        if not isinstance(action.get("task_ids", []), list):
            return dumped, "task_ids must be a list"
        return dumped, None
    if choice != "NONE":
        return dumped, "when action=query_state or check_time, choice must be NONE"
    if action.get("task_ids"):
        return dumped, "when action=query_state or check_time, task_ids must be []"
    if action["action"] == "query_state" and channel not in run.week.channels:
        return dumped, f"channel must be one of {', '.join(run.week.channels)}"
    return dumped, None


def _choose(
    run: _Run, day: Day, step: Step, action: dict[str, Any], queries: dict[str, int],
    invalid: int, announced: set[str], still: set[str], problems: list[str],
) -> StepRecord:  # fmt: skip
    pm = run.week.pm
    allowed = frozenset(announced | still)
    executed: list[str] = []
    handles: list[str] = []
    refusals: list[Refusal] = []
    for token in pm.normalize_task_ids(action):
        handle = token if token in step.handle_to_id else _handle(step, token)
        if handle is None:
            continue
        tid = step.handle_to_id[handle]
        if tid in executed:
            continue
        r = refuse(run.rung, handle, step.menu, allowed, run.resolved, run.record, day.name)
        if r is not None:
            refusals.append(r)
            continue
        executed.append(tid)
        handles.append(handle)
    day.complete(step, executed)
    run.refused = refusals
    run.announced_last = (announced | still) - set(handles)
    run.executed_last = {h: step.menu[h] for h in handles}
    return StepRecord(
        day=day.name,
        step_id=step.id,
        choice=str(action["choice"]),
        task_ids=executed,
        check_time=queries.get("clock", 0),
        state_queries=queries,
        due=sorted(step.due),
        announced=sorted(step.handle_to_id[h] for h in announced),
        refused=[step.handle_to_id[r.handle] for r in refusals],
        invalid=invalid,
        compiled=problems,
    )


def _handle(step: Step, token: str) -> str | None:
    """A benchmark id written instead of its handle, as the benchmark's loop accepts it."""
    return next((h for h, t in step.handle_to_id.items() if t == token), None)


def _failed(
    run: _Run, day: Day, step: Step, queries: dict[str, int], invalid: int,
    announced: set[str], problems: list[str], why: str,
) -> StepRecord:  # fmt: skip
    day.complete(step, [])
    run.refused, run.announced_last, run.executed_last = [], set(announced), {}
    return StepRecord(
        day=day.name,
        step_id=step.id,
        choice="NONE",
        task_ids=[],
        check_time=queries.get("clock", 0),
        state_queries=queries,
        due=sorted(step.due),
        announced=sorted(step.handle_to_id[h] for h in announced),
        invalid=invalid,
        failed=why,
        compiled=problems,
    )
