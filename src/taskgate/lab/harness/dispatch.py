"""The harness's dispatcher: one tool call, judged by the arm's gate, executed in the workspace.

Under every arm a call is refused, and nothing executes, when it cannot be read, names a tool the
workspace lacks, or carries a work order other than the current request's (a stale one, in the
paper's words). Beyond that, the ungated arms (raw transcript, text checklist, directive gate)
execute every call; the enforcement arms judge it through a :class:`~taskgate.ToolGate` around the
arm's module (state-bound or request-bound) and execute only what it admits, returning the
rejection notice as the call's result. Every execution is recorded in the arm's module (so the
checklist and directives follow the workspace) and in the reference state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from taskgate.core.booking import Booking
from taskgate.core.machine import TaskMachine
from taskgate.core.verdict import WORK_ORDER_REASONS, Policy, Reason, Verdict
from taskgate.gate.tool_gate import ToolGate
from taskgate.lab.arms.arm import Judged
from taskgate.lab.harness.workspace import TOOLS, Workspace
from taskgate.protocol.actions import ToolCall
from taskgate.protocol.render import render_rejection

_SHOWN_NAME = 80  # a garbled tool name or work order is quoted back this long at most


@dataclass(frozen=True, slots=True)
class Outcome:
    """A dispatched call: its verdict (as the turn record logs it), what the agent reads back,
    and whether the tool executed."""

    judged: Judged
    result: str
    executed: bool
    call_id: str = ""

    @property
    def notice(self) -> str | None:
        return None if self.executed else self.result


class Dispatcher:
    """Executes one episode-arm's tool calls behind its gate."""

    def __init__(
        self,
        workspace: Workspace,
        module: TaskMachine,
        policy: Policy,
        on_execute: Callable[[Booking], None],
    ) -> None:
        self.workspace, self.module, self.policy = workspace, module, policy
        # the paper's policies as they are: an unrequested eligible step runs, and a tool no step
        # of the episode is bound to is refused (unknown), never let through
        self._gate = (
            ToolGate.around(module, policy, unrequested="run", unbound="refuse")
            if policy is not Policy.UNGATED
            else None
        )
        self._on_execute = on_execute

    def dispatch(self, call: ToolCall, hop: int) -> Outcome:
        wo, tool = call.work_order[:_SHOWN_NAME], call.tool[:_SHOWN_NAME] or "?"
        booking = Booking("", wo, call.span, tool=tool)
        refusal = _unreadable(call)
        if refusal is not None:
            return self._refused(booking, refusal, hop, call.call_id)
        if self._gate is None:
            verdict = self.module.judge(booking, Policy.UNGATED)
            if verdict.reason in WORK_ORDER_REASONS:
                return self._refused(booking, verdict, hop, call.call_id)
            result = self.workspace.execute(booking.tool or "", booking.work_order, call.arguments)
            if verdict.admitted:  # a tool the module does not know, or a repeat, leaves it as is
                self.module.record(booking, verdict, Policy.UNGATED)
            return self._executed(booking, Verdict("admit", verdict.step), result, hop, call)
        ticket = self._gate.begin(booking.tool or "", booking.work_order)
        if not ticket.admitted:
            return self._refused(booking, ticket.verdict, hop, call.call_id)
        ok = False
        try:
            result = self.workspace.execute(booking.tool or "", booking.work_order, call.arguments)
            ok = True
        finally:
            self._gate.finish(ticket, ok)
        return self._executed(booking, ticket.verdict, result, hop, call)

    def _refused(self, booking: Booking, verdict: Verdict, hop: int, call_id: str) -> Outcome:
        return Outcome(
            Judged(booking, verdict, hop), render_rejection(verdict, booking), False, call_id
        )

    def _executed(
        self, booking: Booking, verdict: Verdict, result: str, hop: int, call: ToolCall
    ) -> Outcome:
        self._on_execute(booking)
        return Outcome(Judged(booking, verdict, hop), result, True, call.call_id)


def _unreadable(call: ToolCall) -> Verdict | None:
    """Refused in every arm: a call that cannot be read, or names a tool the workspace lacks."""
    if call.problem:
        return Verdict("refuse", None, Reason.MALFORMED_CALL)
    if call.tool not in TOOLS:
        return Verdict("refuse", None, Reason.UNKNOWN_TOOL)
    return None
