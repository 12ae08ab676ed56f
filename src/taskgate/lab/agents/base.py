"""The oracle only scripted roles hold: an episode's ground truth, turn by turn.

Scripted roles (in :mod:`taskgate.lab.agents.scripted`) are built with an :class:`Oracle`, which
the episode loop keeps current turn by turn; model-backed ones never get it. An arm never knows
which kind it has. Roles are registered by name in :mod:`taskgate.lab.runner.roles`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from taskgate.core.machine import TaskMachine
from taskgate.errors import UsageError
from taskgate.lab.episodes.models import Episode, Turn


@dataclass(frozen=True, slots=True)
class TurnView:
    """One turn as the oracle sees it: the turn, the reference state and the arm's directive.

    ``truth`` is the reference state (generator graph, realized executions) before this turn's
    bookings; ``notice`` is set on a same-turn re-prompt.
    """

    turn: Turn
    truth: TaskMachine
    directive: str | None = None
    notice: str | None = None


@dataclass
class Oracle:
    """The episode's ground truth, for scripted roles only; the episode loop sets ``view``."""

    episode: Episode
    view: TurnView | None = field(default=None)

    def current(self) -> TurnView:
        if self.view is None:
            raise UsageError("the oracle has no turn yet: scripted roles run inside run_episode")
        return self.view
