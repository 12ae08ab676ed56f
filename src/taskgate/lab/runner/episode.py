"""The episode loop: one episode under one arm, turn by turn, logged as it happens.

Per turn the loop keeps the reference state (the generator's graph and the executions that really
happened) and calls the arm's hooks in order (see :mod:`taskgate.lab.arms.arm`): perturb, revise,
match, open, present, exchange. Filler and revision turns bypass the matcher by schedule metadata
unless ``bypass=False``. Scripted roles read the turn through the players' oracle, which the loop
keeps current; model-backed roles see only the messages.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from taskgate.core.booking import Booking
from taskgate.core.machine import TaskMachine
from taskgate.core.plan import Revision
from taskgate.core.verdict import Policy
from taskgate.errors import UsageError
from taskgate.lab.agents.base import Oracle, TurnView
from taskgate.lab.arms.arm import Arm, ArmState, ExchangeFn, Judged
from taskgate.lab.episodes.models import Episode, Turn
from taskgate.lab.episodes.records import (
    BookingRecord,
    EndRecord,
    EpisodeRecord,
    HarnessStamp,
    MatchRecord,
    RecallRecord,
    TurnRecord,
)
from taskgate.lab.memory.base import Memory
from taskgate.roles import Agent, ChatMessage, Compiler, Match, Matcher

Sink = Callable[[EpisodeRecord | TurnRecord | EndRecord], None]
BYPASSED = frozenset({"filler", "revision"})


@dataclass(frozen=True)
class Players:
    """The injected roles of one episode-arm, the names they are logged under, and the oracle
    that scripted roles were built with (the loop keeps it current; ``None`` when no role needs
    it)."""

    agent: Agent
    compiler: Compiler
    matcher: Matcher
    agent_name: str = "agent"
    compiler_name: str = "compiler"
    matcher_name: str = "matcher"
    oracle: Oracle | None = None
    memory: Memory | None = None  # the memory arms' store for this episode-arm
    regime: str | None = None  # the agent model's reasoning regime (a model-backed agent)


async def run_episode(
    episode: Episode,
    arm: Arm,
    players: Players,
    sink: Sink,
    *,
    corruption: float = 0.0,
    repair: bool = False,
    bypass: bool = True,
    run_id: str | None = None,
    on_start: Callable[[], None] | None = None,
    exchange: ExchangeFn | None = None,
    harness: HarnessStamp | None = None,
) -> None:
    """Run ``episode`` under ``arm``; every record goes to ``sink`` as soon as it exists.

    Records carry ``run_id`` (default: the episode's id) so that one episode can run in several
    cells (corruption rates) of one log. ``on_start`` is called once the episode record is out
    (the call log holds compile calls until then). ``exchange`` replaces the arm's own (the
    real-tool harness passes its tool loop, and ``harness`` to stamp the episode record).
    """
    rid = run_id or episode.id
    started = time.perf_counter()
    if arm.needs_memory and players.memory is None:
        raise UsageError(f"the {arm.name} arm needs a memory store; none was given")
    state = await arm.start(episode, players.compiler, corruption, repair)
    state.memory = players.memory if arm.needs_memory else None
    sink(
        EpisodeRecord(
            episode=rid,
            source=episode.id,
            arm=arm.name,
            agent=players.agent_name,
            compiler=arm.logged_compiler(players.compiler_name),
            matcher=arm.logged_matcher(players.matcher_name),
            corruption=corruption,
            repair=repair,
            compiled_plan=state.plan,
            plan_defects=[d.detail for d in state.defects],
            harness=harness,
            memory=state.memory.name if state.memory is not None else None,
            regime=players.regime,
        )
    )
    if on_start is not None:
        on_start()
    truth = TaskMachine(episode.plan)
    for turn in episode.turns:
        record = await _run_turn(
            episode, arm, players, state, truth, turn, bypass, exchange or arm.exchange,
            asks_back=harness is None,
        )  # fmt: skip
        sink(record.model_copy(update={"episode": rid}))
    seconds = round(time.perf_counter() - started, 4)
    sink(EndRecord(episode=rid, arm=arm.name, turns=len(episode.turns), seconds=seconds))


async def _run_turn(
    episode: Episode,
    arm: Arm,
    players: Players,
    state: ArmState,
    truth: TaskMachine,
    turn: Turn,
    bypass: bool,
    exchange: ExchangeFn,
    asks_back: bool = True,
) -> TurnRecord:
    if players.oracle is not None:  # current from the turn's start; ask() adds the directive
        players.oracle.view = TurnView(turn, truth)
    corruptions, repaired = arm.perturb(state)
    compiled_revision: Revision | None = None
    revision_defects: list[str] = []
    if turn.label == "revision":
        truth.revise(episode.revision)
        compiled_revision, revision_defects = await arm.revise(
            state, episode.revision, turn.message, players.compiler
        )
    bypassed = bypass and turn.label in BYPASSED
    match = None if bypassed else await arm.match(state, turn.message, players.matcher)
    if turn.work_order is None:
        truth.close_request()
    else:
        truth.open_request(turn.step, explicit_redo=turn.explicit_redo, work_order=turn.work_order)
    arm.open(state, turn.work_order, match)
    recall = await arm.recall(state, turn.message)
    directive = arm.directive(state)
    messages, kept = arm.present(episode.brief, turn.message, state, directive, match)

    async def ask(msgs: list[ChatMessage], notice: str | None) -> str:
        if players.oracle is not None:
            players.oracle.view = TurnView(turn, truth, directive, notice)
        return await players.agent.reply(msgs)

    def book(booking: Booking) -> None:  # an execution: the reference state records it
        truth.submit(booking, Policy.UNGATED)

    # the testbed's gate arms ask back; the tool harness keeps its transcript in its own exchange,
    # so there the request opens on no step and the agent answers
    may_ask = asks_back and turn.work_order is not None
    asked = arm.ask_back(state, match, kept) if may_ask else None
    done = asked or await exchange(messages, kept, state, ask, book)
    return TurnRecord(
        episode=episode.id,
        arm=arm.name,
        index=turn.index,
        label=turn.label,
        step=turn.step,
        work_order=turn.work_order,
        explicit_redo=turn.explicit_redo,
        matched=_match_record(match),
        directive=directive,
        policy=arm.policy_now(state),
        user=messages[-1]["content"],
        replies=done.replies,
        bookings=[_booking_record(j) for j in done.judged],
        notices=done.notices,
        corruptions=corruptions,
        repaired=repaired,
        compiled_revision=compiled_revision,
        revision_defects=revision_defects,
        executions=done.executions,
        ask_back=asked.replies[0] if asked else None,
        recall=RecallRecord(items=list(recall.items), store=recall.store) if recall else None,
        regime=players.regime,
    )


def _match_record(match: Match | None) -> MatchRecord | None:
    if match is None:
        return None
    return MatchRecord(
        step=match.step, explicit_redo=match.explicit_redo, candidates=match.candidates or None
    )


def _booking_record(j: Judged) -> BookingRecord:
    return BookingRecord(
        code=j.booking.code,
        work_order=j.booking.work_order,
        span=j.booking.span,
        reply_index=j.reply_index,
        decision=j.verdict.decision,
        reason=j.verdict.reason,
        step=j.verdict.step,
        redisplay=j.verdict.redisplay,
        tool=j.booking.tool,
    )
