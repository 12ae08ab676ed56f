"""The rungs of the ladder, as data: how strongly task state is coupled to the agent.

A :class:`Rung` says what a turn carries besides the user's message (a checklist, the directive
line) and how bookings are judged (the enforcement policy). The proxy runs one of :data:`RUNGS`;
the lab's arms (:mod:`taskgate.lab.arms`) are rungs with the episode loop's hooks added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from taskgate.core.verdict import Policy
from taskgate.registry import Registry


@dataclass(frozen=True)
class Rung:
    """One coupling: what it adds to the turn, and how it gates bookings."""

    name: str
    checklist: Literal["append", "replace"] | None = None
    matched_line: bool = False
    self_ledger: bool = False
    directive_role: Literal["user", "system"] | None = None
    policy: Policy = Policy.UNGATED
    surface: Literal["next-turn", "same-turn"] = "next-turn"
    hybrid: bool = False

    @property
    def compiled(self) -> bool:
        """Gate rungs act on the compiled state; text rungs on the exact reference state."""
        return self.directive_role is not None

    @property
    def uses_matcher(self) -> bool:
        return self.compiled or self.matched_line

    @property
    def gating(self) -> bool:
        """Whether refused bookings are taken out (the enforcement gate's rungs)."""
        return self.policy is not Policy.UNGATED


#: the rungs a gate in front of a real agent runs (the proxy's ``--arm``): the raw transcript
#: (state tracked, nothing coupled), the text checklist, the directive gate, and state-bound and
#: request-bound enforcement
RUNGS: Registry[Rung] = Registry(
    "rung",
    (
        (r.name, r)
        for r in (
            Rung("raw"),
            Rung("checklist", checklist="append"),
            Rung("directive", directive_role="user"),
            Rung("enforcement", directive_role="user", policy=Policy.STATE_BOUND),
            Rung("enforcement-request", directive_role="user", policy=Policy.REQUEST_BOUND),
        )
    ),
)


def get_rung(name: str) -> Rung:
    """The rung of that name (one line naming the nearest and every choice when there is none)."""
    return RUNGS.choose(name)
