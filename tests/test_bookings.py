from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskgate import Booking, parse_bookings

# The format matrix: each reply must yield exactly one booking, RC-4808/#W1941.
FORMATS = [
    "ref RC-4808/#W1941",  # 1 canonical
    "Done. **ref RC-4808/#W1941**",  # 2 bold
    "_ref RC-4808/#W1941_",  # 3 italics
    "`ref RC-4808/#W1941`",  # 4 inline code
    "```\nref RC-4808/#W1941\n```",  # 5 code block
    "- ref RC-4808/#W1941",  # 6 bullet
    "1. ref RC-4808/#W1941",  # 7 numbering
    "Ref: RC-4808/#W1941",  # 8 'Ref:'
    "REF rc-4808/#w1941",  # 9 case
    "ref RC-4808 / #W1941",  # 10 spaces around the slash
    "Booked (ref RC-4808/#W1941).",  # 11 trailing punctuation
    "ref **RC-4808**/**#W1941**",  # 12 emphasis inside
    "ref `RC-4808/#W1941`;",  # 13 code inside, semicolon
    "ref RC 4808/W1941",  # 14 no hyphen, no '#'
    "**Ref:** RC-4808/#W1941!",  # 15 bold label
    "* ref RC\u20134808/#W1941",  # 16 en dash
    "> ref RC-4808/# W1941",  # 17 quote, space after '#'
]


@pytest.mark.parametrize("text", FORMATS)
def test_format_matrix(text: str) -> None:
    (b,) = parse_bookings(text)
    assert (b.code, b.work_order) == ("RC-4808", "#W1941")
    assert text[b.span[0] : b.span[1]].lower().startswith("ref")


NOT_BOOKINGS = [
    "RC-4808",  # a code alone
    "#W1941",  # a work order alone
    "RC-4808/#W1941",  # no 'ref'
    "ref RC-4808",  # no work order
    "ref #W1941",  # no code
    "ref RC-48a8/#W1941",  # letters in the code
    "ref RC-4808/#W19x1",  # letters in the work order
    "ref RC-/#W1941",  # no digits
    "ref RC-4808/#1941",  # no W
    "prefer RC-4808/#W1941",  # 'ref' inside a word
    "reference RC-4808/#W1941",  # a longer word
    "ref XC-4808/#W1941",  # not RC
    "ref RC-4808/#W1941abc",  # glued letters
    "",
]


@pytest.mark.parametrize("text", NOT_BOOKINGS)
def test_not_bookings(text: str) -> None:
    assert parse_bookings(text) == []


def test_several_bookings_keep_order_and_spans() -> None:
    text = "First ref RC-1111/#W2222, then\n**ref RC-3333/#W4444**."
    got = parse_bookings(text)
    assert [(b.code, b.work_order) for b in got] == [("RC-1111", "#W2222"), ("RC-3333", "#W4444")]
    assert [text[slice(*b.span)] for b in got] == ["ref RC-1111/#W2222", "ref RC-3333/#W4444"]


def test_booking_of_validates() -> None:
    assert Booking.of("rc 12", "w7") == Booking("RC-12", "#W7")
    with pytest.raises(ValueError, match="'X-1' is not a completion code"):
        Booking.of("X-1", "#W1")
    with pytest.raises(ValueError, match="'1' is not a work order"):
        Booking.of("RC-1", "1")


ALPHABET = st.sampled_from(list("ref REF RC-W#/0123456789 *_`:\n.,abcxyz-"))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=120) | st.text(max_size=120))
def test_fuzz_never_invents_a_booking(text: str) -> None:
    for b in parse_bookings(text):
        literal = text[b.span[0] : b.span[1]]
        # the digits of the booking are literally in the text, and its span parses to itself
        assert b.code[3:] in literal and b.work_order[2:] in literal
        (again,) = parse_bookings(literal)
        assert (again.code, again.work_order) == (b.code, b.work_order)


@settings(max_examples=200, deadline=None)
@given(
    st.text(max_size=60),
    st.integers(0, 99999),
    st.integers(0, 99999),
    st.sampled_from(FORMATS),
    st.text(max_size=60),
)
def test_fuzz_finds_embedded_bookings(
    before: str, code: int, wo: int, fmt: str, after: str
) -> None:
    line = fmt.replace("4808", "{c}").replace("1941", "{w}").format(c=code, w=wo)
    got = parse_bookings(before + "\n" + line + "\n" + after)
    assert (f"RC-{code}", f"#W{wo}") in [(b.code, b.work_order) for b in got]
