"""Whether a confirmed proposal said each value of the call it is taken for.

A yes confirms what the agent said. A call of the proposal's step may still carry a value that
nobody said: another recipient ("Mallory" for a transfer to Diego), a tenfold amount
("$12,100" for "$1,210"), a date in another format, a note nobody asked for. :func:`unheard`
finds such a value; :func:`switch_turned` finds a yes-or-no switch set the other way round from
the proposal ("without subtitles" for ``subtitles=True``).

Only what matters most is held to this: an amount of money, whom it goes to, a note or a
message, and a date, a time or an amount written otherwise than plainly ("$12,100",
"2019/03/15", "7:20 pm"). Other values (a name said turns ago, a detail the agent carried from
a search) are read by the other rules: a conversation read by its last turns only does not show
every value said in it.

A value is said when one of its spoken forms (:func:`~taskgate.understanding.acts.spoken_forms`:
"March 2nd" for 2019-03-02, "7:20 pm" for 19:20, "1,290" for 1290) is in the text, a day said
relative to today ("next Friday") is its date, or its words are said in order, whatever the
punctuation ("$1,210." for "1,210").
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Mapping

from taskgate.errors import TaskgateError
from taskgate.understanding.acts import _MONTHS as MONTHS
from taskgate.understanding.acts import said_relative, spoken_forms
from taskgate.understanding.finishing import _ID_KEY
from taskgate.understanding.patterns import pattern
from taskgate.understanding.words import fold

#: an argument held to what was said: an amount of money, whom it goes to, a note or a message
_MONEY_KEY = pattern(r"amount|price|cost|fee|total|fare|sum|balance|money", re.I)
_AMOUNT = pattern(
    r"\s*(?:[$\u00a3\u20ac]|usd|eur)?\s*[\d.,eE+-]*\d[\d.,eE+-]*\s*(?:usd|eur|dollars?)?\s*", re.I
)
_HELD_KEY = pattern(
    r"recipient|payee|beneficiary|"
    r"(?<![a-z])(?:to_account|notes?|memo|message|comments?|instructions?|remarks?)(?![a-z])",
    re.I,
)
#: a value written otherwise than plainly that :func:`canonical` cannot read: money, a date
#: with a month's name, a number in scientific notation or grouped by commas
_FORMATTED = pattern(
    r"^\s*(?:[$\u00a3\u20ac]|usd\b|eur\b)|\d[eE][+-]?\d|\d,\d{3}|"
    r"^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d|\d(?:st|nd|rd|th)? (?:of )?"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)",
    re.I,
)
_HALF_DAY = pattern(r"(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s?m\.?", re.I)
_SECONDS = pattern(r"(\d{1,2}):(\d{2}):\d{2}(?:\.\d+)?")
_SLASHED = pattern(r"(\d{1,4})[/.](\d{1,2})[/.](\d{1,4})")
_TOKEN = pattern(r"[a-z0-9]+")
#: a word of a switch said the other way: "without subtitles", "no subtitles", "non-refundable"
_OFF_BEFORE = pattern(
    r"(?:\b(?:without|no|non|not|never|sans|cannot|(?:do|does|did|is|are|was|were|wo|ca|should|would|"
    r"could|has|have|had)n'?t)|\bw/o)[\s-]+(?:\w+\s+)?$"
)
#: "with subtitles turned off", "subtitles disabled"
_OFF_AFTER = pattern(r"\s*:?\s+(?:(?:turned|switched|set) off|off|disabled|disable|none|no)\b")
_TEXT_CHARS = 8_000  # the most of the text read (the proposal, its revisions, the turns)


def canonical(value: object) -> object:
    """A time or a date written otherwise, as the other rules read one: "7:20 pm" and
    "19:20:00" as "19:20", "2019/03/15" and "03/15/2019" as "2019-03-15". Anything else as
    it is."""
    if not isinstance(value, str) or len(value) > 40:
        return value
    v = value.strip()
    if m := _HALF_DAY.fullmatch(v):
        hour, minute = int(m.group(1)), m.group(2) or "00"
        if 1 <= hour <= 12 and int(minute) < 60:
            return f"{hour % 12 + (12 if m.group(3).lower() == 'p' else 0):02}:{minute}"
    if m := _SECONDS.fullmatch(v):
        return f"{int(m.group(1)):02}:{m.group(2)}"
    if m := _SLASHED.fullmatch(v):
        a, b, c = m.groups()
        year, month, day = (a, b, c) if len(a) == 4 else (c, a, b) if int(a) <= 12 else (c, b, a)
        if len(year) == 4 and 1 <= int(month) <= 12 and 1 <= int(day) <= 31:
            return f"{year}-{int(month):02}-{int(day):02}"
    return value


def key_words(key: object) -> list[str]:
    """The words of an argument's name a proposal says it by ("shared_ride": shared, ride)."""
    return [w for w in re.split(r"[^a-z]+", str(key).lower()[:80]) if len(w) >= 4]


def _switch_on(value: object) -> bool:
    return value is True or str(value).strip().lower() == "true"


def switch_turned(key: object, value: object, said: str) -> bool:
    """Whether ``said`` (lower case) says the switch ``key`` the other way from ``value``:
    "without subtitles" for ``subtitles=True``, "with subtitles" for ``subtitles="False"``,
    "a shared cab" for ``shared_ride=False``: every time the first word of the key's name is
    said, it is said the other way ("Shall I play it with subtitles? The version without
    subtitles is also available." turns nothing); a switch not said turns nothing."""
    words = key_words(key)
    said = said[:_TEXT_CHARS]
    # "subtitles" said as "subtitle", "subtitled": the word less its plural "s"
    stem = words[0][:-1] if words and words[0].endswith("s") else words[0] if words else ""
    on = _switch_on(value)
    mentions = itertools.islice(re.finditer(rf"\b{re.escape(stem)}\w*", said), 64) if stem else ()
    turned = [  # each mention, said the other way from the value?
        bool(
            _OFF_BEFORE.search(said[max(0, m.start() - 30) : m.start()])
            or _OFF_AFTER.match(said, m.end())
        )
        == on
        for m in mentions
    ]
    return bool(turned) and all(turned)


def _tokens(text: str) -> str:
    """The words of ``text``, lower case, accents and apostrophes dropped ("José's": jose)."""
    return " " + " ".join(_TOKEN.findall(fold(text))) + " "


def unheard(arguments: Iterable[tuple[str, object]], text: str) -> bool:
    """Whether a value among ``arguments`` held to what was said (money, whom it goes to, a
    note; a value written otherwise than plainly) is said nowhere in ``text`` (lower case: the
    proposal, the proposals it revised and the turns before). An integer too long to print is
    said nowhere."""
    text = text[:_TEXT_CHARS]
    tokens: str | None = None
    for key, value in arguments:
        name = str(key)[:80]
        if value is None or isinstance(value, bool):
            continue
        if not isinstance(value, str | int | float) or _ID_KEY.search(name):
            continue  # a list or a table: read by the other rules; an identifier
        amount = _MONEY_KEY.search(name) and _AMOUNT.fullmatch(str(value)[:40])
        formatted = isinstance(value, str) and _FORMATTED.search(value[:200])
        if not (amount or _HELD_KEY.search(name) or formatted):
            continue
        if isinstance(value, int) and value.bit_length() > 64:
            return True  # no number anyone said
        v = value.strip()[:200] if isinstance(value, str) else str(value)
        if v.lower() in ("true", "false"):
            continue
        if v.lower() in _NOTHING:
            continue
        number = _AMOUNT_OF.fullmatch(v) if amount else None
        forms = spoken_forms(number.group(1).replace(",", "") if number else v)
        if not forms or any(f.search(text) for f in forms) or said_relative(text, v):
            continue
        if _month_day_said(v, text):  # "March 14" for "March 14th"
            continue
        words = _tokens(v)
        tokens = tokens if tokens is not None else _tokens(text)
        if words.strip() and words in tokens:
            continue
        if _HELD_KEY.search(name) and _NOTE_KEY.search(name) and _words_said(words, tokens):
            continue  # a note's words, said in another order ("window seat" for "a window seat")
        return True
    return False


_NOTHING = frozenset(["n/a", "na", "none", "-", "nil", "null", "no"])
_NOTE_KEY = pattern(r"notes?|memo|message|comments?|instructions?|remarks?", re.I)
#: an amount as written: "$1,210.00", "USD 1210", "1210 dollars" (its number: 1210)
_AMOUNT_OF = pattern(
    r"\s*(?:[$\u00a3\u20ac]|usd|eur|gbp)?\s*(\d{1,3}(?:,\d{3})+|\d+)(?:\.0+)?\s*(?:usd|eur|gbp|dollars?)?\s*",
    re.I,
)
_MONTHS = tuple(name[:3] for name in MONTHS)
_MONTH_DAY = pattern(
    r"\s*(?:([a-z]{3})[a-z]*\.? (\d{1,2})(?:st|nd|rd|th)?|(\d{1,2})(?:st|nd|rd|th)?(?: of)? ([a-z]{3})"
    r"[a-z]*\.?)(?:,? \d{4})?\s*",
    re.I,
)
_FILLER = frozenset(["please", "thanks", "thank", "you", "a", "an", "the", "and", "with"])


def _month_day_said(value: str, text: str) -> bool:
    """Whether a date written with its month's name ("March 14", "14 Mar 2019") is said in
    ``text`` as that month and day, any way round."""
    m = _MONTH_DAY.fullmatch(value[:40])
    if m is None:
        return False
    month, day = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    if month.lower() not in _MONTHS:
        return False
    name = month.lower()
    said = rf"\b{name}[a-z]*\.? {int(day)}(?:st|nd|rd|th)?\b|\b{int(day)}(?:st|nd|rd|th)?(?: of)? {name}"
    return bool(re.search(said, text, re.I))


def _words_said(words: str, tokens: str) -> bool:
    """Whether every word of a note (but "please", "thanks", ...) is said."""
    wanted = [w for w in words.split() if w not in _FILLER]
    said = set(tokens.split())
    return bool(wanted) and all(w in said for w in wanted)


class Unreadable(TaskgateError):
    """A call's arguments that cannot be read as text: a number too long to print, a value
    whose text raises."""


_KEY_CHARS = 200  # the most of an argument's name read
_DEPTH = 32  # arguments nested deeper are unreadable
_ENTRIES = 65_536  # the most entries read: a call of more is unreadable


def readable(arguments: Mapping[str, object]) -> dict[str, object]:
    """A copy of a call's arguments the readers can read: every name as text (``{1: "x"}`` as
    ``{"1": "x"}``). Raises :class:`Unreadable` for a name over 200 characters, a number too long
    to print or not finite, a value whose text raises, tables nested more than 32 deep, or more
    than 65,536 entries (none is left out or cut: a value past what is read would be judged by
    nothing, and two calls must never read as one)."""
    budget = [_ENTRIES]

    def copy(value: object, depth: int) -> object:
        if depth > _DEPTH:
            raise Unreadable(f"arguments nested more than {_DEPTH} deep")
        if budget[0] <= 0:
            raise Unreadable(f"arguments of more than {_ENTRIES} entries")
        budget[0] -= 1
        if isinstance(value, float) and not math.isfinite(value):
            raise Unreadable("a number that is not finite")  # JSON has none: it reads as null
        if isinstance(value, str):
            return _text(value)
        if isinstance(value, bool) or value is None or isinstance(value, float):
            return value
        if isinstance(value, int):
            if value.bit_length() > 1_000:
                raise Unreadable("a number too long to read")
            return value
        if isinstance(value, Mapping):
            return {_name(k): copy(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [copy(v, depth + 1) for v in value]
        try:
            return str(value)[:_ENTRIES]
        except Exception as error:  # a value's own __str__: anything
            raise Unreadable(
                f"a value that cannot be read as text ({type(error).__name__})"
            ) from None

    out = copy(arguments, 0)
    return out if isinstance(out, dict) else {}


def _name(key: object) -> str:
    try:
        text = key if isinstance(key, str) else str(key)
    except Exception:  # a key's own __str__: anything
        raise Unreadable("an argument name that cannot be read as text") from None
    if len(text) > _KEY_CHARS:  # never cut: two calls must not read as one
        raise Unreadable(f"an argument name over {_KEY_CHARS} characters")
    return _text(text)


def _text(text: str) -> str:
    """Text as it can be written down: a lone surrogate (a model's ``"\\ud800"``) is no text."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise Unreadable("text that is not valid unicode (a lone surrogate)") from None
    return text
