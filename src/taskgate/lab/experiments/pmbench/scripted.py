"""Scripted compiler and matcher for oracle runs: the benchmark's own truth, not a model.

The scripted compiler writes one intention per task of a day at that day's morning plan (or at
the step that assigns it), with the task's label as its text, and turns the day's updates into
cancel, retime and recue operations at the step that announces them. The scripted matcher
announces exactly the handles due now and resolves each handle to the intention of its task.
Neither exists for a real run: they give the rungs a perfect record and a perfect matcher, so a
perfect agent's figures are known.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taskgate.lab.experiments.pmbench.record import IntentionRecord, Op
from taskgate.lab.experiments.pmbench.roles import (
    CompileTruth,
    Judgement,
    StepView,
    Truth,
    read_channels,
)
from taskgate.lab.experiments.pmbench.week import Day, Step, Week


def _trigger(task: Mapping[str, Any]) -> tuple[str, str]:
    kind = task.get("type")
    if kind in ("time", "time_check"):
        return "time", str(task.get("target_time"))
    channel = task.get("cue_channel", "narrative")
    if channel != "narrative":
        return "channel", str(channel)
    return "cue", str(task.get("cue_id"))


def add_op(task: Mapping[str, Any], day: str) -> Op:
    trigger, when = _trigger(task)
    return Op(
        op="add", text=str(task.get("label") or task["id"]), trigger=trigger, when=when, day=day
    )


def update_ops(update: Mapping[str, Any], label: str) -> list[Op]:
    """An update as record operations on the intention whose text is ``label`` (``id`` holds
    the label here; :class:`ScriptedIntentionCompiler` swaps in the record's id)."""
    if update.get("action") == "cancel":
        return [Op(op="cancel", id=label)]
    ops = []
    if update.get("new_target_time"):
        ops.append(
            Op(op="retime", id=label, when=str(update["new_target_time"]), day=update.get("day"))
        )
    if update.get("new_cue_id"):
        ops.append(Op(op="recue", id=label, trigger="cue", when=str(update["new_cue_id"])))
    return ops


class ScriptedIntentionCompiler:
    """Applies the operations the week gives as truth, naming intentions by their text."""

    def wants(self, text: str, truth: CompileTruth) -> bool:
        return bool(truth.ops)

    async def compile(
        self, text: str, record: IntentionRecord, day: str, where: str, truth: CompileTruth
    ) -> tuple[list[Op], list[str]]:
        out = []
        added: dict[str, str] = {}
        n = len(record.items)
        for op in truth.ops:
            if op.op == "add":
                n += 1
                added[op.text or ""] = f"i{n}"
                out.append(op)
                continue
            label = op.id or ""
            ident = added.get(label) or next(
                (i.id for i in reversed(record.items) if i.text == label), label
            )
            out.append(op.model_copy(update={"id": ident}))
        return out, []


class ScriptedDueJudge:
    """Announces the handles due now whose trigger is visible: a cue in the vignette at once, a
    time or a channel's cue once the agent has read the clock or that channel at this step (as
    a matcher that sees only the step text and the responses would); resolves each handle to
    its task's intention, and a lure to none."""

    async def judge(self, record: IntentionRecord, view: StepView) -> Judgement:
        t = view.truth
        by_text = {i.text: i.id for i in record.today(view.day)}
        resolved: dict[str, tuple[str, ...]] = {}
        for handle in view.menu:
            label = t.label_of.get(t.task_of.get(handle, ""))
            resolved[handle] = (by_text[label],) if label in by_text else ()
        read = read_channels(view.responses)
        due = frozenset(
            h
            for h in view.menu
            if h in t.due and t.needs.get(h, "narrative") in {"narrative", *read}
        )
        return Judgement(due, resolved)


# -- the truth the scripted roles read -------------------------------------------------------


def notes(week: Week) -> dict[tuple[str, str], list[tuple[str, dict[str, Any]]]]:
    """Where each later-day intention is first noted: (day, step) -> [(its day, its task)], the
    first earlier step whose vignette holds the task's label (the benchmark's own rule)."""
    days = week.scenario["days"]
    out: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for n, day in enumerate(days):
        for task in day["tasks"]:
            if not task.get("cross_day"):
                continue
            label = str(task.get("label") or "").rstrip(".").lower()
            where = next(
                (
                    (d["name"], s["id"])
                    for d in days[:n]
                    for s in d["steps"]
                    if label and label in s["text"].lower()
                ),
                None,
            )
            if where is not None:
                out.setdefault(where, []).append((day["name"], task))
    return out


def plan_truth(day: Day, noted: set[str]) -> CompileTruth:
    """What the scripted compiler writes at a morning plan: the day's tasks (a later-day one
    only if no earlier vignette noted it) and the updates made before the day."""
    ops = [
        add_op(t, day.name)
        for t in day.data["tasks"]
        if day.pm.normalize_encoding(t["encoding"])[0] == "start" and t["id"] not in noted
    ]
    for update in day.updates.get("pre", []):
        ops += _updates(day, update)
    return CompileTruth(tuple(ops))


def step_truth(day: Day, step: Step, noted_here: list[tuple[str, dict[str, Any]]]) -> CompileTruth:
    """What the scripted compiler writes at a vignette: tasks it assigns, later-day notes, and
    its updates."""
    ops = [
        add_op(t, day.name)
        for t in day.data["tasks"]
        if tuple(day.pm.normalize_encoding(t["encoding"])) == ("step", step.id)
    ]
    ops += [add_op(task, later) for later, task in noted_here]
    for update in day.updates.get("by_step", {}).get(step.id, []):
        ops += _updates(day, update)
    return CompileTruth(tuple(ops))


def _updates(day: Day, update: dict[str, Any]) -> list[Op]:
    state = day.states.get(update.get("task_id", ""))
    if state is None:
        return []
    return update_ops({**update, "day": day.name}, str(state["task"].get("label") or ""))


def step_facts(day: Day, step: Step) -> Truth:
    """The benchmark's truth at a step: the due handles and the channel each needs read."""
    needs = {}
    for handle, tid in step.handle_to_id.items():
        if tid not in step.due:
            continue
        current = day.states[tid]["current"]
        channel = current.get("cue_channel", "narrative")
        needs[handle] = "clock" if current["type"] in ("time", "time_check") else channel
    return Truth(
        due=frozenset(needs), task_of=step.handle_to_id, label_of=day.labels(), needs=needs
    )
