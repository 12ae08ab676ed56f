"""Whose a request is, and reading its body: the same on every HTTP surface of the gate."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping

from starlette.requests import ClientDisconnect, Request

from taskgate.serving.errors import HttpError

#: the largest request body a surface reads (a long agent history is a few MB)
MAX_BODY = 64 << 20
#: how long a request's body may take to arrive, once its headers are in
BODY_TIMEOUT_S = 120.0


def owner(headers: Mapping[str, str]) -> str:
    """Whose conversations a request reaches: a hash of its ``Authorization`` header (128 bits),
    or ``anon`` without one."""
    auth = headers.get("authorization")
    return hashlib.sha256(auth.encode()).hexdigest()[:32] if auth else "anon"


async def read_body(request: Request, limit: int = MAX_BODY, timeout: float | None = None) -> bytes:
    """The request's body, at most ``limit`` bytes: a ``Content-Length`` over it is a 413 before
    a byte is read, and so is a body that grows past it; a body not whole within ``timeout``
    seconds (default :data:`BODY_TIMEOUT_S`) is a 408; a client gone mid-upload is a 400."""
    seconds = BODY_TIMEOUT_S if timeout is None else timeout
    size = request.headers.get("content-length", "")
    if size.isdigit() and int(size) > limit:
        raise HttpError(413, f"the request body is over {_size(limit)}")
    parts, total = [], 0
    try:
        async with asyncio.timeout(seconds):
            async for part in request.stream():
                total += len(part)
                if total > limit:
                    raise HttpError(413, f"the request body is over {_size(limit)}")
                parts.append(part)
    except ClientDisconnect:
        raise HttpError(400, "the client disconnected before its request was read") from None
    except TimeoutError:
        raise HttpError(408, f"the request body took over {seconds:g} s to arrive") from None
    return b"".join(parts)


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"
