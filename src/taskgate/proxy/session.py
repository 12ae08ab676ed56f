"""The proxy's state and one request's passage through it.

:class:`Proxy` holds the configuration, the upstream client, the helper model's compiler and
matcher, the conversations read from the journal and one lock per conversation; a :class:`Call`
is one request's hold on its conversation, and :func:`finish` records its reply and writes its
events in one journal write. The chat endpoint (:mod:`taskgate.proxy.server`) and the streamed
relay (:mod:`taskgate.proxy.stream`) both build on this module.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from taskgate.core.ledger import AnswerEntry
from taskgate.core.plan import Plan
from taskgate.errors import LedgerFormatError, TaskgateError, UsageError
from taskgate.gate.registry import SessionRegistry
from taskgate.gate.session import Notices, Unbound
from taskgate.journal.events import (
    Conversation,
    Event,
    LedgerEvent,
    ReplyEvent,
)
from taskgate.journal.store import MemoryStore, StaleJournal, Store
from taskgate.llm.client import ChatClient
from taskgate.llm.endpoint import Endpoint
from taskgate.llm.roles import LLMCompiler, LLMMatcher
from taskgate.matching import CascadeMatcher, shared_matcher
from taskgate.matching.lexical import LexicalMatcher
from taskgate.protocol.briefparse import ParserCompiler
from taskgate.proxy.gating import (
    Judged,
    Place,
    judge_calls,
    rung,
)
from taskgate.registry import Registry
from taskgate.roles import Compiler, Matcher
from taskgate.serving.errors import HttpError
from taskgate.serving.hosts import checked
from taskgate.serving.operator import percentiles
from taskgate.understanding.model import CascadeReader, ModelReader
from taskgate.understanding.reader import ConversationReader

log = logging.getLogger("taskgate.proxy")

HEADER = "x-taskgate-conversation"


#: the proxy's matchers: the helper model's, or none (lexical, embedding), or both (cascade: embedding, then llm);
#: ``embedding:hash`` is the embedding matcher on the deterministic fake embedder (for tests)
MATCHERS: Registry[str] = Registry(
    "matcher",
    (
        ("llm", "the helper model"),
        ("conversation", "the message read with the agent's before it, no model call"),
        ("conversation:llm", "the same question put to the helper model (cached per turn)"),
        ("conversation:cascade", "the rules, then the helper model where they are unsure"),
        ("conversation:embedding", "the rules, MiniLM naming the requests they cannot place"),
        ("lexical", "word overlap, no model call"),
        ("embedding", "MiniLM, no model call"),
        ("cascade", "embedding, then llm where it is unsure"),
        ("embedding:hash", "the embedding matcher on a fake embedder, for tests"),
    ),
)


@dataclass
class ProxyConfig:
    """What ``taskgate proxy`` is told: the upstream, the rung, and who compiles and matches."""

    upstream: str
    rung: str = "enforcement"
    compiler: str = "llm"  # "llm" (the upstream, or the helper) or "parser" (structured briefs)
    #: one of MATCHERS; by default ``conversation`` in plan mode (no model call), else ``llm``
    matcher: str = ""
    helper_url: str | None = None  # compiler and matcher calls go here instead of the upstream
    helper_model: str | None = None  # default: the model the request names
    helper_key: str = "EMPTY"  # the helper's own key (the client's goes to the upstream only)
    status_token: str | None = None
    timeout: float = 900.0
    max_connections: int = 1024
    #: plan mode (``--plan FILE``): every conversation is gated with this tool-bound plan, its
    #: messages forwarded as the agent wrote them (no brief, no work orders asked of anyone)
    plan: Plan | None = None
    #: a conversation whose brief cannot be compiled: "refuse" it (one clear 502 per request,
    #: logged once) or "forward" it ungated (logged once, counted)
    on_compile_error: str = "refuse"
    #: what a refused native tool call says: plain words, or the paper's rejection notice
    notices: Notices = "plain"
    #: a native call of a tool no plan step is bound to: passed ungated, or refused
    unbound: Unbound = "run"
    #: the most conversations kept in memory (the journal keeps every one)
    max_conversations: int = 100_000
    #: plan mode with each conversation's plan compiled (``--plan compile``): from its first
    #: request's system prompt (or first user message) and tools, by the helper model
    compile_plans: bool = False
    #: host names the proxy answers besides IP addresses and ``localhost`` (``--allowed-host``;
    #: :mod:`taskgate.serving.hosts`): a reverse proxy's public name, say
    allowed_hosts: tuple[str, ...] = ()

    @property
    def planned(self) -> bool:
        """Plan mode: ordinary conversations, gated at their native tool calls."""
        return self.plan is not None or self.compile_plans

    def __post_init__(self) -> None:
        """A configuration the proxy cannot serve is one clear error, here as on the CLI."""
        if not self.matcher:
            self.matcher = "conversation" if self.planned else "llm"
        if self.max_conversations < 1:
            raise UsageError("max_conversations must be at least 1")
        if self.notices not in ("plain", "protocol"):
            raise UsageError(f"notices must be plain or protocol, not {self.notices!r}")
        if self.unbound not in ("run", "refuse"):
            raise UsageError(f"unbound must be run or refuse, not {self.unbound!r}")
        if self.on_compile_error not in ("refuse", "forward"):
            raise UsageError(
                f"on_compile_error must be refuse or forward, not {self.on_compile_error!r}"
            )
        self.allowed_hosts = checked(self.allowed_hosts)
        if self.plan is not None and self.compile_plans:
            raise UsageError("plan mode takes a plan file or compiles plans, not both")
        if self.planned:
            if self.plan is not None and self.plan.binding != "tool":
                raise UsageError("plan mode gates tool calls: the plan must be tool-bound")
            if self.rung not in ("raw", "enforcement", "enforcement-request"):
                raise UsageError(
                    "plan mode gates tool calls as the agent makes them: rung raw, enforcement "
                    f"or enforcement-request, not {self.rung!r}"
                )


@dataclass
class Overheads:
    """The proxy's own time per gated request (upstream and helper calls excluded), in seconds."""

    samples: deque[float] = field(default_factory=lambda: deque(maxlen=200_000))
    on_add: Callable[[], None] | None = None  # told of every request served
    #: requests forwarded ungated, by why (``no-brief``, ``no-user-turn``, ``compile-failed``)
    ungated: Counter[str] = field(default_factory=Counter)
    #: requests refused because the conversation could not be gated (``compile-failed``)
    refused: Counter[str] = field(default_factory=Counter)
    #: users' changes the state could not take (``revision-refused``): they changed nothing
    unapplied: Counter[str] = field(default_factory=Counter)
    #: chat requests answered with an error, by HTTP status (a helper, the upstream or the
    #: journal failing is a 502 or 503: refused, never passed on ungated)
    errors: Counter[str] = field(default_factory=Counter)
    #: the gate's verdicts on the calls and booking lines of replies: ``admitted``, or the reason
    #: of a refusal
    verdicts: Counter[str] = field(default_factory=Counter)
    #: held calls: ``asked``, and the user's answers (``approve``, ``reject``, ``dropped``)
    asks: Counter[str] = field(default_factory=Counter)
    _told: set[tuple[str, str]] = field(default_factory=set)

    def forwarded(self, why: str, note: str, key: str = "") -> None:
        """Count a request forwarded ungated; say why in the log the first time (per reason, or
        per conversation ``key``)."""
        self.ungated[why] += 1
        self._say(why, key, f"forwarding {key or 'a request'} ungated: {note}")

    def refusing(self, why: str, note: str, key: str = "") -> None:
        """Count a request refused because its conversation cannot be gated; say it once."""
        self.refused[why] += 1
        self._say(f"refused {why}", key, f"refusing conversation {key}: {note}")

    def noted(self, why: str, note: str, key: str = "") -> None:
        """Count a user's change the state could not take (it changed nothing); say it once."""
        self.unapplied[why] += 1
        self._say(why, key, f"conversation {key}: a change changed nothing: {note}")

    def _say(self, why: str, key: str, line: str) -> None:
        if (why, key) not in self._told and len(self._told) < 10_000:
            self._told.add((why, key))
            log.warning("taskgate proxy: %s", line)

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)
        if self.on_add is not None:
            self.on_add()

    def summary(self) -> dict[str, object]:
        return {
            "requests": len(self.samples),
            **percentiles(self.samples),
            "ungated": dict(self.ungated),
            "refused": dict(self.refused),
            "unapplied": dict(self.unapplied),
            "errors": dict(self.errors),
            "verdicts": dict(self.verdicts),
            "asks": dict(self.asks),
        }


class Bounded:
    """A set of the most recently added ``size`` keys."""

    def __init__(self, size: int) -> None:
        self._keys: OrderedDict[str, None] = OrderedDict()
        self._size = size

    def add(self, key: str) -> None:
        self._keys[key] = None
        self._keys.move_to_end(key)
        while len(self._keys) > self._size:
            self._keys.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)


class Proxy:
    """The proxy's state: the upstream client, the journal store and the conversations."""

    def __init__(self, config: ProxyConfig, store: Store | None = None) -> None:
        self.config = config
        #: conversations forwarded ungated because their brief could not be compiled (the most
        #: recent ``max_conversations``: one forgotten is compiled again, and refused or forwarded)
        self.ungated_keys: Bounded = Bounded(config.max_conversations)
        self.arm = rung(config.rung)
        #: plan mode at a gating rung runs nothing on a request that named no step, and folds
        #: every conversation's journal under that rule
        self.requested = config.planned and self.arm.gating
        self.upstream = config.upstream.rstrip("/")
        self.store: Store = store or MemoryStore()
        #: the conversations in memory (at most ``max_conversations`` idle ones), a lock each
        self.conversations: SessionRegistry[Conversation, asyncio.Lock] = SessionRegistry(
            config.max_conversations, asyncio.Lock
        )
        self._http: httpx.AsyncClient | None = None
        self._helpers: dict[tuple[str, str], ChatClient] = {}
        self._judges: dict[tuple[str, str], ModelReader] = {}  # one cache of verdicts per model
        self.overheads = Overheads()
        self._stored: set[str] | None = None  # the journal's conversations at start (unshared)

    # -- life --------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Read which conversations the journal holds: when only this process writes it, a key
        it lacks is a new conversation, with nothing to load."""
        if not self.store.shared:
            self._stored = set(await self.store.keys())

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            from httpx_aiohttp import AiohttpTransport

            # httpx's API on aiohttp's connection pool: httpcore's pool scans every connection
            # on every request, which cost more CPU than all of the proxy's gating at 64
            # conversations (bench/bench_proxy.py)
            limits = httpx.Limits(
                max_connections=self.config.max_connections,
                max_keepalive_connections=self.config.max_connections,
                keepalive_expiry=60.0,
            )
            timeout = httpx.Timeout(self.config.timeout, connect=10.0)
            transport = AiohttpTransport(limits=limits, trust_env=False)
            self._http = httpx.AsyncClient(timeout=timeout, transport=transport)
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
        for client in self._helpers.values():
            await client.close()
        await self.store.close()

    # -- the roles -----------------------------------------------------------------------------------
    def helper(self, model: str, key: str) -> ChatClient:
        url = self.config.helper_url or self.upstream
        model = self.config.helper_model or model
        key = self.config.helper_key if self.config.helper_url else key
        slot = (model, hashlib.sha256(key.encode()).hexdigest())
        if slot not in self._helpers:
            self._helpers[slot] = ChatClient(
                Endpoint(url, model, api_key=key, attempts=3, timeout=120.0, concurrency=64)
            )
        return self._helpers[slot]

    def compiler(
        self, model: str, key: str, on_problem: Callable[[str], None] | None = None
    ) -> Compiler:
        """The brief's compiler; ``on_problem`` hears of a reply still unusable after its
        re-ask (the proxy then refuses what it would have compiled: it never falls back)."""
        if self.config.compiler == "parser":
            return ParserCompiler()
        return LLMCompiler(self.helper(model, key), on_problem=on_problem)

    def matcher(self, model: str, key: str) -> Matcher:
        name = self.config.matcher
        if name == "lexical":
            return LexicalMatcher()
        if name == "conversation":
            return ConversationReader()
        if name == "conversation:embedding":
            return ConversationReader(shared_matcher())
        if name.startswith("conversation:"):
            slot = (model, hashlib.sha256(key.encode()).hexdigest())
            judge = self._judges.get(slot)
            if judge is None:
                helper = self.helper(model, key)

                async def ask(prompt: str) -> str:
                    reply = await helper.complete([{"role": "user", "content": prompt}], "matcher")
                    return reply.text

                judge = self._judges[slot] = ModelReader(ask)
            return judge if name == "conversation:llm" else CascadeReader(judge)
        if name.startswith("embedding"):
            return shared_matcher(fake=name == "embedding:hash")
        if name == "cascade":
            return CascadeMatcher(LLMMatcher(self.helper(model, key)), shared_matcher())
        return LLMMatcher(self.helper(model, key))

    # -- conversations -------------------------------------------------------------------------------
    async def conversation(self, key: str) -> Conversation:
        """The conversation ``key`` (call it holding :meth:`lock` of ``key``)."""
        conv = self.conversations.get(key)
        if conv is None:  # callers hold the key's lock, so no one else is loading it
            new = self._stored is not None and key not in self._stored
            events = [] if new else await self.store.load(key)
            conv = Conversation(key, events, requested=self.requested)
            if self._stored is not None:  # from now on, read it back if it is ever dropped
                self._stored.add(key)
            self.conversations.put(key, conv)
        elif self.store.shared:  # another replica may have gone on with it
            caught_up = conv.written == len(conv.events)  # nothing of this process unwritten
            for event in await self.store.load(key, len(conv.events)):
                conv.apply(event)
            if caught_up:  # what another replica wrote is written
                conv.written = len(conv.events)
        return conv

    async def known(self, key: str) -> bool:
        """Whether conversation ``key`` exists (in memory or in the journal), without making it."""
        if self.conversations.peek(key) is not None:
            return True
        if self._stored is not None:  # only this process writes the journal
            return key in self._stored
        try:
            return bool(await self.store.load(key, 0))
        except TaskgateError as exc:
            raise HttpError(503, f"the journal cannot be read: {exc}", "server_error") from None

    async def readable(self, key: str) -> Conversation:
        """:meth:`conversation`, its failures as the proxy's answers: an unreachable or failing
        journal is a 503, a journal that does not fold (a row edited or forged, an admission its
        plan refuses) a 500 naming the conversation; each logged as one line."""
        try:
            return await self.conversation(key)
        except LedgerFormatError as exc:
            self.conversations.pop(key)
            log.error("taskgate proxy: conversation %s: its journal does not fold: %s", key, exc)
            raise HttpError(
                500, f"conversation {key}'s journal does not fold: {exc}", "server_error"
            ) from None
        except TaskgateError as exc:
            log.error("taskgate proxy: the journal cannot be read: %s", exc)
            raise HttpError(503, f"the journal cannot be read: {exc}", "server_error") from None

    def lock(self, key: str) -> asyncio.Lock:
        return self.conversations.lock(key)


# -- the chat endpoint ---------------------------------------------------------------------------
@dataclass
class Call:
    """One gated request on its way: the conversation, where it falls, what it will write."""

    proxy: Proxy
    conv: Conversation
    body: dict[str, Any]
    headers: dict[str, str]
    seq: int
    lock: asyncio.Lock
    events: list[Event] = field(default_factory=list)
    place: Place | None = None
    waited: float = 0.0  # seconds spent waiting on the upstream, the helpers, a streamed client
    owns_lock: bool = False  # a streamed reply holds the conversation's lock until it ends
    written: bool = False  # the events are in the journal: the turn stands, whatever follows
    named: bool = False  # the client named the conversation (its header)

    def rollback(self) -> None:
        """Forget what this call changed (the conversation is its written journal again), unless
        its events were written: then they stand."""
        if not self.written:
            self.conv.rebuild(self.seq)

    def release(self) -> None:
        if self.owns_lock:
            self.owns_lock = False
            self.lock.release()

    def add(self, event: Event, *, applied: bool = True) -> None:
        self.conv.apply(event, applied=applied)
        self.events.append(event)

    def judge_calls(
        self, calls: Sequence[Mapping[str, Any]], judged: Judged
    ) -> tuple[list[Mapping[str, Any]], list[str]]:
        """Judge a reply's native tool calls under the proxy's options and this turn's reading
        (:func:`taskgate.proxy.gating.judge_calls`), journaling first any request the core
        opened for a confirmed proposal, as it stands in the ledger."""
        config = self.proxy.config
        start = len(judged.opened)  # a reply told its refusals is judged again: only the new
        kept, refusals = judge_calls(
            self.conv.machine,
            self.proxy.arm,
            calls,
            judged,
            planned=config.planned,
            notices=config.notices,
            unbound=config.unbound,
            reading=self.conv.reading,
            messages=self.body.get("messages"),
        )
        for entry in judged.opened[start:]:
            self.add(LedgerEvent(entry=entry), applied=True)
        return kept, refusals

    async def waiting(self, coro: Any) -> Any:
        start = time.perf_counter()
        try:
            return await coro
        finally:
            self.waited += time.perf_counter() - start


async def finish(
    call: Call,
    original: str,
    returned: str,
    judged: Judged,
    ask_back: bool = False,
    *,
    calls: Sequence[Any] = (),
    finish_reason: object = None,
) -> None:
    """Record the reply (with the tool ``calls`` the client gets) and write the request's
    events (one journal write)."""
    place = call.place
    assert place is not None
    has_calls = bool(judged.call_ids and any(c is not None for c in judged.call_ids))
    call.add(
        ReplyEvent(
            turn=place.turn,
            hop=place.hop,
            original=original,
            returned=returned,
            has_calls=has_calls,
            attempts=tuple(judged.attempts),
            asks=tuple(judged.asks),
            call_ids=tuple(judged.call_ids),
            notices=tuple(judged.notices),
            ask_back=ask_back,
            calls=tuple(c for c in calls if isinstance(c, dict)),
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            refused=tuple({"call": dict(c), "notice": n} for c, n in judged.later),
        )
    )
    try:
        await call.proxy.store.append(call.conv.key, call.seq, call.events)
        call.written = True
        call.conv.written = len(call.conv.events)
        for attempt in judged.attempts:
            call.proxy.overheads.verdicts[str(attempt.reason or "admitted")] += 1
        call.proxy.overheads.asks["asked"] += len(judged.asks)
        for event in call.events:  # the user's answers to held calls, read from their message
            entry = event.entry if isinstance(event, LedgerEvent) else None
            if isinstance(entry, AnswerEntry):
                call.proxy.overheads.asks[entry.decision] += 1
    except StaleJournal:
        call.proxy.conversations.pop(call.conv.key)  # read it afresh next time
        raise HttpError(
            409, f"conversation {call.conv.key} moved on elsewhere; retry", "conversation_conflict"
        ) from None
    except TaskgateError as exc:
        raise HttpError(
            503, f"the proxy could not record the turn: {exc}", "server_error"
        ) from None
