"""An episode as the real-tool harness runs it: its plan bound to the procurement tools, its brief
the harness brief (Appendix G)."""

from __future__ import annotations

from typing import Literal

from taskgate.core.plan import Plan, StepSpec
from taskgate.errors import UsageError
from taskgate.lab.episodes.models import Episode
from taskgate.protocol.tools import harness_brief


def tool_plan(episode: Episode) -> Plan:
    """The episode's plan with each step bound to its template's tool (procurement only)."""
    if episode.params.domain != "procurement":
        raise UsageError("the tool harness runs the procurement domain (its 18 tools)")
    return Plan(
        binding="tool",
        steps={
            s: StepSpec(deps=spec.deps, tool=episode.templates[s], text=spec.text)
            for s, spec in episode.plan.steps.items()
        },
    )


def harness_episode(episode: Episode, mode: Literal["actions", "native"] = "actions") -> Episode:
    """The episode as the harness runs it: its plan bound to tools and its brief the harness
    brief (same id, turns, revision and work orders)."""
    plan = tool_plan(episode)
    return episode.model_copy(update={"plan": plan, "brief": harness_brief(plan, mode)})
