"""The retrieval-memory baselines (Appendix F) as arms of the ladder.

A memory arm is a text arm (exact reference state, no matcher, no gate) whose record is a
retrieval memory (:mod:`taskgate.lab.memory`): before each turn it searches the memory with the request
and adds the recall block to the current user turn; after the turn it stores the exchange. In
*replace* mode the agent keeps the brief, the last two exchanges and the recall block (deployed
memory-system usage); in *augment* mode the full transcript stays and the recall block is added.
The recall block is for that call only; the history keeps the request as the user sent it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from taskgate.core.booking import Booking
from taskgate.errors import UsageError
from taskgate.lab.arms.arm import Arm, ArmState, Ask, Exchange
from taskgate.lab.memory.base import Recall, render_recall
from taskgate.roles import ChatMessage, Match

#: replace mode keeps this many past exchanges (user and assistant message each)
KEPT_EXCHANGES = 2


@dataclass(frozen=True)
class MemoryArm(Arm):
    memory: Literal["topk", "mem0"] = "topk"
    mode: Literal["replace", "augment"] = "replace"

    @property
    def needs_memory(self) -> bool:
        return True

    async def recall(self, state: ArmState, message: str) -> Recall | None:
        if state.memory is None:
            raise UsageError(f"the {self.name} arm needs a {self.memory} memory; none was given")
        state.recalled = await state.memory.recall(message)
        return state.recalled

    def present(
        self, brief: str, message: str, state: ArmState, directive: str | None, match: Match | None
    ) -> tuple[list[ChatMessage], str]:
        kept = "\n\n".join([*state.notices, message])
        history = state.history if self.mode == "augment" else state.history[-2 * KEPT_EXCHANGES :]
        block = render_recall(state.recalled or Recall((), 0))
        messages: list[ChatMessage] = [
            {"role": "system", "content": self.system_prompt(brief)},
            *history,
            {"role": "user", "content": f"{kept}\n\n{block}"},
        ]
        return messages, kept

    async def exchange(
        self,
        messages: list[ChatMessage],
        kept: str,
        state: ArmState,
        ask: Ask,
        on_admit: Callable[[Booking], None],
    ) -> Exchange:
        done = await super().exchange(messages, kept, state, ask, on_admit)
        assert state.memory is not None  # recall() ran first
        await state.memory.remember(kept, done.replies[-1])
        return done
