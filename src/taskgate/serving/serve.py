"""Serving a gate's ASGI app with uvicorn, the same way on every surface (``taskgate proxy``,
``taskgate mcp --http``, the stdio gate's ``--status-port``, the tests' servers):

* **the socket is bound first**, so a port in use, an address the host does not have or a port
  that needs privileges is one line naming the option that changes it, before anything serves;
* **forwarded-address headers are ignored** unless the operator names the proxies it trusts
  (``--forwarded-allow-ips``): uvicorn's default trusts ``X-Forwarded-For`` from loopback, which
  let any local client choose the address its wrong tokens were counted under;
* **a connection must finish its request's headers** within :data:`HEADER_TIMEOUT_S` of opening
  (or of its last response), else it is closed: a client that trickles headers holds no
  connection for long. Bodies have their own deadline (:data:`taskgate.serving.http.BODY_TIMEOUT_S`).
"""

from __future__ import annotations

import asyncio
import errno
import socket
from typing import Any

from taskgate.errors import UsageError

#: how long a connection may take to send a request's headers
HEADER_TIMEOUT_S = 10.0


def bind(host: str, port: int, option: str = "--port") -> socket.socket:
    """A listening socket at ``host``:``port``, or a :class:`UsageError` of one line naming
    ``option`` (the flag that sets the port)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise UsageError(f"cannot listen on {host!r}: {exc} (choose another with --host)") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise UsageError(_bind_failure(exc, host, port, option)) from None
    sock.set_inheritable(True)
    return sock


def _bind_failure(exc: OSError, host: str, port: int, option: str) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} on {host} is in use (choose another with {option})"
    if exc.errno == errno.EACCES:
        return f"port {port} on {host} needs privileges (choose one above 1023 with {option})"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"this host has no address {host} to listen on (choose another with --host)"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc} (see {option} and --host)"


def config(app: Any, forwarded_allow_ips: str | None = None, **options: Any) -> Any:
    """The uvicorn configuration a gate is served with (see the module)."""
    import uvicorn

    return uvicorn.Config(
        app,
        http=_deadlined_protocol(),
        proxy_headers=bool(forwarded_allow_ips),
        forwarded_allow_ips=forwarded_allow_ips or None,
        server_header=False,
        **{"log_level": "warning", "access_log": False, **options},
    )


def _deadlined_protocol() -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools where installed, else h11) with a header deadline."""
    base: type[Any]
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:  # pragma: no cover - uvicorn without httptools
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class Deadlined(base):  # type: ignore[misc]
        """Closes a connection still without a whole request's headers at the deadline."""

        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # the next request's headers, on a kept-alive connection

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(HEADER_TIMEOUT_S, self._expired)

        def _expired(self) -> None:
            self._deadline = None
            waiting = self.cycle is None or self.cycle.response_complete
            if waiting and not self.transport.is_closing():
                self.transport.close()

    return Deadlined
