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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from taskgate.lab.experiments.pmbench.agents import PMAgent, SchemaForm
from taskgate.lab.experiments.pmbench.coupling import (
    MATCHER_RUNGS,
    RECORD_RUNGS,
    Refusal,
    directives,
    notices,
    refuse,
    resolve,
)
from taskgate.lab.experiments.pmbench.record import EVERY_DAY, IntentionRecord, checklist
from taskgate.lab.experiments.pmbench.roles import (
    CompileTruth,
    DueJudge,
    IntentionCompiler,
    Judgement,
    StepView,
)
from taskgate.lab.experiments.pmbench.scripted import notes, plan_truth, step_facts, step_truth
from taskgate.lab.experiments.pmbench.week import Day, Step, Week
from taskgate.roles import ChatMessage


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
    compiled: list[str] = Field(default_factory=list)  # compile problems since the last step
    matcher_failed: int = 0  # matcher calls whose reply was unusable (nothing announced)

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
    compiler: IntentionCompiler | None = None
    matcher: DueJudge | None = None


@dataclass(frozen=True)
class Limits:
    max_invalid: int = 2
    max_queries: int = 40
    schema: SchemaForm = "json_schema"  # how the agent's calls carry the action schema
    #: fields the agent's calls add (the benchmark's runner sends max_tokens 768 and, to a local
    #: server, enable_thinking false)
    request: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class _Run:
    rung: str
    week: Week
    roles: PMRoles
    limits: Limits
    record: IntentionRecord
    history: list[ChatMessage] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # compile problems for the next step
    refused: list[Refusal] = field(default_factory=list)  # to report at the next step
    announced_last: set[str] = field(default_factory=set)  # announced last step, not executed
    executed_last: dict[str, str] = field(default_factory=dict)  # handle -> action text
    resolved: dict[str, tuple[str, ...]] = field(default_factory=dict)  # the matcher's, today
    stable: dict[str, bool] = field(default_factory=dict)  # on every menu since it first was
    menu_last: frozenset[str] = frozenset()


@dataclass
class _Step:
    """One step in progress: what was announced, queried and re-asked so far."""

    view: StepView
    still: set[str]
    announced: set[str] = field(default_factory=set)
    queries: dict[str, int] = field(default_factory=dict)
    invalid: int = 0
    matcher_failed: int = 0


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
    noted = notes(week)
    noted_ids = {t["id"] for where in noted.values() for _, t in where}
    for day in week.days():
        run.history.append({"role": "user", "content": day.header()})
        run.record.new_day()
        await _compile(run, day.header(), day.name, "morning plan", plan_truth(day, noted_ids))
        run.refused, run.announced_last, run.executed_last = [], set(), {}
        run.resolved, run.stable, run.menu_last = {}, {}, frozenset()  # handles are the day's
        for i in range(day.steps):
            step = day.enter(i)
            truth = step_truth(day, step, noted.get((day.name, step.id), []))
            sink(await _step(run, day, step, truth))


async def _compile(run: _Run, text: str, day: str, where: str, truth: CompileTruth) -> None:
    compiler = run.roles.compiler
    if run.rung not in RECORD_RUNGS or compiler is None:
        return
    if where == "vignette" and not compiler.wants(text, truth):
        return
    ops, problems = await compiler.compile(text, run.record, day, where, truth)
    run.problems += problems + [f"{where}: {p}" for p in run.record.apply(ops, day)]


def _receipts(run: _Run, day: Day, step: Step) -> None:
    """A handle executed at the last step that this menu no longer lists is a receipt, when it
    had been on every menu since it first appeared (a task stays listed until it is done; a
    distractor comes and goes)."""
    for handle, text in run.executed_last.items():
        if handle not in step.menu and run.stable.get(handle, False):
            matched = run.resolved if run.rung in MATCHER_RUNGS else None
            run.record.done(resolve(handle, text, matched, run.record, day.name))
    for handle in step.menu:
        first = handle not in run.stable
        run.stable[handle] = first or (run.stable[handle] and handle in run.menu_last)
    run.menu_last = frozenset(step.menu)


async def _step(run: _Run, day: Day, step: Step, truth: CompileTruth) -> StepRecord:
    _receipts(run, day, step)
    await _compile(run, step.text, day.name, "vignette", truth)
    view = StepView(day.name, step.id, step.text, step.menu, (), step_facts(day, step))
    st = _Step(view, {h for h in run.announced_last if h in step.menu})
    await _judge(run, st)
    run.history.append({"role": "user", "content": step.prompt})
    while True:
        call = _with_block(run.history, _block(run, day, st))
        reply = await run.roles.agent.act(call, run.week.schema(sorted(step.menu)), st.view)
        action, problem = _parse(run, reply)
        if problem is not None:
            st.invalid += 1
            run.history.append({"role": "assistant", "content": action or reply})
            if st.invalid > run.limits.max_invalid:
                return _end(run, day, step, st, None, problem)
            run.history.append({"role": "user", "content": REASK.format(problem=problem)})
            continue
        assert action is not None
        run.history.append({"role": "assistant", "content": action})
        parsed = json.loads(action)
        if parsed["action"] == "choose":
            return _end(run, day, step, st, parsed, None)
        channel = "clock" if parsed["action"] == "check_time" else parsed["channel"]
        st.queries[channel] = st.queries.get(channel, 0) + 1
        if sum(st.queries.values()) > run.limits.max_queries:
            why = f"more than {run.limits.max_queries} state queries at one step"
            return _end(run, day, step, st, None, why)
        line = day.query(step, channel)
        run.history.append({"role": "user", "content": line})
        v = st.view
        st.view = StepView(v.day, v.step_id, v.text, v.menu, (*v.responses, line), v.truth)
        await _judge(run, st)  # the matcher runs again on the response


async def _judge(run: _Run, st: _Step) -> None:
    if run.rung not in MATCHER_RUNGS or run.roles.matcher is None:
        return
    judgement: Judgement = await run.roles.matcher.judge(run.record, st.view)
    run.resolved.update(judgement.resolved)
    st.announced |= judgement.due
    st.matcher_failed += judgement.problem is not None


def _block(run: _Run, day: Day, st: _Step) -> str:
    if run.rung not in RECORD_RUNGS:
        return ""
    parts = [checklist(run.record, day.name)]
    if run.rung in MATCHER_RUNGS:
        v = st.view
        lines = notices(run.refused) + directives(
            sorted(st.announced), sorted(st.still - st.announced), v.menu, run.record, day.name,
            v.responses,
        )  # fmt: skip
        if lines:
            parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _with_block(history: list[ChatMessage], block: str) -> list[ChatMessage]:
    if not block:
        return list(history)
    last = history[-1]
    return [*history[:-1], {"role": last["role"], "content": f"{last['content']}\n\n{block}"}]


def _parse(run: _Run, reply: str) -> tuple[str | None, str | None]:
    """The reply as the benchmark's action (``json.dumps`` of it), or the problem with it."""
    try:
        action = run.week.pm.parse_json_payload(reply)
    except Exception:  # the checkout's parser: any failure is an unparseable reply
        return None, "the reply is not a JSON object"
    if not isinstance(action, dict) or action.get("action") not in (
        "choose", "query_state", "check_time",
    ):  # fmt: skip
        return None, "action must be choose, query_state or check_time"
    dumped = json.dumps(action)
    choice, channel, ids = action.get("choice"), action.get("channel"), action.get("task_ids", [])
    if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
        return dumped, "task_ids must be a list of task_N handles"
    if action["action"] == "choose":
        if channel not in ("NONE", None):
            return dumped, "when action=choose, channel must be NONE"
        if choice not in ("A", "B", "C"):
            return dumped, "when action=choose, choice must be A, B or C"
        return dumped, None
    if choice != "NONE":
        return dumped, "when action=query_state or check_time, choice must be NONE"
    if ids:
        return dumped, "when action=query_state or check_time, task_ids must be []"
    if action["action"] == "query_state" and channel not in run.week.channels:
        return dumped, f"channel must be one of {', '.join(run.week.channels)}"
    return dumped, None


def _end(
    run: _Run, day: Day, step: Step, st: _Step, action: dict[str, Any] | None, failed: str | None
) -> StepRecord:
    """The step's choice through the gate (none when it failed), the benchmark's completions,
    and its record."""
    allowed = frozenset(st.announced | st.still)
    executed: list[str] = []
    handles: list[str] = []
    refusals: list[Refusal] = []
    tokens = run.week.pm.normalize_task_ids(action) if action is not None else []
    for token in tokens:
        handle = token if token in step.handle_to_id else _handle(step, token)
        if handle is None or step.handle_to_id[handle] in executed:
            continue
        matched = run.resolved if run.rung in MATCHER_RUNGS else None
        r = refuse(run.rung, handle, step.menu, allowed, matched, run.record, day.name)
        if r is not None:
            refusals.append(r)
            continue
        executed.append(step.handle_to_id[handle])
        handles.append(handle)
    day.complete(step, executed)
    run.refused = refusals
    run.announced_last = st.announced - set(handles)
    run.executed_last = {h: step.menu[h] for h in handles}
    problems, run.problems = run.problems, []
    return StepRecord(
        day=day.name,
        step_id=step.id,
        choice=str(action["choice"]) if action is not None else "NONE",
        task_ids=executed,
        check_time=st.queries.get("clock", 0),
        state_queries=st.queries,
        due=sorted(step.due),
        announced=sorted(step.handle_to_id[h] for h in st.announced),
        refused=[step.handle_to_id[r.handle] for r in refusals],
        invalid=st.invalid,
        failed=failed,
        compiled=problems,
        matcher_failed=st.matcher_failed,
    )


def _handle(step: Step, token: str) -> str | None:
    """A benchmark id written instead of its handle, as the benchmark's loop accepts it."""
    return next((h for h, t in step.handle_to_id.items() if t == token), None)
