"""The operators' console: one page, served by the proxy and the MCP gate alike, behind the
status token.

    GET  /taskgate/console              the page (signed in), else the sign-in form (a 401)
    POST /taskgate/console/signin       the form's ``token``: a sign-in cookie, and a page that
                                        keeps its console key in this origin's storage, then
                                        opens the console
    POST /taskgate/console/signout      the cookie cleared
    GET  /taskgate/console/{file}       the page's script and style sheet (no data in them)

The page is plain HTML, one script and one style sheet, shipped in the wheel: nothing to build,
no third-party code, and a Content-Security-Policy that lets it load only its own files and talk
only to its own gate. It reads the operators' JSON endpoints (:mod:`taskgate.serving.router`)
once a second and acts through them; every name and notice is set as text, never as markup.
How the sign-in works is in :mod:`taskgate.serving.signin`.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from functools import cache
from importlib.resources import files
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from taskgate.serving.errors import HttpError
from taskgate.serving.http import read_body
from taskgate.serving.operator import TOKEN_VARIABLE
from taskgate.serving.signin import (
    LIFETIME_S,
    console_key,
    cookie_name,
    cookie_value,
    same_origin,
    signed_in,
)
from taskgate.serving.throttle import Throttle, address

PATH = "/taskgate/console"
#: the page may load its own script and style sheet and talk to its own gate, nothing else
_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "content-security-policy": _POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}
_ASSETS = {
    "console.js": "text/javascript",
    "signin.js": "text/javascript",
    "console.css": "text/css",
    "icon.svg": "image/svg+xml",
}
_LONGEST_FORM = 4096
#: how long the sign-in form's few bytes may take to arrive
_FORM_S = 10.0

Guard = Callable[[Request], Awaitable[Response | None]]


@cache
def _text(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def _page(name: str, status: int, **fields: str) -> Response:
    """``name``'s HTML with its ``{{field}}`` slots filled (each a fixed string of the gate's
    own, never a caller's text)."""
    html = _text(name)
    for key, value in fields.items():
        html = html.replace("{{" + key + "}}", value)
    return Response(html, status, media_type="text/html; charset=utf-8", headers=_HEADERS)


def _signin(status: int, said: str) -> Response:
    return _page("signin.html", status, said=said)


def _too_many(wait: int) -> Response:
    answer = _signin(429, "Too many wrong tokens from this address: wait, then try again.")
    answer.headers["retry-after"] = str(wait)
    return answer


def console_routes(
    noun: str, token: str | None, settles: bool, guard: Guard | None, throttle: Throttle
) -> list[Route]:
    """The console's routes for a surface whose operated things are ``noun``\\ s; ``throttle``
    counts wrong tokens per address (shared with the operators' endpoints)."""

    def guarded(handler: Callable[[Request], Awaitable[Response]]) -> Callable[..., Awaitable[Response]]:  # fmt: skip
        async def handle(request: Request) -> Response:
            if guard is not None and (rejected := await guard(request)) is not None:
                return rejected
            try:
                return await handler(request)
            except HttpError as exc:
                return exc.response()

        return handle

    async def page(request: Request) -> Response:
        if token is None:
            return _page("off.html", 403, variable=TOKEN_VARIABLE)
        if signed_in(request.headers, token):  # served even while the address is limited
            return _console(noun, settles)
        who = address(request)
        if wait := throttle.wait_s(who):
            return _too_many(wait)
        bearer = request.headers.get("authorization", "").encode()
        if bearer and hmac.compare_digest(bearer, f"Bearer {token}".encode()):
            return _console(noun, settles)
        if bearer:  # a wrong bearer token is a guess; a load with no credentials is none
            throttle.failed(who)
        said = "Sign in with the gate's status token."
        if cookie_name(request.headers) in request.cookies:
            said = "Your sign-in is not valid or has expired: sign in again."
        return _signin(401, said)

    async def signin(request: Request) -> Response:
        if token is None:
            return _page("off.html", 403, variable=TOKEN_VARIABLE)
        if not same_origin(request.headers):
            return _signin(403, "A sign-in comes from this page, at the gate's own address "
                           "(behind a reverse proxy, pass the Host header on).")  # fmt: skip
        size = request.headers.get("content-length", "")
        if size.isdigit() and int(size) > _LONGEST_FORM:  # refused before a byte is read
            raise HttpError(413, f"the sign-in form is over {_LONGEST_FORM} bytes")
        who = address(request)
        begun = throttle.attempt(who)  # counted as wrong now: bodies held back pass no check
        if begun is None:
            return _too_many(throttle.wait_s(who))
        raw = await read_body(request, limit=_LONGEST_FORM, timeout=_FORM_S)
        try:
            form = parse_qs(raw.decode("utf-8", "replace"), max_num_fields=4)
        except ValueError:
            return _signin(400, "The sign-in form takes one field: the token.")
        given = form.get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), token.encode()):
            return _signin(401, "That is not the gate's status token.")
        throttle.passed(who, begun)
        value = cookie_value(token)
        answer = _page("signedin.html", 200, key=console_key(token, value))
        answer.set_cookie(cookie_name(request.headers), value, max_age=LIFETIME_S,
                          path="/taskgate", httponly=True, samesite="strict",
                          secure=request.url.scheme == "https")  # fmt: skip
        return answer

    async def back(request: Request) -> Response:  # a reload of the sign-in's address
        return Response(status_code=303, headers={"location": PATH, **_HEADERS})

    async def signout(request: Request) -> Response:
        if not same_origin(request.headers):
            raise HttpError(403, "a sign-out comes from the console's own page")
        answer = Response(status_code=303, headers={"location": PATH, **_HEADERS})
        answer.delete_cookie(cookie_name(request.headers), path="/taskgate", httponly=True,
                             samesite="strict")  # fmt: skip
        return answer

    async def asset(request: Request) -> Response:
        name = str(request.path_params["name"])
        if name not in _ASSETS:
            raise HttpError(404, f"no console file {name!r}", "not_found")
        return Response(_text(name), media_type=_ASSETS[name], headers=_HEADERS)

    return [
        Route(PATH, guarded(page), methods=["GET"]),
        Route(f"{PATH}/signin", guarded(signin), methods=["POST"]),
        Route(f"{PATH}/signin", guarded(back), methods=["GET"]),
        Route(f"{PATH}/signout", guarded(signout), methods=["POST"]),
        Route(f"{PATH}/{{name}}", guarded(asset), methods=["GET"]),
    ]


def _console(noun: str, settles: bool) -> Response:
    return _page("console.html", 200, noun=noun, settles="true" if settles else "false")
