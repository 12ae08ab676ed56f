from __future__ import annotations

import pytest

from taskgate import Booking, normalize_code, normalize_work_order
from timing import assert_linear, hostile


def test_look_alikes_are_never_normalized() -> None:
    assert normalize_code("RC-\uff14\uff18\uff10\uff18") is None
    assert normalize_work_order("#W\uff11\uff12\uff13\uff14") is None
    with pytest.raises(ValueError, match="not a completion code"):
        Booking.of("RC-4\uff18\uff10\uff18", "#W1")
    assert normalize_code(" rc \u2013 4808 ") == "RC-4808"  # the tolerated forms stay
    assert normalize_work_order("# w - 1941") == "#W1941"


@pytest.mark.parametrize("run", [" ", "\t", "-", "\u2013 "])
def test_normalizing_hostile_identifiers_is_linear(run: str) -> None:
    for prefix, normalize in [("RC", normalize_code), ("#", normalize_work_order)]:
        assert_linear(normalize, lambda size, p=prefix: hostile(p, run, size))
        assert normalize(hostile(prefix, run, 100_000)) is None


def test_the_linear_check_fails_a_quadratic_pattern() -> None:
    """The linear-time check is not vacuous: a pattern that restarts at every position of a run
    of spaces costs far past its bound (and far from a linear parser's ratio)."""
    import re

    from timing import BOUND, cost_ratio

    pattern = re.compile(r"\s+y")
    assert cost_ratio(pattern.search, lambda size: hostile("", " ", size)) > BOUND
