"""Statistics recomputed against the paper's own figures."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskgate.lab import holm, mcnemar_exact, wilson


@pytest.mark.parametrize(
    ("k", "n", "rate", "low", "high"),
    [
        (49, 128, 0.38, 0.30, 0.47),  # the example
        (34, 128, 0.27, 0.20, 0.35),  # Table 13, raw transcript, S=10 no-think
        (72, 128, 0.56, 0.48, 0.65),  # Table 13, text checklist, S=10 no-think
        (107, 128, 0.84, 0.76, 0.89),  # Table 13, directive gate, S=10 no-think
        (127, 128, 0.99, 0.96, 1.00),  # Table 13, enforcement gate, S=10 no-think
        (22, 32, 0.69, 0.51, 0.82),  # Table 13, DeepSeek raw, no-think
        (31, 32, 0.97, 0.84, 0.99),  # Table 13, DeepSeek enforcement
        (0, 128, 0.00, 0.00, 0.03),  # Appendix G: upper bound 0.029 at 0/128
    ],
)
def test_wilson_matches_the_paper(k: int, n: int, rate: float, low: float, high: float) -> None:
    lo, hi = wilson(k, n)
    assert (round(k / n, 2), round(lo, 2), round(hi, 2)) == (rate, low, high)


def pairs(only_a: int, only_b: int, both: int = 10) -> tuple[list[bool], list[bool]]:
    a = [True] * both + [True] * only_a + [False] * only_b + [False] * 5
    b = [True] * both + [False] * only_a + [True] * only_b + [False] * 5
    return a, b


def test_exact_mcnemar_and_holm_match_the_paper() -> None:
    # Appendix G: self-ledger vs the two gates, disagreeing pairs (29,12) and (24,14),
    # Holm over the two contrasts: p = 0.023 and 0.14
    t1, t2 = mcnemar_exact(*pairs(29, 12)), mcnemar_exact(*pairs(24, 14))
    assert (t1.b, t1.c) == (29, 12)
    assert [round(p, 3) for p in holm([t1.p, t2.p])] == [0.023, 0.143]
    # Appendix E.1: disagreeing pairs (5, 7), unadjusted p = 0.77
    assert round(mcnemar_exact(*pairs(5, 7)).p, 2) == 0.77
    # Appendix G: Mem0 augment vs raw, discordant (26,20) and (27,34), Holm p = 0.89 for both
    p1, p2 = mcnemar_exact(*pairs(26, 20)).p, mcnemar_exact(*pairs(27, 34)).p
    assert [round(p, 2) for p in holm([p1, p2])] == [0.89, 0.89]


def test_edge_cases() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    assert mcnemar_exact([True, False], [True, False]).p == 1.0
    assert holm([]) == []
    with pytest.raises(ValueError, match="equal lengths"):
        mcnemar_exact([True], [])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=40))
def test_holm_is_statsmodels_holm(pvalues: list[float]) -> None:
    from statsmodels.stats.multitest import multipletests

    collect = gc.collect
    gc.collect = lambda generation=2: 0  # multipletests collects garbage on every call: seconds
    try:
        want = multipletests(pvalues, method="holm")[1]
    finally:
        gc.collect = collect
    assert holm(pvalues) == pytest.approx([float(p) for p in want], abs=1e-12)
