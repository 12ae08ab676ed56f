"""Timing helpers for the linear-time tests of the parsers (a reply is untrusted text)."""

from __future__ import annotations

import time
from collections.abc import Callable

# What the patterns tolerate between the parts of a booking or a self-ledger mark, and the words
# that start one: a run of any of these after a prefix of a booking is the adversarial input.
RUNS = [" ", "\n", "*", "`", "_", "~", " \n", "\r\n", "\u3000", "ref ", "LEDGER "]


def hostile(prefix: str, run: str, size: int) -> str:
    """``prefix``, then ``run`` repeated up to ``size`` characters, then a stray ``x``."""
    return prefix + run * ((size - len(prefix)) // len(run)) + "x"


def best_time(fn: Callable[[], object], repeats: int = 5) -> float:
    """The best of ``repeats`` runs; a run over 0.1 s is not repeated (noise no longer matters)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if best > 0.1:
            break
    return best


def assert_linear(fn: Callable[[str], object], texts: Callable[[int], str]) -> None:
    """10x the input must cost well under 100x the time (what a quadratic pattern takes).

    Timed at 1, 10 and 100 KB, best of several repeats, with a generous 30x bound, so that a busy
    2-core machine does not fail it. A quadratic pattern already fails at 1 -> 10 KB (about 10 ms
    -> 1 s), so a regression fails in seconds, not the minutes a quadratic 100 KB parse takes.
    Times under 0.1 ms count as 0.1 ms: the timer's noise, not the parser's cost.
    """
    times = []
    for size in (1_000, 10_000, 100_000):
        text = texts(size)
        times.append(max(best_time(lambda t=text: fn(t)), 1e-4))
        if len(times) > 1:
            small, large = times[-2:]
            assert large < 30 * small, (
                f"{size // 1000} KB: {large * 1e3:.2f} ms, 10x less: {small * 1e3:.2f} ms"
            )
