"""An upstream MCP server over streamable HTTP, called lean: one POST per request on a pooled
aiohttp connection, the answer read as JSON or from the response's server-sent events.

The MCP SDK's :class:`mcp.Client` costs about 1 ms of CPU per call in its task groups and memory
streams, as much as the whole gate's judging and journaling (``bench/bench_mcp.py``); over stdio
the gate still uses it. This client speaks the handshake-era protocol (``initialize``, then the
``Mcp-Session-Id`` the server gives), which every streamable-HTTP server since 2025-03-26
serves. What it reads is validated with the SDK's own types; a JSON-RPC error from the server is
an :class:`~mcp.shared.exceptions.MCPError`, as from the SDK's client. A server that lost its
session (404) is re-initialized and the request sent again: a 404 means it was not processed.
A request the server makes of the client during a call (sampling, elicitation) is answered "not
supported": the gate does not relay them. A transport failure (the server gone, a reply cut
short) is raised as :class:`UpstreamError`: the call may have run, or not.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import itertools
from typing import Any, TypeVar

import aiohttp
import mcp_types as types
import orjson
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import BaseModel, ValidationError

from taskgate._version import __version__
from taskgate.errors import TaskgateError
from taskgate.serving.failures import describe

T = TypeVar("T", bound=BaseModel)
#: the largest answer read from an upstream, in bytes
MAX_ANSWER = 64 << 20


class UpstreamError(TaskgateError):
    """The upstream did not answer (or not in MCP): a call sent to it may have run, or not."""


class NotSent(UpstreamError):
    """The request never left the gate (its arguments cannot be written, the upstream is gone
    before it was written): it did not run."""


def encoded(message: dict[str, Any], who: str) -> bytes:
    """``message`` as JSON, or :class:`NotSent` (orjson writes at most 254 levels of nesting)."""
    try:
        return orjson.dumps(message)
    except (orjson.JSONEncodeError, TypeError) as exc:
        raise NotSent(f"the request to {who} cannot be written as JSON: {exc}") from None


#: the ``initialize`` request the gate sends an upstream, on every transport
INITIALIZE = {
    "protocolVersion": LATEST_HANDSHAKE_VERSION,
    "capabilities": {},
    "clientInfo": {"name": "taskgate", "version": __version__},
}


class McpClient(abc.ABC):
    """What the gate calls on an upstream MCP server, over any transport (its ``request``)."""

    who: str  # the server, as messages name it
    version: str = LATEST_HANDSHAKE_VERSION

    @abc.abstractmethod
    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """The result of one JSON-RPC request to the server."""

    async def list_tools(self, cursor: str | None = None) -> types.ListToolsResult:
        params = {"cursor": cursor} if cursor else None
        return validated(types.ListToolsResult, await self.request("tools/list", params), self.who)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, meta: Any = None
    ) -> types.CallToolResult:
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if meta:
            params["_meta"] = dict(meta)
        return validated(types.CallToolResult, await self.request("tools/call", params), self.who)

    def initialized(self, result: dict[str, Any]) -> None:
        """Take the protocol version the server's answer to ``initialize`` settles on."""
        version = result.get("protocolVersion")
        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise UpstreamError(
                f"{self.who} speaks MCP {str(version)[:40]!r}, which taskgate does not"
            )
        self.version = version


class HttpUpstream(McpClient):
    """One streamable-HTTP MCP server; use as an async context manager."""

    def __init__(
        self, url: str, headers: dict[str, str] | None = None, read_timeout: float = 600.0
    ) -> None:
        self.url = self.who = url
        #: a call whose answer stops coming for this long is given up (and so is in doubt)
        self.read_timeout = read_timeout
        self._opening = asyncio.Lock()
        self._generation = 0
        self.headers = dict(headers or {})
        self.session_id: str | None = None
        self._ids = itertools.count(1)
        self._http: aiohttp.ClientSession | None = None
        self._draining: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> HttpUpstream:
        self._http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=256),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=self.read_timeout),
        )
        try:
            await self._initialize()
        except BaseException:
            await self._http.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._http is not None
        for task in list(self._draining):
            task.cancel()
        await asyncio.gather(*self._draining, return_exceptions=True)
        try:
            if self.session_id:  # the session ended, as the transport asks (best effort)
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    (await self._http.delete(self.url, headers=self._headers())).release()
        finally:
            await self._http.close()

    # -- JSON-RPC over streamable HTTP -------------------------------------------------------------
    async def _initialize(self) -> None:
        self.initialized(await self._exchange("initialize", INITIALIZE))
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, None)

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """The result of one request. After the server lost the session (a 404), the session is
        opened again and the request re-sent, except a ``tools/call``: a server may lose a
        session after doing a call's work, so that call is in doubt (an :class:`UpstreamError`),
        never sent twice."""
        generation = self._generation
        try:
            return await self._exchange(method, params)
        except _SessionLost:
            async with self._opening:  # one re-initialization for calls that met the same loss
                if self._generation == generation:
                    await self._initialize()
                    self._generation += 1
            if method == "tools/call":
                raise UpstreamError(
                    f"{self.url} lost the session while answering a tool call (HTTP 404): the "
                    "call may have run, so it is not sent again"
                ) from None
        try:
            return await self._exchange(method, params)
        except _SessionLost:
            raise UpstreamError(
                f"{self.url} lost the session again just after it was opened"
            ) from None

    async def _exchange(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        ident = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        answer = await self._post(message, ident)
        assert answer is not None
        if "error" in answer:
            raise mcp_error(answer["error"])
        result = answer.get("result")
        if not isinstance(result, dict):
            raise UpstreamError(f"{self.url} answered {method} with no result")
        return result

    def _headers(self, session: bool = True) -> dict[str, str]:
        headers = {
            **self.headers,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "Mcp-Protocol-Version": self.version,
        }
        if self.session_id and session:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    async def _post(self, message: dict[str, Any], ident: int | None) -> dict[str, Any] | None:
        """POST one message; the answer to request ``ident`` (``None``: a notification)."""
        assert self._http is not None
        resp: aiohttp.ClientResponse | None = None
        data = encoded(message, self.url)
        try:
            resp = await self._http.post(
                self.url,
                data=data,
                headers=self._headers(session=message.get("method") != "initialize"),
            )
            if resp.status == 404 and self.session_id and message.get("method") != "initialize":
                raise _SessionLost
            if resp.status >= 400:
                body = (await resp.content.read(300)).decode(errors="replace")
                raise UpstreamError(f"{self.url} answered HTTP {resp.status}: {body.strip()}")
            if message.get("method") == "initialize":
                self.session_id = resp.headers.get("mcp-session-id")
            if ident is None:
                return None
            if resp.content_type == "text/event-stream":
                found = await self._from_events(resp, ident)
                self._drain(resp)  # its end read after the answer is back
                resp = None
                return found
            raw = bytearray()
            async for chunk in resp.content.iter_any():  # read(n) may stop at one socket read
                raw += chunk
                if len(raw) > MAX_ANSWER:
                    raise UpstreamError(self._too_big())
            return _answer(orjson.loads(raw), ident, self.url)
        except (aiohttp.ClientError, OSError, orjson.JSONDecodeError) as exc:
            raise UpstreamError(f"{self.url} did not answer: {describe(exc)}") from None
        finally:
            if resp is not None:
                resp.release()

    def _drain(self, resp: aiohttp.ClientResponse) -> None:
        """Read the event stream's end (a server closes it after the answer) in the background, so
        that its connection is used again; one still open a moment later is closed instead."""

        async def drain() -> None:
            try:
                async with asyncio.timeout(1.0):
                    while await resp.content.readany():
                        pass
                resp.release()
            except (TimeoutError, aiohttp.ClientError, OSError):
                resp.close()

        task = asyncio.get_running_loop().create_task(drain())
        self._draining.add(task)
        task.add_done_callback(self._draining.discard)

    async def _from_events(self, resp: aiohttp.ClientResponse, ident: int) -> dict[str, Any]:
        """Read server-sent events until the answer to ``ident``."""
        pending, total, data = bytearray(), 0, []
        async for chunk in resp.content.iter_any():
            total += len(chunk)
            if total > MAX_ANSWER:
                raise UpstreamError(self._too_big())
            pending += chunk
            if b"\n" not in chunk:  # a line goes on: scanned once it ends (linear in all)
                continue
            *lines, rest = bytes(pending).split(b"\n")
            pending = bytearray(rest)
            for line in lines:
                line = line.rstrip(b"\r")
                if line.startswith(b"data:"):
                    data.append(line[5:].lstrip(b" "))
                elif not line and data:  # an event ends
                    found = await self._event(_json_or_none(b"\n".join(data)), ident)
                    data = []
                    if found is not None:
                        return found
        raise UpstreamError(f"{self.url} closed its event stream before answering")

    def _too_big(self) -> str:
        return f"{self.url} answered with over {MAX_ANSWER:,} bytes"

    async def _event(self, message: Any, ident: int) -> dict[str, Any] | None:
        if not isinstance(message, dict):
            return None
        if "method" in message and "id" in message:  # the server asks the client something
            try:
                await self._post({"jsonrpc": "2.0", "id": message["id"], "error": {
                    "code": types.METHOD_NOT_FOUND,
                    "message": "the taskgate gate does not relay requests to the client",
                }}, None)  # fmt: skip
            except _SessionLost:  # mid-call: the call itself may have run, never resend it
                raise UpstreamError(f"{self.url} lost the session during a call") from None
            return None
        if message.get("id") == ident and ("result" in message or "error" in message):
            return message
        return None


def validated(model: type[T], result: dict[str, Any], who: str) -> T:
    """An upstream's ``result`` as the SDK's type ``model``, or an :class:`UpstreamError` naming
    the upstream (``who``) and the first thing wrong with it."""
    try:
        return model.model_validate(result)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "result"
        raise UpstreamError(
            f"{who} answered with a malformed result: {where}: {first['msg']}"
        ) from None


def mcp_error(error: Any) -> MCPError:
    """A JSON-RPC error object from an upstream as the SDK's :class:`MCPError`."""
    error = error if isinstance(error, dict) else {}
    return MCPError(
        code=_code(error.get("code")),
        message=str(error.get("message", "error"))[:500],
        data=error.get("data"),
    )


def _json_or_none(data: bytes) -> Any:
    """An event's data as JSON (an empty or non-JSON event, such as a priming one: None)."""
    try:
        return orjson.loads(data) if data.strip() else None
    except orjson.JSONDecodeError:
        return None


def _code(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else types.INTERNAL_ERROR


class _SessionLost(Exception):
    """The server answered 404 to a session it gave: it forgot it (restarted)."""


def _answer(message: Any, ident: int, url: str) -> dict[str, Any]:
    if not isinstance(message, dict) or message.get("id") != ident:
        raise UpstreamError(f"{url} answered with something other than the JSON-RPC answer")
    return message
