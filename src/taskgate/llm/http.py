"""HTTP to one endpoint: an aiohttp session, JSON in and out, and the endpoint's health.

The client used the ``openai`` SDK until the runner had to keep thousands of calls in flight: the
SDK builds httpx request and header models, a pydantic options model and deep copies for every
call, about 0.9 ms of CPU a call on this project's 2-core machines, more than all of the runner's
own work (``bench/bench_runner.py``). The same requests straight through aiohttp cost about a
tenth of that. What the SDK did for us is small and lives here: the bearer token, the timeout, and
sorting a failure into a timeout, a connection error, or an HTTP status with the server's message.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

from ..errors import ModelError

if TYPE_CHECKING:
    from .client import Endpoint

#: the longest an endpoint that keeps failing stays out of rotation before it is tried again
MAX_COOLDOWN = 30.0
#: how long the start-up check waits for an endpoint's ``GET /models``
PROBE_TIMEOUT = 5.0


class TransportError(ModelError):
    """No HTTP response: the connection failed, was dropped, or the request timed out."""


class StatusError(ModelError):
    """An HTTP error status, with the server's own message."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
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
    _session: aiohttp.ClientSession | None = field(default=None, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.gate = asyncio.Semaphore(self.endpoint.concurrency)

    @property
    def url(self) -> str:
        return self.endpoint.base_url

    def up(self, now: float) -> bool:
        return self.down_until <= now

    def failed(self, backoff: float) -> None:
        """Out of rotation for a while that doubles with each failure in a row (at most 30 s)."""
        self.failures += 1
        cooldown = min(MAX_COOLDOWN, backoff * 2 ** min(self.failures - 1, 16))
        self.down_until = time.monotonic() + cooldown

    def served(self) -> None:
        self.failures = 0
        self.down_until = 0.0

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
        """None when the endpoint answers ``GET /models`` with any HTTP response, else why not."""
        try:
            await self._send("GET", "/models", None, PROBE_TIMEOUT)
        except StatusError:
            return None  # it answered; whether it lists models is not our business
        except TransportError as exc:
            return str(exc)
        return None

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
                content = await resp.read()
                kind = resp.headers.get("Content-Type", "")
                status = resp.status
        except TimeoutError:
            raise TransportError(f"timeout after {limit:g} s") from None
        except aiohttp.ClientError as exc:
            raise TransportError(f"connection error: {_short(exc)}") from None
        if not 200 <= status < 300:
            raise StatusError(status, _server_message(content))
        return status, kind, content

    def _client(self) -> aiohttp.ClientSession:
        session = self._session
        loop = asyncio.get_running_loop()
        if session is None or session.closed or self._loop is not loop:
            self._loop = loop  # a session serves one event loop (a new asyncio.run, a new one)
            headers = {"Authorization": f"Bearer {self.endpoint.api_key}"}
            headers["Content-Type"] = "application/json"
            # no pool limit: the route's gate bounds what is in flight
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=60)
            session = aiohttp.ClientSession(headers=headers, connector=connector)
            self._session = session
        return session


def _server_message(content: bytes) -> str:
    """The message of an error body (OpenAI's ``{"error": {"message": ...}}`` and kin), on one
    line of at most 200 characters."""
    text = content.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return _line(text)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            error = error.get("message") or error.get("detail") or error
        return _line(str(error))
    return _line(text)


def _short(exc: BaseException) -> str:
    return _line(str(exc) or type(exc).__name__)


def _line(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters."""
    return " ".join(text.split())[:limit]
