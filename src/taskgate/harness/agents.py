"""A model-backed harness agent that always acts: its turn's first reply is one tool call.

:class:`ConstrainedToolAgent` asks the model for its first reply of a turn under a JSON-schema
grammar (llama.cpp's ``response_format: {"type": "json_object", "schema": ...}``) that admits only
``{"tool": <a tool the brief lists>, "work_order": "#W<digits>"}``, and writes the result as the
TOOLS clause's ACTION line. It acts once per turn: to the tool results it answers with a fixed
acknowledgement and no model call (the model reads the results in the next turn's history), which
keeps a 44-turn episode within a small model's context. The embedded SmolLM2 never writes a
protocol line on its own; constrained, it calls a tool every turn, so the gate has something to
judge. Which tool it picks is the model's.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..agents.base import ChatMessage
from ..llm.client import ChatClient, OnCall
from .actions import RESULTS_HEADER

_TOOL_LINE = re.compile(r"^- \S+: .*\[tool: ([^\]\s]+)\]\s*$", re.MULTILINE)
_WORK_ORDER = r"^#W[0-9]{1,6}$"


def action_schema(tools: list[str]) -> dict[str, Any]:
    """The grammar's schema: one call of one of ``tools`` under a work order."""
    return {
        "type": "object",
        "properties": {
            "tool": {"type": "string", "enum": tools},
            "work_order": {"type": "string", "pattern": _WORK_ORDER},
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

    async def reply(self, messages: list[ChatMessage]) -> str:
        if messages and results_only(messages[-1]["content"]):
            return ACKNOWLEDGEMENT
        tools = _TOOL_LINE.findall(messages[0]["content"]) if messages else []
        if not tools:  # not the harness brief: an ordinary reply
            return (await self._client.complete(messages, "agent", self._on_call)).text  # type: ignore[arg-type]
        grammar = {"response_format": {"type": "json_object", "schema": action_schema(tools)}}
        text = (await self._client.complete(messages, "agent", self._on_call, grammar)).text  # type: ignore[arg-type]
        try:
            call = json.loads(text)
            tool, work_order = call["tool"], call["work_order"]
        except (ValueError, TypeError, KeyError):  # the server ignored the grammar: as it is
            return text
        return "ACTION " + json.dumps({"tool": tool, "work_order": work_order})
