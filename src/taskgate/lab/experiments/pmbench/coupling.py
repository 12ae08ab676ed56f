"""The couplings of the intention record to the agent on PM-Bench: what each rung shows, tells
and refuses. Pure: the record, the matcher's judgement and the step's menu in, text and
decisions out.

- text checklist: the record under every step prompt (:func:`.record.checklist`);
- directive gate: ``DUE NOW`` lines for the handles the matcher resolved as triggered,
  ``STILL DUE`` for one announced at the previous step but not executed, and a line when
  time- or channel-triggered intentions are pending with no clock reading or channel response
  this step;
- enforcement gate (judgement): refuses at selection time any handle the matcher has not
  resolved as triggered from the step text and the responses the agent obtained;
- enforcement gate (state): refuses a handle only when every intention it resolves to is
  already done or cancelled; one that resolves to a pending intention, or to none, passes.
A refusal is reported at the next step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from taskgate.lab.experiments.pmbench.record import IntentionRecord
from taskgate.lab.experiments.pmbench.roles import lexical
from taskgate.registry import Registry

#: the rungs on PM-Bench, named as the ladder's (Table 21 prints :data:`NAMES`); the names an
#: earlier taskgate used are aliases
PMBENCH_RUNGS: Registry[str] = Registry(
    "PM-Bench rung",
    (
        ("raw", "the benchmark's own prompt"),
        ("self-ledger", "the benchmark's own self-written to-do ledger scaffold"),
        ("checklist", "the intention record shown"),
        ("directive", "the matcher's due intentions told"),
        ("enforcement-judgement", "due selections refused without their evidence"),
        ("enforcement", "selections the record does not allow refused"),
    ),
    aliases={"ledger": "self-ledger", "enforce-judgement": "enforcement-judgement",
             "enforce-state": "enforcement"},
)  # fmt: skip
NAMES = {
    "raw": "raw transcript",
    "self-ledger": "self-written ledger",
    "checklist": "text checklist",
    "directive": "directive gate",
    "enforcement-judgement": "enforcement gate (judgement)",
    "enforcement": "enforcement gate (state)",
}
RECORD_RUNGS = ("checklist", "directive", "enforcement-judgement", "enforcement")
MATCHER_RUNGS = ("directive", "enforcement-judgement", "enforcement")


@dataclass(frozen=True)
class Refusal:
    handle: str
    action: str
    why: str


def directives(
    announced: Iterable[str],
    still: Iterable[str],
    menu: Mapping[str, str],
    record: IntentionRecord,
    day: str,
    responses: Sequence[str],
) -> list[str]:
    """The directive lines for the agent's current call."""
    lines = [f"DUE NOW: {h} ({menu[h]})" for h in announced if h in menu]
    lines += [f"STILL DUE: {h} ({menu[h]})" for h in still if h in menu]
    pending = record.pending(day)
    read = {r.split("]", 1)[0].removeprefix("State [") for r in responses}
    if any(i.trigger == "time" for i in pending) and "clock" not in read:
        lines.append(
            "Intentions wait on a clock time and you have not read the clock at this step."
        )
    waiting = sorted({i.when for i in pending if i.trigger == "channel"} - read)
    if waiting:
        lines.append(
            f"Intentions wait on the {', '.join(waiting)} channel(s) and you have not queried "
            "them at this step."
        )
    return lines


def notices(refused: Sequence[Refusal]) -> list[str]:
    """The refusals of the previous step, reported at this one."""
    return [f"REFUSED at the previous step: {r.handle} ({r.action}): {r.why}" for r in refused]


def resolve(
    handle: str, action: str, resolved: Mapping[str, tuple[str, ...]] | None,
    record: IntentionRecord, day: str,
) -> tuple[str, ...]:  # fmt: skip
    """The intentions a handle carries out: the matcher's resolution on a rung with a matcher
    (a handle it resolved to none, or never saw, carries out none), else the lexical one."""
    if resolved is not None:
        return resolved.get(handle, ())
    return lexical(action, record, day)


def refuse(
    rung: str,
    handle: str,
    menu: Mapping[str, str],
    allowed: frozenset[str],
    resolved: Mapping[str, tuple[str, ...]] | None,
    record: IntentionRecord,
    day: str,
) -> Refusal | None:
    """The enforcement gate's decision on one selected handle (None: it passes)."""
    action = menu.get(handle, handle)
    if rung == "enforcement-judgement":
        if handle in allowed:
            return None
        return Refusal(handle, action, "the record shows no trigger of it visible now")
    if rung == "enforcement":
        ids = resolve(handle, action, resolved, record, day)
        items = [record.get(i) for i in ids]
        terminal = [i for i in items if i is not None and i.status != "pending"]
        if ids and len(terminal) == len(ids):
            states = sorted({i.status for i in terminal})
            return Refusal(handle, action, f"its intention is already {' and '.join(states)}")
    return None
