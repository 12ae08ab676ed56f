"""Statistics: Wilson intervals and exact McNemar on paired seeds from statsmodels, and Holm's
correction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from taskgate.errors import UsageError


def wilson(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for ``successes`` of ``n`` (``(0, 1)`` when ``n`` is 0)."""
    if n == 0:
        return (0.0, 1.0)
    lo, hi = proportion_confint(successes, n, alpha=alpha, method="wilson")
    return float(lo), float(hi)


@dataclass(frozen=True)
class Paired:
    """Exact McNemar of two arms on the same seeds: ``b`` = only A succeeds, ``c`` = only B does."""

    n: int
    b: int
    c: int
    p: float


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> Paired:
    """Exact (binomial) McNemar test on paired outcomes of two arms over the same episodes."""
    if len(a) != len(b):
        raise UsageError(f"paired outcomes need equal lengths, got {len(a)} and {len(b)}")
    both = sum(x and y for x, y in zip(a, b, strict=True))
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    neither = len(a) - both - only_a - only_b
    if only_a + only_b == 0:
        return Paired(len(a), 0, 0, 1.0)
    result = mcnemar([[both, only_a], [only_b, neither]], exact=True)
    return Paired(len(a), only_a, only_b, float(result.pvalue))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values for one family of contrasts.

    The step-down rule itself (as statsmodels' ``multipletests(method="holm")``, which the tests
    hold it to): that function runs a full garbage collection on every call, a large share of a
    report's time on a big run.
    """
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    out = [0.0] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * float(pvalues[i])))
        out[i] = running
    return out
