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
from typing import Any, Literal, Protocol

from taskgate.lab.experiments.pmbench.roles import StepView, read_channels
from taskgate.llm.client import ChatClient, OnCall
from taskgate.registry import Registry
from taskgate.roles import ChatMessage

SchemaForm = Literal["json_schema", "json_object", "none"]
#: the agents ``taskgate pmbench --agent`` takes
AGENTS: Registry[str] = Registry(
    "PM-Bench agent",
    (
        ("llm", "the model, with the benchmark's own prompts"),
        ("scripted:perfect", "selects what is due, reading what it must first"),
        ("scripted:none", "never selects"),
        ("scripted:eager", "selects the whole menu without reading anything"),
        ("scripted:obedient", "does what the directive lines say"),
    ),
)


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
    """The model as the agent, at the run's temperature and seed. ``schema`` says how the
    benchmark's strict action schema goes out as ``response_format``: ``json_schema`` (OpenAI's
    form, as the benchmark's local-server backend sends it; vLLM and SGLang take it),
    ``json_object`` (llama.cpp's server, which takes the schema inside a json_object), or
    ``none``."""

    def __init__(
        self,
        client: ChatClient,
        temperature: float,
        seed: int | None,
        schema: SchemaForm = "json_schema",
        on_call: OnCall | None = None,
        request: Mapping[str, Any] | None = None,
    ) -> None:
        self._client, self._on_call = client, on_call
        self._sampling: dict[str, Any] = {**(request or {}), "temperature": temperature}
        if seed is not None:
            self._sampling["seed"] = seed
        self._schema = schema

    async def act(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, view: StepView
    ) -> str:
        extra = dict(self._sampling)
        if schema is not None and self._schema == "json_schema":
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "pm_action", "schema": dict(schema)},
            }
        elif schema is not None and self._schema == "json_object":
            extra["response_format"] = {"type": "json_object", "schema": dict(schema)}
        done = await self._client.complete(list(messages), "agent", self._on_call, extra=extra)  # type: ignore[arg-type]
        return done.text


def _read(view: StepView) -> set[str]:
    return read_channels(view.responses)


class PerfectPMAgent:
    """Reads the clock and channels the due set needs, then selects exactly what is due."""

    async def act(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, view: StepView
    ) -> str:
        missing = sorted(set(view.truth.needs.values()) - _read(view) - {"narrative"})
        if missing:
            return query(missing[0])
        return choose(sorted(h for h in view.menu if h in view.truth.due))


class NonePMAgent:
    async def act(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, view: StepView
    ) -> str:
        return choose([], "B")


class EagerPMAgent:
    """Selects every handle on the menu (at most eight, the benchmark's cap)."""

    async def act(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, view: StepView
    ) -> str:
        return choose(list(view.menu)[:8], "C")


_NAMED = re.compile(r"^(?:DUE NOW|STILL DUE): (task_\d+)", re.MULTILINE)
_UNREAD = re.compile(r"^Intentions wait on the ([a-z_, ]+) channel\(s\)", re.MULTILINE)


class ObedientPMAgent:
    """Does what the directive lines of its last prompt say: reads the clock or the channels
    they say are unread, then selects exactly the handles they name."""

    async def act(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, view: StepView
    ) -> str:
        last = messages[-1]["content"] if messages else ""
        if "you have not read the clock" in last:
            return query("clock")
        unread = _UNREAD.search(last)
        if unread:
            return query(unread.group(1).split(",")[0].strip())
        return choose(sorted({h for h in _NAMED.findall(last) if h in view.menu}))


def scripted_agent(name: str) -> PMAgent:
    agents: dict[str, type[PMAgent]] = {
        "scripted:perfect": PerfectPMAgent,
        "scripted:none": NonePMAgent,
        "scripted:eager": EagerPMAgent,
        "scripted:obedient": ObedientPMAgent,
    }
    return agents[name]()
