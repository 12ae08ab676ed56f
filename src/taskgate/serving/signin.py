"""An operator's sign-in to the console: a cookie the gate signs with the status token.

A browser cannot send ``Authorization: Bearer <token>`` on a page load, so the console's sign-in
form takes the status token once and answers with a cookie (``HttpOnly``, ``SameSite=Strict``,
path ``/taskgate``, 12 hours) whose value is an expiry, a nonce and an HMAC-SHA256 of both keyed
by the token. Nothing is kept on the server: a changed token signs every operator out, and a
cookie made without the token (forged, or cut from another gate's) is refused like no cookie.

The operators' JSON endpoints take the cookie only with the console's own header
(``X-Taskgate-Console: 1``), which a page of another site cannot send without a CORS preflight
that the gate never answers, and only from the gate's own origin: a cookie alone changes nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

from starlette.requests import cookie_parser

#: the cookie's name, and how long a sign-in lasts
COOKIE = "taskgate_console"
LIFETIME_S = 12 * 3600
#: the header the console's own requests carry (a page of another site cannot, without a CORS
#: preflight that the gate does not answer)
HEADER = "x-taskgate-console"
_VALUE = re.compile(r"([0-9]{1,12})\.([0-9a-f]{32})\.([0-9a-f]{64})")


def _signature(token: str, expires: str, nonce: str) -> str:
    message = f"taskgate console\n{expires}\n{nonce}".encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def cookie_value(token: str, now: float | None = None) -> str:
    """A fresh sign-in for the holder of ``token``, valid for :data:`LIFETIME_S`."""
    expires = str(int((time.time() if now is None else now) + LIFETIME_S))
    nonce = secrets.token_hex(16)
    return f"{expires}.{nonce}.{_signature(token, expires, nonce)}"


def valid(value: str, token: str, now: float | None = None) -> bool:
    """Whether ``value`` is a sign-in signed with ``token`` that has not expired."""
    found = _VALUE.fullmatch(value[:200])
    if found is None or len(value) > 200:
        return False
    expires, nonce, seal = found.groups()
    if int(expires) < (time.time() if now is None else now):
        return False
    return hmac.compare_digest(seal, _signature(token, expires, nonce))


def signed_in(headers: Mapping[str, str], token: str) -> bool:
    """Whether the request carries a valid console sign-in (the page's own loads)."""
    raw = headers.get("cookie", "")
    return len(raw) <= 8192 and valid(cookie_parser(raw).get(COOKIE, ""), token)


def same_origin(headers: Mapping[str, str]) -> bool:
    """Whether the request's ``Origin`` (when a browser sent one) is the gate's own host."""
    origin = headers.get("origin")
    if origin is None:
        return True
    return origin != "null" and urlsplit(origin[:500]).netloc == headers.get("host", "")


def from_console(headers: Mapping[str, str], token: str) -> bool:
    """Whether a JSON request is the signed-in console's own: its header, its cookie, from the
    gate's origin."""
    return headers.get(HEADER) == "1" and same_origin(headers) and signed_in(headers, token)
