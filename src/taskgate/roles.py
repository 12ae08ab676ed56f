"""The three injected roles, as small async protocols.

* a :class:`Compiler` turns a brief into a plan and a revision message into a revision;
* a :class:`Matcher` resolves one user message to a step (or none) and an explicit-redo flag;
* an :class:`Agent` writes the reply to the messages it is shown.

Every role sees only text: the messages, the plan, the user's message. Model-backed roles are in
:mod:`taskgate.llm.roles`, model-free matchers in :mod:`taskgate.matching`, the brief parser in
:mod:`taskgate.protocol.briefparse`. The lab's scripted roles (which read an episode's ground
truth) are in :mod:`taskgate.lab.agents.scripted`.
"""

from __future__ import annotations

from typing import Literal, NamedTuple, Protocol, TypedDict

from taskgate.core.plan import Plan, Revision


class ChatMessage(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


class Match(NamedTuple):
    """A matcher's answer: the step (or none), the explicit-redo flag and, when the matcher could
    not tell which step is meant, the candidate steps to ask back about (``step`` is then None)."""

    step: str | None
    explicit_redo: bool = False
    candidates: tuple[str, ...] = ()


class Agent(Protocol):
    """Writes the agent's reply to one turn.

    An implementer must return the visible reply text (reasoning removed), may keep no state that
    the messages do not carry (a turn is re-asked with the same history on a same-turn re-prompt),
    must not mutate ``messages``, and raises :class:`taskgate.ModelError` when no reply can be had
    (the runner then leaves the episode-arm for a rerun). Bookings are parsed from the text by the
    arm; the agent never books anything itself.
    """

    async def reply(self, messages: list[ChatMessage]) -> str: ...


class Matcher(Protocol):
    """Resolves one user message to a step of ``plan`` and an explicit-redo flag.

    An implementer must return ``Match(None)`` when the message is about no step, and never a step
    the plan lacks (the loop treats one as no step). A matcher that cannot tell which step is meant
    returns no step and the ``candidates`` to ask back about; the gate arms, ``ToolGate``, the
    LangGraph middleware and the proxy then put the question to the user instead of acting. ``explicit_redo`` is true only when the
    message explicitly authorizes redoing finished work. Model failures raise
    :class:`taskgate.ModelError`; an unusable reply is ``Match(None)``, not an exception.
    """

    async def match(self, plan: Plan, message: str) -> Match: ...


class Compiler(Protocol):
    """Compiles the brief into a plan, and a revision message into a revision of ``plan``.

    An implementer must return what it read, defects included: the gate builds its state leniently
    and the validator reports what is wrong, as in the paper; nothing is corrected silently. An
    unusable reply is an empty-coded plan or an empty revision, not an exception; model failures
    raise :class:`taskgate.ModelError`. Calls are cached per episode and compiler by the runner.
    """

    async def compile_plan(self, brief: str) -> Plan: ...

    async def compile_revision(self, plan: Plan, message: str) -> Revision: ...
