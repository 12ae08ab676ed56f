"""An error answer of the gate's HTTP surfaces (the proxy, the MCP gate's endpoints): one OpenAI-style
JSON error, with the HTTP status that fits."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from taskgate.errors import TaskgateError


class HttpError(TaskgateError):
    """One OpenAI-style error answer (``{"error": {"message", "type", "code"}}``)."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind

    def response(self) -> Response:
        body = {"error": {"message": str(self), "type": self.kind, "code": self.status}}
        return Response(orjson.dumps(body), self.status, media_type="application/json")


def dumps(obj: Any, status: int, what: str) -> bytes:
    """JSON bytes, or an error naming ``what`` (orjson writes at most 254 levels of nesting)."""
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError as exc:
        kind = "upstream_error" if status >= 500 else "invalid_request_error"
        raise HttpError(status, f"{what} cannot be forwarded: {exc}", kind) from None
