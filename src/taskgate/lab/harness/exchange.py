"""One episode-arm's turns in the harness: the turn graph, its history, and the workspace check.

:class:`ToolExchange` takes the place of :meth:`Arm.exchange` in the episode loop: it runs the
turn graph on the arm's presented messages (the brief as system prompt, the transcript so far, the
user turn with whatever the arm adds), then inspects the workspace: the stamped blocks the turn
added must be exactly the executions the dispatcher carried out, and they are what the turn record
logs and the scorer scores.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage

from taskgate.core.booking import Booking
from taskgate.errors import WorkspaceError
from taskgate.lab.arms.arm import Arm, ArmState, Ask, Exchange
from taskgate.lab.episodes.records import Execution
from taskgate.lab.harness.dispatch import Dispatcher, Outcome
from taskgate.lab.harness.graph import (
    MAX_HOPS,
    Actor,
    Mode,
    TurnContext,
    calls_of,
    message_text,
    turn_graph,
)
from taskgate.lab.harness.workspace import Workspace
from taskgate.protocol.actions import parse_actions
from taskgate.roles import ChatMessage

#: a model-backed native agent: messages -> its reply, with tool calls
NativeModel = Callable[[list[AnyMessage]], Any]


class ToolExchange:
    """The harness's exchange for one episode-arm (it keeps the arm's transcript)."""

    def __init__(
        self, arm: Arm, workspace: Workspace, mode: Mode, native: NativeModel | None = None
    ) -> None:
        self.arm, self.workspace, self.mode, self._native = arm, workspace, mode, native
        self.history: list[AnyMessage] = []
        self._stamps: Counter[tuple[str, str]] = Counter()

    async def __call__(
        self,
        messages: list[ChatMessage],
        kept: str,
        state: ArmState,
        ask: Ask,
        on_admit: Callable[[Booking], None],
    ) -> Exchange:
        dispatcher = Dispatcher(self.workspace, state.module, self.arm.policy_now(state), on_admit)
        start: list[AnyMessage] = [
            SystemMessage(messages[0]["content"]),
            *self.history,
            HumanMessage(messages[-1]["content"]),
        ]
        ctx = TurnContext(self._actor(ask), dispatcher, self.mode)
        final: dict[str, Any] = await turn_graph().ainvoke(
            {"messages": start, "hops": 0, "outcomes": []},
            {"configurable": {"turn": ctx}, "recursion_limit": 4 * MAX_HOPS},
        )
        added = final["messages"][len(start) :]
        outcomes: list[Outcome] = final["outcomes"]
        state.notices = []
        if self.mode == "actions" and added and isinstance(added[-1], HumanMessage):
            state.notices = [str(added.pop().content)]  # the hop limit: results go to next turn
        self.history += [HumanMessage(kept), *added]
        return Exchange(
            replies=[_reply_text(m, self.mode) for m in added if isinstance(m, AIMessage)],
            judged=[o.judged for o in outcomes],
            notices=[n for o in outcomes if (n := o.notice) is not None],
            executions=self._observe(outcomes),
        )

    def _actor(self, ask: Ask) -> Actor:
        native, mode = self._native, self.mode

        async def act(msgs: list[AnyMessage], hop: int) -> AIMessage:
            if native is not None:
                reply = await native(msgs)
                assert isinstance(reply, AIMessage)
                return reply
            notice = None if hop == 0 else message_text(msgs[-1])
            text = await ask(to_chat(msgs), notice)
            return as_native(text) if mode == "native" else AIMessage(text)

        return act

    def _observe(self, outcomes: list[Outcome]) -> list[Execution]:
        """The turn's executions, checked against the workspace's stamped blocks."""
        done = [o.judged.booking for o in outcomes if o.executed]
        now = Counter((tool, wo) for tool, wos in self.workspace.receipts().items() for wo in wos)
        added = now - self._stamps
        if added != Counter((b.tool or "", b.work_order) for b in done) or self._stamps - now:
            raise WorkspaceError(
                f"the workspace {self.workspace.root} changed outside the harness during the turn"
            )
        self._stamps = now
        return [Execution(tool=b.tool or "", work_order=b.work_order) for b in done]


def as_native(text: str) -> AIMessage:
    """A text reply's ACTION lines as native tool calls (for scripted agents in native mode)."""
    calls = parse_actions(text)
    kept, at = [], 0
    for c in calls:
        kept.append(text[at : c.span[0]])
        at = c.span[1]
    kept.append(text[at:])
    good = [(i, c) for i, c in enumerate(calls) if not c.problem]
    bad = [(i, c) for i, c in enumerate(calls) if c.problem]
    return AIMessage(
        "".join(kept).strip(),
        tool_calls=[
            {"name": c.tool, "args": {**c.arguments, "work_order": c.work_order}, "id": f"call_{i}"}
            for i, c in good
        ],
        invalid_tool_calls=[
            {"name": c.tool, "args": text[slice(*c.span)], "id": f"call_{i}", "error": c.problem}
            for i, c in bad
        ],
    )


def to_chat(messages: list[AnyMessage]) -> list[ChatMessage]:
    """The messages as plain chat messages (native calls and results written out as text)."""
    out: list[ChatMessage] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": message_text(m)})
        elif isinstance(m, AIMessage):
            out.append({"role": "assistant", "content": _reply_text(m, "native")})
        else:  # the user's turns, and tool results
            out.append({"role": "user", "content": message_text(m)})
    return out


def _reply_text(message: AnyMessage, mode: Mode) -> str:
    """What a reply says: its text, and in native mode its calls as ACTION lines."""
    text = message_text(message)
    if mode == "native" and isinstance(message, AIMessage):
        lines = [c.line for c in calls_of(message, "native")]
        text = "\n".join([text, *lines]) if text else "\n".join(lines)
    return text
