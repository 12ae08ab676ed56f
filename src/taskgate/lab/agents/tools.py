"""A model-backed agent that always acts: its reply to a request is one tool call (the real-tool
harness) or one booking line or a decline (the testbed).

:class:`ConstrainedToolAgent` asks the model for its reply to a request under a JSON-schema grammar
(llama.cpp's ``response_format: {"type": "json_object", "schema": ...}``) that admits only
``{"tool": <a tool the brief lists>, "work_order": <the request's work order>}``, and writes the
result as the TOOLS clause's ACTION line. Which tool it calls is the model's choice; the grammar
only makes the reply a well-formed call under the current work order (the tiny model otherwise
copies the brief's example, ``#W1234``, and every call would be refused as stale). A message that
carries no work order (small talk), and the tool results after a call, get a fixed
acknowledgement without a model call: the agent acts once per request, which also keeps a 44-turn
episode within a small model's context. The embedded SmolLM2 never writes a protocol line on its
own; constrained, it calls a tool on every request, so the gate has something to judge. Under
a testbed brief (plan lines with completion codes) the grammar admits one of the brief's codes or
``decline``: the reply is ``ref CODE/<the request's work order>`` or a refusal, so that every
rung, the text rungs included, has a booking or a decline to score.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from taskgate.errors import TaskgateError
from taskgate.llm.client import ChatClient, OnCall
from taskgate.protocol.actions import RESULTS_HEADER
from taskgate.protocol.briefparse import parse_brief
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
        brief = messages[0]["content"] if messages else ""
        tools = _TOOL_LINE.findall(brief)
        codes = [] if tools else _codes(brief)
        if not tools and not codes:  # neither brief: an ordinary reply
            return (await self._client.complete(messages, "agent", self._on_call, extra)).text  # type: ignore[arg-type]
        last = messages[-1]["content"]
        requested = _REQUEST.findall(last)
        if results_only(last) or not requested:
            return ACKNOWLEDGEMENT
        if codes:
            return await self._booking(messages, codes, requested[-1], extra)
        schema = action_schema(tools, requested[-1])
        grammar = {**(extra or {}), "response_format": {"type": "json_object", "schema": schema}}
        text = (await self._client.complete(messages, "agent", self._on_call, grammar)).text  # type: ignore[arg-type]
        try:
            call = json.loads(text)
            tool, work_order = call["tool"], call["work_order"]
        except (ValueError, TypeError, KeyError):  # the server ignored the grammar: as it is
            return text
        return "ACTION " + json.dumps({"tool": tool, "work_order": work_order})

    async def _booking(
        self, messages: list[ChatMessage], codes: list[str], work_order: str,
        extra: Mapping[str, Any] | None,
    ) -> str:  # fmt: skip
        """The testbed's reply: one booking line under the request's work order, or a decline."""
        schema = booking_schema(codes)
        grammar = {**(extra or {}), "response_format": {"type": "json_object", "schema": schema}}
        text = (await self._client.complete(messages, "agent", self._on_call, grammar)).text  # type: ignore[arg-type]
        try:
            code = json.loads(text)["code"]
        except (ValueError, TypeError, KeyError):  # the server ignored the grammar: as it is
            return text
        if code == DECLINE or code not in codes:
            return DECLINED
        return f"Done. ref {code}/{work_order}"


#: the constrained testbed reply that books nothing (a refusal phrasing: decline-aware scoring
#: and the false-completion count read it as one)
DECLINE, DECLINED = "decline", "I will not book anything for this request."


def booking_schema(codes: list[str]) -> dict[str, Any]:
    """The grammar's schema for a testbed reply: one of the brief's completion codes, or none."""
    return {
        "type": "object",
        "properties": {"code": {"type": "string", "enum": [*codes, DECLINE]}},
        "required": ["code"],
    }


def _codes(brief: str) -> list[str]:
    """The completion codes a code-bound brief lists (none: not a testbed brief)."""
    try:
        plan = parse_brief(brief)
    except TaskgateError:
        return []
    return [s.code for s in plan.steps.values() if s.code]
