"""What an ordinary agent tells the matcher about its steps: its tools' names and descriptions.

A step with no wording of its own (a plan file's step without ``text``) is matched by its tool's
description, when the agent gives one, rather than by the tool's name alone: "Place the purchase
order with the selected vendor" is nearer to "buy the laptops from Acme" than ``place_order``.
The wording is for matching and ask-back questions only; refusals keep naming the step as the
plan does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taskgate.core.ids import tool_key
from taskgate.core.plan import Plan

#: the longest wording taken from a description
MAX_WORDING = 160


@dataclass(frozen=True)
class ToolInfo:
    """A tool as the plan compiler sees it: its name and what it does."""

    name: str
    description: str = ""


def tool_infos(tools: Sequence[Any]) -> list[ToolInfo]:
    """The tools' names and descriptions, from OpenAI tool objects (``{"type": "function",
    "function": {...}}``), LangChain tools, MCP tools, functions, or ``(name, description)``
    pairs."""
    out = []
    for t in tools:
        if isinstance(t, ToolInfo):
            out.append(t)
        elif isinstance(t, tuple) and len(t) == 2:
            out.append(ToolInfo(str(t[0]), str(t[1])))
        elif isinstance(t, Mapping):
            inner = t.get("function")
            fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else t
            out.append(ToolInfo(str(fn.get("name", "")), str(fn.get("description") or "")))
        else:
            name = getattr(t, "name", None) or getattr(t, "__name__", "")
            desc = getattr(t, "description", None) or getattr(t, "__doc__", None) or ""
            out.append(ToolInfo(str(name), str(desc)))
    return [t for t in out if t.name]


def wording(description: str) -> str:
    """A description's first sentence, on one line, as a step's wording."""
    flat = " ".join(description.split())
    first = flat.split(". ")[0].rstrip(".")
    return first[:MAX_WORDING]


def wordings(plan: Plan, tools: Sequence[Any]) -> dict[str, str]:
    """The wordings of ``plan``'s steps that have no text, from their tools' descriptions."""
    described = {
        tool_key(t.name): wording(t.description) for t in tool_infos(tools) if t.description
    }  # by the variant rule calls are matched by: a step bound to GIT-STATUS reads git_status's
    return {
        sid: described[tool_key(spec.tool)]
        for sid, spec in plan.steps.items()
        if not spec.text and spec.tool and described.get(tool_key(spec.tool))
    }


def worded(plan: Plan, extra: Mapping[str, str]) -> Plan:
    """``plan`` with the steps that have no text worded by ``extra`` (unchanged if none apply)."""
    fill = {
        sid: text for sid, text in extra.items() if sid in plan.steps and not plan.steps[sid].text
    }
    if not fill:
        return plan
    steps = {
        sid: spec.model_copy(update={"text": fill[sid]}) if sid in fill else spec
        for sid, spec in plan.steps.items()
    }
    return plan.model_copy(update={"steps": steps})
