"""Linear-time checks for the parsers (a reply is untrusted text), whatever the machine's load.

A parser is held linear by comparing its cost on two inputs 32 times apart in size: linear work
grows 32-fold, a quadratic pattern's 1024-fold, and the check's bound sits between the two with a
factor of over five to spare on either side (181: the geometric mean). The two sizes are timed
interleaved, each the best of several runs, so a busy machine slows both alike: load would have to
slow every run of the large input five times more than every run of the small one to fail a
linear parser, and no load can make a quadratic one pass. Times under 0.1 ms count as 0.1 ms (the
timer's noise, not the parser's cost).
"""

from __future__ import annotations

import time
from collections.abc import Callable

# What the patterns tolerate between the parts of a booking or a self-ledger mark, and the words
# that start one: a run of any of these after a prefix of a booking is the adversarial input.
RUNS = [" ", "\n", "*", "`", "_", "~", " \n", "\r\n", "\u3000", "ref ", "LEDGER "]

#: the two sizes compared, and the bound on their cost ratio (linear: 32, quadratic: 1024)
SMALL, LARGE = 1_000, 32_000
BOUND = (LARGE / SMALL) ** 1.5  # 181: the geometric mean of the linear and quadratic ratios
FLOOR = 1e-4


def hostile(prefix: str, run: str, size: int) -> str:
    """``prefix``, then ``run`` repeated up to ``size`` characters, then a stray ``x``."""
    return prefix + run * ((size - len(prefix)) // len(run)) + "x"


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def cost_ratio(fn: Callable[[str], object], texts: Callable[[int], str], repeats: int = 7) -> float:
    """The large input's best time over the small one's, timed interleaved (see the module)."""
    small, large = texts(SMALL), texts(LARGE)
    best_small = best_large = float("inf")
    for _ in range(repeats):
        best_small = min(best_small, _timed(lambda: fn(small)))
        best_large = min(best_large, _timed(lambda: fn(large)))
        if best_large > 1.0:  # already far past linear: no need to wait for more runs
            break
    return max(best_large, FLOOR) / max(best_small, FLOOR)


def assert_linear(fn: Callable[[str], object], texts: Callable[[int], str]) -> None:
    """32x the input must cost well under 1024x the time (what a quadratic pattern takes)."""
    ratio = cost_ratio(fn, texts)
    assert ratio < BOUND, (
        f"{LARGE // 1000} KB cost {ratio:.0f}x what {SMALL // 1000} KB cost (linear: 32x, "
        f"quadratic: 1024x, bound: {BOUND:.0f}x)"
    )
