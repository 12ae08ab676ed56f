"""Whose a request is, and reading its body: the same on every HTTP surface of the gate."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from starlette.requests import ClientDisconnect, Request

from taskgate.serving.errors import HttpError

#: the largest request body a surface reads (a long agent history is a few MB)
MAX_BODY = 64 << 20


def owner(headers: Mapping[str, str]) -> str:
    """Whose conversations a request reaches: a hash of its ``Authorization`` header (128 bits),
    or ``anon`` without one."""
    auth = headers.get("authorization")
    return hashlib.sha256(auth.encode()).hexdigest()[:32] if auth else "anon"


async def read_body(request: Request) -> bytes:
    """The request's body, at most :data:`MAX_BODY` bytes (a 413 beyond; a client gone mid-upload
    is a 400)."""
    size = request.headers.get("content-length", "")
    if size.isdigit() and int(size) > MAX_BODY:
        raise HttpError(413, f"the request body is over {MAX_BODY >> 20} MiB")
    parts, total = [], 0
    try:
        async for part in request.stream():
            total += len(part)
            if total > MAX_BODY:
                raise HttpError(413, f"the request body is over {MAX_BODY >> 20} MiB")
            parts.append(part)
    except ClientDisconnect:
        raise HttpError(400, "the client disconnected before its request was read") from None
    return b"".join(parts)
