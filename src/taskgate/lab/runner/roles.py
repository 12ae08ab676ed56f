"""Every role by name: the one registry of agents, matchers and compilers, and the builder.

A role is registered once, with its kind, a factory over a :class:`RoleContext` and whether it
calls a model. The CLI's choices, the checks of a run's configuration and the building of each
episode-arm's roles all read :data:`ROLES`. To add a role, register it here (or call
``ROLES.register`` from your own code before the run)::

    ROLES.register("agent", "mine", lambda ctx: MyAgent(ctx.model("agent")), needs_model=True)

Scripted roles get the episode's :class:`Oracle` through the context; model-backed roles get a
client and the call log, never the oracle. Compiled graphs and revisions are cached per
(episode, compiler) and shared by the gate arms of a cell, as in the paper; the cache can persist
to a file so that a resumed run reuses them.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from taskgate.core.plan import Plan, Revision
from taskgate.errors import UsageError
from taskgate.lab.agents.base import Oracle
from taskgate.lab.agents.scripted import (
    AlwaysBookAgent,
    CancelLeftCompiler,
    CorruptCompiler,
    EmptyCodeCompiler,
    ObedientAgent,
    PerfectAgent,
    RewireCycleCompiler,
    ScriptedCompiler,
    ScriptedMatcher,
)
from taskgate.lab.agents.tools import ConstrainedToolAgent
from taskgate.lab.episodes.models import Episode
from taskgate.lab.episodes.records import CallRecord
from taskgate.lab.memory.base import Memory
from taskgate.lab.rundir import Compiled, OnSkip, append_compiled, read_compiled
from taskgate.lab.runner.episode import Players
from taskgate.llm.calls import CallInfo
from taskgate.llm.client import ChatClient, OnCall
from taskgate.llm.roles import LLMAgent, LLMCompiler, LLMMatcher
from taskgate.matching import CascadeMatcher, shared_matcher
from taskgate.matching.lexical import LexicalMatcher
from taskgate.protocol.briefparse import ParserCompiler
from taskgate.registry import Registry
from taskgate.roles import Agent, Compiler, Matcher

Kind = Literal["agent", "matcher", "compiler"]
#: a compile cache entry: ("plan" or "revision", key, value, the compile calls that made it)
Entry = Compiled
T = TypeVar("T")


@dataclass(frozen=True)
class Clients:
    """The model clients of the roles: the agent's, and the matcher's and the compiler's (each
    defaults to the agent's). Each client may spread its calls over several endpoints."""

    agent: ChatClient | None = None
    matcher: ChatClient | None = None
    compiler: ChatClient | None = None

    @classmethod
    def of(cls, client: ChatClient | Clients | None, helper: ChatClient | None = None) -> Clients:
        """From the runner's arguments: a :class:`Clients`, or an agent client and a helper that
        serves both the matcher and the compiler."""
        if isinstance(client, Clients):
            return client
        return cls(client, helper, helper)

    def get(self, kind: Kind) -> ChatClient | None:
        own = self.matcher if kind == "matcher" else self.compiler if kind == "compiler" else None
        return own or self.agent


@dataclass(frozen=True)
class RoleContext:
    """What a role factory may use: the oracle (scripted roles only), the clients, the call log."""

    oracle: Oracle
    clients: Clients = field(default_factory=Clients)
    on_call: OnCall | None = None

    def model(self, kind: Kind) -> ChatClient:
        """The client for a model-backed role of ``kind``, or an error saying none is configured."""
        client = self.clients.get(kind)
        if client is None:
            raise UsageError(f"the llm {kind} needs a model endpoint, and none is configured")
        return client


@dataclass(frozen=True)
class Role:
    kind: Kind
    name: str
    build: Callable[[RoleContext], Any]
    needs_model: bool = False


class RoleRegistry:
    """Role names per kind (one :class:`~taskgate.registry.Registry` each), each mapped to its
    factory."""

    def __init__(self) -> None:
        self._kinds: dict[Kind, Registry[Role]] = {
            kind: Registry(kind) for kind in ("agent", "matcher", "compiler")
        }

    def register(
        self,
        kind: Kind,
        name: str,
        build: Callable[[RoleContext], Any],
        *,
        needs_model: bool = False,
    ) -> None:
        self._kinds[kind].register(name, Role(kind, name, build, needs_model))

    def names(self, kind: Kind) -> tuple[str, ...]:
        return tuple(self._kinds[kind])

    def get(self, kind: Kind, name: str) -> Role:
        return self._kinds[kind].choose(name)

    def needs_model(self, kind: Kind, name: str) -> bool:
        return self.get(kind, name).needs_model

    def any_needs_model(self, agent: str, compiler: str, matcher: str) -> bool:
        """Whether any of the three named roles calls a model."""
        return (
            self.needs_model("agent", agent)
            or self.needs_model("compiler", compiler)
            or self.needs_model("matcher", matcher)
        )

    def agent(self, name: str, ctx: RoleContext) -> Agent:
        return cast(Agent, self.get("agent", name).build(ctx))

    def matcher(self, name: str, ctx: RoleContext) -> Matcher:
        return cast(Matcher, self.get("matcher", name).build(ctx))

    def compiler(self, name: str, ctx: RoleContext) -> Compiler:
        return cast(Compiler, self.get("compiler", name).build(ctx))


ROLES = RoleRegistry()
ROLES.register("agent", "scripted:perfect", lambda c: PerfectAgent(c.oracle))
ROLES.register("agent", "scripted:always-book", lambda c: AlwaysBookAgent(c.oracle))
ROLES.register("agent", "scripted:obedient", lambda c: ObedientAgent(c.oracle))
ROLES.register("agent", "llm", lambda c: LLMAgent(c.model("agent"), c.on_call), needs_model=True)
ROLES.register(
    "agent",
    "llm:constrained",
    lambda c: ConstrainedToolAgent(c.model("agent"), c.on_call),
    needs_model=True,
)
ROLES.register("matcher", "scripted", lambda c: ScriptedMatcher(c.oracle))
ROLES.register("matcher", "lexical", lambda c: LexicalMatcher())
ROLES.register(
    "matcher", "llm", lambda c: LLMMatcher(c.model("matcher"), c.on_call), needs_model=True
)
ROLES.register("matcher", "embedding", lambda c: shared_matcher())
ROLES.register("matcher", "embedding:hash", lambda c: shared_matcher(fake=True))
ROLES.register(
    "matcher",
    "cascade",
    lambda c: CascadeMatcher(LLMMatcher(c.model("matcher"), c.on_call), shared_matcher()),
    needs_model=True,
)
ROLES.register("compiler", "scripted", lambda c: ScriptedCompiler(c.oracle))
ROLES.register("compiler", "scripted:corrupt", lambda c: CorruptCompiler(c.oracle))
ROLES.register("compiler", "scripted:empty-code", lambda c: EmptyCodeCompiler(c.oracle))
ROLES.register("compiler", "scripted:cancel-left", lambda c: CancelLeftCompiler(c.oracle))
ROLES.register("compiler", "scripted:rewire-cycle", lambda c: RewireCycleCompiler(c.oracle))
ROLES.register("compiler", "parser", lambda c: ParserCompiler())
ROLES.register(
    "compiler", "llm", lambda c: LLMCompiler(c.model("compiler"), c.on_call), needs_model=True
)


class CallLog:
    """Turns each model call into a log record; holds them until the episode record is written."""

    def __init__(
        self, write: Callable[[CallRecord], None], on_call: Callable[[CallInfo], None] | None = None
    ) -> None:
        self._write, self._on_call = write, on_call
        self._held: list[CallRecord] | None = []
        self.episode, self.arm = "", ""
        self.made: list[CallInfo] = []  # the calls this episode-arm made, in order

    def bind(self, episode: str, arm: str) -> None:
        self.episode, self.arm = episode, arm

    def __call__(self, info: CallInfo) -> None:
        self.made.append(info)
        if self._on_call:
            self._on_call(info)
        self._record(info)

    def shared(self, infos: Sequence[CallInfo]) -> None:
        """Log copies of compile calls made elsewhere for the compile this episode-arm used (no
        calls of its own: not counted as calls made)."""
        for info in infos:
            self._record(info, shared=True)

    def _record(self, info: CallInfo, shared: bool | None = None) -> None:
        # the client's CallInfo is validated already: the record is built without validating again
        fields = {**info.__dict__, "latency_s": round(info.latency_s, 4)}
        rec = CallRecord.model_construct(
            episode=self.episode, arm=self.arm, shared=shared, **fields
        )
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
    """One compile per (episode, compiler), shared by concurrent arms; optionally on disk. Each
    entry keeps the compile calls that made it, and every episode-arm that uses an entry it did
    not make logs copies of them (:meth:`CallLog.shared`), so each arm's compile cost is the same
    whichever arm made the calls, in one run or across a resumed one."""

    path: Path | None = None
    on_skip: OnSkip | None = None
    _entries: dict[tuple[str, str], Entry] = field(default_factory=dict)
    _inflight: dict[tuple[str, str], asyncio.Future[object]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.path is not None:
            for entry in read_compiled(self.path, self.on_skip):
                self._entries.setdefault((entry[0], entry[1]), entry)

    def entries(self, episode: str) -> list[Entry]:
        """The cache's entries for one episode (its keys start with the episode's id)."""
        head = episode + "|"
        return [e for (_, key), e in self._entries.items() if key.startswith(head)]

    def add(self, entries: Sequence[Entry]) -> None:
        """Take entries made elsewhere (a Ray task's); new ones are appended to the file too."""
        for entry in entries:
            if (entry[0], entry[1]) not in self._entries:
                self._keep(entry)

    async def plan(
        self, key: str, make: Callable[[], Awaitable[Plan]], log: CallLog | None = None
    ) -> Plan:
        value = await self._get("plan", key, make, log)
        assert isinstance(value, Plan)
        return value

    async def revision(
        self, key: str, make: Callable[[], Awaitable[Revision]], log: CallLog | None = None
    ) -> Revision:
        value = await self._get("revision", key, make, log)
        assert isinstance(value, Revision)
        return value

    async def _get(
        self,
        what: Literal["plan", "revision"],
        key: str,
        make: Callable[[], Awaitable[Plan | Revision]],
        log: CallLog | None,
    ) -> Plan | Revision:
        tag = (what, key)
        if tag not in self._entries and tag in self._inflight:
            await self._inflight[tag]
        if tag in self._entries:  # made by another arm, or an earlier run: its cost is shared
            _, _, value, calls = self._entries[tag]
            if log is not None:
                log.shared(calls)
            return value
        fut: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._inflight[tag] = fut
        before = len(log.made) if log is not None else 0
        try:
            value = await make()
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: waiting arms re-raise it themselves
            raise
        finally:
            del self._inflight[tag]
        made = log.made[before:] if log is not None else []
        self._keep((what, key, value, tuple(c for c in made if c.purpose == "compiler")))
        fut.set_result(value)
        return value

    def _keep(self, entry: Entry) -> None:
        self._entries[(entry[0], entry[1])] = entry
        if self.path is not None:
            append_compiled(self.path, entry)


class CachedCompiler:
    def __init__(
        self, inner: Compiler, cache: CompileCache, key: str, log: CallLog | None = None
    ) -> None:
        self._inner, self._cache, self._key, self._log = inner, cache, key, log

    async def compile_plan(self, brief: str) -> Plan:
        return await self._cache.plan(self._key, lambda: self._inner.compile_plan(brief), self._log)

    async def compile_revision(self, plan: Plan, message: str) -> Revision:
        return await self._cache.revision(
            self._key, lambda: self._inner.compile_revision(plan, message), self._log
        )


@dataclass
class RoleBuilder:
    """Makes the roles of each episode-arm from their names, on the model ``clients``."""

    clients: Clients
    cache: CompileCache

    def context(self, oracle: Oracle, calls: CallLog) -> RoleContext:
        return RoleContext(oracle, self.clients, calls)

    def compiler(self, name: str, ctx: RoleContext) -> Compiler:
        """The named compiler behind the cache, keyed by episode, name and compiler model."""
        key = f"{ctx.oracle.episode.id}|{name}"
        if ctx.oracle.episode.plan.binding == "tool":  # a harness brief, per mode: its own compile
            key += "|tools-" + hashlib.sha256(ctx.oracle.episode.brief.encode()).hexdigest()[:12]
        if ROLES.needs_model("compiler", name):
            key += f"|{ctx.model('compiler').model}"
        log = ctx.on_call if isinstance(ctx.on_call, CallLog) else None
        return CachedCompiler(ROLES.compiler(name, ctx), self.cache, key, log)


def build_players(
    episode: Episode,
    agent: str = "scripted:perfect",
    compiler: str = "scripted",
    matcher: str = "scripted",
    *,
    client: ChatClient | Clients | None = None,
    helper: ChatClient | None = None,
    on_call: OnCall | None = None,
    memory: Memory | None = None,
) -> Players:
    """The named roles of one episode-arm, built from :data:`ROLES` (no compile cache);
    ``memory``: the store a memory arm recalls from (see :func:`taskgate.lab.memory.build_memory`)."""
    oracle = Oracle(episode)
    ctx = RoleContext(oracle, Clients.of(client, helper), on_call)
    return Players(
        agent=ROLES.agent(agent, ctx),
        compiler=ROLES.compiler(compiler, ctx),
        matcher=ROLES.matcher(matcher, ctx),
        agent_name=agent,
        compiler_name=compiler,
        matcher_name=matcher,
        oracle=oracle,
        memory=memory,
    )
