from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskgate.lab.arms.marks import read_marks
from taskgate.protocol.marks import parse_marks
from timing import RUNS, assert_linear, hostile

# Each reply carries exactly one self-ledger mark, RC-4808 DONE.
FORMATS = [
    "LEDGER RC-4808 DONE",
    "Booked.\nLEDGER RC-4808 DONE",
    "**LEDGER RC-4808 DONE**",
    "- LEDGER RC-4808: DONE",
    "> `LEDGER` RC 4808 done",
    "ledger rc - 4808 Done.",
    "\n\n  * _LEDGER_ RC-4808 **DONE**",
    "LEDGER\nRC-4808\nDONE",
]


@pytest.mark.parametrize("text", FORMATS)
def test_mark_formats(text: str) -> None:
    assert parse_marks(text) == [("RC-4808", "DONE")]


NOT_MARKS = [
    "The LEDGER RC-4808 DONE",  # not at the start of a line
    "LEDGER RC-4808 DONEx",  # a longer word
    "LEDGER RC-4808 FINISHED",  # no status
    "LEDGER RC-48a8 DONE",  # letters in the code
    "LEDGER RC-\uff14\uff18\uff10\uff18 DONE",  # fullwidth digits
    "LEDGER RC-4808\uff14 DONE",  # a fullwidth digit glued on
    "LEDGER RC-\u0664808 DONE",  # an Arabic-Indic one
    "LEDGER RC-4808",
    "",
]


@pytest.mark.parametrize("text", NOT_MARKS)
def test_not_marks(text: str) -> None:
    assert parse_marks(text) == []


def test_marks_keep_order_and_the_last_one_wins_in_the_arm() -> None:
    reply = "LEDGER RC-1 DONE\n- LEDGER RC-2 cancelled\nLEDGER RC-1 TODO"
    assert parse_marks(reply) == [("RC-1", "DONE"), ("RC-2", "CANCELLED"), ("RC-1", "TODO")]
    assert read_marks(reply) == {"RC-1": "TODO", "RC-2": "CANCELLED"}


# The pattern as it was before it was made linear (backtracking, quadratic on long runs): on ASCII
# text the two must read exactly the same marks.
_BACKTRACKING = re.compile(
    r"^[\s*_`>\-]*LEDGER[\s*_`]+RC\s*-?\s*(\d+)[\s*_`:]+(DONE|CANCELLED|TODO)\b",
    re.IGNORECASE | re.MULTILINE,
)
PIECES = ["LEDGER", "ledger", "RC", "-", "12", "4808", " ", "\n", "\r\n", "*", "_", "`", ">"]
PIECES += [":", "DONE", "todo", "Cancelled", "x", "\t", "- "]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=24).map("".join))
def test_fuzz_reads_what_the_backtracking_pattern_read(text: str) -> None:
    old = [(f"RC-{m.group(1)}", m.group(2).upper()) for m in _BACKTRACKING.finditer(text)]
    assert parse_marks(text) == old


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_marks_are_ascii_and_in_the_text(text: str) -> None:
    for code, status in parse_marks(text):
        assert code.isascii() and code[3:] in text and status in {"DONE", "CANCELLED", "TODO"}


# After each prefix of a mark comes a long run of what the pattern tolerates there. The backtracking
# pattern took quadratic time on these (0.7 s for 10 KB of newlines, whatever came before them).
MARK_PREFIXES = ["", "- ", "LEDGER", "LEDGER RC", "LEDGER RC-", "LEDGER RC-1", "> LEDGER RC-1"]


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("prefix", MARK_PREFIXES)
def test_reading_hostile_parse_marks_is_linear(prefix: str, run: str) -> None:
    assert_linear(parse_marks, lambda size: hostile(prefix, run, size))
    assert parse_marks(hostile(prefix, run, 100_000)) == []
