"""Build the compiler, matcher and agent of one episode-arm from their names.

Names: agents ``scripted:perfect``, ``scripted:always-book``, ``scripted:obedient``, ``llm``;
matchers ``scripted``, ``lexical``, ``llm``; compilers ``scripted``, ``scripted:corrupt``,
``parser``, ``llm``. The ``llm`` roles call the run's model client. Compiled graphs and revisions
are cached per (episode, compiler) and shared by the gate arms of a cell, as in the paper; the cache
can persist to a file so that a resumed run reuses them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..agents.base import Agent, Compiler, Matcher
from ..agents.briefparse import ParserCompiler
from ..agents.lexical import LexicalMatcher
from ..agents.registry import AGENTS, COMPILERS, MATCHERS
from ..core.plan import Plan, Revision
from ..episodes.models import Episode
from ..episodes.records import CallRecord
from ..errors import UnknownNameError
from ..llm.client import CallInfo, ChatClient
from ..llm.roles import LLMAgent, LLMCompiler, LLMMatcher
from ..rundir import append_compiled, read_compiled

AGENT_NAMES = (*AGENTS, "llm")
MATCHER_NAMES = (*MATCHERS, "lexical", "llm")
COMPILER_NAMES = (*COMPILERS, "parser", "llm")
MODEL_ROLES = frozenset({"llm"})

T = TypeVar("T")


def check_name(name: str, known: tuple[str, ...], kind: str) -> None:
    if name not in known:
        raise UnknownNameError(f"unknown {kind} {name!r}; choose from: {', '.join(known)}")


class CallLog:
    """Turns each model call into a log record; holds them until the episode record is written."""

    def __init__(
        self, write: Callable[[CallRecord], None], on_call: Callable[[CallInfo], None] | None = None
    ) -> None:
        self._write, self._on_call = write, on_call
        self._held: list[CallRecord] | None = []
        self.episode, self.arm = "", ""

    def bind(self, episode: str, arm: str) -> None:
        self.episode, self.arm = episode, arm

    def __call__(self, info: CallInfo) -> None:
        fields = dataclasses.asdict(info) | {"latency_s": round(info.latency_s, 4)}
        rec = CallRecord(episode=self.episode, arm=self.arm, **fields)
        if self._on_call:
            self._on_call(info)
        if self._held is None:
            self._write(rec)
        else:
            self._held.append(rec)

    def start(self) -> None:
        """The episode record is out: write the held calls and every later one at once."""
        held, self._held = self._held or [], None
        for rec in held:
            self._write(rec)


@dataclass
class CompileCache:
    """One compile per (episode, compiler), shared by concurrent arms; optionally on disk."""

    path: Path | None = None
    _plans: dict[str, Plan] = field(default_factory=dict)
    _revisions: dict[str, Revision] = field(default_factory=dict)
    _inflight: dict[str, asyncio.Future[object]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.path is not None:
            self._plans, self._revisions = read_compiled(self.path)

    async def plan(self, key: str, make: Callable[[], Awaitable[Plan]]) -> Plan:
        return await self._get(self._plans, "plan", key, make)

    async def revision(self, key: str, make: Callable[[], Awaitable[Revision]]) -> Revision:
        return await self._get(self._revisions, "revision", key, make)

    async def _get(
        self, table: dict[str, T], what: str, key: str, make: Callable[[], Awaitable[T]]
    ) -> T:
        if key in table:
            return table[key]
        tag = f"{what}:{key}"
        if tag in self._inflight:
            return await self._inflight[tag]  # type: ignore[return-value]
        fut: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._inflight[tag] = fut
        try:
            value = await make()
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: waiting arms re-raise it themselves
            raise
        finally:
            del self._inflight[tag]
        table[key] = value
        fut.set_result(value)
        if self.path is not None:
            append_compiled(self.path, what, key, value)  # type: ignore[arg-type]
        return value


class CachedCompiler:
    def __init__(self, inner: Compiler, cache: CompileCache, key: str) -> None:
        self._inner, self._cache, self._key = inner, cache, key

    async def compile_plan(self, brief: str) -> Plan:
        return await self._cache.plan(self._key, lambda: self._inner.compile_plan(brief))

    async def compile_revision(self, plan: Plan, message: str) -> Revision:
        return await self._cache.revision(
            self._key, lambda: self._inner.compile_revision(plan, message)
        )


@dataclass
class RoleBuilder:
    """Makes the roles of each episode-arm. ``client`` serves the ``llm`` agent; ``helper``, when
    given, serves the ``llm`` matcher and compiler (else ``client`` does)."""

    client: ChatClient | None
    cache: CompileCache
    helper: ChatClient | None = None

    def agent(self, name: str, ep: Episode, calls: CallLog) -> Agent:
        if name == "llm":
            return LLMAgent(self._client(name), calls)
        return AGENTS[name](ep)

    def matcher(self, name: str, ep: Episode, calls: CallLog) -> Matcher:
        if name == "llm":
            return LLMMatcher(self.helper or self._client(name), calls)
        if name == "lexical":
            return LexicalMatcher()
        return MATCHERS[name](ep)

    def compiler(self, name: str, ep: Episode, calls: CallLog) -> Compiler:
        inner: Compiler
        key = f"{ep.id}|{name}"
        if name == "llm":
            client = self.helper or self._client(name)
            inner = LLMCompiler(client, calls)
            key += f"|{client.model}"  # cached per (episode parameters, compiler model)
        elif name == "parser":
            inner = ParserCompiler()
        else:
            inner = COMPILERS[name](ep)
        return CachedCompiler(inner, self.cache, key)

    def _client(self, name: str) -> ChatClient:
        if self.client is None:
            raise UnknownNameError(f"role {name!r} needs a model endpoint, and none is configured")
        return self.client
