"""The MCP gate on the official MCP SDK: an MCP server whose tools are its upstreams' tools.

``list_tools`` lists every upstream's tools as the gate's own (and ``taskgate_request`` when
requests come through it); ``call_tool`` judges the call on the session's task state
(:mod:`.sessions`), forwards an admitted call to the upstream that has the tool and books its
receipt when the upstream's result is not an error, and answers a refused call with an MCP tool
error (``isError``) whose text says why in plain words: it never reaches the upstream.

Sessions: over stdio the gate serves one client, ``--session`` names it (so a restart continues
it). Over streamable HTTP (:mod:`.front`) the client names its session in the
``X-Taskgate-Session`` header, or its MCP session id is used (the gate answers the 2026 discovery
probe with "method not found", so clients fall back to the handshake that gives them one); a
gated call with neither is refused. Every session belongs to the caller's API key (its
``Authorization`` header), as in the proxy. Upstreams are called with taskgate's lean clients,
over HTTP (:mod:`.upstream`) and over stdio (:mod:`.stdio`); the gate serves a stdio client
lean too (:func:`run_stdio`), and the SDK's server stays for a client that speaks only the 2026
protocol (:func:`build_server`, :func:`serve_stdio`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp import StdioServerParameters
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from taskgate.errors import PlanError, TaskgateError
from taskgate.gate.tool_gate import check_tools
from taskgate.integrations.mcp.front import Front, Holder, security, session_key
from taskgate.integrations.mcp.sessions import McpGate
from taskgate.integrations.mcp.stdio import ELICIT_S, StdioFront, StdioUpstream, std_streams
from taskgate.integrations.mcp.upstream import HttpUpstream, NotSent, UpstreamError
from taskgate.matching.wordings import wordings

log = logging.getLogger("taskgate.mcp")

#: the tool through which the client model says what the user asked (``--requests tool``)
REQUEST_TOOL = types.Tool(
    name="taskgate_request",
    description=(
        "Call this first with the user's latest message, word for word, whenever the user says "
        "something new, before you act on it. It tells the task gate what the user asked for; "
        "tools the user did not ask for will not run."
    ),
    input_schema={
        "type": "object",
        "properties": {"message": {"type": "string", "description": "The user's message."}},
        "required": ["message"],
    },
)
Upstream = StdioServerParameters | str


@dataclass
class GateState:
    """What the gate holds while it serves: the sessions, the upstream clients and their tools."""

    gate: McpGate
    tools: list[types.Tool]
    route: dict[str, StdioUpstream | HttpUpstream]  # tool name -> the upstream that has it
    session: str  # the stdio client's session name


async def _tools_of(client: StdioUpstream | HttpUpstream) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


async def open_state(
    gate: McpGate, upstreams: Sequence[Upstream], session: str, stack: contextlib.AsyncExitStack
) -> GateState:
    """Every upstream opened (on ``stack``) and its tools listed: what the gate serves."""
    route: dict[str, StdioUpstream | HttpUpstream] = {}
    tools: list[types.Tool] = []
    for target in upstreams:
        client: StdioUpstream | HttpUpstream
        if isinstance(target, str):
            client = await stack.enter_async_context(HttpUpstream(target))
        else:
            client = await stack.enter_async_context(StdioUpstream(target))
        for tool in await _tools_of(client):
            if tool.name in route or tool.name == REQUEST_TOOL.name:
                raise PlanError(f"two upstreams list a tool named {tool.name!r}")
            route[tool.name] = client
            tools.append(tool)
    check_tools(gate.config.plan, route)  # a step bound to a tool no upstream has
    gate.wordings = wordings(gate.config.plan, tools)
    if gate.config.requests == "tool":
        tools.append(REQUEST_TOOL)
    log.info("taskgate mcp: gating %d tools of %d upstream(s)", len(tools), len(upstreams))
    return GateState(gate, tools, route, session)


def build_server(
    gate: McpGate,
    upstreams: Sequence[Upstream],
    *,
    session: str = "stdio",
    http: bool = False,
    holder: Holder | None = None,
) -> Server[GateState]:
    """The gate as an MCP server (run it with :func:`serve_stdio` or :func:`http_app`); with a
    ``holder``, the state it opens is put there too (for the lean HTTP endpoint)."""
    if not upstreams:
        raise PlanError("the MCP gate fronts at least one upstream MCP server")

    @contextlib.asynccontextmanager
    async def lifespan(server: Server[GateState]) -> AsyncIterator[GateState]:
        async with contextlib.AsyncExitStack() as stack:
            state = await open_state(gate, upstreams, session, stack)
            if holder is not None:
                holder.state = state
            yield state

    server: Server[GateState] = Server(
        "taskgate", version="1", lifespan=lifespan, on_list_tools=_list_tools,
        on_call_tool=_call_tool,
    )  # fmt: skip
    if http:  # clients fall back to the handshake, which gives them a session id
        server.add_request_handler("server/discover", types.RequestParams, _no_discovery)
    return server


async def _list_tools(
    ctx: ServerRequestContext[GateState, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=ctx.lifespan_context.tools)


async def _no_discovery(ctx: ServerRequestContext[GateState, Any], params: Any) -> Any:
    raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data="server/discover")


def _key(ctx: ServerRequestContext[GateState, Any]) -> str | None:
    """The caller's session: the stdio client's, or over HTTP (where the SDK serves only 2026
    requests, which carry no session id) the one the ``X-Taskgate-Session`` header names."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return f"{ctx.lifespan_context.session}~local"
    return session_key(headers, ids=False)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)])


async def _call_tool(
    ctx: ServerRequestContext[GateState, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    return await call(ctx.lifespan_context, _key(ctx), params, _elicitation(ctx))


#: a form with no fields: the client shows the gate's question, and its user accepts or not
_CONFIRM_FORM: dict[str, Any] = {"type": "object", "properties": {}}


def _elicitation(ctx: ServerRequestContext[GateState, Any]) -> Any:
    """The client's elicitation (``elicitation/create``), where it declared the capability: a
    held call's question goes to its user, whose accept runs the call (None: the client cannot
    ask, and the question goes to the agent instead)."""
    session = getattr(ctx, "session", None)
    try:
        able = session is not None and session.check_client_capability(
            types.ClientCapabilities(elicitation=types.ElicitationCapability())
        )
    except Exception:  # a session that cannot say: no elicitation
        able = False
    if not able or session is None:
        return None

    async def elicit(question: str) -> str:  # a client that never answers: the agent asks
        result = await asyncio.wait_for(
            session.elicit_form(question, _CONFIRM_FORM, ctx.request_id), ELICIT_S
        )
        return str(result.action)

    return elicit


async def call(
    state: GateState,
    key: str | None,
    params: types.CallToolRequestParams,
    elicit: Any = None,
) -> types.CallToolResult:
    """One ``tools/call`` of session ``key`` (``None``: the request named none), judged; a held
    call is asked about through ``elicit`` (the client's elicitation) where given."""
    gate, name, args = state.gate, params.name, params.arguments
    try:
        if name == REQUEST_TOOL.name and gate.config.requests == "tool":
            message = (args or {}).get("message")
            if not isinstance(message, str):
                return _error("taskgate_request takes the user's message as a string: message")
            if key is None:
                return _error(_NO_SESSION)
            return _text(await gate.request(key, message))
        client = state.route.get(name)
        if client is None:
            return _error(f"{name[:80]} was not run: no server behind this gate has that tool.")
        if key is None and gate.bound(name):
            return _error(_NO_SESSION)
        if isinstance(client, StdioUpstream) and client.gone is not None:
            # refused before it is judged: nothing admitted, journaled or counted as forwarded
            gate.metrics.calls["upstream-gone"] += 1
            return _error(f"{name[:80]} was not run: its MCP server is gone ({client.gone}); "
                          "the gate does not start it again: restart the gate.")  # fmt: skip

        async def forward() -> types.CallToolResult:
            try:
                return await client.call_tool(name, args, meta=_meta(params.meta))
            except NotSent as exc:  # it never reached the server: the call failed, not in doubt
                return _error(f"{name[:80]} was not run: {exc}")
            except MCPError as exc:
                if exc.error.code in NOT_RUN:  # refused before it ran: the call failed
                    return _error(f"{name[:80]} failed at its server: {exc.error.message}")
                # any other error (the SDK's own "connection closed" or timeout, the server's
                # internal error) may come after the work was done: the call is in doubt
                raise UpstreamError(
                    f"{name[:80]}: its server gave no answer that says whether it ran "
                    f"({exc.error.code}: {exc.error.message[:200]})"
                ) from None

        answer = await gate.call(key or "", name, args, forward, lambda r: not r.is_error,
                                 elicit)  # fmt: skip
    except TaskgateError as exc:  # a journal that cannot be read or written, a stale session
        log.error("taskgate mcp: %s", exc)
        raise MCPError(code=types.INTERNAL_ERROR, message=f"the gate: {exc}") from None
    if answer.refused:
        return _error(answer.text)
    return answer.result  # type: ignore[no-any-return]


#: JSON-RPC errors that say a request was refused before it ran (it cannot have done anything):
#: only these end a forwarded call as failed; any other error leaves it in doubt
NOT_RUN = frozenset(
    {types.PARSE_ERROR, types.INVALID_REQUEST, types.METHOD_NOT_FOUND, types.INVALID_PARAMS}
)

_NO_SESSION = (
    "The call was not run: the gate tells sessions apart by the X-Taskgate-Session header or the "
    "MCP session id, and this request has neither."
)


def _meta(meta: Any) -> types.RequestParamsMeta | None:
    """The call's ``_meta`` without the 2026 envelope (the upstream's client writes its own) and
    without a progress token (progress is not relayed)."""
    if not isinstance(meta, dict) or not meta:
        return None
    kept = {
        k: v
        for k, v in meta.items()
        if not k.startswith("io.modelcontextprotocol/")
        and k not in ("progressToken", "progress_token")
    }
    return types.RequestParamsMeta(**kept) if kept else None  # type: ignore[typeddict-item]


async def run_stdio(
    gate: McpGate, upstreams: Sequence[Upstream], *, session: str = "stdio"
) -> None:
    """Serve the one client that started the gate over this process's stdin and stdout, lean
    (:class:`.stdio.StdioFront`), until it closes its end: its session is ``session``."""
    if not upstreams:
        raise PlanError("the MCP gate fronts at least one upstream MCP server")
    loop, me = asyncio.get_running_loop(), asyncio.current_task()
    stopped = False

    def stop() -> None:  # SIGTERM (a client that gave up waiting): stop the upstreams first
        nonlocal stopped
        stopped = True
        if me is not None:
            me.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGTERM, stop)
    try:
        async with contextlib.AsyncExitStack() as stack:
            state = await open_state(gate, upstreams, session, stack)
            read, write = await std_streams()
            await StdioFront(state, call, f"{session}~local").serve(read, write)
    except asyncio.CancelledError:
        if not stopped:
            raise
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGTERM)


async def serve_stdio(server: Server[GateState]) -> None:
    """Serve one client over stdio with the SDK's transport (until it closes its end): for a
    client that speaks only the 2026 protocol; :func:`run_stdio` is leaner."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(
    gate: McpGate,
    upstreams: Sequence[Upstream],
    *,
    host: str = "127.0.0.1",
    path: str = "/mcp",
    secret: bytes | None = None,
    allowed_hosts: Sequence[str] = (),
) -> Any:
    """The gate over streamable HTTP at ``path`` (:class:`.front.Front`), with the operators'
    endpoints beside it; serve it with uvicorn. ``secret`` signs the MCP session ids it gives
    (default: a random one, so they end with the process). Every route answers only the
    ``Host`` names :mod:`taskgate.serving.hosts` allows (IP addresses, ``localhost`` and
    ``allowed_hosts``)."""
    from starlette.types import Receive, Scope, Send

    from taskgate.integrations.mcp.operator import routes
    from taskgate.serving.hosts import HostGuard, checked

    hosts = checked(allowed_hosts)
    holder = Holder()
    server = build_server(gate, upstreams, http=True, holder=holder)
    sdk = server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        transport_security=security(host, hosts),
        custom_starlette_routes=routes(gate, host, allowed_hosts=hosts),
        json_response=True,
    )
    front = Front(holder, call, sdk, host=host, secret=secret, allowed_hosts=hosts)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == path:
            await front(scope, receive, send)
        else:  # the app's start and stop (which open the upstreams), the operators' endpoints
            await sdk(scope, receive, send)

    return HostGuard(app, hosts, origins=False)
