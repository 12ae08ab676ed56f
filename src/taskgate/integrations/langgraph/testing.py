"""A scripted chat model for tests and demos: real langchain, no model server.

``ScriptedChatModel(replies=[AIMessage(tool_calls=[...]), "done"])`` returns its replies in
order (a string is a reply's text; a dict, an ``AIMessage``'s fields) (the tools it is bound to are ignored) and fails loudly when they run out, like
:class:`taskgate.FakeServer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from taskgate.errors import UsageError


class ScriptedChatModel(GenericFakeChatModel):
    """Replies from a script, one per model call; ``bind_tools`` keeps the script."""

    def __init__(
        self, replies: Sequence[AIMessage | str | Mapping[str, Any]], **kwargs: Any
    ) -> None:
        # copies: the graph stamps an id on each reply, and a reply object reused across runs
        # would then replace the earlier message instead of following it
        script = [
            r.model_copy(deep=True)
            if isinstance(r, AIMessage)
            else AIMessage(content=r)
            if isinstance(r, str)
            else AIMessage(**{"content": "", **r})
            for r in replies
        ]
        super().__init__(messages=iter(script), disable_streaming=True, **kwargs)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super()._generate(*args, **kwargs)
        except StopIteration:
            raise UsageError("the scripted chat model's script ran out of replies") from None
