"""The MCP gate's HTTP endpoints for operators (served beside ``/mcp``, or on ``--status-port``).

    GET  /taskgate/sessions                  the sessions (with the status token: every one)
    GET  /taskgate/sessions/{id}             its plan, statuses, request, ledger, calls in doubt
    GET  /taskgate/metrics                   calls by outcome; the gate's own time per call
    POST /taskgate/sessions/{id}/requests    {"message": "..."}: the user's message opens a request
    POST /taskgate/sessions/{id}/revisions   {"cancel": ..., "rewire": ..., "inherit": ...} | ...
    POST /taskgate/sessions/{id}/approvals   {"step": ..., "by": ..., "reason": ...}
    POST /taskgate/sessions/{id}/settle      {"step": ..., "ran": true | false}: a call in doubt

The ``POST`` endpoints need the status token (403 without one configured). A revision or an
approval is checked at once (a revision that would strand a step, one naming no step, an approval
of nothing: a 400 with one line; a second approval while one waits: a 409; nothing written), held
in the session's journal and given at its next exchange (its next call or user message), as on
the proxy (:mod:`taskgate.journal.held`). A user's message may open a session's first request:
name the session by its whole id (``stdio~local`` over stdio, ``NAME~OWNER`` over HTTP).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import orjson
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from taskgate.core.ledger import sealed_rows
from taskgate.errors import LedgerFormatError, TaskgateError
from taskgate.integrations.mcp.front import security
from taskgate.integrations.mcp.sessions import McpGate, SessionMoved
from taskgate.journal.held import NoPlanYet, OneApprovalAtATime, held_approval, held_revision
from taskgate.serving.errors import HttpError
from taskgate.serving.http import read_body
from taskgate.serving.operator import (
    ApprovalBody,
    MessageBody,
    RevisionBody,
    SettleBody,
    mine,
    parsed,
    resolve,
    revision_of,
    scope,
)

Handler = Callable[[Request, McpGate, str | None], Awaitable[Response]]


def routes(gate: McpGate, host: str = "127.0.0.1", *, local: bool = False) -> list[Route]:
    """The operators' routes over ``gate``, behind the same Host and Origin guard as the MCP
    endpoint of a gate served on ``host`` (the SDK's DNS-rebinding guard, on loopback). ``local``:
    the gate serves one stdio client, whose sessions a name alone names (``stdio`` is
    ``stdio~local``)."""
    guard = TransportSecurityMiddleware(security(host))

    def endpoint(handler: Handler, write: bool = False) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            rejected = await guard.validate_request(request, is_post=False)
            if rejected is not None:
                return rejected
            try:
                caller = scope(request.headers, gate.config.status_token, write=write)
                return await handler(request, gate, caller)
            except HttpError as exc:
                return exc.response()
            except (OneApprovalAtATime, NoPlanYet, SessionMoved) as exc:
                return HttpError(409, str(exc), "conversation_conflict").response()
            except LedgerFormatError as exc:  # the journal does not fold: the gate's fault
                return HttpError(500, f"the session's journal does not fold: {exc}",
                                 "server_error").response()  # fmt: skip
            except TaskgateError as exc:  # refused by the gate: one line, nothing written
                return HttpError(400, f"the change was refused: {exc}").response()

        return handle

    return [
        Route("/taskgate/sessions", endpoint(_list), methods=["GET"]),
        Route("/taskgate/metrics", endpoint(_metrics), methods=["GET"]),
        Route(
            "/taskgate/sessions/{key:path}/requests",
            endpoint(partial(_request, local=local), True),
            methods=["POST"],
        ),
        Route("/taskgate/sessions/{key:path}/revisions", endpoint(_revise, True), methods=["POST"]),
        Route(
            "/taskgate/sessions/{key:path}/approvals", endpoint(_approve, True), methods=["POST"]
        ),
        Route("/taskgate/sessions/{key:path}/settle", endpoint(_settle, True), methods=["POST"]),
        Route("/taskgate/sessions/{key:path}", endpoint(_show), methods=["GET"]),
    ]


#: a session's whole id: a name, then its owner (the stdio client's, the anonymous one, or a
#: client key's hash); a message posted to one opens its first request if it has none yet
_WHOLE_ID = re.compile(r"[^~\s]{1,200}~(?:local|anon|[0-9a-f]{32})")


def _json(data: Any) -> Response:
    return Response(orjson.dumps(data), media_type="application/json")


async def _resolve(request: Request, gate: McpGate, scope: str | None) -> str:
    return resolve(str(request.path_params["key"]), await gate.keys(), scope, "session")


async def _list(request: Request, gate: McpGate, scope: str | None) -> Response:
    return _json({"sessions": [k for k in await gate.keys() if mine(k, scope)]})


async def _metrics(request: Request, gate: McpGate, scope: str | None) -> Response:
    return _json(gate.metrics.summary())


async def _show(request: Request, gate: McpGate, scope: str | None) -> Response:
    key = await _resolve(request, gate, scope)
    session = await gate.session(key)
    machine = session.gate.machine
    req = machine.request
    return _json(
        {
            "id": key,
            "plan": machine.graph.to_plan().model_dump(mode="json"),
            "statuses": {s: str(v) for s, v in machine.statuses().items()},
            "request": None if req is None else {"step": req.step, "redo": req.explicit_redo},
            "ledger": sealed_rows(machine.ledger, scope=key),
            "in_doubt": sorted({e.step for e in session.in_doubt().values()}),
            "held": [h.model_dump(mode="json", exclude_none=True) for h in session.conv.held],
            "running": sorted(
                {e.step for c, e in session.conv.in_flight.items() if c in session.live}
            ),
        }
    )


async def _request(
    request: Request, gate: McpGate, scope: str | None, *, local: bool = False
) -> Response:
    key = str(request.path_params["key"])
    if local and "~" not in key:  # the stdio client's session, by its name
        key = f"{key}~local"
    if not _WHOLE_ID.fullmatch(key):  # a session that exists, by name or whole id
        key = await _resolve(request, gate, scope)
    body: MessageBody = parsed(await read_body(request), MessageBody)
    return _json({"session": key, "answer": await gate.request(key, body.message)})


async def _revise(request: Request, gate: McpGate, scope: str | None) -> Response:
    key = await _resolve(request, gate, scope)
    body: RevisionBody = parsed(await read_body(request), RevisionBody)
    held = await gate.hold(key, lambda conv, m: held_revision(m, revision_of(m, body)))
    return _held(key, held)


async def _approve(request: Request, gate: McpGate, scope: str | None) -> Response:
    key = await _resolve(request, gate, scope)
    body: ApprovalBody = parsed(await read_body(request), ApprovalBody)
    held = await gate.hold(
        key, lambda conv, m: held_approval(conv, m, body.step, body.by, body.reason)
    )
    return _held(key, held)


def _held(key: str, held: list[Any]) -> Response:
    """What the session holds for its next exchange (the change just posted last)."""
    return _json({"session": key, "held": [h.model_dump(mode="json", exclude_none=True)
                                           for h in held]})  # fmt: skip


async def _settle(request: Request, gate: McpGate, scope: str | None) -> Response:
    key = await _resolve(request, gate, scope)
    body: SettleBody = parsed(await read_body(request), SettleBody)
    step = gate.step(body.step)  # a step id or its tool's name
    await gate.settle(key, step, body.ran)
    return _json({"session": key, "settled": step, "ran": body.ran})
