"""The episode loop: one episode under one arm, turn by turn, logged as it happens.

Per turn: inject corruption (if any) and repair (if asked); apply the revision on a revision turn;
resolve the request with the matcher (gate arms; filler and revision turns bypass it by schedule
metadata unless ``bypass=False``); open the request in the module and in the reference state;
show the agent what the arm shows; judge its bookings; on a same-turn arm re-prompt once after a
refusal; book admitted executions into the reference state; log the turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..agents.base import Agent, ChatMessage, Compiler, Match, Matcher, TurnView
from ..arms.arm import Arm, ArmState, Judged
from ..arms.corruption import Corruptor
from ..core.machine import TaskMachine
from ..core.plan import Revision
from ..core.validator import validate
from ..core.verdict import Policy
from ..episodes.models import Episode, Turn
from ..episodes.records import (
    BookingRecord,
    EndRecord,
    EpisodeRecord,
    MatchRecord,
    TurnRecord,
)
from ..errors import TaskgateError
from ..protocol.render import render_directive

Sink = Callable[[EpisodeRecord | TurnRecord | EndRecord], None]
BYPASSED = frozenset({"filler", "revision"})


@dataclass(frozen=True)
class Players:
    """The injected roles of one episode-arm, and the names they are logged under."""

    agent: Agent
    compiler: Compiler
    matcher: Matcher
    agent_name: str = "agent"
    compiler_name: str = "compiler"
    matcher_name: str = "matcher"


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
) -> None:
    """Run ``episode`` under ``arm``; every record goes to ``sink`` as soon as it exists.

    Records carry ``run_id`` (default: the episode's id) so that one episode can run in several
    cells (corruption rates) of one log. ``on_start`` is called once the episode record is out
    (the call log holds compile calls until then).
    """
    rid = run_id or episode.id
    truth = TaskMachine(episode.plan)
    if arm.compiled:
        compiled = await players.compiler.compile_plan(episode.brief)
        module = TaskMachine(compiled, lenient=True)
    else:
        compiled = episode.plan
        module = TaskMachine(episode.plan)
    state = ArmState(module=module, defects=validate(compiled) if arm.compiled else [])
    sink(
        EpisodeRecord(
            episode=rid,
            source=episode.id,
            arm=arm.name,
            agent=players.agent_name,
            compiler=players.compiler_name if arm.compiled else "generator",
            matcher=players.matcher_name if arm.uses_matcher else "none",
            corruption=corruption,
            repair=repair,
            compiled_plan=compiled,
            plan_defects=[d.detail for d in state.defects],
        )
    )
    if on_start is not None:
        on_start()
    corruptor = Corruptor(corruption, episode.params.seed) if arm.compiled else None
    for turn in episode.turns:
        record = await _run_turn(
            episode, arm, players, state, truth, turn, corruptor, repair, bypass
        )
        sink(record.model_copy(update={"episode": rid}))
    sink(EndRecord(episode=rid, arm=arm.name, turns=len(episode.turns)))


async def _run_turn(
    episode: Episode,
    arm: Arm,
    players: Players,
    state: ArmState,
    truth: TaskMachine,
    turn: Turn,
    corruptor: Corruptor | None,
    repair: bool,
    bypass: bool,
) -> TurnRecord:
    module = state.module
    corruptions = corruptor.inject(module) if corruptor else []
    repaired = module.repair_completions() if repair and arm.compiled else 0
    compiled_revision: Revision | None = None
    revision_defects: list[str] = []
    if turn.label == "revision":
        truth.revise(episode.revision)
        if arm.compiled:
            compiled_revision = await players.compiler.compile_revision(
                module.graph.to_plan(), turn.message
            )
            revision_defects = _apply_compiled_revision(state, compiled_revision)
        else:
            module.revise(episode.revision)

    match: Match | None = None
    if arm.uses_matcher and not (bypass and turn.label in BYPASSED):
        match = await players.matcher.match(module.graph.to_plan(), turn.message)
        if match.step is not None and match.step not in module.graph:
            match = Match(None, match.explicit_redo)
    _open(truth, turn, turn.step, turn.explicit_redo)
    if arm.compiled:
        _open(module, turn, match.step if match else None, bool(match and match.explicit_redo))
    else:
        _open(module, turn, None, False)

    directive = render_directive(module) if arm.compiled else None
    messages, kept = arm.present(episode.brief, turn.message, state, directive, match)
    state.notices = []
    view = TurnView(episode, turn, truth, directive)
    replies = [await players.agent.reply(messages, view)]
    judged = _judge(arm, state, truth, replies[0], 0)
    notices = arm.notices_for(judged, state)
    if notices and arm.surface == "same-turn":
        retry: list[ChatMessage] = [
            *messages,
            {"role": "assistant", "content": replies[0]},
            {"role": "user", "content": "\n\n".join(notices)},
        ]
        view = TurnView(episode, turn, truth, directive, notice="\n\n".join(notices))
        replies.append(await players.agent.reply(retry, view))
        judged += _judge(arm, state, truth, replies[1], 1)
    elif notices:
        state.notices = notices
    state.history += [
        {"role": "user", "content": kept},
        {"role": "assistant", "content": replies[-1]},
    ]
    return TurnRecord(
        episode=episode.id,
        arm=arm.name,
        index=turn.index,
        label=turn.label,
        step=turn.step,
        work_order=turn.work_order,
        explicit_redo=turn.explicit_redo,
        matched=MatchRecord(step=match.step, explicit_redo=match.explicit_redo) if match else None,
        directive=directive,
        policy=arm.policy_now(state) if arm.compiled else Policy.UNGATED,
        user=messages[-1]["content"],
        replies=replies,
        bookings=[_booking_record(j) for j in judged],
        notices=notices,
        corruptions=corruptions,
        repaired=repaired,
        compiled_revision=compiled_revision,
        revision_defects=revision_defects,
    )


def _open(machine: TaskMachine, turn: Turn, step: str | None, redo: bool) -> None:
    if turn.work_order is None:
        machine.close_request()
    else:
        machine.open_request(step, explicit_redo=redo, work_order=turn.work_order)


def _apply_compiled_revision(state: ArmState, revision: Revision) -> list[str]:
    """Apply a compiled revision leniently; what cannot be applied is a recorded defect."""
    defects = validate(state.module.graph.to_plan(), revision)  # the plan's and the revision's
    texts = [d.detail for d in defects]
    try:
        state.module.revise(revision)
    except TaskgateError as exc:  # e.g. it cancels a step the plan lacks: nothing is applied
        texts.append(f"not applied: {exc}")
    state.defects = defects
    return texts


def _judge(arm: Arm, state: ArmState, truth: TaskMachine, reply: str, index: int) -> list[Judged]:
    judged = arm.receive(reply, state, index)
    for j in judged:
        if j.verdict.admitted:  # an execution: the reference state records it as it happened
            truth.submit(j.booking, Policy.UNGATED)
    return judged


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
    )
