"""The MCP gate's HTTP endpoints for operators (served beside ``/mcp``, or on ``--status-port``).

    GET  /taskgate/sessions                  the sessions (with the status token: every one)
    GET  /taskgate/sessions/{id}             its plan, statuses, request, ledger, calls in doubt
    GET  /taskgate/metrics                   calls by outcome; the gate's own time per call
    POST /taskgate/sessions/{id}/requests    {"message": "..."}: the user's message opens a request
    POST /taskgate/sessions/{id}/revisions   {"cancel": ..., "rewire": ..., "inherit": ...} | ...
    POST /taskgate/sessions/{id}/approvals   {"step": ..., "by": ..., "reason": ...}
    POST /taskgate/sessions/{id}/settle      {"step": ..., "ran": true | false}: a call in doubt

The ``POST`` endpoints need the status token (403 without one configured). A change is applied at
once, as one receipts-ledger entry (a revision that would strand a step, one naming no step, an
approval of nothing: a 400 with one line, nothing written). An approval lets one call run during
the session's current request.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from taskgate.core.ledger import sealed_rows
from taskgate.core.plan import Revision
from taskgate.errors import TaskgateError
from taskgate.gate.session import GateSession
from taskgate.integrations.mcp.sessions import McpGate
from taskgate.proxy.errors import ProxyError
from taskgate.proxy.operator import ApprovalBody, RevisionBody, parsed, revision_of
from taskgate.proxy.server import owner, read_body


class RequestBody(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    message: str = Field(min_length=1, max_length=20_000)


class SettleBody(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    step: str = Field(min_length=1, max_length=200)
    ran: bool


Handler = Callable[[Request, McpGate, str | None], Awaitable[Response]]


def routes(gate: McpGate) -> list[Route]:
    """The operators' routes over ``gate``."""

    def endpoint(handler: Handler, write: bool = False) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            try:
                scope = _scope(request, gate, write)
                return await handler(request, gate, scope)
            except ProxyError as exc:
                return exc.response()
            except TaskgateError as exc:  # refused by the gate: one line, nothing written
                return ProxyError(400, f"the change was refused: {exc}").response()

        return handle

    return [
        Route("/taskgate/sessions", endpoint(_list), methods=["GET"]),
        Route("/taskgate/metrics", endpoint(_metrics), methods=["GET"]),
        Route("/taskgate/sessions/{key:path}/requests", endpoint(_request, True), methods=["POST"]),
        Route("/taskgate/sessions/{key:path}/revisions", endpoint(_revise, True), methods=["POST"]),
        Route(
            "/taskgate/sessions/{key:path}/approvals", endpoint(_approve, True), methods=["POST"]
        ),
        Route("/taskgate/sessions/{key:path}/settle", endpoint(_settle, True), methods=["POST"]),
        Route("/taskgate/sessions/{key:path}", endpoint(_show), methods=["GET"]),
    ]


def _scope(request: Request, gate: McpGate, write: bool) -> str | None:
    """``None`` for the operator (the status token), else the caller's own owner; a change needs
    the token."""
    token = gate.config.status_token
    if token is None:
        if write:
            raise ProxyError(403, "operator changes need the gate started with a status token",
                             "auth_error")  # fmt: skip
        return owner(request.headers)
    given = request.headers.get("authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        raise ProxyError(401, "the operator endpoints need 'Authorization: Bearer <token>'",
                         "auth_error")  # fmt: skip
    return None


def _json(data: Any) -> Response:
    return Response(orjson.dumps(data), media_type="application/json")


def _mine(key: str, scope: str | None) -> bool:
    return scope is None or key.endswith(f"~{scope}")


async def _resolve(request: Request, gate: McpGate, scope: str | None) -> str:
    key = str(request.path_params["key"])
    known = [k for k in await gate.keys() if _mine(k, scope)]
    if "~" not in key:
        found = [k for k in known if k.rpartition("~")[0] == key]
        if len(found) > 1:
            raise ProxyError(400, f"several sessions are named {key!r}: give the whole id")
        key = found[0] if found else key
    if key not in known:
        raise ProxyError(404, f"no session {key!r}", "not_found")
    return key


async def _list(request: Request, gate: McpGate, scope: str | None) -> Response:
    return _json({"sessions": [k for k in await gate.keys() if _mine(k, scope)]})


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
            "running": sorted(
                {e.step for c, e in session.conv.in_flight.items() if c in session.live}
            ),
        }
    )


async def _request(request: Request, gate: McpGate, scope: str | None) -> Response:
    key = await _resolve(request, gate, scope)
    body: RequestBody = parsed(await read_body(request), RequestBody)
    return _json({"session": key, "answer": await gate.request(key, body.message)})


async def _revise(request: Request, gate: McpGate, scope: str | None) -> Response:
    key = await _resolve(request, gate, scope)
    body: RevisionBody = parsed(await read_body(request), RevisionBody)

    def apply(g: GateSession) -> Revision:
        revision = revision_of(g.machine, body)
        g.revise(revision)  # the strand check, then one ledger entry
        return revision

    revision = await gate.change(key, apply)
    return _json({"session": key, "revision": revision.model_dump(mode="json")})


async def _approve(request: Request, gate: McpGate, scope: str | None) -> Response:
    key = await _resolve(request, gate, scope)
    body: ApprovalBody = parsed(await read_body(request), ApprovalBody)
    entry = await gate.change(key, lambda g: g.approve(body.step, by=body.by, reason=body.reason))
    return _json({"session": key, "approval": entry.model_dump(mode="json")})


async def _settle(request: Request, gate: McpGate, scope: str | None) -> Response:
    key = await _resolve(request, gate, scope)
    body: SettleBody = parsed(await read_body(request), SettleBody)
    await gate.settle(key, body.step, body.ran)
    return _json({"session": key, "settled": body.step, "ran": body.ran})
