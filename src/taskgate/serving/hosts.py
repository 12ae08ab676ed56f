"""Which ``Host`` and ``Origin`` a gate answers: the DNS-rebinding guard in front of every route
of the proxy and the MCP gate (its HTTP front and the stdio gate's status port).

A DNS-rebinding page reaches a server on loopback under a name of its own (``Host:
evil.example:8100``), so a request is answered only when its ``Host`` is an IP address, or
``localhost``, or a name the operator allowed (``--allowed-host NAME``, ``NAME:PORT`` or
``NAME:*``; a reverse proxy's public name, say). Anything else is a 421 naming the option. A
request a browser sent from a page (an ``Origin`` header) is answered only from the gate's own
origin (the ``Host`` it reached, or the ``X-Forwarded-Host`` a reverse proxy passed on) or an
origin whose host the operator named (never another port of the host by default): a page of
another site cannot drive ``/v1/chat/completions`` with a ``text/plain`` body, which needs no
CORS preflight. The MCP gate checks ``Host`` the same way and leaves ``Origin`` at its MCP
endpoint to the MCP SDK's own guard (which lets browser MCP clients on loopback in, and needs
``application/json`` bodies, which no page can send across origins without a preflight); its
operators' endpoints take the console only from its own origin
(:mod:`taskgate.serving.signin`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from taskgate.errors import UsageError
from taskgate.serving.errors import HttpError


def split(host: str) -> tuple[str, str]:
    """A ``Host`` value's name and port (``[::1]:8100`` is ``::1`` and ``8100``)."""
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else ""
    if host.count(":") == 1:
        name, _, port = host.partition(":")
        return name, port
    return host, ""


def _ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def checked(patterns: Sequence[str]) -> tuple[str, ...]:
    """The operator's ``--allowed-host`` values, or a :class:`UsageError` naming a bad one."""
    out = []
    for pattern in patterns:
        name, port = split(pattern)
        if (
            not name
            or not all(c.isalnum() or c in "-._" for c in name)
            or (port not in ("", "*") and not (port.isdigit() and len(port) <= 5))
        ):
            raise UsageError(f"--allowed-host {pattern!r}: give NAME, NAME:PORT or NAME:*")
        out.append(f"{name}:{port}" if port else name)
    return tuple(out)


def allowed(host: str, patterns: Sequence[str]) -> bool:
    """Whether a ``Host`` value is one the gate answers (see the module)."""
    name, port = split(host)
    if not name or (port and not port.isdigit()):
        return False
    return _ip(name) or name == "localhost" or listed(host, patterns)


def listed(host: str, patterns: Sequence[str]) -> bool:
    """Whether a ``Host`` (or an origin's host) is one the operator named."""
    name, port = split(host)
    for pattern in patterns:
        want, _, want_port = pattern.partition(":")
        if want == name and (not want_port or want_port in ("*", port)):
            return True
    return False


class HostGuard:
    """ASGI middleware: a request whose ``Host`` (or ``Origin``) the gate does not answer is
    refused before any route reads it."""

    def __init__(
        self, app: ASGIApp, allowed_hosts: Sequence[str] = (), *, origins: bool = True
    ) -> None:
        self.app, self.origins = app, origins
        self.patterns = checked(allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            refused = self.refusal(scope)
            if refused is not None and scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})  # policy violation
                return
            if refused is not None:
                await refused.response()(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> HttpError | None:
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name, value)
        host = headers.get(b"host", b"").decode("latin-1")
        if not allowed(host, self.patterns):
            return HttpError(
                421,
                f"this gate does not answer to the host {host[:100]!r} (a page that reached it "
                "under another name would be refused too); start it with --allowed-host NAME "
                "to answer to that name",
                "misdirected_request",
            )
        origin = headers.get(b"origin")
        if origin is None or not self.origins:
            return None
        netloc = urlsplit(origin.decode("latin-1")[:500]).netloc.lower()
        own = headers.get(b"x-forwarded-host", b"").decode("latin-1").split(",")[0].strip()
        if netloc and netloc in (host.lower(), own.lower()):
            return None
        if netloc and listed(netloc, self.patterns):
            return None
        return HttpError(
            403,
            "a browser page of another origin cannot use this gate (its requests come from the "
            "gate's own address, or a name given with --allowed-host)",
            "auth_error",
        )
