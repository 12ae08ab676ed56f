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

import asyncio
import contextlib
import gc
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from taskgate.errors import TaskgateError
from taskgate.journal.events import Conversation, HeldEvent
from taskgate.journal.store import Store
from taskgate.proxy.operator import hold
from taskgate.proxy.server import chat, forwarded_headers, relay
from taskgate.proxy.session import Proxy, ProxyConfig, log
from taskgate.serving.errors import HttpError
from taskgate.serving.failures import describe
from taskgate.serving.hosts import HostGuard
from taskgate.serving.operator import ApprovalBody, RevisionBody
from taskgate.serving.router import operator_routes
from taskgate.serving.status import listing_row, status_json


async def models(request: Request) -> Response:
    proxy: Proxy = request.app.state.proxy
    try:
        headers = forwarded_headers(request.headers)
        upstream = await proxy.http.get(f"{proxy.upstream}/models", headers=headers)
    except HttpError as exc:
        return exc.response()
    except httpx.HTTPError as exc:
        return HttpError(
            502, f"the upstream at {proxy.upstream} failed: {describe(exc)}", "upstream_error"
        ).response()
    return relay(upstream)


class Operated:
    """The proxy's conversations as the shared operators' router sees them
    (:mod:`taskgate.serving.router`); changes are held as :mod:`taskgate.proxy.operator` says."""

    noun = "conversation"
    settles = False  # a call the proxy handed out is settled by the client's next request
    messages = False  # the user's messages come in the client's requests

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.status_token = proxy.config.status_token
        #: the last status documents built, by (conversation, events written), with the last
        #: event they were built to (a rolled-back one differs)
        self._docs: OrderedDict[tuple[str, int], tuple[object, dict[str, Any]]] = OrderedDict()

    async def keys(self) -> list[str]:
        try:
            return sorted(set(self.proxy.conversations) | set(await self.proxy.store.keys()))
        except TaskgateError as exc:
            log.error("taskgate proxy: the journal cannot be read: %s", exc)
            raise HttpError(503, f"the journal cannot be read: {exc}", "server_error") from None

    async def row(self, key: str) -> dict[str, Any]:
        return listing_row(await self._written(key))

    async def status(self, key: str) -> dict[str, Any]:
        """The status document, built once per state of the conversation and off the event
        loop (from a copy of its written events: a long one never stalls other clients, and
        the console's polls of an unchanged one cost nothing)."""
        conv = await self._written(key)
        events = conv.events[: conv.written]
        stamp, last = (key, len(events)), events[-1] if events else None
        known = self._docs.get(stamp)
        if known is not None and known[0] is last:  # the same events (it holds the last one)
            return known[1]
        config, requested = self.proxy.config, self.proxy.requested

        def build() -> dict[str, Any]:
            copy = Conversation(key, events, requested=requested)
            return status_json(copy, rung=config.rung, plain=config.planned)

        doc = await asyncio.to_thread(build)
        self._docs[stamp] = (last, doc)
        while len(self._docs) > 64:
            self._docs.popitem(last=False)
        return doc

    def metrics(self) -> dict[str, Any]:
        return self.proxy.overheads.summary()

    async def hold(self, key: str, body: RevisionBody | ApprovalBody) -> list[HeldEvent]:
        return await hold(self.proxy, key, body)

    async def settle(self, key: str, step: str, ran: bool) -> str:
        raise HttpError(404, "the proxy holds no call in doubt: nothing to settle")

    async def message(self, key: str, message: str, agent: str = "") -> dict[str, Any]:
        raise HttpError(404, "the proxy reads the user's messages from the client's requests")

    def message_key(self, key: str) -> str | None:
        return None

    async def _written(self, key: str) -> Conversation:
        """The conversation as its journal has it: never half a request's state, and without
        waiting for a request in flight (a streamed reply holds its conversation until it ends)."""
        proxy = self.proxy
        lock = proxy.lock(key)
        conv = proxy.conversations.peek(key)
        if lock.locked() and conv is not None:
            return Conversation(key, conv.events[: conv.written], requested=proxy.requested)
        async with lock:
            return await proxy.readable(key)


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
        *operator_routes(Operated(proxy)),
    ]
    guard = Middleware(HostGuard, allowed_hosts=config.allowed_hosts)
    app = Starlette(routes=routes, lifespan=lifespan, middleware=[guard])
    app.state.proxy = proxy
    return app
