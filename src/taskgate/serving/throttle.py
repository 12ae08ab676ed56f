"""Wrong tokens, counted per client address: after :data:`LIMIT` in :data:`WINDOW_S` seconds, an
address is answered 429 (with ``Retry-After``) on every operator endpoint and the console's
sign-in until the oldest falls out of the window. The check comes before the token is compared,
so a guess made while limited learns nothing; a sign-in whose token arrives in a body is counted
as wrong *before* the body is read (:meth:`Throttle.attempt`) and taken back only once it proved
right, so connections that hold their bodies cannot all pass the check together. Only a token
given counts: a request with no credentials guesses nothing. The address is the connection's
peer, bucketed so that one client cannot spread its guesses (every loopback address is one
bucket, an IPv6 address its /64): forwarded-address headers count only from proxies the
operator names (:mod:`taskgate.serving.serve`). One address's guesses never lock out another's (a reverse
proxy in front of the gate is one address: put the limit there too), and an operator already
signed in is served while their address is limited."""

from __future__ import annotations

import ipaddress
import math
import time
from collections import OrderedDict, deque

from starlette.requests import Request

#: wrong tokens an address may send per window, and the window
LIMIT = 20
WINDOW_S = 60.0
#: the most addresses remembered (the oldest forgotten first)
ADDRESSES = 10_000


def address(request: Request) -> str:
    """Whose guesses the request's are: the peer of its connection, as a bucket one client
    cannot spread over. Every loopback address is one (a local process may bind any of the 16
    million of 127.0.0.0/8), and an IPv6 address is its /64 (what one host is handed)."""
    return bucket(request.client.host if request.client is not None else "")


def bucket(host: str) -> str:
    """The bucket of a peer address (see :func:`address`)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback"
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class Throttle:
    """The wrong tokens of each client address in the last :data:`WINDOW_S` seconds."""

    def __init__(self, limit: int = LIMIT, window_s: float = WINDOW_S) -> None:
        self.limit, self.window_s = limit, window_s
        self._wrong: OrderedDict[str, deque[float]] = OrderedDict()

    def wait_s(self, who: str, now: float | None = None) -> int:
        """Seconds until ``who`` may try a token again (0: now)."""
        now = time.monotonic() if now is None else now
        times = self._wrong.get(who)
        if times is None:
            return 0
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if not times:
            del self._wrong[who]
            return 0
        if len(times) < self.limit:
            return 0
        return max(1, math.ceil(times[0] + self.window_s - now))

    def failed(self, who: str, now: float | None = None) -> float:
        """Count one wrong token from ``who``; returns the time it was counted at."""
        times = self._wrong.setdefault(who, deque(maxlen=self.limit))
        self._wrong.move_to_end(who)
        at = time.monotonic() if now is None else now
        times.append(at)
        while len(self._wrong) > ADDRESSES:
            self._wrong.popitem(last=False)
        return at

    def attempt(self, who: str, now: float | None = None) -> float | None:
        """Begin a guess whose token is not read yet: ``None`` when ``who`` is limited (answer
        429), else the guess counted as wrong now, to be taken back by :meth:`passed`."""
        if self.wait_s(who, now):
            return None
        return self.failed(who, now)

    def passed(self, who: str, at: float) -> None:
        """Take back the guess begun at ``at``: its token was right."""
        times = self._wrong.get(who)
        if times is not None and at in times:
            times.remove(at)
