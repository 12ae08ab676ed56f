"""Native tool calls: the 18 tools as OpenAI function tools, called through langchain-openai.

:func:`tool_specs` describes each workspace tool as a function taking the work order (and nothing
else is required). :func:`chat_model` binds them to a ``ChatOpenAI`` on any OpenAI-compatible
endpoint (Chat Completions, ``use_responses_api=False``) and reports every call, with its token
usage, to the run's call log like the text client does.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage

from taskgate.errors import ModelError
from taskgate.lab.harness.exchange import NativeModel
from taskgate.lab.harness.workspace import TOOLS
from taskgate.llm.calls import CallInfo
from taskgate.llm.client import BUDGETS, OnCall
from taskgate.llm.endpoint import Endpoint

_DESCRIPTION = "Carry out the project step that uses {tool}, under the current work order."


def tool_specs() -> list[dict[str, Any]]:
    """The workspace's tools in OpenAI's function-tool form."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool,
                "description": _DESCRIPTION.format(tool=tool.replace("_", " ")),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "work_order": {
                            "type": "string",
                            "description": "The work order of my current message, like #W1234.",
                        }
                    },
                    "required": ["work_order"],
                },
            },
        }
        for tool in TOOLS
    ]


def chat_model(endpoint: Endpoint, on_call: OnCall | None = None) -> NativeModel:
    """A tool-calling agent on ``endpoint``: messages in, an ``AIMessage`` with tool calls out."""
    import openai
    from langchain_openai import ChatOpenAI

    budget = endpoint.reply_budget or BUDGETS["agent"][1 if endpoint.think else 0]
    extra: dict[str, Any] = dict(endpoint.extra_body)
    if endpoint.enable_thinking is not None:
        extra["chat_template_kwargs"] = {"enable_thinking": endpoint.enable_thinking}
    if endpoint.deepseek_thinking is not None:
        extra["thinking"] = {"type": "enabled" if endpoint.deepseek_thinking else "disabled"}
    model = ChatOpenAI(
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        model=endpoint.model,
        temperature=0.0,
        max_tokens=budget,
        timeout=endpoint.timeout,
        max_retries=endpoint.attempts - 1,
        use_responses_api=False,
        extra_body=extra or None,
    ).bind_tools(tool_specs())

    async def call(messages: list[AnyMessage]) -> AIMessage:
        start = time.perf_counter()
        try:
            reply = await model.ainvoke(messages)
        except (openai.APIError, ValueError) as exc:  # ValueError: a reply langchain cannot read
            _report(on_call, endpoint, budget, start, None, str(exc)[:300])
            raise ModelError(
                f"{endpoint.model} at {endpoint.base_url}: agent call failed: {exc}"
            ) from None
        assert isinstance(reply, AIMessage)
        _report(on_call, endpoint, budget, start, reply, None)
        return reply

    return call


def _report(
    on_call: OnCall | None,
    endpoint: Endpoint,
    budget: int,
    start: float,
    reply: AIMessage | None,
    error: str | None,
) -> None:
    if on_call is None:
        return
    usage: Mapping[str, Any] = (reply.usage_metadata if reply is not None else None) or {}
    on_call(
        CallInfo(
            purpose="agent",
            model=endpoint.model,
            attempts=1,
            max_tokens=budget,
            prompt_tokens=int(usage.get("input_tokens", 0)),
            completion_tokens=int(usage.get("output_tokens", 0)),
            latency_s=time.perf_counter() - start,
            error=error,
        )
    )
