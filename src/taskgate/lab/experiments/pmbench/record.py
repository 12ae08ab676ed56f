"""The intention record: the state the PM-Bench rungs own (Appendix I).

One entry per intention the agent was given: its text, its trigger (a cue phrase, a clock time
``HH:MM`` or a state channel), the day it belongs to, and a status in {pending, done,
cancelled}. Nothing in it is read from the benchmark's task files: the compiler writes it from
the text the agent sees, as add, cancel, retime and recue operations, and a status becomes done
only on a receipt. Compile errors flow into the record uncorrected: an operation the record
cannot apply is dropped and reported, the rest apply. Pure: no model, no benchmark.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Trigger = Literal["cue", "time", "channel"]
IntentionStatus = Literal["pending", "done", "cancelled"]
EVERY_DAY = "every day"
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


class Intention(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    text: str
    trigger: Trigger
    when: str  # the cue phrase, the clock time HH:MM, or the channel's name
    day: str  # a weekday, or "every day" for the daily header's intentions
    status: IntentionStatus = "pending"


class Op(BaseModel):
    """One compile operation. ``add`` needs text, trigger and when (day defaults to the day being
    compiled); ``cancel`` an id; ``retime`` an id and a time in ``when`` (and may move the day);
    ``recue`` an id, a trigger (cue or channel) and its ``when``."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    op: Literal["add", "cancel", "retime", "recue"]
    id: str | None = None
    text: str | None = Field(default=None, max_length=500)
    trigger: Trigger | None = None
    when: str | None = Field(default=None, max_length=200)
    day: str | None = None


class CompileReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    ops: list[dict[str, Any]] = Field(default_factory=list, max_length=50)

    def valid(self) -> tuple[list[Op], list[str]]:
        """The operations that are well formed, and one problem line for each that is not (a
        bad operation is dropped alone; the rest apply)."""
        ops, problems = [], []
        for n, raw in enumerate(self.ops, 1):
            try:
                ops.append(Op.model_validate(raw))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(x) for x in first["loc"]) or "op"
                problems.append(f"operation {n}: {where}: {first['msg']}")
        return ops, problems


def clock(when: str) -> str | None:
    """``when`` as ``HH:MM`` (``9:05`` → ``09:05``), or None when it is no clock time."""
    m = _CLOCK.match(when.strip())
    return f"{int(m.group(1)):02d}:{m.group(2)}" if m else None


def _day(day: str | None, default: str) -> str | None:
    if day is None or not day.strip():
        return default
    d = day.strip().lower()
    if d in ("every day", "daily", "everyday"):
        return EVERY_DAY
    return next((name for name in DAYS if name.lower() == d), None)


class IntentionRecord:
    """The record, in the order intentions were added (ids ``i1``, ``i2`` ...)."""

    def __init__(self, channels: Sequence[str] = ()) -> None:
        self._items: dict[str, Intention] = {}
        self.channels = tuple(channels)  # the state channels a channel trigger may name

    @property
    def items(self) -> tuple[Intention, ...]:
        return tuple(self._items.values())

    def get(self, ident: str) -> Intention | None:
        return self._items.get(ident)

    def apply(self, ops: Iterable[Op], day: str) -> list[str]:
        """Apply each operation that can be applied; returns one problem line per dropped one."""
        problems = []
        for op in ops:
            problem = self._apply(op, day)
            if problem:
                problems.append(f"{op.op}: {problem}")
        return problems

    def _apply(self, op: Op, today: str) -> str | None:
        if op.op == "add":
            return self._add(op, today)
        target = self._items.get(op.id or "")
        if target is None:
            return f"no intention {op.id!r}"
        if target.status != "pending":
            return f"{target.id} is already {target.status}"
        if op.op == "cancel":
            self._items[target.id] = target.model_copy(update={"status": "cancelled"})
            return None
        if op.op == "retime":
            at = clock(op.when or "")
            day = _day(op.day, target.day)
            if at is None or day is None:
                return f"retime of {target.id} needs a time HH:MM and a weekday"
            self._items[target.id] = target.model_copy(
                update={"trigger": "time", "when": at, "day": day}
            )
            return None
        trigger, when = self._trigger(op.trigger, op.when)
        if trigger is None or trigger == "time":
            return f"recue of {target.id} needs a cue phrase or a known channel"
        self._items[target.id] = target.model_copy(update={"trigger": trigger, "when": when})
        return None

    def _add(self, op: Op, today: str) -> str | None:
        text = (op.text or "").strip()
        trigger, when = self._trigger(op.trigger, op.when)
        day = _day(op.day, today)
        if not text or trigger is None:
            return "an add needs text, a trigger (cue, time or channel) and its when"
        if day is None:
            return f"unknown day {op.day!r}"
        ident = f"i{len(self._items) + 1}"
        self._items[ident] = Intention(id=ident, text=text, trigger=trigger, when=when, day=day)
        return None

    def _trigger(self, trigger: Trigger | None, when: str | None) -> tuple[Trigger | None, str]:
        w = (when or "").strip()
        if trigger is None or not w:
            return None, w
        if trigger == "time":
            at = clock(w)
            return ("time", at) if at else (None, w)
        if trigger == "channel":
            name = w.lower()
            return ("channel", name) if name in self.channels else (None, w)
        return "cue", w

    def done(self, idents: Iterable[str]) -> list[str]:
        """Receipts: the pending intentions among ``idents`` become done; returns those changed."""
        changed = []
        for ident in idents:
            item = self._items.get(ident)
            if item is not None and item.status == "pending":
                self._items[ident] = item.model_copy(update={"status": "done"})
                changed.append(ident)
        return changed

    def new_day(self) -> None:
        """The daily header's intentions are owed again each day: done ones become pending."""
        for ident, item in self._items.items():
            if item.day == EVERY_DAY and item.status == "done":
                self._items[ident] = item.model_copy(update={"status": "pending"})

    def today(self, day: str) -> list[Intention]:
        """The intentions that belong to ``day`` (and every day), in the record's order."""
        return [i for i in self._items.values() if i.day in (day, EVERY_DAY)]

    def pending(self, day: str) -> list[Intention]:
        return [i for i in self.today(day) if i.status == "pending"]

    def later(self, day: str) -> list[Intention]:
        """Pending intentions for a later day of the week."""
        if day not in DAYS:
            return []
        after = DAYS[DAYS.index(day) + 1 :]
        return [i for i in self._items.values() if i.day in after and i.status == "pending"]


def describe(item: Intention) -> str:
    """The intention's trigger in words, as the checklist and the matcher show it."""
    if item.trigger == "time":
        return f"at {item.when}"
    if item.trigger == "channel":
        return f"when it shows on the {item.when} channel (query it)"
    return f"when: {item.when}"


def checklist(record: IntentionRecord, day: str) -> str:
    """The text checklist under a step prompt: today's intentions with their triggers (cancelled
    ones marked as such; done ones left out, as the menu leaves them out) and later-day notes."""
    lines = ["Intention record (kept for you from what you were told):"]
    for item in record.today(day):
        if item.status == "pending":
            lines.append(f"- [{item.id}] {item.text} ({describe(item)})")
        elif item.status == "cancelled":
            lines.append(f"- [{item.id}] CANCELLED, do not do it: {item.text}")
    later = record.later(day)
    if later:
        lines.append("Notes for later days (not today):")
        lines += [f"- {i.day}: {i.text} ({describe(i)})" for i in later]
    if len(lines) == 1:
        lines.append("- (nothing pending)")
    return "\n".join(lines)
