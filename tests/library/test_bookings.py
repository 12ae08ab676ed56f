from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskgate import Booking, parse_bookings
from timing import RUNS, assert_linear, hostile

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


# The pattern as it was before it was made linear (backtracking, quadratic on long runs): on text
# with ASCII digits only the two must find exactly the same bookings.
_MD = r"[\s*_~`]*"
_BACKTRACKING = re.compile(
    r"(?<![A-Za-z0-9])ref" + _MD + r"(?::" + _MD + r")?RC\s*[-\u2010-\u2013]?\s*(?P<code>\d+)"
    r"(?![A-Za-z0-9])" + _MD + "/" + _MD + r"(?:\#\s*)?W\s*[-\u2010-\u2013]?\s*(?P<wo>\d+)"
    r"(?![A-Za-z0-9])",
    re.IGNORECASE,
)
PIECES = ["ref", "Ref", "REF", "RC", "rc", "-", "\u2013", "4808", "1", "/", "#", "W", "w", "1941"]
PIECES += [" ", "\n", "**", "_", "~", "`", ":", "x", "pre", "(", ").", "- ", "> ", "\t"]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=24).map("".join))
def test_fuzz_finds_what_the_backtracking_pattern_found(text: str) -> None:
    old = [(f"RC-{m['code']}", f"#W{m['wo']}", m.span()) for m in _BACKTRACKING.finditer(text)]
    assert [(b.code, b.work_order, b.span) for b in parse_bookings(text)] == old


# -- look-alike digits: only ASCII 0-9 make a completion code or a work order --------------------
FULLWIDTH = str.maketrans(
    "0123456789", "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19"
)
ARABIC_INDIC = str.maketrans("0123456789", "".join(chr(0x660 + i) for i in range(10)))


@pytest.mark.parametrize("digits", [FULLWIDTH, ARABIC_INDIC])
@pytest.mark.parametrize("text", FORMATS)
def test_look_alike_digits_make_no_booking(text: str, digits: dict[int, str]) -> None:
    assert parse_bookings(text.replace("4808", "4808".translate(digits))) == []
    assert parse_bookings(text.replace("1941", "1941".translate(digits))) == []


@pytest.mark.parametrize(
    "text",
    [
        "ref RC-4808\uff14/#W1941",  # a fullwidth digit glued to the code
        "ref RC-4808/#W1941\uff11",  # ... to the work order
        "ref RC-\uff14808/#W1941",  # mixed scripts
        "ref RC-4808/#W\u0661941",  # an Arabic-Indic one
    ],
)
def test_a_look_alike_digit_glued_on_is_no_booking(text: str) -> None:
    assert parse_bookings(text) == []


# -- untrusted text: linear time, no phantom bookings --------------------------------------------
# After each prefix of a booking comes a long run of what the pattern tolerates there (see
# timing.RUNS). A backtracking pattern takes quadratic time on these: ~1 s for 10 KB.
BOOKING_PREFIXES = ["ref", "ref:", "ref RC", "ref RC-", "ref RC-1", "ref RC-1/", "ref RC-1/#"]
BOOKING_PREFIXES += ["ref RC-1/W", "ref RC-1/#W", "ref RC-1/#W-"]


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("prefix", BOOKING_PREFIXES)
def test_parsing_hostile_text_is_linear(prefix: str, run: str) -> None:
    assert_linear(parse_bookings, lambda size: hostile(prefix, run, size))
    assert parse_bookings(hostile(prefix, run, 100_000)) == []  # and it invents nothing


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([*BOOKING_PREFIXES, "ref RC-4808/#W1941"]),
    st.text(alphabet=st.sampled_from(list(" \n\t*_~`:/#-\u2013")), max_size=300),
    st.text(alphabet=ALPHABET, max_size=40),
)
def test_fuzz_tolerated_runs_never_invent_a_booking(prefix: str, run: str, tail: str) -> None:
    text = prefix + run + tail
    for b in parse_bookings(text):
        literal = text[b.span[0] : b.span[1]]
        assert b.code[3:] in literal and b.work_order[2:] in literal
        assert all(c.isascii() for c in b.code + b.work_order)
        (again,) = parse_bookings(literal)
        assert (again.code, again.work_order) == (b.code, b.work_order)


DIGITS_ANY_SCRIPT = st.sampled_from(list("0123456789\uff14\uff18\u0664\u0968\U0001d7ce"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FORMATS), min_size=1, max_size=4), DIGITS_ANY_SCRIPT, st.data())
def test_fuzz_a_booking_with_a_look_alike_digit_is_no_booking(
    lines: list[str], digit: str, data: st.DataObject
) -> None:
    # put one digit of any script in place of a digit of each line's code or work order: an ASCII
    # one keeps it a booking, any other makes it none
    text, want = [], 0
    for line in lines:
        c, w = line.index("4808"), line.index("1941")
        at = data.draw(st.sampled_from([*range(c, c + 4), *range(w, w + 4)]))
        text.append(line[:at] + digit + line[at + 1 :])
        want += digit.isascii()
    got = parse_bookings("\n".join(text))
    assert len(got) == want
    assert all(c.isascii() for b in got for c in b.code + b.work_order)
