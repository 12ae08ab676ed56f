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

from .record import IntentionRecord, Op
from .roles import CompileTruth, Judgement, StepView


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
    the label here; :class:`ScriptedCompiler` swaps in the record's id)."""
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


class ScriptedCompiler:
    """Applies the operations the week gives as truth, naming intentions by their text."""

    def wants(self, text: str, truth: CompileTruth) -> bool:
        return bool(truth.ops)

    async def compile(
        self, text: str, record: IntentionRecord, day: str, where: str, truth: CompileTruth
    ) -> list[Op]:
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
        return out


class ScriptedMatcher:
    """Announces the handles due now; resolves each handle to its task's intention."""

    async def judge(self, record: IntentionRecord, view: StepView) -> Judgement:
        t = view.truth
        by_text = {i.text: i.id for i in record.today(view.day)}
        resolved = {}
        for handle in view.menu:
            label = t.label_of.get(t.task_of.get(handle, ""))
            if label is not None and label in by_text:
                resolved[handle] = (by_text[label],)
        due = frozenset(h for h in view.menu if h in t.due)
        return Judgement(due, resolved)
