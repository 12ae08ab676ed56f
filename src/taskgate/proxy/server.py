"""The gating proxy's chat endpoint: each request gated and forwarded to the upstream (httpx).

A request whose system prompt is a brief (plan lines, :func:`~taskgate.lab.agents.briefparse.brief_steps`)
belongs to a gated conversation: the proxy compiles the brief on the first request, turns each new
user message into a request (its work order, the matcher's step) or a revision, shows the upstream
what the rung adds, judges the reply and hands the client only what the gate admits. Any other
request is forwarded untouched. A request's events reach the journal in one write, after the
upstream answered and before the client gets the reply: if anything fails on the way, nothing is
written and the conversation is as it was.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from taskgate.core.ledger import PlanEntry
from taskgate.core.plan import Revision
from taskgate.errors import LedgerFormatError, ModelError, TaskgateError, UsageError, WorkOrderError
from taskgate.llm.client import ChatClient, Endpoint
from taskgate.llm.roles import LLMCompiler, LLMMatcher
from taskgate.matching import HybridMatcher, ask_back_question, shared_matcher
from taskgate.matching.lexical import LexicalMatcher
from taskgate.protocol.briefparse import ParserCompiler, brief_steps
from taskgate.proxy.errors import ProxyError, dumps
from taskgate.proxy.gating import (
    Conflict,
    Judged,
    Place,
    align,
    judge_calls,
    judge_text,
    rung,
    settle,
    text_of,
    upstream_messages,
    user_text,
    work_order_of,
)
from taskgate.proxy.journal import (
    CommitEvent,
    Conversation,
    Event,
    LedgerEvent,
    ReplyEvent,
    TurnEvent,
)
from taskgate.proxy.store import MemoryStore, StaleJournal, Store
from taskgate.roles import Compiler, Matcher

log = logging.getLogger("taskgate.proxy")

HEADER = "x-taskgate-conversation"
_FORWARD = ("authorization", "content-type", "accept", "openai-organization", "openai-project")


#: the proxy's matchers: the helper model's, or none (lexical, embedding), or both (hybrid);
#: ``embedding:hash`` is the embedding matcher on the deterministic fake embedder (for tests)
MATCHERS = ("llm", "lexical", "embedding", "hybrid", "embedding:hash")


@dataclass
class ProxyConfig:
    """What ``taskgate proxy`` is told: the upstream, the rung, and who compiles and matches."""

    upstream: str
    rung: str = "enforcement"
    compiler: str = "llm"  # "llm" (the upstream, or the helper) or "parser" (structured briefs)
    matcher: str = "llm"  # one of MATCHERS
    helper_url: str | None = None  # compiler and matcher calls go here instead of the upstream
    helper_model: str | None = None  # default: the model the request names
    helper_key: str = "EMPTY"  # the helper's own key (the client's goes to the upstream only)
    status_token: str | None = None
    timeout: float = 900.0
    max_connections: int = 1024


@dataclass
class Overheads:
    """The proxy's own time per gated request (upstream and helper calls excluded), in seconds."""

    samples: deque[float] = field(default_factory=lambda: deque(maxlen=200_000))
    on_add: Callable[[], None] | None = None  # told of every request served

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)
        if self.on_add is not None:
            self.on_add()

    def summary(self) -> dict[str, float | int]:
        xs = sorted(self.samples)
        if not xs:
            return {"requests": 0}

        def ms(q: float) -> float:
            return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000

        return {"requests": len(xs), "p50_ms": ms(0.5), "p99_ms": ms(0.99), "max_ms": ms(1.0)}


class Proxy:
    """The proxy's state: the upstream client, the journal store and the conversations."""

    def __init__(self, config: ProxyConfig, store: Store | None = None) -> None:
        self.config = config
        self.arm = rung(config.rung)
        self.upstream = config.upstream.rstrip("/")
        self.store: Store = store or MemoryStore()
        self.conversations: dict[str, Conversation] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._http: httpx.AsyncClient | None = None
        self._helpers: dict[tuple[str, str], ChatClient] = {}
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
    def _helper(self, model: str, key: str) -> ChatClient:
        url = self.config.helper_url or self.upstream
        model = self.config.helper_model or model
        key = self.config.helper_key if self.config.helper_url else key
        slot = (model, hashlib.sha256(key.encode()).hexdigest())
        if slot not in self._helpers:
            self._helpers[slot] = ChatClient(
                Endpoint(url, model, api_key=key, attempts=3, timeout=120.0, concurrency=64)
            )
        return self._helpers[slot]

    def compiler(self, model: str, key: str) -> Compiler:
        if self.config.compiler == "parser":
            return ParserCompiler()
        return LLMCompiler(self._helper(model, key))

    def matcher(self, model: str, key: str) -> Matcher:
        name = self.config.matcher
        if name == "lexical":
            return LexicalMatcher()
        if name.startswith("embedding"):
            return shared_matcher(fake=name == "embedding:hash")
        if name == "hybrid":
            return HybridMatcher(LLMMatcher(self._helper(model, key)), shared_matcher())
        return LLMMatcher(self._helper(model, key))

    # -- conversations -------------------------------------------------------------------------------
    async def conversation(self, key: str) -> Conversation:
        """The conversation ``key`` (call it holding :meth:`lock` of ``key``)."""
        conv = self.conversations.get(key)
        if conv is None:  # callers hold the key's lock, so no one else is loading it
            new = self._stored is not None and key not in self._stored
            conv = Conversation(key, [] if new else await self.store.load(key))
            self.conversations[key] = conv
            if self._stored is not None:  # from now on, read it back if it is ever dropped
                self._stored.add(key)
        elif self.store.shared:  # another replica may have gone on with it
            for event in await self.store.load(key, len(conv.events)):
                conv.apply(event)
        return conv

    async def readable(self, key: str) -> Conversation:
        """:meth:`conversation`, its failures as the proxy's answers: an unreachable or failing
        journal is a 503, a journal that does not fold (a row edited or forged, an admission its
        plan refuses) a 500 naming the conversation; each logged as one line."""
        try:
            return await self.conversation(key)
        except LedgerFormatError as exc:
            self.conversations.pop(key, None)
            log.error("taskgate proxy: conversation %s: its journal does not fold: %s", key, exc)
            raise ProxyError(
                500, f"conversation {key}'s journal does not fold: {exc}", "server_error"
            ) from None
        except TaskgateError as exc:
            log.error("taskgate proxy: the journal cannot be read: %s", exc)
            raise ProxyError(503, f"the journal cannot be read: {exc}", "server_error") from None

    def lock(self, key: str) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock


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

    async def waiting(self, coro: Any) -> Any:
        start = time.perf_counter()
        try:
            return await coro
        finally:
            self.waited += time.perf_counter() - start


async def chat(request: Request) -> Response:
    proxy: Proxy = request.app.state.proxy
    try:
        raw = await _read(request)
        started = time.perf_counter()  # the proxy's time starts once the request is in
        body = _body(raw)
        headers = forwarded_headers(request.headers)
        brief = _brief(body["messages"])
        if brief is None:  # not a gated conversation: forwarded as it came
            return await _passthrough(proxy, request, body)
        key = conversation_key(request.headers, brief, body["messages"])
        lock = proxy.lock(key)
        await lock.acquire()
        call: Call | None = None
        try:
            conv = await proxy.readable(key)
            call = Call(proxy, conv, body, headers, len(conv.events), lock)
            response = await _gated(call, brief, started)
        except BaseException:
            if call is not None:
                call.rollback()
            lock.release()
            raise
        if not call.owns_lock:  # a stream releases it when it ends
            lock.release()
        return response
    except ProxyError as exc:
        return exc.response()


#: the largest request body the proxy reads (a long agent history is a few MB)
MAX_BODY = 64 << 20


async def _read(request: Request) -> bytes:
    size = request.headers.get("content-length", "")
    if size.isdigit() and int(size) > MAX_BODY:
        raise ProxyError(413, f"the request body is over {MAX_BODY >> 20} MiB")
    parts, total = [], 0
    try:
        async for part in request.stream():
            total += len(part)
            if total > MAX_BODY:
                raise ProxyError(413, f"the request body is over {MAX_BODY >> 20} MiB")
            parts.append(part)
    except ClientDisconnect:
        raise ProxyError(400, "the client disconnected before its request was read") from None
    return b"".join(parts)


def _body(raw: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ProxyError(400, f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ProxyError(400, "the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ProxyError(400, "'messages' must be a non-empty list of message objects")
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise ProxyError(400, "every message must be an object with a string 'role'")
    return body


def _brief(messages: list[dict[str, Any]]) -> str | None:
    first = messages[0]
    if first.get("role") not in ("system", "developer"):
        return None
    text = text_of(first.get("content"))
    return text if text is not None and _is_brief(text) else None


_BRIEFS: OrderedDict[bytes, bool] = OrderedDict()


def _is_brief(text: str) -> bool:
    """Whether a system prompt is a brief (it has plan lines); a conversation sends the same
    one on every request, so the answer is cached by the prompt's digest (the cache holds no
    prompt: a client sending huge ones leaves no memory behind)."""
    digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
    known = _BRIEFS.get(digest)
    if known is None:
        known = _BRIEFS[digest] = bool(brief_steps(text))
        if len(_BRIEFS) > 4096:
            _BRIEFS.popitem(last=False)
    return known


def conversation_key(headers: Mapping[str, str], brief: str, messages: list[dict[str, Any]]) -> str:
    """The conversation's key: its name (the header's, or a hash of its brief and first user
    message: two conversations that open identically share one, so name them by the header),
    then ``~`` and its owner: a hash of the client's API key, or ``anon`` for a request without
    one. A name cannot hold ``~``, so no request reaches a conversation of another owner,
    whatever it names: a keyed conversation is reached only with its key, and requests without
    a key share the anonymous owner."""
    named = headers.get(HEADER)
    if named is not None:
        if not 0 < len(named) <= 200 or not named.isprintable() or "~" in named:
            raise ProxyError(400, f"the {HEADER} header must be 1-200 printable characters, no '~'")
        base = named
    else:
        first = next((m for m in messages if m.get("role") == "user"), {})
        text = text_of(first.get("content")) or ""
        base = "h-" + hashlib.sha256(f"{brief}\x00{text}".encode()).hexdigest()[:24]
    return f"{base}~{owner(headers)}"


def owner(headers: Mapping[str, str]) -> str:
    """Whose conversations a request reaches: a hash of its ``Authorization`` header (128 bits),
    or ``anon`` without one."""
    auth = headers.get("authorization")
    return hashlib.sha256(auth.encode()).hexdigest()[:32] if auth else "anon"


def forwarded_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The client's headers the upstream gets; one that is not ASCII is a 400 (HTTP client
    libraries cannot send it on)."""
    out = {k: headers[k] for k in _FORWARD if k in headers}
    for name, value in out.items():
        if not value.isascii():
            raise ProxyError(400, f"the {name} header must be ASCII text")
    return out


def _api_key(headers: Mapping[str, str]) -> str:
    auth = headers.get("authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") else "EMPTY"


async def _gated(call: Call, brief: str, started: float) -> Response:
    proxy, conv, body = call.proxy, call.conv, call.body
    model, key = str(body.get("model", "")), _api_key(call.headers)
    if body.get("n", 1) != 1:
        raise ProxyError(400, "a gated conversation takes one choice per request (n=1)")
    if not conv.started:
        plan = await call.waiting(_helping(proxy.compiler(model, key).compile_plan(brief)))
        call.add(LedgerEvent(entry=PlanEntry(plan=plan, lenient=True)), applied=False)
    try:
        place = align(conv, body["messages"])
    except Conflict as exc:
        raise ProxyError(409, str(exc), "conversation_conflict") from None
    except UsageError as exc:
        raise ProxyError(400, str(exc)) from None
    call.place = place
    if place.kind == "retry":
        retried = conv.pending
        if retried is not None and retried.handed_out:  # the same reply again, not the upstream
            return replayed(call, retried, model, bool(body.get("stream")), started)
        conv.retract()
        if retried is not None and retried.ask_back:  # the same question again, not the upstream
            return await ask_back(call, retried.returned, model, bool(body.get("stream")), started)
    elif conv.pending is not None:
        call.add(CommitEvent(keep=settle(conv.pending, place.answered)))
    if place.kind == "turn":
        question = await _open_turn(call, place.message, model, key)
        if question is not None:
            return await ask_back(call, question, model, bool(body.get("stream")), started)
    forward = {**body, "messages": upstream_messages(conv, body["messages"])}
    if body.get("stream"):
        from taskgate.proxy.stream import stream

        return await stream(call, forward, started)
    return await _complete(call, forward, started)


async def _helping(coro: Any) -> Any:
    try:
        return await coro
    except ModelError as exc:
        raise ProxyError(502, f"the proxy's helper model failed: {exc}", "upstream_error") from None
    except TaskgateError as exc:  # e.g. a brief the parser cannot read
        raise ProxyError(400, f"the brief or message could not be read: {exc}") from None


async def _open_turn(call: Call, message: str, model: str, key: str) -> str | None:
    """A new user message: a request (its work order, the matched step) or a revision. When the
    matcher cannot tell which step a request means, no request opens (its work order stays
    unused, for the user's answer) and the ask-back question is returned."""
    proxy, conv = call.proxy, call.conv
    machine, arm = conv.machine, proxy.arm
    work_order = work_order_of(message)
    if work_order is None:
        compiler = proxy.compiler(model, key)
        plan = machine.graph.to_plan()
        revision = await call.waiting(_helping(compiler.compile_revision(plan, message)))
        if revision != Revision():
            try:
                machine.revise(revision)
                call.add(LedgerEvent(entry=machine.last_entry()))
            except TaskgateError:
                pass  # a revision the plan cannot take changes nothing (the testbed's rule)
        machine.close_request()
    else:
        step, redo, question = None, False, None
        if arm.uses_matcher:
            plan = machine.graph.to_plan()
            match = await call.waiting(_helping(proxy.matcher(model, key).match(plan, message)))
            step = match.step if match.step in machine.graph else None
            redo = match.explicit_redo
            asked = [c for c in match.candidates if c in machine.graph]
            question = ask_back_question(plan, asked) if step is None and asked else None
        try:
            if question is not None:
                machine.close_request()
            else:
                machine.open_request(step, explicit_redo=redo, work_order=work_order)
        except WorkOrderError:  # a work order used before: no request
            machine.close_request()
    call.add(LedgerEvent(entry=machine.last_entry()))
    call.add(TurnEvent(client=message, forwarded=user_text(arm, machine, conv.notices, message)))
    return None if work_order is None else question


async def ask_back(
    call: Call, question: str, model: str, streamed: bool, started: float
) -> Response:
    """The proxy's own reply, the ask-back question, written as the turn's reply; the upstream
    is not called."""
    await finish(call, question, question, Judged(), ask_back=True)
    call.proxy.overheads.add(time.perf_counter() - started - call.waited)
    return own_reply(model, question, (), "stop", streamed, "taskgate-ask-back")


def replayed(call: Call, reply: ReplyEvent, model: str, streamed: bool, started: float) -> Response:
    """A client retry of a hop whose reply handed out tool calls: that reply again, with the
    same call ids (the idempotency key is the conversation and the hop), and nothing written:
    the client goes on with whichever copy it got, and its tool messages settle the calls."""
    if not reply.calls:  # written by a proxy that did not keep the calls
        raise ProxyError(
            409,
            f"conversation {call.conv.key}: this hop's reply handed out tool calls the journal "
            "did not keep; go on with the reply you got instead of retrying",
            "conversation_conflict",
        )
    call.proxy.overheads.add(time.perf_counter() - started - call.waited)
    finish_reason = reply.finish_reason or "tool_calls"
    calls = [dict(c) for c in reply.calls]
    return own_reply(model, reply.returned, calls, finish_reason, streamed, "taskgate-replay")


def own_reply(
    model: str,
    content: str,
    calls: Sequence[dict[str, Any]],
    finish_reason: str,
    streamed: bool,
    fingerprint: str,
) -> Response:
    """A reply the proxy writes itself (an ask-back, a replayed reply), whole or as a stream of
    a content chunk, the tool calls and a finish chunk."""
    reply = {
        "id": f"chatcmpl-taskgate-{uuid.uuid4().hex[:24]}",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": fingerprint,
    }
    if not streamed:
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = list(calls)
        choice = {"index": 0, "message": message, "finish_reason": finish_reason}
        data = {**reply, "object": "chat.completion", "choices": [choice]}
        return Response(dumps(data, 500, "the reply"), 200, media_type="application/json")
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": content}]
    deltas += [{"tool_calls": [{**c, "index": i}]} for i, c in enumerate(calls)]
    chunks = [{"index": 0, "delta": d} for d in deltas]
    chunks.append({"index": 0, "delta": {}, "finish_reason": finish_reason})
    events = b"".join(
        b"data: " + dumps({**reply, "object": "chat.completion.chunk", "choices": [c]}, 500,
                          "the reply") + b"\n\n"
        for c in chunks
    )  # fmt: skip
    return Response(events + b"data: [DONE]\n\n", 200, media_type="text/event-stream")


async def _complete(call: Call, forward: dict[str, Any], started: float) -> Response:
    proxy = call.proxy
    upstream = await call.waiting(_post(proxy, call.headers, forward))
    if upstream.status_code != 200:  # passed through unchanged; nothing is written
        call.rollback()
        return relay(upstream)
    data = _completion(upstream.content)
    message = data["choices"][0]["message"]
    judged = Judged()
    choice = data["choices"][0]
    original, returned = gate_message(call, message, choice, judged)
    body = dumps(data, 502, "the upstream's reply")  # before the write: nothing fails after it
    calls = message.get("tool_calls") or []
    reason = choice.get("finish_reason")
    await finish(call, original, returned, judged, calls=calls, finish_reason=reason)
    proxy.overheads.add(time.perf_counter() - started - call.waited)
    return Response(body, 200, media_type="application/json")


def gate_message(
    call: Call, message: dict[str, Any], choice: dict[str, Any], judged: Judged
) -> tuple[str, str]:
    """Judge one reply message in place (refused booking lines and tool calls taken out); its
    content as the upstream wrote it and as the client gets it."""
    machine, arm = call.conv.machine, call.proxy.arm
    raw, calls = message.get("content"), message.get("tool_calls")
    content = "" if raw is None else text_of(raw)
    if content is None:  # fail closed: text the gate cannot read is not passed on
        raise ProxyError(502, "the upstream's reply content is neither text nor text parts")
    if (calls is not None and not isinstance(calls, list)) or message.get("function_call"):
        raise ProxyError(
            502, "the upstream's reply carries tool calls in a form the gate cannot read"
        )
    returned = content
    if machine.graph.binding == "code":
        returned = judge_text(machine, arm, content, judged)
    if calls and machine.graph.binding == "tool":
        kept, refusals = judge_calls(machine, arm, calls, judged)
        if refusals:
            returned = "\n\n".join([returned, *refusals] if returned else refusals)
        if kept:
            message["tool_calls"] = kept
        else:
            message.pop("tool_calls", None)
            choice["finish_reason"] = "stop"
    if returned != content:
        message["content"] = returned
        choice.pop("logprobs", None)  # they would spell out what was taken out
    return content, returned


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
            call_ids=tuple(judged.call_ids),
            notices=tuple(judged.notices),
            ask_back=ask_back,
            calls=tuple(c for c in calls if isinstance(c, dict)),
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        )
    )
    try:
        await call.proxy.store.append(call.conv.key, call.seq, call.events)
        call.written = True
        call.conv.written = len(call.conv.events)
    except StaleJournal:
        call.proxy.conversations.pop(call.conv.key, None)  # read it afresh next time
        raise ProxyError(
            409, f"conversation {call.conv.key} moved on elsewhere; retry", "conversation_conflict"
        ) from None
    except TaskgateError as exc:
        raise ProxyError(
            503, f"the proxy could not record the turn: {exc}", "server_error"
        ) from None


def _completion(raw: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(raw)
        message = data["choices"][0]["message"]
        one = len(data["choices"]) == 1
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        message, one = None, True
    if not isinstance(message, dict):
        raise ProxyError(502, "the upstream's reply is not a chat completion", "upstream_error")
    if not one:  # fail closed: the gate judges one choice
        raise ProxyError(502, "the upstream answered with several choices; the gate judges one")
    return data  # type: ignore[no-any-return]


async def _post(proxy: Proxy, headers: dict[str, str], body: dict[str, Any]) -> httpx.Response:
    try:
        return await proxy.http.post(
            f"{proxy.upstream}/chat/completions",
            content=dumps(body, 400, "the request"),
            headers=headers,
        )
    except httpx.HTTPError as exc:
        raise ProxyError(502, f"the upstream failed: {exc!r}", "upstream_error") from None


def relay(upstream: httpx.Response) -> Response:
    media = upstream.headers.get("content-type", "application/json")
    return Response(upstream.content, upstream.status_code, media_type=media)


async def _passthrough(proxy: Proxy, request: Request, body: dict[str, Any]) -> Response:
    headers = forwarded_headers(request.headers)
    if body.get("stream"):
        from taskgate.proxy.stream import relay_stream

        return await relay_stream(proxy, headers, body)
    return relay(await _post(proxy, headers, body))


# -- the other endpoints -------------------------------------------------------------------------
