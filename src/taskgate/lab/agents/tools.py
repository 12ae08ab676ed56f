"""A model-backed harness agent that always acts: its reply to a request is one tool call.

:class:`ConstrainedToolAgent` asks the model for its reply to a request under a JSON-schema grammar
(llama.cpp's ``response_format: {"type": "json_object", "schema": ...}``) that admits only
``{"tool": <a tool the brief lists>, "work_order": <the request's work order>}``, and writes the
result as the TOOLS clause's ACTION line. Which tool it calls is the model's choice; the grammar
only makes the reply a well-formed call under the current work order (the tiny model otherwise
copies the brief's example, ``#W1234``, and every call would be refused as stale). A message that
carries no work order (small talk), and the tool results after a call, get a fixed
acknowledgement without a model call: the agent acts once per request, which also keeps a 44-turn
episode within a small model's context. The embedded SmolLM2 never writes a protocol line on its
own; constrained, it calls a tool on every request, so the gate has something to judge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from taskgate.llm.client import ChatClient, OnCall
from taskgate.protocol.actions import RESULTS_HEADER
from taskgate.roles import ChatMessage

_TOOL_LINE = re.compile(r"^- \S+: .*\[tool: ([^\]\s]+)\]\s*$", re.MULTILINE)
_REQUEST = re.compile(r"\((#W[0-9]+)\)")  # a request's work order, as the user writes it


def action_schema(tools: list[str], work_order: str) -> dict[str, Any]:
    """The grammar's schema: one call of one of ``tools`` under ``work_order``."""
    return {
        "type": "object",
        "properties": {
            "tool": {"type": "string", "enum": tools},
            "work_order": {"type": "string", "enum": [work_order]},
        },
        "required": ["tool", "work_order"],
    }


def results_only(content: str) -> bool:
    """A user message that only answers the previous hop's calls (no new request in it)."""
    return content.startswith(RESULTS_HEADER) and "\n\n" not in content


ACKNOWLEDGEMENT = "Noted."


class ConstrainedToolAgent:
    """The model, its first reply of each turn constrained to one tool call (ACTION mode)."""

    def __init__(self, client: ChatClient, on_call: OnCall | None = None) -> None:
        self._client, self._on_call = client, on_call

    async def reply(
        self, messages: list[ChatMessage], extra: Mapping[str, Any] | None = None
    ) -> str:
        """The reply; ``extra`` adds request fields (the trap-turn probe's sampling settings)."""
        tools = _TOOL_LINE.findall(messages[0]["content"]) if messages else []
        if not tools:  # not the harness brief: an ordinary reply
            return (await self._client.complete(messages, "agent", self._on_call, extra)).text  # type: ignore[arg-type]
        last = messages[-1]["content"]
        requested = _REQUEST.findall(last)
        if results_only(last) or not requested:
            return ACKNOWLEDGEMENT
        schema = action_schema(tools, requested[-1])
        grammar = {**(extra or {}), "response_format": {"type": "json_object", "schema": schema}}
        text = (await self._client.complete(messages, "agent", self._on_call, grammar)).text  # type: ignore[arg-type]
        try:
            call = json.loads(text)
            tool, work_order = call["tool"], call["work_order"]
        except (ValueError, TypeError, KeyError):  # the server ignored the grammar: as it is
            return text
        return "ACTION " + json.dumps({"tool": tool, "work_order": work_order})
