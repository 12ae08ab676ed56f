"""taskgate in PydanticAI (the ``taskgate[pydantic-ai]`` extra): gate an agent's tools.

    from pydantic_ai import Agent
    from taskgate.integrations.pydantic_ai import TaskGate

    agent = Agent(model, tools=[...], capabilities=[TaskGate(gate)])  # gate: a taskgate.ToolGate
    gate.user_message(text)                                           # each user message
    result = await agent.run(text)

``TaskGateToolset(toolset, gate)`` gates one toolset instead. Importing this package needs
``pydantic-ai-slim``; without it, one :class:`taskgate.MissingExtraError` naming the extra.
"""

from __future__ import annotations

from taskgate.errors import MissingExtraError

try:
    from taskgate.integrations.pydantic_ai.gate import CHANNEL, TaskGate, TaskGateToolset
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    if (exc.name or "").split(".")[0] != "pydantic_ai":
        raise
    raise MissingExtraError("pydantic-ai", "the PydanticAI integration", exc.name) from None

__all__ = ["CHANNEL", "TaskGate", "TaskGateToolset"]
