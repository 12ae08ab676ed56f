"""The three injected roles, as small async protocols.

* a :class:`Compiler` turns the brief into a plan and a revision message into a revision;
* a :class:`Matcher` resolves one user message to a step (or none) and an explicit-redo flag;
* an :class:`Agent` writes the reply to the messages an arm shows it.

Scripted implementations (in :mod:`taskgate.agents.scripted`) read the episode's ground truth;
model-backed ones read only the text they are given. An arm never knows which it has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol, TypedDict

from ..core.machine import TaskMachine
from ..core.plan import Plan, Revision
from ..episodes.models import Episode, Turn


class ChatMessage(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


class Match(NamedTuple):
    step: str | None
    explicit_redo: bool = False


@dataclass(frozen=True, slots=True)
class TurnView:
    """What a scripted agent may look at besides the messages: the oracle and the arm's directive.

    Model-backed agents ignore it. ``truth`` is the reference state (generator graph, realized
    executions) before this turn's bookings; ``notice`` is set on a same-turn re-prompt.
    """

    episode: Episode
    turn: Turn
    truth: TaskMachine
    directive: str | None = None
    notice: str | None = None


class Agent(Protocol):
    async def reply(self, messages: list[ChatMessage], view: TurnView) -> str: ...


class Matcher(Protocol):
    async def match(self, plan: Plan, message: str) -> Match: ...


class Compiler(Protocol):
    async def compile_plan(self, brief: str) -> Plan: ...

    async def compile_revision(self, plan: Plan, message: str) -> Revision: ...
