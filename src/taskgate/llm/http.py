"""HTTP to one endpoint: an aiohttp session, JSON in and out, and the endpoint's health.

The client used the ``openai`` SDK until the runner had to keep thousands of calls in flight: the
SDK builds httpx request and header models, a pydantic options model and deep copies for every
call, more CPU than all of the runner's own work (``bench/bench_runner.py 0.1``: 1.59 ms of runner
CPU per model call through the SDK, 0.73 ms with the same requests straight through aiohttp). What the SDK did for us is small and lives here: the bearer token, the timeout, and
sorting a failure into a timeout, a connection error, or an HTTP status with the server's message.
"""

from __future__ import annotations

import asyncio
import difflib
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import orjson

from taskgate.errors import MissingExtraError, ModelError

try:
    import aiohttp
except ModuleNotFoundError:  # pragma: no cover - without the extra
    raise MissingExtraError("llm", "the model client") from None

from taskgate.llm.endpoint import Endpoint

#: the longest an endpoint that keeps failing stays out of rotation before it is tried again
MAX_COOLDOWN = 30.0
#: how long the start-up check waits for an endpoint's ``GET /models``
PROBE_TIMEOUT = 5.0
#: the largest response body read: a longer one is a failed request, not a memory exhausted
MAX_BODY = 64 << 20
#: how much of an error body is kept (searched for a context overflow, cut for the message)
ERROR_BODY = 64 << 10


class TransportError(ModelError):
    """No HTTP response: the connection failed, was dropped, or the request timed out."""


class StatusError(ModelError):
    """An HTTP error status, with the server's own message."""

    def __init__(self, status: int, body: str) -> None:
        self.status = status
        self.body = body  # the start of the error body, decoded
        self.message = message = _server_message(body)
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "HTTP error"
        super().__init__(f"{status} {phrase}: {message}" if message else f"{status} {phrase}")

    @property
    def retryable(self) -> bool:
        return self.status in (408, 409, 429) or self.status >= 500


@dataclass(eq=False)
class Route:
    """One endpoint as the client sees it: its session, its own concurrency limit, the requests it
    has in flight, and whether it is out of rotation (``down_until``, a monotonic time)."""

    endpoint: Endpoint
    gate: asyncio.Semaphore = field(init=False)
    in_flight: int = 0
    failures: int = 0
    down_until: float = 0.0
    probing: bool = False
    _session: aiohttp.ClientSession | None = field(default=None, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.gate = asyncio.Semaphore(self.endpoint.concurrency)

    @property
    def url(self) -> str:
        return self.endpoint.base_url

    def up(self, now: float) -> bool:
        """In rotation: not cooling down, and not waiting for the answer of its recovery test."""
        return self.down_until <= now and not self.probing

    def take(self, now: float) -> None:
        """A call goes here: after a cool-down it is the one test of whether the endpoint is back."""
        if self.failures:
            self.probing = True

    def failed(self, backoff: float) -> None:
        """Out of rotation for a cool-down that doubles with each cool-down in a row (at most 30 s).
        Failures of calls that were in flight when it began do not lengthen it."""
        now = time.monotonic()
        if self.down_until > now:
            return
        self.failures += 1
        self.probing = False
        self.down_until = now + min(MAX_COOLDOWN, backoff * 2 ** min(self.failures - 1, 16))

    def served(self) -> None:
        self.failures = 0
        self.down_until = 0.0
        self.probing = False

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        """Send ``body`` as JSON; (status, content type, body bytes) of a 2xx response.

        Raises :class:`StatusError` for any other status, :class:`TransportError` when no
        response came (the request counts in ``in_flight`` and waits for ``gate`` meanwhile).
        """
        self.in_flight += 1
        try:
            async with self.gate:
                return await self._send("POST", path, orjson.dumps(body))
        finally:
            self.in_flight -= 1

    async def probe(self) -> str | None:
        """None when the endpoint can serve the run, else why not, with the fix: it does not
        answer ``GET /models``; it answers 404 there and its base URL has no ``/v1`` (the usual
        mistake); or it lists its models and the endpoint's is not one of them."""
        try:
            _, _, body = await self._send("GET", "/models", None, PROBE_TIMEOUT)
        except StatusError as exc:
            base = self.endpoint.base_url.rstrip("/").removesuffix("/chat/completions")
            if exc.status == 404 and not base.endswith("/v1"):
                return (
                    f"answers 404 at {base}/models: OpenAI-compatible base URLs end in /v1 "
                    f"(try --base-url {base}/v1)"
                )
            return None  # it answered; a server with no /models may still serve chat
        except TransportError as exc:
            return str(exc)
        return _unlisted(self.endpoint.model, body)

    @property
    def closed(self) -> bool:
        return self._session is None or self._session.closed

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _send(
        self, method: str, path: str, data: bytes | None, timeout: float | None = None
    ) -> tuple[int, str, bytes]:
        ep = self.endpoint
        limit = timeout or ep.timeout
        try:
            async with self._client().request(
                method,
                ep.base_url.rstrip("/") + path,
                data=data,
                timeout=aiohttp.ClientTimeout(total=limit),
            ) as resp:
                status = resp.status
                kind = resp.headers.get("Content-Type", "")
                ok = 200 <= status < 300
                content = await (_read(resp) if ok else _read_start(resp))
        except TimeoutError:
            raise TransportError(f"timeout after {limit:g} s") from None
        except (aiohttp.ClientError, ValueError) as exc:  # ValueError: a URL that cannot be used
            raise TransportError(f"connection error: {_short(exc)}") from None
        if not ok:
            raise StatusError(status, content.decode("utf-8", "replace"))
        return status, kind, content

    def _client(self) -> aiohttp.ClientSession:
        session = self._session
        loop = asyncio.get_running_loop()
        if session is None or session.closed or self._loop is not loop:
            if self._loop is not None and self._loop is not loop:
                # a session and a semaphore serve one event loop: a new asyncio.run, new ones
                self.gate = asyncio.Semaphore(self.endpoint.concurrency)
            self._loop = loop
            headers = {"Authorization": f"Bearer {self.endpoint.api_key}"}
            headers["Content-Type"] = "application/json"
            # no pool limit: the route's gate bounds what is in flight
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=60)
            session = aiohttp.ClientSession(headers=headers, connector=connector)
            self._session = session
        return session


async def _read(resp: aiohttp.ClientResponse) -> bytes:
    """A reply's body, or :class:`TransportError` past :data:`MAX_BODY` bytes (a hostile or
    broken server: told by its length, streamed, or inflated from a small compressed body)."""
    length = resp.content_length
    if length is not None and length > MAX_BODY:
        raise TransportError(f"a reply of {length} bytes, over the {MAX_BODY >> 20} MiB limit")
    if length is not None and not resp.headers.get("Content-Encoding"):
        return await resp.read()  # the usual case, in one read: the length is what arrives
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BODY:
            raise TransportError(f"a reply over the {MAX_BODY >> 20} MiB limit")
    return b"".join(chunks)


async def _read_start(resp: aiohttp.ClientResponse) -> bytes:
    """The first :data:`ERROR_BODY` bytes of an error body (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size >= ERROR_BODY:
            break
    return b"".join(chunks)[:ERROR_BODY]


def _server_message(text: str) -> str:
    """The message of an error body (OpenAI's ``{"error": {"message": ...}}`` and kin), on one
    line of at most 200 characters."""
    try:
        body = orjson.loads(text)
    except orjson.JSONDecodeError:
        return one_line(text)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            error = error.get("message") or error.get("detail") or error.get("code") or error
        if isinstance(error, str):
            return one_line(error)
    return one_line(text)


def _short(exc: BaseException) -> str:
    return one_line(str(exc) or type(exc).__name__)


def one_line(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters."""
    return " ".join(text.split())[:limit]


def _name(model: str) -> str:
    """A model name as servers list it variously: ``models/x``, ``x:latest``, a file path."""
    name = model.strip().lower().removeprefix("models/").removesuffix(":latest")
    return name.rsplit("/", 1)[-1] if name.endswith(".gguf") else name


def _unlisted(model: str, body: bytes) -> str | None:
    """Why ``model`` cannot be served, by a ``/models`` answer that lists others (None when it
    is listed, or the answer lists none or is not a model list)."""
    try:
        listed = [str(m["id"]) for m in orjson.loads(body)["data"] if isinstance(m, dict)]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if not listed or _name(model) in {_name(m) for m in listed} or len(listed) == 1:
        return None  # a server that lists one model (llama.cpp's) serves it under any name
    near = difflib.get_close_matches(model, listed, n=1)
    hint = f"did you mean {near[0]!r}? " if near else ""
    shown = ", ".join(listed[:8]) + (", ..." if len(listed) > 8 else "")
    return f"serves no model named {model[:80]!r}: {hint}it lists {shown} (pass it with --model)"
