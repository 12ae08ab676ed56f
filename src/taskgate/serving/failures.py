"""What went wrong talking to a server, in one plain line: refused, not found, a certificate that
does not verify, a timeout (not ``ConnectTimeout("Cannot connect to host ... ssl:default")`` for a
plain-HTTP server that refused the connection)."""

from __future__ import annotations

import errno
import socket
import ssl


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it, outermost first (at most 10 links)."""
    out: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(out) < 10 and seen not in out:
        out.append(seen)
        wrapped = getattr(seen, "certificate_error", None) or getattr(seen, "os_error", None)
        if isinstance(wrapped, BaseException) and wrapped is not seen:  # aiohttp's wrappers
            out.append(wrapped)
        seen = seen.__cause__ or seen.__context__
    return out


def describe(exc: BaseException) -> str:
    """Why a connection to a server failed, as a person would say it."""
    chain = _chain(exc)
    for link in chain:
        if isinstance(link, ssl.SSLCertVerificationError):
            return f"its TLS certificate does not verify ({link.verify_message or link.reason})"
        if isinstance(link, ssl.SSLError):
            return f"the TLS handshake failed ({link.reason or link})"
        if isinstance(link, ConnectionRefusedError) or (
            isinstance(link, OSError) and link.errno == errno.ECONNREFUSED
        ):
            return "it refused the connection"
        if isinstance(link, socket.gaierror):
            return "its host name does not resolve"
        if isinstance(link, ConnectionResetError | BrokenPipeError):
            return "it closed the connection"
    names = {type(link).__name__ for link in chain}
    if names & {"ServerDisconnectedError", "RemoteProtocolError", "ReadError"}:
        return "it closed the connection before answering"
    if any(isinstance(link, TimeoutError) for link in chain) or any("Timeout" in n for n in names):
        return "it did not answer in time"
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
