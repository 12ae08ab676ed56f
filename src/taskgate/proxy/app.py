"""The gating proxy as an ASGI app: its routes, the operators' endpoints, and how a process that
only serves it collects garbage.

``POST /v1/chat/completions`` is :func:`taskgate.proxy.server.chat`; ``GET /v1/models`` is the
upstream's; ``GET /taskgate/conversations[/{id}]`` and ``/taskgate/metrics`` are for operators,
and so are ``POST /taskgate/conversations/{id}/revisions`` and ``.../approvals``, which need the
status token (see :mod:`taskgate.proxy.operator`).
With a ``status_token`` they need it as a bearer token and show every conversation; without one,
each caller sees only the conversations of its own API key (or, without a key, the anonymous
ones), so the status endpoints never name another key's conversations.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from taskgate.errors import TaskgateError
from taskgate.journal.events import Conversation
from taskgate.journal.store import Store
from taskgate.proxy.operator import hold
from taskgate.proxy.server import chat, forwarded_headers, relay
from taskgate.proxy.session import Proxy, ProxyConfig, log
from taskgate.proxy.status import conversation_json
from taskgate.serving.errors import HttpError
from taskgate.serving.http import read_body
from taskgate.serving.operator import ApprovalBody, Body, RevisionBody, mine, resolve
from taskgate.serving.operator import scope as operator_scope


async def models(request: Request) -> Response:
    proxy: Proxy = request.app.state.proxy
    try:
        headers = forwarded_headers(request.headers)
        upstream = await proxy.http.get(f"{proxy.upstream}/models", headers=headers)
    except HttpError as exc:
        return exc.response()
    except httpx.HTTPError as exc:
        return HttpError(502, f"the upstream failed: {exc!r}", "upstream_error").response()
    return relay(upstream)


Endpoint = Callable[[Request, Proxy, str | None], Awaitable[Response]]


def _operators(endpoint: Endpoint, write: bool = False) -> Callable[[Request], Awaitable[Response]]:
    """An operators' endpoint: the caller's scope checked first, a HttpError answered as one,
    and a journal that cannot be read a 503 (logged as one line)."""

    async def handle(request: Request) -> Response:
        try:
            proxy = request.app.state.proxy
            scope = operator_scope(request.headers, proxy.config.status_token, write=write)
            try:
                return await endpoint(request, proxy, scope)
            except HttpError:
                raise
            except TaskgateError as exc:
                log.error("taskgate proxy: the journal cannot be read: %s", exc)
                raise HttpError(503, f"the journal cannot be read: {exc}", "server_error") from None
        except HttpError as exc:
            return exc.response()

    return handle


@_operators
async def list_conversations(request: Request, proxy: Proxy, scope: str | None) -> Response:
    keys = sorted(set(proxy.conversations) | set(await proxy.store.keys()))
    rows = []
    for key in keys:
        if mine(key, scope):
            conv = await _written(proxy, key)
            rows.append({"id": key, "turns": len(conv.turns), "started": conv.started})
    return Response(orjson.dumps({"conversations": rows}), media_type="application/json")


@_operators
async def show_conversation(request: Request, proxy: Proxy, scope: str | None) -> Response:
    key = await _resolve(proxy, request.path_params["key"], scope)
    data = conversation_json(await _written(proxy, key), proxy.config.rung)
    return Response(orjson.dumps(data), media_type="application/json")


async def _resolve(proxy: Proxy, key: str, scope: str | None) -> str:
    """The conversation ``key`` names (see :func:`taskgate.serving.operator.resolve`)."""
    known = set(proxy.conversations) | set(await proxy.store.keys())
    return resolve(key, known, scope, "conversation")


async def _written(proxy: Proxy, key: str) -> Conversation:
    """The conversation as its journal has it: never half a request's state, and without waiting
    for a request in flight (a streamed reply holds its conversation until it ends)."""
    lock = proxy.lock(key)
    conv = proxy.conversations.peek(key)
    if lock.locked() and conv is not None:
        return Conversation(key, conv.events[: conv.written], requested=proxy.requested)
    async with lock:
        return await proxy.readable(key)


@_operators
async def metrics(request: Request, proxy: Proxy, scope: str | None) -> Response:
    return Response(orjson.dumps(proxy.overheads.summary()), media_type="application/json")


def _changes(model: type[Body]) -> Callable[[Request], Awaitable[Response]]:
    """An operator's change to a conversation (see :mod:`taskgate.proxy.operator`): only with
    the status token."""

    async def change(request: Request, proxy: Proxy, scope: str | None) -> Response:
        key = await _resolve(proxy, request.path_params["key"], scope)
        return await hold(proxy, key, await read_body(request), model)

    return _operators(change, write=True)


class Collector:
    """The collector's schedule while this process serves (see :func:`fewer_collections`)."""

    FREEZE_EVERY = 2_000  # requests
    SWEEP_EVERY = 100  # freezes

    def __init__(self) -> None:
        self.requests = 0
        self.freezes = 0

    def served(self) -> None:
        self.requests += 1
        if self.requests % self.FREEZE_EVERY:
            return
        self.freezes += 1
        if self.freezes % self.SWEEP_EVERY == 0:  # now and then, everything, cycles included
            gc.unfreeze()
            gc.collect()
        gc.freeze()


@contextlib.contextmanager
def fewer_collections() -> Iterator[Collector]:
    """While this process serves, what survives 2,000 requests is frozen out of the collector's
    scans (the conversations' state: it lives on, and is freed by reference counting when it
    goes); every 200,000 requests one full collection sweeps whatever cycles were frozen. The
    young generation is scanned every 2,000 new objects (not 700) and the middle one every 5
    young scans; full scans come a hundred times less often. Without this, collection was a third
    of the proxy's CPU, and its scans of the growing state its longest pauses: 40-55 ms under
    streaming load at 512 conversations, under 10 ms with it (bench/bench_proxy.py)."""
    before = gc.get_threshold()
    gc.collect()
    gc.freeze()  # the modules and everything built at start: never scanned again
    gc.set_threshold(2_000, 5, before[2] * 100)
    try:
        yield Collector()  # pass its ``served`` to create_app
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def create_app(
    config: ProxyConfig, store: Store | None = None, on_served: Callable[[], None] | None = None
) -> Starlette:
    """The proxy as an ASGI app (``taskgate proxy`` serves it with uvicorn); ``on_served`` is
    told of every gated request served."""
    proxy = Proxy(config, store)
    proxy.overheads.on_add = on_served

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.proxy = proxy
        await proxy.start()
        yield
        await proxy.close()

    routes = [
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/taskgate/conversations", list_conversations, methods=["GET"]),
        Route(
            "/taskgate/conversations/{key:path}/revisions",
            _changes(RevisionBody),
            methods=["POST"],
        ),
        Route(
            "/taskgate/conversations/{key:path}/approvals",
            _changes(ApprovalBody),
            methods=["POST"],
        ),
        Route("/taskgate/conversations/{key:path}", show_conversation, methods=["GET"]),
        Route("/taskgate/metrics", metrics, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.proxy = proxy
    return app
