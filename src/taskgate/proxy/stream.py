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

from .errors import ProxyError
from .gating import Judged, judge_calls, judge_text

_REF = re.compile("ref", re.IGNORECASE)
_SP, _MD, _DASH = r"\s*", r"[\s*_~`]*", r"(?:[-\u2010-\u2013]\s*)?"
#: a booking begun but possibly not finished: all of it must still be held
_INCOMPLETE = re.compile(
    rf"ref{_MD}(?::{_MD})?(?:RC{_SP}{_DASH}(?:[0-9]+{_MD}(?:/{_MD}(?:#{_SP})?(?:W{_SP}{_DASH})?)?)?)?",
    re.IGNORECASE,
)
#: text held this long without deciding is held to the end of the reply
HOLD_LIMIT = 4096


class HeldText:
    """Content deltas in, releasable text out: booking lines are released only once judged by
    ``judge`` (which returns its argument with refused bookings taken out)."""

    def __init__(self, judge: Callable[[str], str]) -> None:
        self._judge = judge
        self._buf = ""
        self._prev = ""  # the last released character (a booking needs no letter before 'ref')
        self._holding = False
        self._stuck = False
        self._scan = 0

    def feed(self, text: str) -> str:
        self._buf += text
        return self._release(final=False)

    def end(self) -> str:
        return self._release(final=True)

    def _judged(self, text: str) -> str:
        out = self._judge(self._prev + text)[len(self._prev) :]
        self._holding, self._scan = False, 0
        return out

    def _out(self, out: list[str], text: str) -> None:
        if text:
            out.append(text)
            self._prev = text[-1]

    def _release(self, *, final: bool) -> str:
        out: list[str] = []
        while self._buf:
            if self._stuck or (self._holding and final):
                if final:
                    self._out(out, self._judged(self._buf))
                    self._buf = ""
                break
            if not self._holding:
                m = _REF.search(self._buf)
                cut = m.start() if m else len(self._buf) - (0 if final else _partial(self._buf))
                self._out(out, self._buf[:cut])
                self._buf = self._buf[cut:]
                if m is None:
                    break
                self._holding = True
                continue
            nl = self._buf.find("\n", self._scan)
            if nl < 0 or nl > HOLD_LIMIT:
                self._stuck = len(self._buf) > HOLD_LIMIT
                break
            head = self._buf[: nl + 1]
            if _INCOMPLETE.fullmatch(head, head.lower().rfind("ref")):
                self._scan = nl + 1
                continue
            self._out(out, self._judged(head))
            self._buf = self._buf[nl + 1 :]
        return "".join(out)


def _partial(text: str) -> int:
    """How many trailing characters could begin a 'ref' (held until the next delta)."""
    tail = text[-2:].lower()
    return 2 if tail == "re" else 1 if tail[-1:] == "r" else 0


async def stream(call: Any, forward: dict[str, Any], started: float) -> Response:
    """The gated stream of ``forward``'s reply (the call's lock is released when it ends)."""
    proxy = call.proxy
    request = proxy.http.build_request(
        "POST", f"{proxy.upstream}/chat/completions", content=orjson.dumps(forward),
        headers=call.headers,
    )  # fmt: skip
    t0 = time.perf_counter()
    try:
        upstream = await proxy.http.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise ProxyError(502, f"the upstream failed: {exc!r}", "upstream_error") from None
    if upstream.status_code != 200:
        content = await upstream.aread()
        await upstream.aclose()
        call.rollback()
        media = upstream.headers.get("content-type", "application/json")
        return Response(content, upstream.status_code, media_type=media)
    call.waited += time.perf_counter() - t0
    call.owns_lock = True
    return StreamingResponse(_gated(call, upstream, started), media_type="text/event-stream")


async def _gated(call: Any, upstream: httpx.Response, started: float) -> AsyncIterator[bytes]:
    machine, arm = call.conv.machine, call.proxy.arm
    judged = Judged()
    code_bound = machine.graph.binding == "code"
    held = HeldText(lambda text: judge_text(machine, arm, text, judged) if code_bound else text)
    reply = _Reply()
    written = False
    try:
        async for data in _sse(upstream, call):
            if data == "[DONE]":
                break
            chunk = orjson.loads(data)
            choices = chunk.get("choices") if isinstance(chunk, dict) else None
            if not isinstance(choices, list) or not choices:  # usage-only (or an error object)
                if not isinstance(chunk, dict) or "error" in chunk:
                    raise ProxyError(502, f"the upstream stream sent no reply: {data[:200]}")
                sent = time.perf_counter()
                yield _event(chunk)
                call.waited += time.perf_counter() - sent  # the client's reading
                continue
            reply.template = {k: v for k, v in chunk.items() if k != "choices"}
            choice = choices[0] if isinstance(choices[0], dict) else {}
            delta = choice.get("delta") or {}
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
            if finish_reason is not None and not written:
                outs = await _finish(call, held, reply, judged, finish_reason)
                written = True  # in the journal: from here on the turn stands
                for out in outs:
                    sent = time.perf_counter()
                    yield out
                    call.waited += time.perf_counter() - sent  # the client's reading
        if not written:
            raise ProxyError(502, "the upstream stream ended before its reply finished")
        yield b"data: [DONE]\n\n"
        call.proxy.overheads.samples.append(time.perf_counter() - started - call.waited)
    except Exception as exc:  # fail closed: nothing held is released
        message = str(exc) or repr(exc)
        yield _event({"error": {"message": f"taskgate proxy: {message}", "type": "upstream_error"}})
    finally:
        if not written:  # nothing was written: the conversation is as it was
            call.rollback()
        await upstream.aclose()
        call.release()


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
    call: Any, held: HeldText, reply: _Reply, judged: Judged, finish_reason: str
) -> list[bytes]:
    """The choice finished: judge what was held, write the turn, and release the rest."""
    from .server import finish

    machine, arm = call.conv.machine, call.proxy.arm
    sent = "".join(reply.returned)
    text = sent + held.end()
    ordered = [reply.calls[i] for i in sorted(reply.calls)]
    kept: list[Any] = ordered
    if ordered and machine.graph.binding == "tool":
        kept, refusals = judge_calls(machine, arm, ordered, judged)
        if refusals:
            text = "\n\n".join([text, *refusals] if text else refusals)
    await finish(call, "".join(reply.original), text, judged)
    out = [reply.chunk({"content": text[len(sent) :]})] if len(text) > len(sent) else []
    out += [reply.chunk({"tool_calls": [{**c, "index": i}]}) for i, c in enumerate(kept)]
    out.append(reply.chunk({}, "stop" if ordered and not kept else finish_reason))
    return out


def _gather(calls: dict[int, dict[str, Any]], deltas: object) -> None:
    if not isinstance(deltas, list):
        return
    for d in deltas:
        if not isinstance(d, dict):
            continue
        index = d.get("index", 0)
        call = calls.setdefault(
            index if isinstance(index, int) else 0,
            {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
        )
        if isinstance(d.get("id"), str):
            call["id"] = d["id"]
        fn = d.get("function")
        if isinstance(fn, dict):
            for part in ("name", "arguments"):
                if isinstance(fn.get(part), str):
                    call["function"][part] += fn[part]


async def _sse(upstream: httpx.Response, call: Any) -> AsyncIterator[str]:
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
        "POST", f"{proxy.upstream}/chat/completions", content=orjson.dumps(body), headers=headers
    )
    try:
        upstream = await proxy.http.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise ProxyError(502, f"the upstream failed: {exc!r}", "upstream_error") from None

    async def relay() -> AsyncIterator[bytes]:
        try:
            async for part in upstream.aiter_raw():
                yield part
        finally:
            await upstream.aclose()

    media = upstream.headers.get("content-type", "text/event-stream")
    return StreamingResponse(relay(), upstream.status_code, media_type=media)
