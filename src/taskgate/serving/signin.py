"""An operator's sign-in to the console: a cookie the gate signs with the status token, and a
key the console's page keeps for its own origin.

A browser cannot send ``Authorization: Bearer <token>`` on a page load, so the console's sign-in
form takes the status token once and answers with a cookie (``HttpOnly``, ``SameSite=Strict``,
path ``/taskgate``, 12 hours) whose value is an expiry, a nonce and an HMAC-SHA256 of both keyed
by the token. Nothing is kept on the server: a changed token signs every operator out (signing
out clears the browser's cookie, and a copy of it stays valid until it expires), and a cookie
made without the token (forged, or cut from another gate's) is refused like no cookie. Browsers
share cookies across a host's ports, so the cookie's name carries the port of the gate's
address: two gates on one host keep their sign-ins apart.

**The cookie alone operates nothing.** Browsers send a host's cookies to every port of it, so a
page served by another port of the same host reads the cookie off its own request. The sign-in's
answer therefore also carries a **console key** (an HMAC of the cookie's expiry and nonce, keyed
by the token), once, in the page the sign-in returns; the console's script keeps it in the
origin's own storage (which another port cannot read) and sends it as the console's header
(``X-Taskgate-Console: <key>``). The operators' JSON endpoints take the cookie only with its key
in that header, which a page of another site cannot send without a CORS preflight that the gate
never answers, and only from the gate's own origin. Loading the console's page with the cookie
alone shows no data (the page holds none). A cookie of the same name set by another page (at
path ``/``, say) does not shadow the real one: every value of the name is checked (up to 50),
and cookies of other names, however many or large, are passed over.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

#: the cookie's name, and how long a sign-in lasts
COOKIE = "taskgate_console"
LIFETIME_S = 12 * 3600
#: the header the console's own requests carry, with the sign-in's console key (a page of
#: another site cannot send it without a CORS preflight that the gate does not answer)
HEADER = "x-taskgate-console"
#: the most values of this gate's cookie name checked (each an HMAC)
_MOST_VALUES = 50
_KEY = re.compile(r"[0-9a-f]{64}")
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


def cookie_name(headers: Mapping[str, str]) -> str:
    """The sign-in cookie's name at the address the request reached (``taskgate_console_8100``;
    a browser sends one host's cookies to all its ports)."""
    port = _host(headers).rpartition(":")[2]
    return f"{COOKIE}_{port}" if port.isdigit() and len(port) <= 5 else COOKIE


def console_key(token: str, value: str) -> str:
    """The console key of sign-in ``value`` (see the module): what the page sends in the
    console's header beside the cookie."""
    expires, _, rest = value.partition(".")
    nonce = rest.partition(".")[0]
    message = f"taskgate console key\n{expires}\n{nonce}".encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def sign_ins(headers: Mapping[str, str], token: str) -> list[str]:
    """The valid sign-ins the request's cookies carry under this gate's cookie name (every
    value of the name, so that a junk cookie of the same name shadows nothing)."""
    name, found, tried = cookie_name(headers), [], 0
    for part in headers.get("cookie", "").split(";"):  # linear in the header, whatever its size
        key, eq, value = part.partition("=")
        if not eq or key.strip() != name:
            continue  # other cookies, however many a page of another port set, shadow nothing
        tried += 1
        if tried > _MOST_VALUES:
            break
        if valid(value.strip().strip('"'), token):
            found.append(value.strip().strip('"'))
    return found


def signed_in(headers: Mapping[str, str], token: str) -> bool:
    """Whether the request carries a valid console sign-in cookie (the page's own loads)."""
    return bool(sign_ins(headers, token))


def keyed(headers: Mapping[str, str], token: str) -> bool:
    """Whether the request carries a valid sign-in cookie and, in the console's header, that
    sign-in's console key."""
    given = headers.get(HEADER, "")
    if not _KEY.fullmatch(given):
        return False
    return any(hmac.compare_digest(given, console_key(token, v)) for v in sign_ins(headers, token))


def _host(headers: Mapping[str, str]) -> str:
    """The address the browser reached: a reverse proxy's ``X-Forwarded-Host`` (which no page
    of another site can set), else ``Host``."""
    forwarded = headers.get("x-forwarded-host", "").split(",")[0].strip()
    return forwarded or headers.get("host", "")


def same_origin(headers: Mapping[str, str]) -> bool:
    """Whether the request's ``Origin`` (when a browser sent one) is the gate's own address."""
    origin = headers.get("origin")
    if origin is None:
        return True
    return origin != "null" and urlsplit(origin[:500]).netloc == _host(headers)


def cross_origin(headers: Mapping[str, str], token: str) -> bool:
    """Whether the request is the console's own, signed in, but from another origin (a reverse
    proxy that rewrites ``Host`` without ``X-Forwarded-Host``, or another site)."""
    return not same_origin(headers) and keyed(headers, token)


def from_console(headers: Mapping[str, str], token: str) -> bool:
    """Whether a JSON request is the signed-in console's own: its cookie, that sign-in's key in
    its header, from the gate's origin."""
    return same_origin(headers) and keyed(headers, token)
