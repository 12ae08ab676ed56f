"""What a memory is to the memory arms: it remembers each finished exchange and recalls, for the
current request, the items most relevant to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Recall:
    """One search: the items recalled (best first) and how many the store held when asked."""

    items: tuple[str, ...]
    store: int


class Memory(Protocol):
    """One episode-arm's memory store (its own collection; nothing is shared between them)."""

    #: what the log names it by, e.g. ``topk:minilm:k5``
    name: str

    async def remember(self, user: str, reply: str) -> None:
        """Store one finished exchange: the user turn as the agent saw it kept, and its reply."""
        ...

    async def recall(self, query: str) -> Recall:
        """The items most relevant to ``query`` (the current request)."""
        ...

    async def close(self) -> None:
        """Release what the store holds open (files, threads)."""
        ...


RECALL_HEADER = "[MEMORY] recalled for this message, most relevant first:"
RECALL_NONE = "[MEMORY] nothing recalled for this message."


def render_recall(recall: Recall) -> str:
    """The recall block the memory arms add to the current user turn."""
    if not recall.items:
        return RECALL_NONE
    lines = [RECALL_HEADER]
    lines += [f"({i}) {item}" for i, item in enumerate(recall.items, 1)]
    return "\n".join(lines)


def exchange_text(user: str, reply: str) -> str:
    """One past exchange as the top-k store keeps it, verbatim: the agent's receipt lines stay."""
    return f"User: {user}\nAssistant: {reply}"
