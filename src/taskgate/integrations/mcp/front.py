"""The MCP gate's streamable-HTTP endpoint, served lean.

A client's requests of the handshake era (``initialize``, then the ``Mcp-Session-Id`` it is
given, as every MCP client speaks) are answered here, each in the request's own task as one JSON
response: ``initialize``, ``ping``, ``tools/list`` and ``tools/call`` (judged by
:func:`.server.call`); any other method is "method not found", a notification or a client's
response is accepted (202), and there is no server-sent stream (GET is 405). A request of the
2026 protocol (an ``MCP-Protocol-Version`` header naming no handshake-era version) goes to the MCP
SDK's own transport, which serves it with the same handlers; its discovery probe is answered
"method not found" here, so that clients fall back to the handshake, which gives them a session. Why not the SDK's transport for
every request: its memory streams and task groups cost about 2 ms of CPU per call, five times
the gate's own judging and journaling (``bench/bench_mcp.py``).

The session ids the gate gives are signed (an HMAC of a random part), so it keeps no table of
them and a forged one is refused (404, as for a session that ended); with
``TASKGATE_SESSION_SECRET`` set they outlive a restart. Host and Origin headers are checked with
the SDK's own DNS-rebinding guard, as its transport does.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import orjson
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.methods import serialize_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from taskgate._version import __version__
from taskgate.errors import TaskgateError
from taskgate.serving.errors import HttpError
from taskgate.serving.http import owner, read_body

log = logging.getLogger("taskgate.mcp")

SESSION_HEADER = "x-taskgate-session"
#: how many ended session ids the endpoint remembers
MAX_ENDED = 100_000
_JSON = "application/json"


@dataclass
class Holder:
    """What the endpoint serves, set when the app starts (its upstreams opened)."""

    state: Any = None


#: how a ``tools/call`` is answered: the state, the session key, the call (:func:`.server.call`)
#: asks the client's user a held call's question (MCP elicitation): ``accept``, ``decline``, ...
Elicit = Callable[[str], Awaitable[str]]
Call = Callable[
    [Any, str | None, types.CallToolRequestParams, Elicit | None], Awaitable[types.CallToolResult]
]


def session_key(headers: Mapping[str, str], ids: bool = True) -> str | None:
    """The session a request reaches: the one its ``X-Taskgate-Session`` header names, else
    (``ids``) its MCP session id, scoped to its API key; ``None`` when it names neither."""
    name = headers.get(SESSION_HEADER) or (headers.get("mcp-session-id") if ids else None)
    if not name or len(name) > 200 or "~" in name:
        return None
    return f"{name}~{owner(headers)}"


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` (read already, by :func:`read_body`) as the request's
    one message, then what the client sends after it (a disconnect, while a stream is sent)."""
    given = False

    async def again() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


def security(host: str, allowed: Sequence[str] = ()) -> TransportSecuritySettings | None:
    """The SDK's DNS-rebinding guard for a gate on a loopback address (as its transport sets),
    answering also the names the operator allowed (``--allowed-host``: ``NAME``, ``NAME:PORT``
    or ``NAME:*``), and pages of those names as origins."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        return None
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    for name in allowed:
        bare = name.partition(":")[0]
        hosts += [name] if ":" in name and not name.endswith(":*") else [bare, f"{bare}:*"]
        origins += [f"{scheme}://{n}" for scheme in ("http", "https") for n in (bare, f"{bare}:*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class Front:
    """The ASGI endpoint at the gate's MCP path."""

    def __init__(
        self,
        holder: Holder,
        call: Call,
        modern: ASGIApp,
        *,
        host: str,
        secret: bytes | None = None,
        allowed_hosts: Sequence[str] = (),
    ) -> None:
        self.holder = holder
        self.call = call
        self.modern = modern
        self.guard = TransportSecurityMiddleware(security(host, allowed_hosts))
        self.secret = secret or secrets.token_bytes(32)
        #: session ids their clients ended (DELETE): refused from then on (the most recent
        #: ``MAX_ENDED``; a restart forgets them, as it forgets ids without a session secret)
        self.ended: OrderedDict[str, None] = OrderedDict()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:  # the first of a repeated header, as the SDK reads
            headers.setdefault(name, value)
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        modern = version and version not in HANDSHAKE_PROTOCOL_VERSIONS
        if modern and headers.get(b"mcp-method") != b"server/discover":
            try:  # the body read here, by the surfaces' one rule (its size and its deadline)
                body = await read_body(Request(scope, receive))
            except HttpError as exc:
                await exc.response()(scope, receive, send)
                return
            await self.modern(scope, replaying(body, receive), send)
            return
        response = await self.handle(Request(scope, receive))
        await response(scope, receive, send)

    # -- session ids -------------------------------------------------------------------------------
    def new_session(self) -> str:
        token = secrets.token_hex(16)
        return f"{token}.{self._mac(token)}"

    def known(self, session: str) -> bool:
        token, _, mac = session.partition(".")
        if len(token) != 32 or not session.isascii():  # a header may carry any latin-1 byte
            return False
        if session in self.ended:
            return False
        return hmac.compare_digest(mac.encode(), self._mac(token).encode())

    def end(self, session: str) -> None:
        self.ended[session] = None
        while len(self.ended) > MAX_ENDED:
            self.ended.popitem(last=False)

    def _mac(self, token: str) -> str:
        return hmac.new(self.secret, token.encode(), hashlib.sha256).hexdigest()[:32]

    # -- requests ----------------------------------------------------------------------------------
    async def handle(self, request: Request) -> Response:
        rejected = await self.guard.validate_request(request, is_post=request.method == "POST")
        if rejected is not None:
            return rejected
        if request.method == "DELETE":  # the client ends its session: its id is refused after
            session = request.headers.get("mcp-session-id", "")
            if not self.known(session):
                return Response(status_code=404)
            self.end(session)
            return Response(status_code=200)
        if request.method != "POST":
            return Response("this gate sends no server-sent stream", 405, {"Allow": "POST, DELETE"})
        accept = request.headers.get("accept", "")
        if accept and not any(t in accept for t in (_JSON, "application/*", "*/*")):
            return Response("Not Acceptable: the client must accept application/json", 406)
        try:
            raw = await read_body(request)
        except HttpError as exc:
            return exc.response()
        try:
            message = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            return _error(None, types.PARSE_ERROR, f"Parse error: the body is not JSON: {exc}", 400)
        if isinstance(message, list):
            return _error(None, types.INVALID_REQUEST, "Invalid request: no batches", 400)
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error(None, types.INVALID_REQUEST, "Invalid request: not JSON-RPC 2.0", 400)
        return await self._message(request, message)

    async def _message(self, request: Request, message: dict[str, Any]) -> Response:
        method, ident = message.get("method"), message.get("id")
        if method is None:  # the client's answer to a request: the gate sends none
            return Response(status_code=202)
        if not isinstance(method, str) or not _valid_id(ident, "id" in message):
            return _error(None, types.INVALID_REQUEST, "Invalid request: bad method or id", 400)
        if method == "initialize" and "id" in message:
            return self._initialize(ident, message.get("params"))
        if method == "server/discover":  # the 2026 probe: a client falls back to the handshake
            return _error(ident, types.METHOD_NOT_FOUND, "Method not found", 404)
        session = request.headers.get("mcp-session-id")
        if not session:
            return _error(ident, types.INVALID_REQUEST, "Bad Request: Missing session ID", 400)
        if not self.known(session):
            return _error(ident, types.INVALID_REQUEST, "Session not found", 404)
        if "id" not in message:  # a notification (initialized, cancelled, ...): nothing to do
            return Response(status_code=202)
        try:
            result = await self._dispatch(request, method, message.get("params"))
        except MCPError as exc:
            return _error(ident, exc.error.code, exc.error.message, 200)
        except TaskgateError as exc:  # the upstream gone mid-call: the call is in doubt
            log.error("taskgate mcp: %s", exc)
            return _error(ident, types.INTERNAL_ERROR, f"the gate: {exc}", 200)
        except Exception:  # a fault of the gate's own: one JSON-RPC error, the detail in its log
            log.exception("taskgate mcp: %s failed", method[:80])
            return _error(ident, types.INTERNAL_ERROR, "the gate failed on this request", 200)
        return _json({"jsonrpc": "2.0", "id": ident, "result": result})

    def _initialize(self, ident: Any, params: Any) -> Response:
        _, result = initialize_result(params)
        body = {"jsonrpc": "2.0", "id": ident, "result": result}
        return _json(body, {"mcp-session-id": self.new_session()})

    async def _dispatch(self, request: Request, method: str, params: Any) -> dict[str, Any]:
        version = request.headers.get("mcp-protocol-version")
        return await dispatch(self.holder.state, self.call, method, params, version,
                              lambda: session_key(request.headers))  # fmt: skip


async def dispatch(
    state: Any,
    call: Call,
    method: str,
    params: Any,
    version: str | None,
    key: Callable[[], str | None],
    elicit: Elicit | None = None,
) -> dict[str, Any]:
    """The result of one request after the handshake (``ping``, ``tools/list``, ``tools/call``),
    as protocol ``version`` defines it; ``key`` gives the caller's session. Any other method is
    an :class:`~mcp.shared.exceptions.MCPError` (method not found), as are bad params. The same
    on every lean transport: streamable HTTP here, stdio in :mod:`.stdio`."""
    if method == "ping":
        return {}
    if method == "tools/list":
        return _for_version(method, version, _dump(types.ListToolsResult(tools=state.tools)))
    if method != "tools/call":
        raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data=method[:80])
    try:
        checked = types.CallToolRequestParams.model_validate(params or {})
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"]) or "params"
        raise MCPError(
            code=types.INVALID_PARAMS, message=f"Invalid params: {where}: {exc.errors()[0]['msg']}"
        ) from None
    return _for_version(method, version, _dump(await call(state, key(), checked, elicit)))


def initialize_result(params: Any) -> tuple[str, dict[str, Any]]:
    """The version a client's ``initialize`` settles on (the one it asks for when the gate speaks
    it, else the latest of the handshake era), and the gate's answer."""
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
    result = types.InitializeResult(
        protocol_version=version,
        capabilities=types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False)),
        server_info=types.Implementation(name="taskgate", version=__version__),
    )
    return version, _for_version("initialize", version, _dump(result))


def _for_version(method: str, version: str | None, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` as the client's protocol version defines it (the SDK's own sieve: no field a
    handshake-era client does not know); the version from the request's header, else the
    latest of the handshake era."""
    if version not in HANDSHAKE_PROTOCOL_VERSIONS:
        version = LATEST_HANDSHAKE_VERSION
    return serialize_server_result(method, version, result)


def _valid_id(ident: Any, present: bool) -> bool:
    return not present or (isinstance(ident, str | int) and not isinstance(ident, bool))


def _dump(model: Any) -> dict[str, Any]:
    return dict(model.model_dump(mode="json", by_alias=True, exclude_none=True))


def _json(
    body: dict[str, Any], headers: dict[str, str] | None = None, status: int = 200
) -> Response:
    return Response(orjson.dumps(body), status, headers, media_type=_JSON)


def _error(ident: Any, code: int, message: str, status: int) -> Response:
    body = {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message[:500]}}
    return _json(body, status=status)
