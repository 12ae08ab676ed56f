"""Streamed replies (SSE), gated and failing closed.

Content deltas go to the client at once, except from a ``ref`` on: the rest of that line is held
until the line ends (longer while a booking could still be completing across it) and then judged,
with refused booking lines taken out exactly as in a whole reply. Tool-call deltas are gathered
per index and released, judged, when the choice finishes: the admitted calls in one delta each,
re-indexed from 0, then the finish chunk. Usage-only chunks and ``[DONE]`` are forwarded. If the
upstream stream breaks, the client gets an error event instead of whatever was held: no refused
call, no unjudged booking, and nothing written.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import orjson
from starlette.responses import Response, StreamingResponse

from taskgate.proxy.gating import Judged, judge_text, unbound_calls
from taskgate.proxy.session import Call, finish
from taskgate.proxy.telling import told, told_later
from taskgate.serving.errors import HttpError, dumps
from taskgate.serving.failures import describe

_REF = re.compile("ref", re.IGNORECASE)
_SP, _MD, _DASH = r"\s*", r"[\s*_~`]*", r"(?:[-\u2010-\u2013]\s*)?"
#: a booking begun but possibly not finished: all of it must still be held
_INCOMPLETE = re.compile(
    rf"ref{_MD}(?::{_MD})?(?:RC{_SP}{_DASH}(?:[0-9]+{_MD}(?:/{_MD}(?:#{_SP})?(?:W{_SP}{_DASH})?)?)?)?",
    re.IGNORECASE,
)
#: text held this long without deciding is held to the end of the reply
HOLD_LIMIT = 4096
#: a booking's beginning that runs on this long (spaces, newlines) is held to the end of the reply
PREFIX_LIMIT = 256


class HeldText:
    """Content deltas in, releasable text out: booking lines are released only once judged by
    ``judge`` (which returns its argument with refused bookings taken out).

    Linear in the reply: while a line is held, deltas without a newline are only queued; a held
    line longer than :data:`HOLD_LIMIT` is held to the end without being scanned again."""

    def __init__(self, judge: Callable[[str], str]) -> None:
        self._judge = judge
        self._pending: list[str] = []  # unreleased text, in the pieces it came in
        self._size = 0
        self._prev = ""  # the last released character (a booking needs no letter before 'ref')
        self._holding = False
        self._stuck = False

    def feed(self, text: str) -> str:
        self._pending.append(text)
        self._size += len(text)
        if self._stuck or (self._holding and "\n" not in text):
            self._stuck = self._stuck or self._size > HOLD_LIMIT
            return ""
        return self._release(final=False)

    def end(self) -> str:
        return self._release(final=True)

    def _judged(self, text: str) -> str:
        self._holding = False
        return self._judge(self._prev + text)[len(self._prev) :]

    def _emit(self, out: list[str], text: str) -> None:
        if text:
            out.append(text)
            self._prev = text[-1]

    def _release(self, *, final: bool) -> str:
        buf = "".join(self._pending)
        out: list[str] = []
        at = self._scan(buf, out, final) if not self._stuck else 0
        rest = buf[at:]
        if final and rest:
            self._emit(out, self._judged(rest) if self._holding or self._stuck else rest)
            rest = ""
        self._pending, self._size = ([rest], len(rest)) if rest else ([], 0)
        self._stuck = self._stuck or (self._holding and self._size > HOLD_LIMIT)
        return "".join(out)

    def _scan(self, buf: str, out: list[str], final: bool) -> int:
        """Release what can go from ``buf``; return where the unreleased text starts."""
        at, scan = 0, 0
        while at < len(buf):
            if not self._holding:
                m = _REF.search(buf, at)
                if m is None:
                    cut = len(buf) - (0 if final else _partial(buf, at))
                    self._emit(out, buf[at:cut])
                    return cut
                self._emit(out, buf[at : m.start()])
                at = scan = m.start()
                self._holding = True
            nl = buf.find("\n", scan)
            if nl < 0 or nl - at > HOLD_LIMIT:
                return at
            head = buf[at : nl + 1]
            last = head.lower().rfind("ref")
            if _INCOMPLETE.fullmatch(head, last):  # a booking may go on past this line
                if len(head) - last > PREFIX_LIMIT:  # a prefix padded this long: hold to the end
                    self._stuck = True
                    return at
                scan = nl + 1
                continue
            self._emit(out, self._judged(head))
            at = nl + 1
        return at


def _partial(text: str, start: int) -> int:
    """How many trailing characters of ``text[start:]`` could begin a 'ref' (held until the next
    delta)."""
    tail = text[max(start, len(text) - 2) :].lower()
    return 2 if tail == "re" else 1 if tail[-1:] == "r" else 0


def unjudged(status: int) -> None:
    """A 502 for an answer of the upstream's the gate does not judge but a client would take as
    a completion (any 2xx but 200): passing it on would hand out its tool calls unjudged. Errors
    (4xx, 5xx) pass through as the upstream wrote them: no client acts on their body."""
    if 200 <= status < 300:
        raise HttpError(
            502,
            f"the upstream answered HTTP {status}; the gate judges only 200 answers and passes "
            "on no other success",
            "upstream_error",
        )


async def stream(call: Call, forward: dict[str, Any], started: float) -> Response:
    """The gated stream of ``forward``'s reply (the call's lock is released when it ends)."""
    proxy = call.proxy
    request = proxy.http.build_request(
        "POST", f"{proxy.upstream}/chat/completions",
        content=dumps(forward, 400, "the request"), headers=call.headers,
    )  # fmt: skip
    t0 = time.perf_counter()
    try:
        upstream = await proxy.http.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise HttpError(
            502, f"the upstream at {proxy.upstream} failed: {describe(exc)}", "upstream_error"
        ) from None
    if upstream.status_code != 200:
        content = await upstream.aread()
        await upstream.aclose()
        call.rollback()
        unjudged(upstream.status_code)
        media = upstream.headers.get("content-type", "application/json")
        return Response(content, upstream.status_code, media_type=media)
    call.waited += time.perf_counter() - t0
    call.owns_lock = True
    return StreamingResponse(
        _gated(call, upstream, started, forward), media_type="text/event-stream"
    )


async def _gated(
    call: Call, upstream: httpx.Response, started: float, forward: dict[str, Any]
) -> AsyncIterator[bytes]:
    machine, arm = call.conv.machine, call.proxy.arm
    judged = Judged()
    tool_bound = machine.graph.binding == "tool"  # native calls judged; else booking lines
    held = HeldText(lambda text: text if tool_bound else judge_text(machine, arm, text, judged))
    reply = _Reply()
    try:
        async for data in _sse(upstream, call):
            if data == "[DONE]":
                break
            chunk = orjson.loads(data)
            choices = chunk.get("choices") if isinstance(chunk, dict) else None
            if not isinstance(choices, list) or not choices:  # usage-only (or an error object)
                if not isinstance(chunk, dict) or "error" in chunk:
                    raise HttpError(502, f"the upstream stream sent no reply: {data[:200]}")
                sent = time.perf_counter()
                yield _event(chunk)
                call.waited += time.perf_counter() - sent  # the client's reading
                continue
            if call.written:  # the reply finished: nothing after it is passed on, or judged
                continue
            choice, delta = _one_choice(choices, tool_bound)
            reply.template = {k: v for k, v in chunk.items() if k != "choices"}
            text = delta.get("content")
            released = ""
            if isinstance(text, str) and text:
                reply.original.append(text)
                released = held.feed(text)
            _gather(reply.calls, delta.get("tool_calls"))
            rest = {k: v for k, v in delta.items() if k not in ("content", "tool_calls")}
            finish_reason = choice.get("finish_reason")
            if released or any(v is not None for v in rest.values()):
                reply.returned.append(released)
                untouched = released == (text or "") and "tool_calls" not in delta
                sent = time.perf_counter()
                if untouched and finish_reason is None and len(choices) == 1:
                    yield b"data: " + data.encode() + b"\n\n"  # as it came
                else:
                    yield reply.chunk({**rest, "content": released})
                call.waited += time.perf_counter() - sent  # the client's reading
            if finish_reason is not None:
                for out in await _finish(call, held, reply, judged, finish_reason, forward):
                    sent = time.perf_counter()
                    yield out
                    call.waited += time.perf_counter() - sent  # the client's reading
        if not call.written:
            raise HttpError(502, "the upstream stream ended before its reply finished")
        yield b"data: [DONE]\n\n"
        call.proxy.overheads.add(time.perf_counter() - started - call.waited)
    except Exception as exc:  # fail closed: nothing held is released
        message = str(exc) or repr(exc)
        yield _event({"error": {"message": f"taskgate proxy: {message}", "type": "upstream_error"}})
    finally:
        call.rollback()  # unless it was written, the conversation is as it was
        call.release()
        await upstream.aclose()


class _Reply:
    """A streamed reply as it comes: its content, what was released, its gathered tool calls."""

    def __init__(self) -> None:
        self.original: list[str] = []
        self.returned: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.template: dict[str, Any] = {}

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice: dict[str, Any] = {"index": 0, "delta": delta}
        if finish_reason is not None:
            choice["finish_reason"] = finish_reason
        return _event({**self.template, "choices": [choice]})


async def _finish(
    call: Call,
    held: HeldText,
    reply: _Reply,
    judged: Judged,
    finish_reason: str,
    forward: dict[str, Any],
) -> list[bytes]:
    """The choice finished: judge what was held, write the turn, and release the rest. In plan
    mode a reply whose every call was refused is told to the agent, and its next reply follows
    what was streamed (:mod:`taskgate.proxy.telling`)."""
    machine = call.conv.machine
    sent = "".join(reply.returned)
    text = sent + held.end()
    ordered = [_assembled(reply.calls[i]) for i in sorted(reply.calls)]
    kept: list[Any] = ordered
    original = "".join(reply.original)
    reason = finish_reason
    if ordered:
        since = len(judged.refused)
        kept, refusals = (
            call.judge_calls(ordered, judged)
            if machine.graph.binding == "tool"
            else unbound_calls(call.proxy.arm, ordered, call.proxy.config.unbound)
        )
        reason = "stop" if not kept else finish_reason
        again = None if kept else await told(call, forward, {}, original, judged)
        if again is not None:  # the agent's own words after its refused calls
            text = "\n\n".join([text, again.returned] if text else [again.returned])
            kept = list(again.message.get("tool_calls") or [])
            reason = str(again.choice.get("finish_reason") or "stop")
            original = "\n\n".join(again.originals)
        elif refusals and not told_later(call, judged, since, kept):
            text = "\n\n".join([text, *refusals] if text else refusals)
    out = [reply.chunk({"content": text[len(sent) :]})] if len(text) > len(sent) else []
    out += [reply.chunk({"tool_calls": [{**c, "index": i}]}) for i, c in enumerate(kept)]
    out.append(reply.chunk({}, reason))
    await finish(call, original, text, judged, calls=kept, finish_reason=reason)  # written last
    return out


def _one_choice(choices: list[Any], tool_bound: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The chunk's one choice and its delta; anything the gate cannot judge fails the stream."""
    choice = choices[0]
    delta = choice.get("delta") if isinstance(choice, dict) else None
    if len(choices) != 1 or not isinstance(delta, dict) or choice.get("index", 0) != 0:
        raise HttpError(502, "the upstream streamed a choice the gate cannot judge")
    content = delta.get("content")
    if content is not None and not isinstance(content, str):
        raise HttpError(502, "the upstream streamed content that is not text")
    if tool_bound and delta.get("function_call"):
        raise HttpError(502, "the upstream streamed a legacy function call the gate cannot judge")
    return choice, delta


def _gather(calls: dict[int, dict[str, Any]], deltas: object) -> None:
    """Add tool-call deltas to the calls being gathered (argument pieces kept in lists)."""
    if deltas is None:
        return
    if not isinstance(deltas, list):
        raise HttpError(502, "the upstream streamed tool calls the gate cannot read")
    for d in deltas:
        if not isinstance(d, dict):
            raise HttpError(502, "the upstream streamed tool calls the gate cannot read")
        index = d.get("index", 0)
        call = calls.setdefault(
            index if isinstance(index, int) else 0, {"id": "", "name": [], "arguments": []}
        )
        if isinstance(d.get("id"), str):
            call["id"] = d["id"]
        fn = d.get("function")
        if isinstance(fn, dict):
            for part in ("name", "arguments"):
                if isinstance(fn.get(part), str):
                    call[part].append(fn[part])


def _assembled(call: dict[str, Any]) -> dict[str, Any]:
    fn = {"name": "".join(call["name"]), "arguments": "".join(call["arguments"])}
    return {"id": call["id"], "type": "function", "function": fn}


async def _sse(upstream: httpx.Response, call: Call) -> AsyncIterator[str]:
    """The ``data:`` payloads of an SSE stream, in order (time spent waiting on the upstream is
    counted as the call's waiting)."""
    lines = upstream.aiter_lines().__aiter__()
    while True:
        start = time.perf_counter()
        try:
            line = await lines.__anext__()
        except StopAsyncIteration:
            return
        finally:
            call.waited += time.perf_counter() - start
        if line.startswith("data:"):
            yield line[5:].strip()


def _event(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


async def relay_stream(proxy: Any, headers: dict[str, str], body: dict[str, Any]) -> Response:
    """An ungated stream, passed through byte for byte."""
    request = proxy.http.build_request(
        "POST",
        f"{proxy.upstream}/chat/completions",
        content=dumps(body, 400, "the request"),
        headers=headers,
    )
    try:
        upstream = await proxy.http.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise HttpError(
            502, f"the upstream at {proxy.upstream} failed: {describe(exc)}", "upstream_error"
        ) from None

    async def relay() -> AsyncIterator[bytes]:
        try:
            async for part in upstream.aiter_raw():
                yield part
        finally:
            await upstream.aclose()

    media = upstream.headers.get("content-type", "text/event-stream")
    return StreamingResponse(relay(), upstream.status_code, media_type=media)
