"""An operator's changes held in a conversation's journal, and giving them: the one approval-timing
rule of every surface that journals (the proxy, the MCP gate).

A revision or an approval an operator posts is written at once as a ``held`` event and given at
the conversation's next exchange with the gate (the proxy's next request, the MCP gate's next call
or user message): revisions before that exchange's user message is read, approvals to the request
open then. Each one given is a receipts-ledger entry; one the state no longer allows by then (a
step cancelled since) is dropped, with its reason, in the ``given`` event. One approval at a time:
a second, while one is held or given and not yet used or lapsed, is refused when it is posted.
"""

from __future__ import annotations

import logging

from taskgate.core.graph import find_cycle
from taskgate.core.ledger import PlanEntry
from taskgate.core.machine import TaskMachine
from taskgate.core.plan import Revision
from taskgate.errors import CycleError, TaskgateError, UnknownStepError, UsageError
from taskgate.gate.session import GateSession, check_strands, step_named
from taskgate.journal.events import (
    Approval,
    Conversation,
    Event,
    GivenEvent,
    HeldEvent,
    LedgerEvent,
)

log = logging.getLogger("taskgate")


class OneApprovalAtATime(UsageError):
    """An approval posted while another is held or given and not yet used or lapsed."""


class NoPlanYet(UsageError):
    """A change posted to a conversation that has no plan yet."""


def scratch(conv: Conversation) -> TaskMachine:
    """The conversation's committed state with its held revisions applied (a copy to check a
    new change on; one held revision that no longer applies is skipped, as it will be)."""
    entries = list(conv.committed)
    if not entries or not isinstance(entries[0], PlanEntry):
        raise NoPlanYet(f"conversation {conv.key} has no plan yet")
    machine = TaskMachine.from_ledger(entries)
    for held in conv.held:
        if held.revision is not None:
            try:
                check_strands(machine, held.revision)
                machine.revise(held.revision)
            except TaskgateError:
                continue  # it will be dropped when given, so the next change is checked without it
    return machine


def held_revision(machine: TaskMachine, revision: Revision) -> HeldEvent:
    """The held event of ``revision``, checked on ``machine`` (:func:`scratch`): a step the plan
    lacks, a strand or a cycle raises naming it, and nothing is held."""
    named = [*revision.rewires, *(p for ps in revision.rewires.values() for p in ps)]
    named += [revision.cancel] if revision.cancel is not None else []
    named += list(revision.relax or ())
    unknown = sorted({n for n in named if n not in machine.graph})
    if unknown:  # a lenient graph would take it; an operator's change is not lenient
        raise UnknownStepError(unknown[0], "the revision", list(machine.graph.steps))
    check_strands(machine, revision)
    machine.revise(revision)  # on the copy
    graph = machine.graph
    cycle = find_cycle({s: graph.prerequisites(s) for s in graph.steps})
    if cycle:
        raise CycleError(cycle, "the revision")
    return HeldEvent(revision=revision)


def held_approval(
    conv: Conversation, machine: TaskMachine, what: str, by: str, reason: str
) -> HeldEvent:
    """The held event of an approval of ``what`` (a step or its tool), checked on ``machine``
    (:func:`scratch`): nothing to approve, or a second approval while one waits, raises."""
    step = step_named(machine.graph, what)
    waiting = approval_waiting(conv, machine)
    if waiting is not None:
        raise OneApprovalAtATime(
            f"an approval of {waiting[0]} is already {waiting[1]} in conversation {conv.key}: "
            "one approval at a time (post this one once that call has run or its request has "
            "ended)"
        )
    return HeldEvent(approval=Approval(step=step, by=by.strip(), reason=reason))


def approval_waiting(conv: Conversation, machine: TaskMachine) -> tuple[str, str] | None:
    """The step of an approval already held or given and not used or lapsed, and which of the
    two, or ``None`` (a second approval is refused while there is one)."""
    for held in conv.held:
        if held.approval is not None:
            return held.approval.step, "held"
    return (machine.approved, "given") if machine.approved is not None else None


def give_held(conv: Conversation, gate: GateSession, *, approvals: bool) -> list[Event]:
    """Give ``conv``'s held revisions (``approvals=False``) or approvals (``True``) through the
    gate's core, in the order they were held; the events that record it (each change's ledger
    event, then one ``given`` event), for the caller to apply to ``conv`` as applied."""
    taken: list[int] = []
    dropped: list[str] = []
    events: list[Event] = []
    if approvals and gate.machine.request is None:  # kept for the next request that opens
        return events
    for i, held in enumerate(conv.held):
        if (held.approval is not None) != approvals:
            continue
        taken.append(i)
        try:
            if held.approval is not None:
                a = held.approval
                gate.approve(a.step, by=a.by, reason=a.reason)  # one at a time: the core's rule
            elif held.revision is not None:
                gate.revise(held.revision)  # the strand check, then one ledger entry
        except TaskgateError as exc:
            dropped.append(str(exc))
            log.warning("taskgate: conversation %s: a held change was dropped: %s", conv.key, exc)
            continue
        events.append(LedgerEvent(entry=gate.machine.last_entry()))
    if taken:
        events.append(GivenEvent(taken=tuple(taken), dropped=tuple(dropped)))
    return events
