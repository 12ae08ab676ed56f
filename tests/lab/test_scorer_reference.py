"""The scorer's lean reference state against the task-state machine it stands in for.

The scorer books each execution into a small reference state (:class:`_Reference`) instead of a
full :class:`TaskMachine` with its ledger, for speed. Here the straightforward machine-based
ground truth (the scorer's earlier implementation) is the oracle, and both score the same
randomly mutated turn records: bookings of random steps under current, stale and unknown work
orders, repeated receipts, refused bookings, declined replies, and harness executions of bound
and unbound tools.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import pytest

from helpers import run_arm
from taskgate.core.booking import Booking
from taskgate.core.machine import Status, TaskMachine
from taskgate.core.verdict import Policy, Verdict
from taskgate.lab import EpisodeParams, generate_episode
from taskgate.lab.episodes.models import Episode
from taskgate.lab.episodes.records import BookingRecord, Execution, TurnRecord
from taskgate.lab.episodes.tools import tool_plan
from taskgate.lab.scoring.scorer import Scoring, _realized_label, score_episode
from taskgate.protocol.refusals import classify

DECLINE = "I cannot book this step: it was already completed."


def _machine_truth(episode: Episode, records: Sequence[TurnRecord], decline_aware: bool) -> Scoring:
    out = Scoring()
    harness = records[0].executions is not None
    truth = TaskMachine(tool_plan(episode) if harness else episode.plan)
    for turn, rec in zip(episode.turns, records, strict=True):
        if turn.label == "revision":
            truth.revise(episode.revision)
        if turn.work_order is None:
            truth.close_request()
            continue
        truth.open_request(turn.step, explicit_redo=turn.explicit_redo, work_order=turn.work_order)
        v = turn.step
        before = truth.status(v) if v else None
        authorized = truth.authorized
        out.labels[_realized_label(turn.label, before, v in authorized)] += 1
        errors: list[str] = []
        executed_v = False
        for x, status, ok in _machine_executions(truth, rec, decline_aware):
            if x is None or status is None:
                errors.append("unrequested")
            elif status is Status.CANCELLED:
                errors.append("superseded")
            elif status is Status.DONE and not ok:
                errors.append("re_execution")
            elif status is Status.BLOCKED:
                errors.append("premature")
            elif x != v:
                errors.append("unrequested")
            else:
                executed_v = True
        owed = before is Status.TODO or (before is Status.DONE and v in authorized)
        if owed and not executed_v:
            redo_turn = before is Status.DONE or turn.label == "legit_redo"
            errors.append("refused_redo" if redo_turn else "omission")
        out.channels.update(errors)
        out.scored_turns += 1
        out.correct_turns += not errors
    return out


def _machine_executions(
    truth: TaskMachine, rec: TurnRecord, decline_aware: bool
) -> Iterator[tuple[str | None, Status | None, bool]]:
    at_request = {
        x: truth.status(x) for x in truth.graph.steps
    }  # sigma at the request (Section 3.1)
    if rec.executions is not None:
        executed: set[str] = set()
        for e in rec.executions:
            x = truth.graph.step_for_tool(e.tool)
            if x is None:
                yield None, None, False
                continue
            again = x in executed
            status = at_request[x]
            if again and status in (Status.TODO, Status.DONE):
                status = Status.DONE  # what the first execution did
            ok = x in truth.authorized and not again
            executed.add(x)
            truth.record(
                Booking("", e.work_order, tool=e.tool), Verdict("admit", x), Policy.UNGATED
            )
            yield x, status, ok
        return
    for b in rec.bookings:
        if b.decision != "admit":
            continue
        booking = Booking(b.code, b.work_order, b.span)
        if decline_aware and classify(rec.replies[b.reply_index], booking) == "citation":
            continue
        x = truth.graph.step_for_code(b.code)
        if x is None:
            continue
        status, ok = at_request[x], x in truth.authorized
        if truth.submit(booking, Policy.UNGATED).admitted:
            yield x, status, ok


def _mutate(
    ep: Episode, turns: list[TurnRecord], rng: random.Random, harness: bool
) -> list[TurnRecord]:
    codes = [s.code for s in ep.plan.steps.values()] + ["RC-0000"]
    tools = [t for t in ep.templates.values()] + ["not_a_step_tool"]
    orders = [t.work_order for t in ep.turns if t.work_order] + ["#W1"]
    out = []
    for t in turns:
        current = [t.work_order] if t.work_order else []
        reply = rng.choice(["ok", DECLINE, "done: ref"])
        bookings = []
        executions = []
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            wo = rng.choice(current * 3 + orders)
            code = rng.choice(codes)
            bookings.append(
                BookingRecord(
                    code=code,
                    work_order=wo,
                    span=(0, 0),
                    reply_index=0,
                    decision=rng.choice(["admit", "admit", "refuse"]),
                )
            )
            executions.append(Execution(tool=rng.choice(tools), work_order=wo))
        if rng.random() < 0.3 and bookings:
            bookings.append(bookings[0])  # a repeated receipt in one turn
        update: dict[str, object] = {"replies": [reply], "bookings": bookings}
        if harness:
            update["executions"] = executions
        out.append(t.model_copy(update=update))
    return out


@pytest.mark.parametrize("harness", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_the_lean_reference_scores_as_the_task_machine(seed: int, harness: bool) -> None:
    rng = random.Random(seed)
    ep = generate_episode(
        EpisodeParams(seed=100 + seed, steps=rng.choice([5, 10, 15]), schedule="paper")
    )
    turns, _ = run_arm(ep, "raw", "scripted:always-book")
    records = _mutate(ep, turns, rng, harness)
    got = score_episode(ep, records)
    for decline_aware, scoring in ((False, got.primary), (True, got.decline_aware)):
        want = _machine_truth(ep, records, decline_aware)
        assert +scoring.channels == +want.channels
        assert scoring.labels == want.labels
        assert (scoring.scored_turns, scoring.correct_turns) == (
            want.scored_turns,
            want.correct_turns,
        )
    assert sum(got.primary.channels.values()) > 0  # the mutations do exercise the channels
