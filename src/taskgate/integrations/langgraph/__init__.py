"""taskgate in LangGraph (the ``taskgate[langgraph]`` extra): gate an agent's tool calls.

    from langchain.agents import create_agent
    from taskgate.integrations.langgraph import TaskGateMiddleware

    agent = create_agent(model, tools, middleware=[TaskGateMiddleware(plan)])

Importing this package needs langgraph and langchain; without them it raises
:class:`taskgate.MissingExtraError` naming the extra.
"""

from __future__ import annotations

from taskgate.errors import MissingExtraError

try:
    from taskgate.integrations.langgraph.middleware import (
        LEDGER_KEY,
        GateState,
        TaskGateMiddleware,
        gated_tool_node,
    )
    from taskgate.integrations.langgraph.openai import ToolStatusChatOpenAI
    from taskgate.integrations.langgraph.rows import state_entries
    from taskgate.integrations.langgraph.testing import ScriptedChatModel
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    if (exc.name or "").split(".")[0] not in (
        "langgraph",
        "langchain",
        "langchain_core",
        "langchain_openai",
    ):
        raise
    raise MissingExtraError("langgraph", "the LangGraph integration", exc.name) from None

__all__ = [
    "LEDGER_KEY",
    "GateState",
    "ScriptedChatModel",
    "TaskGateMiddleware",
    "ToolStatusChatOpenAI",
    "gated_tool_node",
    "state_entries",
]
