"""A fake OpenAI-compatible server on loopback, for tests and benchmarks (shipped, like httpx's
MockTransport, so users can test their own setups without a model).

It is a real HTTP server (aiohttp, on its own event loop in a thread) answering ``POST /v1/chat/completions``
and ``GET /v1/models``. Each request is answered by the next scripted :class:`Fault` if any are
queued, else by the responder: ``script(...)`` replays given replies and fails loudly (HTTP 418)
when they run out; :func:`protocol_responder` plays a protocol-following model (it compiles briefs
with the structured parser, matches lexically, and books what the directive says).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import orjson

from taskgate.core.plan import Plan, StepSpec
from taskgate.errors import MissingExtraError
from taskgate.llm.prompts import GRAPH_PROMPT, TOOL_GRAPH_PROMPT
from taskgate.matching.lexical import LexicalMatcher
from taskgate.protocol.briefparse import brief_steps, parse_brief, parse_revision

try:
    from aiohttp import web
except ModuleNotFoundError:  # pragma: no cover - without the extra
    raise MissingExtraError("llm", "the fake model server") from None


@dataclass(frozen=True)
class ToolCall:
    """A function call in a reply (OpenAI's ``tool_calls``), for agents that use tools."""

    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass(frozen=True)
class Reply:
    content: str
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour: ``kind`` is slow, status, drop, broken (a reply, streamed or not,
    cut half-way),
    malformed, empty, or one of the
    200 responses that are not replies (:data:`NOT_REPLIES`: an empty object, a foreign object,
    empty choices, a null content, an HTML page)."""

    kind: str
    seconds: float = 0.0
    status: int = 500
    message: str = "injected fault"

    @classmethod
    def none(cls) -> Fault:
        """No fault: the responder answers (for spacing faults out in a queue)."""
        return cls("slow", seconds=0.0)

    @classmethod
    def slow(cls, seconds: float) -> Fault:
        return cls("slow", seconds=seconds)

    @classmethod
    def error(cls, status: int, message: str = "injected fault") -> Fault:
        return cls("status", status=status, message=message)

    @classmethod
    def overflow(cls) -> Fault:
        msg = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."
        return cls("status", status=400, message=msg)

    @classmethod
    def drop(cls) -> Fault:
        return cls("drop")

    @classmethod
    def broken(cls) -> Fault:
        """A reply whose connection breaks half-way: streamed, no finish and no ``[DONE]``; not
        streamed, half of the promised body."""
        return cls("broken")

    @classmethod
    def malformed(cls) -> Fault:
        return cls("malformed")

    @classmethod
    def empty(cls) -> Fault:
        """A thinking model that spent its budget: reasoning but no content."""
        return cls("empty")

    @classmethod
    def empty_object(cls) -> Fault:
        """A 200 whose body is ``{}``."""
        return cls("empty_object")

    @classmethod
    def foreign(cls) -> Fault:
        """A 200 whose body is some other JSON object: ``{"hello": "world"}``."""
        return cls("foreign")

    @classmethod
    def no_choices(cls) -> Fault:
        """A 200 chat completion whose ``choices`` is empty."""
        return cls("no_choices")

    @classmethod
    def null_content(cls) -> Fault:
        """A 200 chat completion whose message content is ``null`` (and no reasoning)."""
        return cls("null_content")

    @classmethod
    def html(cls) -> Fault:
        """A 200 with an HTML page (a captive portal, a proxy's error page)."""
        return cls("html")

    @classmethod
    def not_replies(cls) -> list[Fault]:
        """One of each 200 response that is not a reply."""
        return [cls(kind) for kind in NOT_REPLIES]


NOT_REPLIES = ("empty_object", "foreign", "no_choices", "null_content", "html")
_HTML = b"<!DOCTYPE html>\n<html><head><title>502</title></head><body>Bad gateway</body></html>\n"


Responder = Callable[[dict[str, Any]], Reply]


#: the faults a faulty server draws from: what real servers do under load, and replies broken
FAULTY: tuple[Callable[[], Fault], ...] = (
    lambda: Fault.error(500, "injected server error"),
    lambda: Fault.error(429, "injected rate limit"),
    lambda: Fault.error(503, "injected overload"),
    Fault.drop, Fault.broken, Fault.malformed, Fault.empty, Fault.no_choices,
)  # fmt: skip


class ScriptExhausted(Exception):
    """The scripted replies ran out; the server answers HTTP 418 so the failure is loud."""


def script(replies: Iterable[str | Reply]) -> Responder:
    queue = [r if isinstance(r, Reply) else Reply(r) for r in replies]

    def respond(_: dict[str, Any]) -> Reply:
        if not queue:
            raise ScriptExhausted("the fake server's script ran out of replies")
        return queue.pop(0)

    return respond


@dataclass
class FakeServer:
    """A context manager: ``with FakeServer(responder) as srv: ... srv.base_url``.

    It serves on its own event loop in a background thread (aiohttp), so thousands of requests
    can wait out their ``latency`` at once. Leaving the context closes every connection, requests
    in flight included (as a server that is killed would). ``port`` may name the port to listen
    on (a server restarted where a killed one was).
    """

    responder: Responder
    latency: float = 0.0  # each reply leaves this long after its request arrived
    faults: list[Fault] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # each kept request's headers
    port: int = 0
    #: keep every request's body in ``requests`` (a benchmark's millions of calls keep none)
    keep_requests: bool = True
    #: the model names ``GET /v1/models`` lists (none: any name is served)
    models: tuple[str, ...] = ()
    #: with no fault queued, the share of requests answered by one of :data:`FAULTY` (drawn
    #: with ``fault_seed``, so a rerun meets the same faults in the same order)
    fault_rate: float = 0.0
    fault_seed: int = 0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.fault_seed)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeServer:
        sock = loopback_socket(self.port)
        self.port = int(sock.getsockname()[1])
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(sock), loop).result()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        loop, runner = self._loop, self._runner
        if loop is None:
            return
        if runner is not None:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join()
        loop.close()
        self._loop = self._runner = self._thread = None

    async def _start(self, sock: socket.socket) -> None:
        app = web.Application(client_max_size=1 << 30)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    def _next(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[Fault | None, Reply | None, str | None]:
        with self._lock:
            if self.keep_requests:
                self.requests.append(body)
                self.headers.append(headers)
            fault = self.faults.pop(0) if self.faults else None
            if fault is None and self.fault_rate and self._rng.random() < self.fault_rate:
                fault = self._rng.choice(FAULTY)()
        if fault is not None and fault.kind not in ("slow", "broken"):
            return fault, None, None
        try:
            return fault, self.responder(body), None
        except ScriptExhausted as exc:
            return None, None, str(exc)

    async def _models(self, _: web.Request) -> web.StreamResponse:
        data = [{"id": name, "object": "model", "owned_by": "taskgate"} for name in self.models]
        return _json(200, {"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        arrived = time.monotonic()
        try:
            body = orjson.loads(await request.read() or b"{}")
        except orjson.JSONDecodeError as exc:
            return _json(400, {"error": {"message": f"the request body is not JSON: {exc}"}})
        if not isinstance(body, dict):
            return _json(400, {"error": {"message": "the request body is not a JSON object"}})
        fault, reply, exhausted = self._next(
            body, {k.lower(): v for k, v in request.headers.items()}
        )
        if self.latency:  # a model's service time: its own work included, as a real server's is
            await asyncio.sleep(max(0.0, self.latency - (time.monotonic() - arrived)))
        if exhausted is not None:
            return _json(418, {"error": {"message": exhausted, "type": "script_exhausted"}})
        if fault is not None:
            if fault.kind == "slow":
                await asyncio.sleep(fault.seconds)
            elif fault.kind == "status":
                return _json(fault.status, {"error": {"message": fault.message, "type": "fault"}})
            elif fault.kind == "drop":
                if request.transport is not None:
                    request.transport.abort()  # no response: the client sees the connection drop
                return web.Response()
            elif fault.kind == "malformed":
                return _raw(200, b'{"id": "x", "choices": [{"message": ')
            elif fault.kind == "empty":
                reply = Reply("", reasoning="thinking... " * 50)
            elif fault.kind in NOT_REPLIES:
                return _not_a_reply(fault.kind, body)
        assert reply is not None
        broken = fault is not None and fault.kind == "broken"
        if body.get("stream"):
            return await _stream(request, body, reply, broken=broken)
        if broken:
            return await _cut(request, orjson.dumps(_completion(body, reply)))
        return _json(200, _completion(body, reply))


async def _cut(request: web.Request, data: bytes) -> web.StreamResponse:
    """A 200 whose body breaks off half-way: the length promised, half of it sent, the
    connection cut."""
    response = web.StreamResponse(
        status=200, headers={"Content-Type": "application/json", "Content-Length": str(len(data))}
    )
    await response.prepare(request)
    await response.write(data[: len(data) // 2])
    if request.transport is not None:
        request.transport.abort()
    return response


#: streamed replies come in pieces this long (a booking line or a tool call's arguments are split)
STREAM_PIECE = 5


async def _stream(
    request: web.Request, body: dict[str, Any], reply: Reply, *, broken: bool
) -> web.StreamResponse:
    """The reply as OpenAI's SSE chunks: content and each call's arguments split into pieces, a
    finish chunk, a usage chunk when ``stream_options.include_usage`` asks for one, ``[DONE]``."""
    whole = _completion(body, reply)
    head = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + orjson.dumps({**head, "choices": [choice]}) + b"\n\n"

    parts = [chunk({"role": "assistant", "content": ""})]
    text = reply.content
    parts += [
        chunk({"content": text[i : i + STREAM_PIECE]}) for i in range(0, len(text), STREAM_PIECE)
    ]
    for n, call in enumerate(whole["choices"][0]["message"].get("tool_calls") or []):
        fn = call["function"]
        parts.append(chunk({"tool_calls": [{"index": n, "id": call["id"], "type": "function",
                                            "function": {"name": fn["name"], "arguments": ""}}]}))  # fmt: skip
        args = fn["arguments"]
        parts += [
            chunk(
                {
                    "tool_calls": [
                        {"index": n, "function": {"arguments": args[i : i + STREAM_PIECE]}}
                    ]
                }
            )
            for i in range(0, len(args), STREAM_PIECE)
        ]
    parts.append(chunk({}, whole["choices"][0]["finish_reason"]))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {**head, "choices": [], "usage": whole["usage"]}
        parts.append(b"data: " + orjson.dumps(usage) + b"\n\n")
    parts.append(b"data: [DONE]\n\n")
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for i, part in enumerate(parts):
        if broken and i >= len(parts) // 2:
            if request.transport is not None:
                request.transport.abort()
            return response
        await response.write(part)
    await response.write_eof()
    return response


def loopback_socket(port: int = 0) -> socket.socket:
    """A TCP socket bound to ``127.0.0.1:port`` (0: a free port), reusable after a killed server."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    return sock


def _not_a_reply(kind: str, body: dict[str, Any]) -> web.StreamResponse:
    if kind == "html":
        return _raw(200, _HTML, "text/html; charset=utf-8")
    if kind == "empty_object":
        return _json(200, {})
    if kind == "foreign":
        return _json(200, {"hello": "world"})
    obj = _completion(body, Reply("x"))
    if kind == "no_choices":
        obj["choices"] = []
    else:
        obj["choices"][0]["message"]["content"] = None
    return _json(200, obj)


def _json(status: int, obj: dict[str, Any]) -> web.StreamResponse:
    return _raw(status, orjson.dumps(obj))


def _raw(status: int, data: bytes, content_type: str = "application/json") -> web.StreamResponse:
    return web.Response(status=status, body=data, headers={"Content-Type": content_type})


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["content"] = reply.content or None
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in reply.tool_calls
        ]
    completion_tokens = max(1, len(reply.content) // 4)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_chars // 4,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_chars // 4 + completion_tokens,
        },
    }


# -- a protocol-following model ------------------------------------------------------------------
_WO = re.compile(r"\(#W(\d+)\)")
_DIRECTIVE = re.compile(
    r"\[TASK-STATE\] step (\S+) (is ELIGIBLE|is DONE but|was CANCELLED|is already DONE|is BLOCKED)"
)
_STEP_LINE = re.compile(r"^- (\S+): (.*)$", re.MULTILINE)
_ACTION = re.compile(r'^ACTION \{"tool": "([^"]+)", "work_order": "(#W\d+)"\}$', re.MULTILINE)


def protocol_responder(body: dict[str, Any]) -> Reply:
    """Answer compiler, matcher and agent prompts the way a careful, obedient model would."""
    messages = body.get("messages", [])
    last = str(messages[-1].get("content", "")) if messages else ""
    if _MEM0_NEW in last and _MEM0_END in last:
        return Reply(json.dumps({"memory": _mem0_facts(last)}))
    if GRAPH_PROMPT in last or TOOL_GRAPH_PROMPT in last:
        plan = parse_brief(last)
        key = "tool" if plan.binding == "tool" else "code"
        steps = {s: {"deps": list(spec.deps), key: plan.key(s)} for s, spec in plan.steps.items()}
        return Reply(json.dumps({"steps": steps}))
    if last.startswith("Known project steps:"):
        head, _, rest = last.partition("\n\nPROJECT UPDATE:\n")
        message = rest.split("\n\nExtract the update as JSON:")[0]
        plan = _listed(head)
        rev = parse_revision(plan, message)
        relax = list(rev.relax) if rev.relax else None
        return Reply(
            json.dumps(
                {
                    "cancel": rev.cancel,
                    "rewires": {w: list(p) for w, p in rev.rewires.items()},
                    "relax": relax,
                }
            )
        )
    if last.startswith("You route user messages"):
        head, _, rest = last.partition("\n\nUSER MESSAGE: ")
        message = rest.split("\n\nWhich single step")[0]
        m = LexicalMatcher().match_now(_listed(head), message)
        return Reply(json.dumps({"step": m.step, "explicit_redo": m.explicit_redo}))
    if messages and (messages[-1].get("role") == "tool" or last.startswith("[TOOL RESULTS]")):
        return Reply("Noted; the results are above.")  # a harness hop after tool results
    return _tool_reply(body, _agent_reply(messages, last))


#: Mem0's extraction prompt: the exchange to remember sits between these two headings
_MEM0_NEW, _MEM0_END = "## New Messages\n", "\n## Observation Date"


def _mem0_facts(prompt: str) -> list[dict[str, str]]:
    """Mem0's extraction, played deterministically: one fact for the request, one per booking line
    of the reply (as a memory system's prose: "Completed RC-... under work order #W...")."""
    new = prompt.split(_MEM0_NEW, 1)[1].split(_MEM0_END, 1)[0]
    facts: list[str] = []
    for role, content in _ROLE_LINE.findall(new):
        if role == "user":
            facts.append(f"The user asked: {content.strip()[:200]}")
        facts += [f"Completed {c} under work order {w}" for c, w in _BOOKING_LINE.findall(content)]
    return [{"id": str(i), "text": f} for i, f in enumerate(facts)]


#: Mem0 lays the new messages out as ``role: content`` blocks
_ROLE_LINE = re.compile(r"^(user|assistant): (.*?)(?=^(?:user|assistant): |\Z)", re.M | re.S)
_BOOKING_LINE = re.compile(r"ref\s+(RC-[0-9]+)\s*/\s*(#W[0-9]+)")


def careless_responder(rate: float = 0.3) -> Responder:
    """:func:`protocol_responder`, except that on a share ``rate`` of requests it ignores the task
    state (directive lines) and does what the message seems to ask. Which requests is decided by a
    hash of the request's work order, so every arm and every rerun meets the same lapses."""

    def respond(body: dict[str, Any]) -> Reply:
        messages = body.get("messages", [])
        last = str(messages[-1].get("content", "")) if messages else ""
        wo = _WO.findall(last)
        if wo and _lapse(wo[-1]) < rate:
            cleaned = [
                {**m, "content": _DIRECTIVE_LINE.sub("", str(m.get("content", "")))}
                for m in messages
            ]
            return protocol_responder({**body, "messages": cleaned})
        return protocol_responder(body)

    return respond


_DIRECTIVE_LINE = re.compile(r"^\[TASK-STATE\].*$", re.MULTILINE)


def _lapse(work_order: str) -> float:
    digest = hashlib.sha256(work_order.encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


def _tool_reply(body: dict[str, Any], text: str) -> Reply:
    """An agent reply; given function tools, its ACTION lines become native tool calls."""
    if not body.get("tools"):
        return Reply(text)
    calls = tuple(ToolCall(m.group(1), {"work_order": m.group(2)}) for m in _ACTION.finditer(text))
    return Reply(_ACTION.sub("", text).strip(), tool_calls=calls)


def _listed(text: str) -> Plan:
    return Plan(
        steps={s: StepSpec(code="RC-0", text=t) for s, t in _STEP_LINE.findall(text)}
        or {"s1": StepSpec(code="RC-0")}
    )


def _agent_reply(messages: list[dict[str, Any]], last: str) -> str:
    system = str(messages[0].get("content", "")) if messages else ""
    codes = {
        s: c
        for s, c in re.findall(r"^- (\S+): .*\[completion code (RC-\d+)\]$", system, re.MULTILINE)
    }
    tools = dict(re.findall(r"^- (\S+): .*\[tool: ([^\]]+)\]$", system, re.MULTILINE))
    wo = _WO.findall(last)
    directive = _DIRECTIVE.search(system + "\n" + last)
    if not wo:
        return "Noted."
    if directive is None:
        steps = dict(brief_steps(system))
        m = LexicalMatcher().match_now(
            Plan(steps={s: StepSpec(code="RC-0", text=t) for s, t in steps.items()}), last
        )
        step = m.step
    elif directive.group(2) in ("is ELIGIBLE", "is DONE but"):
        step = directive.group(1)
    else:
        return f"Following the task state, I will not perform {directive.group(1)} now."
    if step is not None and step in tools:
        return f'Working on {step}.\nACTION {{"tool": "{tools[step]}", "work_order": "#W{wo[-1]}"}}'
    if step is None or step not in codes:
        return "Which step do you mean?"
    return f"Working on {step}.\nref {codes[step]}/#W{wo[-1]}"
