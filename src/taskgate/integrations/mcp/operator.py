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
from collections.abc import Sequence
from typing import Any

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from taskgate.integrations.mcp.front import security
from taskgate.integrations.mcp.sessions import McpGate
from taskgate.journal.events import HeldEvent
from taskgate.journal.held import held_approval, held_revision
from taskgate.serving.operator import ApprovalBody, RevisionBody, revision_of
from taskgate.serving.router import operator_routes
from taskgate.serving.status import listing_row, status_json

#: a session's whole id: a name, then its owner (the stdio client's, the anonymous one, or a
#: client key's hash); a message posted to one opens its first request if it has none yet
_WHOLE_ID = re.compile(r"[^~\s]{1,200}~(?:local|anon|[0-9a-f]{32})")


def routes(
    gate: McpGate,
    host: str = "127.0.0.1",
    *,
    local: bool = False,
    allowed_hosts: Sequence[str] = (),
) -> list[Route]:
    """The operators' routes over ``gate`` (the shared router, :mod:`taskgate.serving.router`),
    behind the same Host and Origin guard as the MCP endpoint of a gate served on ``host`` (the
    SDK's DNS-rebinding guard, on loopback, answering ``allowed_hosts`` too). ``local``: the gate
    serves one stdio client, whose sessions a name alone names (``stdio`` is ``stdio~local``)."""
    shield = TransportSecurityMiddleware(security(host, allowed_hosts))

    async def guard(request: Request) -> Response | None:
        return await shield.validate_request(request, is_post=False)

    return operator_routes(Operated(gate, local=local), guard)


def status_app(gate: McpGate, allowed_hosts: Sequence[str] = ()) -> Any:
    """The stdio gate's ``--status-port`` app: the operators' routes for its one local client,
    answering only the ``Host`` names :mod:`taskgate.serving.hosts` allows."""
    from starlette.applications import Starlette

    from taskgate.serving.hosts import HostGuard

    hosts = tuple(allowed_hosts)
    app = Starlette(routes=routes(gate, local=True, allowed_hosts=hosts))
    return HostGuard(app, hosts, origins=False)


class Operated:
    """The MCP gate's sessions as the shared operators' router sees them."""

    noun = "session"
    settles = True  # a call whose answer never came is in doubt until settled
    messages = True  # with --requests application, the application posts the user's messages

    def __init__(self, gate: McpGate, *, local: bool = False) -> None:
        self.gate = gate
        self.local = local
        self.status_token = gate.config.status_token

    async def keys(self) -> list[str]:
        return await self.gate.keys()

    async def row(self, key: str) -> dict[str, Any]:
        """A session in memory with its counts; one only in the journal by its id (a listing
        does not read every journal)."""
        held = self.gate.sessions.peek(key)
        return listing_row(held.conv) if held is not None else {"id": key}

    async def status(self, key: str) -> dict[str, Any]:
        session = await self.gate.session(key)
        return status_json(session.conv, live=session.live, plain=True)

    def metrics(self) -> dict[str, Any]:
        return self.gate.metrics.summary()

    async def hold(self, key: str, body: RevisionBody | ApprovalBody) -> list[HeldEvent]:
        if isinstance(body, ApprovalBody):
            return await self.gate.hold(
                key, lambda conv, m: held_approval(conv, m, body.step, body.by, body.reason)
            )
        return await self.gate.hold(key, lambda conv, m: held_revision(m, revision_of(m, body)))

    async def settle(self, key: str, step: str, ran: bool) -> str:
        step = self.gate.step(step)  # a step id or its tool's name
        await self.gate.settle(key, step, ran)
        return step

    async def message(self, key: str, message: str, agent: str = "") -> dict[str, Any]:
        return {"answer": await self.gate.request(key, message, agent)}

    def message_key(self, key: str) -> str | None:
        if self.local and "~" not in key:  # the stdio client's session, by its name
            key = f"{key}~local"
        return key if _WHOLE_ID.fullmatch(key) else None
