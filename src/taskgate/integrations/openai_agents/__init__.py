"""taskgate in the OpenAI Agents SDK (the ``taskgate[openai-agents]`` extra): gate an agent's
function tools.

    from agents import Agent, Runner
    from taskgate.integrations.openai_agents import gated

    agent = gated(Agent(name="buyer", tools=[...]), gate)   # gate: a taskgate.ToolGate
    gate.user_message(text)                                 # each user message, before the run
    result = await Runner.run(agent, text)

Importing this package needs the ``openai-agents`` package; without it, one
:class:`taskgate.MissingExtraError` naming the extra.
"""

from __future__ import annotations

from taskgate.errors import MissingExtraError

try:
    from taskgate.integrations.openai_agents.gate import CHANNEL, gate_tool, gated, question
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    if (exc.name or "").split(".")[0] != "agents":
        raise
    raise MissingExtraError(
        "openai-agents", "the OpenAI Agents SDK integration", exc.name
    ) from None

__all__ = ["CHANNEL", "gate_tool", "gated", "question"]
