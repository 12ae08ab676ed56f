"""``ChatOpenAI`` that tells the taskgate proxy which tool calls failed.

The OpenAI chat format has no status for a tool result, so ``ChatOpenAI`` sends a failed
``ToolMessage`` (``status="error"``, as LangGraph's tool node marks a tool that raised) like any
other, and the proxy would book the call as done: its dependents would then run. This subclass
adds taskgate's field ``"status": "error"`` to each such message of the request; the proxy reads
it (a failed call books nothing) and takes it out before the upstream sees the request. Use it
only in front of the taskgate proxy: another server may refuse the unknown field.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage
from langchain_openai import ChatOpenAI


class ToolStatusChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` that sends a failed tool message's error status to the taskgate proxy.

    ``ToolStatusChatOpenAI(base_url=PROXY, ...)`` in place of ``ChatOpenAI(...)``: a tool that
    raised under ``create_agent`` is then a failed call through the proxy, and the steps that
    need it stay refused."""

    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None,
                             **kwargs: Any) -> dict[str, Any]:  # fmt: skip
        payload: dict[str, Any] = super()._get_request_payload(input_, stop=stop, **kwargs)
        failed = {
            m.tool_call_id
            for m in self._convert_input(input_).to_messages()
            if isinstance(m, ToolMessage) and m.status == "error"
        }
        for message in payload.get("messages", []):
            if message.get("role") == "tool" and message.get("tool_call_id") in failed:
                message["status"] = "error"
        return payload
