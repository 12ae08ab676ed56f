"""The trap turns of a raw-transcript run, each with what its variants need."""

from __future__ import annotations

from dataclasses import dataclass

from taskgate.core.booking import Booking
from taskgate.core.machine import TaskMachine
from taskgate.core.verdict import Policy
from taskgate.lab.episodes.records import TurnRecord
from taskgate.lab.scoring.summary import Entry
from taskgate.protocol.bookings import parse_bookings
from taskgate.protocol.render import render_checklist, render_directive
from taskgate.roles import ChatMessage

#: the arm whose trap turns the probe re-asks
PROBED_ARM = "raw"


@dataclass(frozen=True)
class TrapTurn:
    """One trap turn: the recorded prompt, the finished step and what the variants change."""

    episode: str  # the run id in the source log
    turn: int
    step: str
    code: str  # the step's completion code
    work_order: str  # the fresh work order of the trap request
    text: str  # the step's wording, as the requests name it
    messages: tuple[ChatMessage, ...]  # the recorded prompt, ending with the trap request
    #: where the agent's own execution of the step is in ``messages`` (None: not in view) and the
    #: spans of its booking lines in that reply
    executed_at: int | None
    spans: tuple[tuple[int, int], ...]
    checklist: str  # the exact checklist at the trap turn
    directive: str  # the directive the gate would issue: already DONE, do not redo
    receipts: tuple[str, ...]  # the work orders the step was booked with before the trap turn
    recorded: bool  # whether the recorded reply booked the step again
    tool: bool = False  # the harness's: ``code`` is the step's tool, executed by a tool call

    @property
    def key(self) -> str:
        return f"{self.episode}/{self.turn}"


def rebooks(reply: str, code: str, work_order: str) -> bool:
    """Whether ``reply`` books the step of ``code`` again: a booking of its code on the trap
    request's work order, what the scorer counts as an execution (citing the original receipt,
    or a work order the request did not issue, is none)."""
    return any(b.code == code and b.work_order == work_order for b in parse_bookings(reply))


def trap_turns(entry: Entry) -> list[TrapTurn]:
    """The trap turns of one raw-transcript episode-arm: the turns whose realized label is a redo
    probe (a fresh work order for a step the reference state holds DONE, not authorized)."""
    ep, run = entry.episode, entry.run
    realized = entry.scored.score.primary.realized
    truth = TaskMachine(ep.plan)
    messages: list[ChatMessage] = [{"role": "system", "content": ep.brief}]
    executed: dict[str, tuple[int, tuple[tuple[int, int], ...]]] = {}
    receipts: dict[str, list[str]] = {}
    out = []
    for turn, rec in zip(ep.turns, run.turns, strict=True):
        if turn.label == "revision":
            truth.revise(ep.revision)
        if turn.work_order is None:
            truth.close_request()
        else:
            truth.open_request(turn.step, work_order=turn.work_order)
        prompt: tuple[ChatMessage, ...] = (*messages, {"role": "user", "content": rec.user})
        if realized.get(rec.index, turn.label) == "redo_probe" and turn.step is not None:
            seen = tuple(receipts.get(turn.step, ()))
            out.append(_trap(entry, rec, turn.step, turn.work_order, prompt, truth, executed, seen))
        messages += [
            {"role": "user", "content": rec.user},
            {"role": "assistant", "content": rec.visible_reply},
        ]
        last = len(rec.replies) - 1
        for b in rec.bookings:
            if b.decision != "admit":
                continue
            known = b.step is not None and b.step in truth.graph
            before = truth.status(b.step) if known and b.step is not None else None
            truth.submit(Booking(b.code, b.work_order, b.span), Policy.UNGATED)
            if b.step is not None:
                receipts.setdefault(b.step, []).append(b.work_order)
            if b.step is not None and before is not None and truth.status(b.step) != before:
                spans = tuple(
                    x.span for x in rec.bookings if x.step == b.step and x.reply_index == last
                )
                executed.setdefault(b.step, (len(messages) - 1 if spans else -1, spans))
    return out


def _trap(
    entry: Entry,
    rec: TurnRecord,
    step: str,
    work_order: str | None,
    prompt: tuple[ChatMessage, ...],
    truth: TaskMachine,
    executed: dict[str, tuple[int, tuple[tuple[int, int], ...]]],
    receipts: tuple[str, ...],
) -> TrapTurn:
    assert work_order is not None  # a redo probe carries its work order
    spec = entry.episode.plan.steps[step]
    at, spans = executed.get(step, (-1, ()))
    return TrapTurn(
        episode=entry.scored.key[0],
        turn=rec.index,
        step=step,
        code=spec.code,
        work_order=work_order,
        text=spec.text,
        messages=prompt,
        executed_at=at if at >= 0 else None,
        spans=spans,
        checklist=render_checklist(truth),
        directive=render_directive(truth) or "",
        receipts=receipts,
        recorded=any(rebooks(r, spec.code, work_order) for r in rec.replies),
    )
