"""One operators' router, mounted by the proxy (``/taskgate/conversations``) and the MCP gate
(``/taskgate/sessions``): the same endpoints, checks, status JSON and answers on both.

    GET  /taskgate/{noun}s                   the conversations the caller may see (rows)
    GET  /taskgate/{noun}s/{id}              its status (:mod:`taskgate.serving.status`)
    GET  /taskgate/metrics                   the surface's metrics summary
    GET  /taskgate/console                   the operators' console (:mod:`taskgate.serving.console`)
    POST /taskgate/{noun}s/{id}/revisions    {"cancel": ..., "rewire": ..., "inherit": ...} | ...
    POST /taskgate/{noun}s/{id}/approvals    {"step": ..., "by": ..., "reason": ...}
    POST /taskgate/{noun}s/{id}/settle       {"step": ..., "ran": true | false}  (where supported)
    POST /taskgate/{noun}s/{id}/requests     {"message": "..."}                  (where supported)

Reading needs the status token when one is set (without one, a caller sees only its own API
key's conversations, and the metrics, which count every client's calls, only from the gate's own
host); every ``POST`` needs it (403 without one configured). An address that sent too many wrong
tokens is a 429 for a while on the bearer token (:mod:`taskgate.serving.throttle`); the signed-in
console, whose cookie and key cannot be guessed, is served meanwhile. Approval timing is one
rule on every surface: a revision or an approval is checked when posted (400 naming what is
wrong; 409 for a second approval while one waits, or a conversation with no plan yet; nothing
written), held in the journal, and given at the conversation's next exchange
(:mod:`taskgate.journal.held`). A journal that does not fold is a 500 naming it; one that cannot be
read, a 503.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from taskgate.errors import LedgerFormatError, LogFormatError, TaskgateError
from taskgate.journal.events import HeldEvent
from taskgate.journal.held import NoPlanYet, OneApprovalAtATime
from taskgate.serving.console import console_routes
from taskgate.serving.errors import HttpError
from taskgate.serving.http import read_body
from taskgate.serving.operator import (
    TOKEN_VARIABLE,
    ApprovalBody,
    MessageBody,
    RevisionBody,
    SettleBody,
    mine,
    parsed,
    resolve,
    scope,
)
from taskgate.serving.throttle import Throttle, address


class Conflict(TaskgateError):
    """A change that cannot be taken now (the surface's own: a session that moved on elsewhere)."""


class Unavailable(LogFormatError):
    """The surface could not record a change (its journal failed): a 503, as on the proxy."""


class Operated(Protocol):
    """What a surface gives the router: its conversations, each change applied its own way."""

    noun: str  # "conversation" or "session"
    status_token: str | None
    settles: bool  # it holds calls in doubt that an operator settles
    messages: bool  # an operator may post the user's message (the application's requests)

    async def keys(self) -> list[str]: ...
    async def row(self, key: str) -> dict[str, Any]: ...
    async def status(self, key: str) -> dict[str, Any]: ...
    def metrics(self) -> dict[str, Any]: ...
    async def hold(self, key: str, body: RevisionBody | ApprovalBody) -> list[HeldEvent]: ...
    async def settle(self, key: str, step: str, ran: bool) -> str: ...
    async def message(self, key: str, message: str, agent: str = "") -> dict[str, Any]: ...
    def message_key(self, key: str) -> str | None: ...


Guard = Callable[[Request], Awaitable[Response | None]]
Handler = Callable[[Request, Operated, str | None], Awaitable[Response]]


def operator_routes(target: Operated, guard: Guard | None = None) -> list[Route]:
    """The operators' routes over ``target``; ``guard`` answers a request it rejects (a foreign
    Host or Origin) before anything else is read."""
    noun = target.noun
    throttle = Throttle()  # wrong tokens per address, here and at the console's sign-in

    def endpoint(handler: Handler, write: bool = False) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            if guard is not None and (rejected := await guard(request)) is not None:
                return rejected
            who = address(request)
            guess = "authorization" in request.headers  # no credentials guess nothing
            if guess and (wait := throttle.wait_s(who)):  # before the token is compared
                return too_many(wait)
            try:
                try:
                    caller = scope(request.headers, target.status_token, write=write)
                except HttpError as exc:
                    if exc.status == 401 and guess:  # a wrong token
                        throttle.failed(who)
                    raise
                return await handler(request, target, caller)
            except HttpError as exc:
                return exc.response()
            except (OneApprovalAtATime, NoPlanYet, Conflict) as exc:
                return HttpError(409, str(exc), "conversation_conflict").response()
            except LogFormatError as exc:  # the journal could not be read or written
                said = (
                    str(exc)
                    if isinstance(exc, Unavailable)
                    else f"the gate could not record it: {exc}"
                )
                return HttpError(503, said, "server_error").response()
            except LedgerFormatError as exc:  # the journal does not fold: the gate's fault
                return HttpError(
                    500, f"the {noun}'s journal does not fold: {exc}", "server_error"
                ).response()
            except TaskgateError as exc:  # refused by the gate: one line, nothing written
                return HttpError(400, f"the change was refused: {exc}").response()

        return handle

    base = f"/taskgate/{noun}s"
    routes = [
        *console_routes(noun, target.status_token, target.settles, guard, throttle),
        Route(base, endpoint(_list), methods=["GET"]),
        Route("/taskgate/metrics", endpoint(_metrics), methods=["GET"]),
        Route(f"{base}/{{key:path}}/revisions", endpoint(_revise, True), methods=["POST"]),
        Route(f"{base}/{{key:path}}/approvals", endpoint(_approve, True), methods=["POST"]),
    ]
    if target.settles:
        routes.append(Route(f"{base}/{{key:path}}/settle", endpoint(_settle, True), methods=["POST"]))  # fmt: skip
    if target.messages:
        routes.append(Route(f"{base}/{{key:path}}/requests", endpoint(_message, True), methods=["POST"]))  # fmt: skip
    routes.append(Route(f"{base}/{{key:path}}", endpoint(_show), methods=["GET"]))
    return routes


def too_many(wait: int) -> Response:
    """The answer to an address that sent too many wrong tokens: a 429 saying when to retry."""
    answer = HttpError(
        429, f"too many wrong tokens from this address: try again in {wait} s", "rate_limit_error"
    ).response()
    answer.headers["retry-after"] = str(wait)
    return answer


def _json(data: Any) -> Response:
    return Response(orjson.dumps(data), media_type="application/json")


async def _resolve(request: Request, target: Operated, caller: str | None) -> str:
    key = str(request.path_params["key"])
    return resolve(key, await target.keys(), caller, target.noun)


async def _list(request: Request, target: Operated, caller: str | None) -> Response:
    rows = [await target.row(k) for k in await target.keys() if mine(k, caller)]
    return _json({f"{target.noun}s": rows})


async def _metrics(request: Request, target: Operated, caller: str | None) -> Response:
    """Every client's calls, counted together: the operator's (the token, or without one the
    gate's own host), never another client's to read."""
    if target.status_token is None and not _loopback(request):
        raise HttpError(
            403,
            "the metrics count every client's calls: read them on the gate's own host, or start "
            f"the gate with {TOKEN_VARIABLE} set and send it as 'Authorization: Bearer <token>'",
            "auth_error",
        )
    return _json(target.metrics())


def _loopback(request: Request) -> bool:
    """Whether the request came from the gate's own host (a loopback address)."""
    try:
        address = ipaddress.ip_address(request.client.host if request.client else "")
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


async def _show(request: Request, target: Operated, caller: str | None) -> Response:
    return _json(await target.status(await _resolve(request, target, caller)))


async def _revise(request: Request, target: Operated, caller: str | None) -> Response:
    return await _change(request, target, caller, RevisionBody)


async def _approve(request: Request, target: Operated, caller: str | None) -> Response:
    return await _change(request, target, caller, ApprovalBody)


async def _change(
    request: Request,
    target: Operated,
    caller: str | None,
    model: type[RevisionBody] | type[ApprovalBody],
) -> Response:
    key = await _resolve(request, target, caller)
    body = parsed(await read_body(request), model)
    held = await target.hold(key, body)
    rows = [h.model_dump(mode="json", exclude_none=True) for h in held]
    return _json({target.noun: key, "held": rows})


async def _settle(request: Request, target: Operated, caller: str | None) -> Response:
    key = await _resolve(request, target, caller)
    body: SettleBody = parsed(await read_body(request), SettleBody)
    step = await target.settle(key, body.step, body.ran)
    return _json({target.noun: key, "settled": step, "ran": body.ran})


async def _message(request: Request, target: Operated, caller: str | None) -> Response:
    key = target.message_key(str(request.path_params["key"]))
    if key is None:  # not a whole id that may open a new one: one that exists, by name or id
        key = await _resolve(request, target, caller)
    body: MessageBody = parsed(await read_body(request), MessageBody)
    return _json({target.noun: key, **await target.message(key, body.message, body.agent)})
