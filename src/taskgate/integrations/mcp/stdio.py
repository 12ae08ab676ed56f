"""The MCP gate over stdio, lean on both sides: newline-delimited JSON-RPC read and written with
orjson on asyncio pipes, one task per request.

* :class:`StdioFront` serves the one client that started the gate (a desktop client): the
  handshake-era protocol as :mod:`.front` serves it over HTTP, with the same answers
  (:func:`.front.dispatch`): ``initialize``, ``ping``, ``tools/list``, ``tools/call``; the 2026
  discovery probe is "method not found", so clients fall back to the handshake; a
  ``notifications/cancelled`` cancels its request (a call being forwarded is then in doubt, as
  when the client goes away).
* :class:`StdioUpstream` starts an upstream MCP server as a child process and calls it, as
  :class:`.upstream.HttpUpstream` does over HTTP: a request the server makes of the client is
  answered "not supported" (``ping`` is answered), a server that exits or stops answering fails
  the calls it holds with :class:`~.upstream.UpstreamError` (they may have run: in doubt).

Why not the SDK's stdio transports: their memory streams and task groups cost 2.5 to 3.5 ms of
CPU per call on the two sides of the gate, ten times the gate's own judging
(``bench/bench_mcp.py``). The SDK's stdio server stays available (:func:`.server.serve_stdio`)
for a client that speaks only the 2026 protocol.

Lines are split as they arrive, in time linear in their length; a line over :data:`MAX_LINE`
bytes is skipped whole and answered with a parse error.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, BinaryIO

import mcp_types as types
import orjson
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.exceptions import MCPError
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from taskgate.errors import TaskgateError
from taskgate.integrations.mcp.front import Call, dispatch, initialize_result
from taskgate.integrations.mcp.upstream import (
    INITIALIZE,
    McpClient,
    NotSent,
    UpstreamError,
    encoded,
    mcp_error,
)

log = logging.getLogger("taskgate.mcp")

#: the longest message read, in bytes (as the HTTP surfaces' largest body)
MAX_LINE = 64 << 20
_CHUNK = 1 << 16
#: after the client closes its end: how long calls still being forwarded may take to finish
DRAIN_S = 10.0
#: how long an upstream may take to exit after its stdin is closed, then after SIGTERM
EXIT_GRACE_S = 2.0
#: how long an upstream may take to answer ``initialize``
INITIALIZE_S = 30.0
#: how long the client's user may take to answer a held call's elicitation
ELICIT_S = 600.0


class Lines:
    """Newline-delimited messages from a byte stream, each scanned once (a line over ``limit``
    bytes comes out as ``None``, once, and is dropped)."""

    def __init__(self, read: Callable[[int], Awaitable[bytes]], limit: int = MAX_LINE) -> None:
        self.read, self.limit = read, limit

    async def __aiter__(self) -> AsyncIterator[bytes | None]:
        pending, skipping = bytearray(), False
        while True:
            chunk = await self.read(_CHUNK)
            if not chunk:
                if pending and not skipping:
                    yield bytes(pending)
                return
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                if skipping:
                    skipping = False
                elif len(pending) + end - start > self.limit:
                    yield None
                else:
                    pending += chunk[start:end]
                    yield bytes(pending)
                pending.clear()
                start = end + 1
            if not skipping:
                pending += chunk[start:]
                if len(pending) > self.limit:
                    pending.clear()
                    skipping = True
                    yield None


def _message(line: bytes | None) -> tuple[Any, dict[str, Any] | None]:
    """A line as a JSON-RPC message, or the error to answer it with (id null)."""
    if line is None:
        return None, _error(
            None, types.PARSE_ERROR, f"Parse error: a message over {MAX_LINE} bytes"
        )
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return None, _error(None, types.PARSE_ERROR, f"Parse error: not JSON: {exc}")
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None, _error(None, types.INVALID_REQUEST, "Invalid request: not JSON-RPC 2.0")
    return message, None


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message[:500]}}


def _valid_id(ident: Any) -> bool:
    return isinstance(ident, str | int) and not isinstance(ident, bool)


# -- the gate's side: one client over its stdin and stdout ---------------------------------------
class StdioFront:
    """The gate's MCP endpoint on a byte stream pair (the process's stdin and stdout)."""

    def __init__(self, state: Any, call: Call, key: str) -> None:
        self.state, self.call, self.key = state, call, key
        self.version = LATEST_HANDSHAKE_VERSION
        self.tasks: dict[Any, asyncio.Task[None]] = {}
        self._write: Callable[[bytes], Awaitable[None]] | None = None
        #: the client declared elicitation: a held call's question goes to its user
        self.elicits = False
        self._asked: dict[str, asyncio.Future[Any]] = {}  # the gate's requests, by id
        self._ids = itertools.count(1)

    async def serve(
        self, read: Callable[[int], Awaitable[bytes]], write: Callable[[bytes], Awaitable[None]]
    ) -> None:
        """Answer the client until it closes its end; calls still being forwarded then get
        :data:`DRAIN_S` to finish (their answers go nowhere; their receipts are booked)."""
        self._write = write
        try:
            await self._serve(read)
        finally:  # the gate stopped (or the client went): the calls still running end here
            running = list(self.tasks.values())
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    async def _serve(self, read: Callable[[int], Awaitable[bytes]]) -> None:
        async for line in Lines(read):
            message, wrong = _message(line)
            if wrong is not None:
                await self._send(wrong)
                continue
            try:
                await self._take(message)
            except Exception:  # a fault of the gate's own on one message: the next one is read
                log.exception("taskgate mcp: a message from the client could not be handled")
        if self.tasks:
            _, late = await asyncio.wait(list(self.tasks.values()), timeout=DRAIN_S)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)

    async def _take(self, message: dict[str, Any]) -> None:
        method, ident = message.get("method"), message.get("id")
        if method is None:  # the client's answer to one of the gate's requests (elicitation)
            waiting = self._asked.pop(ident, None) if isinstance(ident, str) else None
            if waiting is not None and not waiting.done():
                waiting.set_result(message)
            return
        if not isinstance(method, str) or ("id" in message and not _valid_id(ident)):
            await self._send(
                _error(None, types.INVALID_REQUEST, "Invalid request: bad method or id")
            )
            return
        params = message.get("params")
        if "id" not in message:  # a notification
            if method == "notifications/cancelled" and isinstance(params, dict):
                asked = params.get("requestId")
                task = self.tasks.get(asked) if _valid_id(asked) else None
                if task is not None:
                    task.cancel()
            return
        if method == "initialize":
            self.version, result = initialize_result(params)
            capabilities = params.get("capabilities") if isinstance(params, dict) else None
            self.elicits = isinstance(capabilities, dict) and isinstance(
                capabilities.get("elicitation"), dict
            )
            await self._send({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "server/discover":  # the 2026 probe: a client falls back to the handshake
            await self._send(_error(ident, types.METHOD_NOT_FOUND, "Method not found"))
        elif ident in self.tasks:  # the client reused the id of a request still running: its
            # answer would carry that id too, so the second request is dropped (and logged)
            log.warning("taskgate mcp: the client sent request id %r again while it runs; the "
                        "second request is dropped", ident)  # fmt: skip
        else:
            task = asyncio.get_running_loop().create_task(self._answer(ident, method, params))
            self.tasks[ident] = task
            task.add_done_callback(lambda _: self.tasks.pop(ident, None))

    async def _answer(self, ident: Any, method: str, params: Any) -> None:
        try:
            result = await dispatch(self.state, self.call, method, params, self.version,
                                    lambda: self.key, self.elicit if self.elicits else None)  # fmt: skip
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "result": result}
        except asyncio.CancelledError:  # cancelled by the client: no answer, as the spec says
            return
        except MCPError as exc:
            answer = _error(ident, exc.error.code, exc.error.message)
        except TaskgateError as exc:
            log.error("taskgate mcp: %s", exc)
            answer = _error(ident, types.INTERNAL_ERROR, f"the gate: {exc}")
        except Exception:  # a fault of the gate's own: one JSON-RPC error, the detail in its log
            log.exception("taskgate mcp: %s failed", method[:80])
            answer = _error(ident, types.INTERNAL_ERROR, "the gate failed on this request")
        await self._send(answer)

    async def elicit(self, question: str) -> str:
        """Ask the client's user ``question`` (``elicitation/create``, a form with no fields):
        their action, ``accept``, ``decline`` or ``cancel``. An error answer, or none within
        :data:`ELICIT_S`, raises (the held call's question then goes to the agent)."""
        ident = f"taskgate-elicit-{next(self._ids)}"
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._asked[ident] = answer
        await self._send({"jsonrpc": "2.0", "id": ident, "method": "elicitation/create",
                          "params": {"mode": "form", "message": question,
                                     "requestedSchema": {"type": "object", "properties": {}}}})  # fmt: skip
        try:
            message = await asyncio.wait_for(answer, ELICIT_S)
        finally:
            self._asked.pop(ident, None)
        result = message.get("result") if isinstance(message, dict) else None
        action = result.get("action") if isinstance(result, dict) else None
        if action not in ("accept", "decline", "cancel"):
            raise TaskgateError(f"the client's elicitation answered {str(message)[:200]}")
        return str(action)

    async def _send(self, message: dict[str, Any]) -> None:
        assert self._write is not None
        try:
            data = orjson.dumps(message)
        except (orjson.JSONEncodeError, TypeError) as exc:  # a result nested over 254 levels
            said = f"the answer cannot be written as JSON: {exc}"
            data = orjson.dumps(_error(message.get("id"), types.INTERNAL_ERROR, said))
        with contextlib.suppress(OSError, RuntimeError):  # the client is gone: nothing to tell
            await self._write(data + b"\n")


async def std_streams() -> tuple[
    Callable[[int], Awaitable[bytes]], Callable[[bytes], Awaitable[None]]
]:
    """This process's stdin and stdout as asyncio pipes (a file or a terminal: read and written
    in a thread, which works anywhere)."""
    loop = asyncio.get_running_loop()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    threaded_read, threaded_write = _threaded(stdin, stdout)
    if _terminal(stdin) or _terminal(stdout):  # asyncio would leave a shared terminal
        return threaded_read, threaded_write  # non-blocking for every process on it
    try:
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, stdout
        )
    except (ValueError, OSError):  # a regular file: both ends in threads, stdin untouched
        return threaded_read, threaded_write
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(data: bytes) -> None:
        writer.write(data)
        await writer.drain()

    try:
        reader = asyncio.StreamReader(limit=_CHUNK * 2)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except (ValueError, OSError):  # stdin a regular file
        return threaded_read, write
    return reader.read, write


def _terminal(stream: BinaryIO) -> bool:
    try:
        return os.isatty(stream.fileno())
    except (OSError, ValueError):
        return False


def _threaded(
    stdin: BinaryIO, stdout: BinaryIO
) -> tuple[Callable[[int], Awaitable[bytes]], Callable[[bytes], Awaitable[None]]]:
    lock = asyncio.Lock()

    async def read(n: int) -> bytes:
        return await asyncio.to_thread(stdin.read1 if hasattr(stdin, "read1") else stdin.read, n)

    async def write(data: bytes) -> None:
        async with lock:
            await asyncio.to_thread(lambda: (stdout.write(data), stdout.flush()))

    return read, write


# -- the upstream's side: a child process over its stdin and stdout --------------------------------
class StdioUpstream(McpClient):
    """One MCP server started as a child process; use as an async context manager."""

    def __init__(self, params: StdioServerParameters, read_timeout: float = 600.0) -> None:
        self.params = params
        self.name = self.who = " ".join([params.command, *params.args])[:120]
        #: a call whose answer does not come for this long is given up (and so is in doubt)
        self.read_timeout = read_timeout
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ended: str | None = None  # why no answer can come any more

    async def __aenter__(self) -> StdioUpstream:
        env = get_default_environment() | (self.params.env or {})
        try:
            self._process = await asyncio.create_subprocess_exec(
                self.params.command, *self.params.args, env=env, cwd=self.params.cwd,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                start_new_session=True, limit=_CHUNK * 2,
            )  # fmt: skip
        except (OSError, ValueError) as exc:  # no such command, not executable, a NUL in it
            raise UpstreamError(
                f"an upstream MCP server could not be reached: {self.name}: {exc}"
            ) from None
        self._reader = asyncio.get_running_loop().create_task(self._read())
        try:
            async with asyncio.timeout(INITIALIZE_S):
                await self._initialize()
        except TimeoutError:
            await self.__aexit__()
            raise UpstreamError(
                f"{self.name} did not answer initialize in {INITIALIZE_S:g} s"
            ) from None
        except MCPError as exc:
            await self.__aexit__()
            raise UpstreamError(
                f"{self.name} refused to initialize: {exc.error.message[:200]}"
            ) from None
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None = None, *exc: object) -> None:
        """Close the server's stdin, give it :data:`EXIT_GRACE_S` to exit (less when the gate
        itself is being stopped), then SIGTERM its process group, then SIGKILL (the order the
        MCP lifecycle asks for). Only a server still running is signalled: its group id cannot
        belong to anyone else."""
        process = self._process
        if process is None:
            return
        self._process = None
        stopping = kind is not None and issubclass(kind, asyncio.CancelledError)
        grace = 0.5 if stopping else EXIT_GRACE_S
        assert process.stdin is not None
        with contextlib.suppress(OSError, RuntimeError):
            process.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
            if await _exited(process, grace):
                break
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        transport = getattr(process, "_transport", None)  # its pipes, even where a helper the
        if transport is not None:  # server started holds them open
            transport.close()

    @property
    def gone(self) -> str | None:
        """Why the server can answer nothing any more (it exited, its output closed), or
        ``None`` while it runs: the gate does not start it again."""
        return self._ended

    # -- JSON-RPC over the child's pipes -----------------------------------------------------------
    async def _initialize(self) -> None:
        self.initialized(await self.request("initialize", INITIALIZE))
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """The result of one request; a JSON-RPC error is an :class:`MCPError`, no answer an
        :class:`~.upstream.UpstreamError` (:class:`~.upstream.NotSent` when the request never
        left the gate)."""
        ident = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        data = encoded(message, self.name)
        waiting = self._waiting[ident] = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(self.read_timeout):  # writing included: a server that
                await self._write(data)  # stops reading its stdin does not hold a call forever
                answer = await waiting
        except TimeoutError:
            raise UpstreamError(
                f"{self.name} did not answer {method} in {self.read_timeout:g} s"
            ) from None
        finally:
            self._waiting.pop(ident, None)
            if waiting.done() and not waiting.cancelled():
                waiting.exception()  # retrieved: raised above, or not needed once _send failed
        if "error" in answer:
            raise mcp_error(answer["error"])
        result = answer.get("result")
        if not isinstance(result, dict):
            raise UpstreamError(f"{self.name} answered {method} with no result")
        return result

    async def _send(self, message: dict[str, Any]) -> None:
        await self._write(encoded(message, self.name))

    async def _write(self, data: bytes) -> None:
        """Write one message; a server already gone, or whose stdin is closed, never got it."""
        if self._ended is not None:
            raise NotSent(self._ended)
        if self._process is None or self._process.stdin is None:
            raise NotSent(f"{self.name} is closed")
        try:
            self._process.stdin.write(data + b"\n")
            await self._process.stdin.drain()
        except (OSError, RuntimeError) as exc:
            raise NotSent(f"{self.name} cannot be written to: {exc}") from None

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        why = f"{self.name} closed its output (it exited)"
        try:
            async for line in Lines(self._process.stdout.read):
                message, _ = _message(line)
                if message is not None:
                    await self._take(message)
        except (OSError, asyncio.IncompleteReadError) as exc:
            why = f"{self.name} could not be read: {exc}"
        finally:
            self._ended = why
            if self._process is not None:  # not the gate closing it: the server died
                log.error("taskgate mcp: %s; its tools' calls are refused from now on", why)
            for waiting in self._waiting.values():
                if not waiting.done():
                    waiting.set_exception(UpstreamError(why))

    async def _take(self, message: dict[str, Any]) -> None:
        if "method" in message:
            if "id" in message:  # the server asks the client something
                if message["method"] == "ping":
                    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
                else:
                    answer = _error(message["id"], types.METHOD_NOT_FOUND,
                                    "the taskgate gate does not relay requests to the client")  # fmt: skip
                with contextlib.suppress(UpstreamError):
                    await self._send(answer)
            return  # a notification (a log line, progress): not relayed
        ident = message.get("id")
        if not ("result" in message or "error" in message) or not _valid_id(ident):
            return
        waiting = self._waiting.get(ident)  # type: ignore[arg-type]
        if waiting is None or waiting.done():  # a call given up (timed out, cancelled)
            log.warning("taskgate mcp: %s answered request %s after the gate stopped waiting for "
                        "it: that call may have run", self.name, ident)  # fmt: skip
            return
        waiting.set_result(message)


async def _exited(process: asyncio.subprocess.Process, within: float) -> bool:
    """Whether the process exits within ``within`` seconds (its return code polled: waiting on
    it would also wait for its pipes, which a helper it started may hold open)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while process.returncode is None:
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.02)
    return True
