"""The PM-Bench agent: the model, or a scripted agent whose right answer is known.

An agent answers each call with the benchmark's JSON action (``choose``, ``query_state``,
``check_time``). Scripted agents read the step's truth (what is due, and which state it takes to
see it) and exist for oracle tests: ``perfect`` reads what it needs and selects exactly what is
due, ``none`` never selects, ``eager`` selects the whole menu, ``obedient`` selects what the
directive lines name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ...agents.base import ChatMessage
from ...llm.client import ChatClient, OnCall
from .roles import StepView

AGENTS = ("llm", "scripted:perfect", "scripted:none", "scripted:eager", "scripted:obedient")


class PMAgent(Protocol):
    async def act(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, view: StepView
    ) -> str: ...


def choose(handles: Sequence[str], choice: str = "A") -> str:
    return json.dumps(
        {"action": "choose", "choice": choice, "task_ids": list(handles), "channel": "NONE"}
    )


def query(channel: str) -> str:
    return json.dumps(
        {"action": "query_state", "choice": "NONE", "task_ids": [], "channel": channel}
    )


class LLMPMAgent:
    """The model as the agent, at the run's temperature and seed; with ``schema`` it sends the
    benchmark's strict action schema as ``response_format`` (as its local-server backend does)."""

    def __init__(
        self,
        client: ChatClient,
        temperature: float,
        seed: int | None,
        schema: bool = True,
        on_call: OnCall | None = None,
    ) -> None:
        self._client, self._on_call = client, on_call
        self._sampling: dict[str, Any] = {"temperature": temperature}
        if seed is not None:
            self._sampling["seed"] = seed
        self._schema = schema

    async def act(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, view: StepView
    ) -> str:
        extra = dict(self._sampling)
        if self._schema and schema is not None:
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "pm_action", "schema": dict(schema)},
            }
        done = await self._client.complete(list(messages), "agent", self._on_call, extra=extra)  # type: ignore[arg-type]
        return done.text


def _read(view: StepView) -> set[str]:
    return {r.split("]", 1)[0].removeprefix("State [") for r in view.responses}


class PerfectAgent:
    """Reads the clock and channels the due set needs, then selects exactly what is due."""

    async def act(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, view: StepView
    ) -> str:
        missing = sorted(set(view.truth.reads) - _read(view))
        if missing:
            return query(missing[0])
        return choose(sorted(h for h in view.menu if h in view.truth.due))


class NoneAgent:
    async def act(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, view: StepView
    ) -> str:
        return choose([], "B")


class EagerAgent:
    """Selects every handle on the menu (at most eight, the benchmark's cap)."""

    async def act(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, view: StepView
    ) -> str:
        return choose(list(view.menu)[:8], "C")


_NAMED = re.compile(r"^(?:DUE NOW|STILL DUE): (task_\d+)", re.MULTILINE)


class ObedientAgent:
    """Selects exactly the handles the directive lines of its last prompt name."""

    async def act(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, view: StepView
    ) -> str:
        named = _NAMED.findall(messages[-1]["content"]) if messages else []
        return choose(sorted({h for h in named if h in view.menu}))


def scripted_agent(name: str) -> PMAgent:
    agents: dict[str, type[PMAgent]] = {
        "scripted:perfect": PerfectAgent,
        "scripted:none": NoneAgent,
        "scripted:eager": EagerAgent,
        "scripted:obedient": ObedientAgent,
    }
    return agents[name]()
