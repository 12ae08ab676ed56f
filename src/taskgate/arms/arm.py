"""One arm of the ladder: how task state reaches the agent.

An arm does two things. ``present`` turns the state and the request into the messages the agent
sees (brief, history, the user turn with whatever this arm adds: checklist, matched-step line,
directive, rejection notices, the agent's own ledger). ``receive`` turns the agent's reply into
bookings, each admitted or refused by the arm's module under the arm's policy. Text arms record
executions ungated; gate arms judge them against the compiled state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from ..agents.base import ChatMessage, Match
from ..core.booking import Booking
from ..core.machine import TaskMachine
from ..core.validator import Defect
from ..core.verdict import Policy, Verdict
from ..protocol.bookings import parse_bookings
from ..protocol.render import render_checklist, render_rejection, render_same_turn_notice

SELF_LEDGER_CLAUSE = (
    "STATUS LEDGER (mandatory): keep your own ledger of step statuses. Whenever a step's status "
    "changes, add a line 'LEDGER <completion code> DONE', 'LEDGER <completion code> CANCELLED' or "
    "'LEDGER <completion code> TODO' to your reply. Your ledger is shown back to you with every "
    "message; it is your only record of what is done."
)
LEDGER_HEADER = "[YOUR STATUS LEDGER -- as you recorded it]"
_LEDGER_LINE = re.compile(
    r"^[\s*_`>\-]*LEDGER[\s*_`]+RC\s*-?\s*(\d+)[\s*_`:]+(DONE|CANCELLED|TODO)\b",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass
class ArmState:
    """One episode's mutable state under one arm."""

    module: TaskMachine
    defects: list[Defect] = field(default_factory=list)
    history: list[ChatMessage] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    ledger: dict[str, str] = field(default_factory=dict)  # the agent's own marks: code -> status


@dataclass(frozen=True, slots=True)
class Judged:
    booking: Booking
    verdict: Verdict
    reply_index: int


@dataclass(frozen=True)
class Arm:
    """An arm, described by what it adds to the turn and how it gates bookings."""

    name: str
    checklist: Literal["append", "replace"] | None = None
    matched_line: bool = False
    self_ledger: bool = False
    directive: Literal["user", "system"] | None = None
    policy: Policy = Policy.UNGATED
    surface: Literal["next-turn", "same-turn"] = "next-turn"
    hybrid: bool = False

    @property
    def compiled(self) -> bool:
        """Gate arms act on the compiled state; text arms on the exact reference state."""
        return self.directive is not None

    @property
    def uses_matcher(self) -> bool:
        return self.compiled or self.matched_line

    def policy_now(self, state: ArmState) -> Policy:
        if self.hybrid:
            return Policy.UNGATED if state.defects else Policy.STATE_BOUND
        return self.policy

    # -- what the agent sees ---------------------------------------------------------------------
    def system_prompt(self, brief: str) -> str:
        return f"{brief}\n\n{SELF_LEDGER_CLAUSE}" if self.self_ledger else brief

    def present(
        self, brief: str, message: str, state: ArmState, directive: str | None, match: Match | None
    ) -> tuple[list[ChatMessage], str]:
        """The messages for this call, and the user content to keep in the history."""
        parts = [*state.notices, message]
        kept = list(parts)
        if self.checklist is not None:
            parts.append(render_checklist(state.module))
            if self.checklist == "append":
                kept.append(parts[-1])
        if self.matched_line and match is not None:
            parts.append(_matched_line(match))
        if self.self_ledger:
            parts.append(_render_ledger(state.ledger))
            kept.append(parts[-1])
        if directive is not None and self.directive == "user":
            parts.append(directive)
            kept.append(directive)
        system = self.system_prompt(brief)
        if directive is not None and self.directive == "system":
            system = f"{system}\n\n{directive}"
        user = "\n\n".join(parts)
        messages: list[ChatMessage] = [{"role": "system", "content": system}, *state.history]
        messages.append({"role": "user", "content": user})
        return messages, "\n\n".join(kept)

    # -- what the reply does ---------------------------------------------------------------------
    def receive(self, reply: str, state: ArmState, reply_index: int = 0) -> list[Judged]:
        if self.self_ledger:
            for m in _LEDGER_LINE.finditer(reply):
                state.ledger[f"RC-{m.group(1)}"] = m.group(2).upper()
        policy = self.policy_now(state)
        return [
            Judged(b, state.module.submit(b, policy), reply_index) for b in parse_bookings(reply)
        ]

    def notices_for(self, judged: list[Judged], state: ArmState) -> list[str]:
        """Rejection notices for refused bookings, on gating arms (re-displays get none)."""
        if self.policy_now(state) is Policy.UNGATED:
            return []
        render = render_same_turn_notice if self.surface == "same-turn" else render_rejection
        return [render(j.verdict, j.booking) for j in judged if _noticed(j)]


def _noticed(j: Judged) -> bool:
    return not j.verdict.admitted and not j.verdict.redisplay


def _matched_line(match: Match) -> str:
    if match.step is None:
        return "[MATCHED STEP] this message is about no step of the plan."
    return f"[MATCHED STEP] this message is about step {match.step}."


def _render_ledger(marks: dict[str, str]) -> str:
    if not marks:
        return f"{LEDGER_HEADER}\n(no entries yet)"
    return "\n".join([LEDGER_HEADER, *(f"- {c}: {s}" for c, s in marks.items())])
