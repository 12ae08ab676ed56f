"""Every argument of a call grounded in what the conversation said.

A call runs on a person's words only where each of its values was said in this conversation: by
the user, by the agent (what it proposed or showed them), or by a tool's result the agent read.
A value said nowhere (another restaurant than the one proposed, a tenfold amount, a date nobody
named) is not what the person agreed to: the gate asks them, it never runs it.

Each text the conversation said is indexed once (:class:`Heard`, linear in its length) and kept in
a bounded :class:`Ground`; each value of a call, whatever its key (no list of key names), is read
by its kind, one recognizer per kind (:data:`KINDS`, in the order tried): nothing, a date, a time,
an email address, a number or an amount, and any other text (a name, a note, a message: each of
its words, whatever its length). Values are
normalized before they are compared: case, accents and punctuation of words, "7 pm" and "19:00",
"March 4th" and "2019-03-04", "$1,210.00" and "1210", "two" and "2". Lists and nested objects are
read leaf by leaf, in any order. What a recognizer accepts and rejects is written beside it as
examples and counterexamples, and a test is generated from each.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import math
import re
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from taskgate.understanding.finishing import _ID_KEY, _ID_VALUE
from taskgate.understanding.patterns import pattern
from taskgate.understanding.values import _MONTHS, canonical

#: the most characters of the conversation kept as ground (the oldest are dropped first: a value
#: said only before them is said nowhere, and asked)
GROUND_CHARS = 256_000
_LEAVES = 64  # a call of more values than this is not checked value by value: it is asked
_DEPTH = 8
_TOKEN = pattern(r"[^\W_]+")  # a word in any script ("Нацца", "北京" are words, not punctuation)
_APOSTROPHE = pattern(r"['\u2019]s\b|['\u2019`]")
_WORDS = {w: i for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"])}  # fmt: skip
_TENS = {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90, "hundred": 100, "thousand": 1000,
         "dozen": 12, "couple": 2, "pair": 2, "both": 2}  # fmt: skip
_ORDINALS = (["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh", "twelfth"])  # fmt: skip
#: the words that say one of a thing ("a latte", "the mocha", "this one"): a count of 1 is the
#: count of anything named in the singular, so it is checked only against the bare plural
_ONE = frozenset(["a", "an", "another", "single", "once", "the", "this", "that"])
#: the words a name or a phrase may carry without them being said ("the", "of")
_FILLER = frozenset(
    ["a", "an", "the", "of", "and", "to", "at", "in", "on", "for", "with", "by", "de", "la", "le"]
)
_NOTHING = frozenset(["", "dontcare", "n/a"])  # no value
_NONE = frozenset(["none", "no", "nothing", "null", "nil", "0"])
_NO = frozenset(["no", "without", "none", "zero", "0", "nothing"])
#: a word right after these is said the other way ("not Nizza"): it grounds nothing
_NOT = frozenset(["not", "no", "without", "except", "never", "nor"])
#: the action words a call's value may carry, and the plain words a person says them with
#: ("a latte with vanilla": the vanilla's option is "ADD")
_SAID_AS = {
    "add": ("add", "with", "plus", "extra", "also", "too", "added"),
    "remove": ("remove", "without", "no", "hold", "minus", "removed"),
}
_YEAR = pattern(r"\b(19\d\d|20\d\d)\b")
_ORDINAL_DAY = pattern(r"(\d{1,2})(?:st|nd|rd|th)")
#: "today" when the function saying what day it is failed: a day no date is
_UNREADABLE = datetime.date.min


def _folded(text: str) -> str:
    """``text`` as its words are compared: case folded, accents (combining marks) and
    apostrophes dropped, "&" as "and", every other letter kept in its own script ("José's
    Café": "jose cafe"; "Нацца" stays a word, never nothing)."""
    low = _APOSTROPHE.sub("", text.replace("&", " and ").casefold())
    return "".join(c for c in unicodedata.normalize("NFKD", low) if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    """The words of ``text``, folded, a number's word as its digits ("two days": 2 days)."""
    return [str(_WORDS[w]) if w in _WORDS else w for w in _TOKEN.findall(_folded(text))]


# -- what a text said, indexed by kind ------------------------------------------------------------
_NUMBER = pattern(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:st|nd|rd|th)?(?!\w)")
_MERIDIEM = r"(a\.?m\.?|p\.?m\.?|in the morning|in the afternoon|in the evening|at night|tonight)"
_NUM = r"(\d{1,2}|" + "|".join(list(_WORDS)[1:13]) + ")"
_CLOCK = pattern(rf"\b(at |@ ?)?{_NUM}(?::(\d{{2}}))?(?![\d:])\s*(oclock\s*)?{_MERIDIEM}?")
_PAST = pattern(rf"\b(half|quarter) (past|after|to|before) {_NUM}\s*{_MERIDIEM}?")
_NOON = pattern(r"\b(noon|midday|midnight)\b")
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY_MONTH = pattern(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? {_MONTH}")
_MONTH_DAY = pattern(rf"\b{_MONTH} (?:the )?(\d{{1,2}})(?:st|nd|rd|th)?\b")
_ISO = pattern(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_SLASHED = pattern(r"\b(\d{1,2})/(\d{1,2})(?:/(\d{2,4}))?\b")
_NTH = pattern(r"\b(?:the )?(\d{1,2})(?:st|nd|rd|th)\b")
_WEEKDAY = pattern(r"\b(mon|tues|wednes|thurs|fri|satur|sun)day\b")
_RELATIVE = pattern(
    r"\b(?:today|tonight|tomorrow|day after tomorrow|this (?:morning|afternoon|evening))\b"
)
_AFTER_TODAY = {"today": 0, "tonight": 0, "tomorrow": 1, "day after tomorrow": 2,
                "this morning": 0, "this afternoon": 0, "this evening": 0}  # fmt: skip
_EMAIL = pattern(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")


def _number(text: str) -> Decimal | None:
    """The number ``text`` writes ("1,210.00", "$50", "USD 12.5", "two"), or None."""
    t = text.strip().lower()
    t = re.sub(r"^(?:[$\u00a3\u20ac]|usd|eur|gbp)\s*|\s*(?:usd|eur|gbp|dollars?)$", "", t)
    t = re.sub(r"(?<=\d)(?:st|nd|rd|th)$", "", t)  # "1st" is the number 1
    if t in _WORDS:
        return Decimal(_WORDS[t])
    if not re.fullmatch(r"-?(?:\d{1,3}(?:,\d{3})+|\d{1,15})(?:\.\d{1,6})?", t):
        return None
    try:
        return Decimal(t.replace(",", "")).normalize()
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        return None


def _clock_only(m: re.Match[str]) -> str:
    """A time said ("at 7", "7:30 pm"), blanked; a bare number kept (it is a count)."""
    at, _, minute, oclock, meridiem = m.groups()
    return " " if (at or minute or oclock or meridiem) else m.group(0)


def _negated(tokens: list[str]) -> Iterator[str]:
    """The words that follow a "no", "without" or "none" by one or two, singular too."""
    for i, w in enumerate(tokens):
        if w in _NO or w in _NOT:
            for after in tokens[i + 1 : i + 3]:
                yield after
                yield after.removesuffix("s")


def _hour(said: str) -> int:
    return int(said) if said.isdigit() else _WORDS[said]


def _minutes(hour: int, minute: int, meridiem: str | None) -> set[int]:
    """The times of day an hour and minute said may be (both halves of the day when the half
    is not said; none when they are no time)."""
    if hour > 23 or minute > 59:
        return set()
    if meridiem is None:
        hours = {hour, hour + 12} if 1 <= hour <= 11 else {hour % 24}
    elif meridiem.startswith("a") or "morning" in meridiem:
        hours = {hour % 12} if hour <= 12 else set()
    else:
        hours = {hour % 12 + 12} if hour <= 12 else {hour}
    return {h * 60 + minute for h in hours}


def _times(text: str) -> set[int]:
    said: set[int] = set()
    for m in _CLOCK.finditer(text):  # "7:30 pm", "7 o'clock", "at 7", "19:30"
        at, hour, minute, oclock, meridiem = m.groups()
        if not (at or minute or oclock or meridiem):
            continue  # a bare number is a count, not a time
        said |= _minutes(_hour(hour), int(minute or 0), meridiem)
    for m in _PAST.finditer(text):
        hour, part = _hour(m.group(3)), 30 if m.group(1) == "half" else 15
        if m.group(2) in ("to", "before"):
            hour, part = hour - 1, 60 - part
        said |= _minutes(hour % 12 or 12, part, m.group(4))
    for m in _NOON.finditer(text):
        said.add(0 if m.group(1) == "midnight" else 12 * 60)
    return said


def _days(text: str) -> set[tuple[int, int]]:
    said: set[tuple[int, int]] = set()
    for m in _DAY_MONTH.finditer(text):
        said.add((_MONTHS.index(m.group(2)[:3]) + 1, int(m.group(1))))
    for m in _MONTH_DAY.finditer(text):
        said.add((_MONTHS.index(m.group(1)[:3]) + 1, int(m.group(2))))
    for m in _ISO.finditer(text):
        said.add((int(m.group(2)), int(m.group(3))))
    for m in _SLASHED.finditer(text):  # 3/4 is March 4th or April 3rd
        a, b = int(m.group(1)), int(m.group(2))
        said |= {(a, b), (b, a)}
    return said


@dataclass(frozen=True)
class Heard:
    """What one text said, indexed once by kind: its words, numbers, times of day (minutes
    after midnight), days ((month, day)), days said relative to today (how many days after it:
    "today" 0, "tomorrow" 1), and email addresses; ``today`` is the day they are read on (None:
    not known, and a day said relative to it may be any day)."""

    words: frozenset[str]
    numbers: frozenset[Decimal]
    times: frozenset[int]
    days: frozenset[tuple[int, int]]
    weekdays: frozenset[int]
    nths: frozenset[int]
    relative: frozenset[int]
    emails: frozenset[str]
    size: int
    #: the words said after "no", "without" or "none" ("no subtitles": subtitles, subtitle)
    negated: frozenset[str] = frozenset()
    #: the words a person typed (a misspelling of a value is forgiven against these only)
    typed: frozenset[str] = frozenset()
    years: frozenset[int] = frozenset()
    today: datetime.date | None = None

    @classmethod
    def of(cls, text: str, typed: bool = False) -> Heard:
        """What ``text`` said (``typed``: a person typed it)."""
        t = _folded(text)
        tokens = _TOKEN.findall(t)
        kept = [w for i, w in enumerate(tokens) if not (i and tokens[i - 1] in _NOT)]
        said = frozenset(kept) | {str(_WORDS[w]) for w in kept if w in _WORDS}
        # a number said as a time or a date ("7 pm", "the 4th") is no count or amount
        plain = _PAST.sub(" ", _CLOCK.sub(_clock_only, _ISO.sub(" ", _SLASHED.sub(" ", t))))
        plain = _DAY_MONTH.sub(" ", _MONTH_DAY.sub(" ", plain))
        numbers = {n for m in _NUMBER.finditer(_NTH.sub(" ", plain))
                   if (n := _number(m.group(0))) is not None}  # fmt: skip
        numbers |= {Decimal(_WORDS[w]) for w in tokens if w in _WORDS}
        numbers |= {Decimal(_TENS[w]) for w in tokens if w in _TENS}
        numbers |= {Decimal(i + 1) for i, w in enumerate(_ORDINALS) if w in tokens}
        if _ONE.intersection(tokens):
            numbers.add(Decimal(1))  # "a latte": one
        weekdays = {("mon", "tues", "wednes", "thurs", "fri", "satur", "sun").index(m.group(1))
                    for m in _WEEKDAY.finditer(t)}  # fmt: skip
        return cls(
            words=said,
            numbers=frozenset(numbers),
            times=frozenset(_times(t)),
            days=frozenset(_days(t)),
            weekdays=frozenset(weekdays),
            nths=frozenset(int(m.group(1)) for m in _NTH.finditer(t)),
            relative=frozenset(_AFTER_TODAY[m.group(0)] for m in _RELATIVE.finditer(t)),
            emails=frozenset(m.group(0) for m in _EMAIL.finditer(t)),
            size=len(text),
            negated=frozenset(_negated(tokens)),
            typed=said if typed else frozenset(),
            years=frozenset(int(y) for y in _YEAR.findall(t)),
        )

    @functools.cached_property
    def shapes(self) -> dict[tuple[str, int], list[str]]:
        """The words by their first letter and length (those a misspelling may be of)."""
        found: dict[tuple[str, int], list[str]] = {}
        for w in self.typed:
            if len(w) >= 5:
                found.setdefault((w[0], len(w)), []).append(w)
        return found

    @classmethod
    def union(cls, pieces: Iterable[Heard]) -> Heard:
        """What the texts said together."""
        got = list(pieces)
        return cls(
            words=frozenset().union(*(p.words for p in got)),
            numbers=frozenset().union(*(p.numbers for p in got)),
            times=frozenset().union(*(p.times for p in got)),
            days=frozenset().union(*(p.days for p in got)),
            weekdays=frozenset().union(*(p.weekdays for p in got)),
            nths=frozenset().union(*(p.nths for p in got)),
            relative=frozenset().union(*(p.relative for p in got)),
            emails=frozenset().union(*(p.emails for p in got)),
            size=sum(p.size for p in got),
            negated=frozenset().union(*(p.negated for p in got)),
            typed=frozenset().union(*(p.typed for p in got)),
            years=frozenset().union(*(p.years for p in got)),
        )


# -- the kinds of values, one recognizer each ------------------------------------------------------
@dataclass(frozen=True)
class ValueKind:
    """One kind of value: how a value of it is recognized (``read``: its normalized form, or
    None where it is not of the kind) and when a text said it (``said``), with values and texts
    it must ground (``examples``) and must not (``counterexamples``)."""

    name: str
    read: Callable[[str], object | None]
    said: Callable[[object, Heard], bool]
    examples: tuple[tuple[str, str], ...]
    counterexamples: tuple[tuple[str, str], ...]


def _read_nothing(value: str) -> object | None:
    return True if value.strip().lower() in _NOTHING else None


def _month_day(text: str) -> tuple[int, int] | None:
    """A day of a month written with the month's name ("March 14", "14 Mar", "March 14, 2019")."""
    t = re.sub(r",? \d{4}$", "", _folded(text.strip()))
    if m := _DAY_MONTH.fullmatch(t):
        return _MONTHS.index(m.group(2)[:3]) + 1, int(m.group(1))
    if m := _MONTH_DAY.fullmatch(t):
        return _MONTHS.index(m.group(1)[:3]) + 1, int(m.group(2))
    return None


def _read_date(value: str) -> object | None:
    if (named := _month_day(value)) is not None:  # in any year: 2000 has every day
        try:
            return datetime.date(2000, *named)
        except ValueError:
            return None
    m = _ISO.fullmatch(str(canonical(value.strip())))
    if m is None:
        return None
    try:
        return datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _said_date(day: object, heard: Heard) -> bool:
    """A date said by its month and day (in a year said, where one is said), by "today" or
    "tomorrow", by its weekday or by its day of the month."""
    assert isinstance(day, datetime.date)
    in_year = day.year == 2000 or not heard.years or day.year in heard.years
    return (
        ((day.month, day.day) in heard.days and in_year)
        or _said_after_today(day, heard)
        or day.weekday() in heard.weekdays
        or day.day in heard.nths
    )


_DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _read_weekday(value: str) -> object | None:
    v = _folded(value.strip()).rstrip(".")
    found = [i for i, name in enumerate(_DAY_NAMES) if v in (name, name[:3])]
    return found[0] if found else None


def _said_weekday(day: object, heard: Heard) -> bool:
    if day in heard.weekdays:
        return True
    if heard.today is None:
        return bool(heard.relative)  # "today": any weekday, not knowing today
    if heard.today == _UNREADABLE:
        return False
    return any((heard.today.weekday() + n) % 7 == day for n in heard.relative)


def _said_after_today(day: datetime.date, heard: Heard) -> bool:
    """Whether "today", "tomorrow" or "the day after tomorrow" said is ``day`` (any day, where
    today is not known: no date contradicts it; none, where it could not be read)."""
    if heard.today is None:
        return bool(heard.relative)
    if heard.today == _UNREADABLE:
        return False
    return (day - heard.today).days in heard.relative


def _read_time(value: str) -> object | None:
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", str(canonical(value.strip())))
    if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        return None
    return int(m.group(1)) * 60 + int(m.group(2))


def _read_email(value: str) -> object | None:
    v = _folded(value.strip())
    return v if _EMAIL.fullmatch(v) else None


def _said_text(value: object, heard: Heard) -> bool:
    """Every word of a name or a phrase (but "the", "of", ...) said, as it is or with one letter
    off in a long word (a misspelling); a word after "no" or "not" in the value said after one
    ("no foam" for "with no foam", "not too hot"), a "no" by any of them ("no ice" for "without
    ice"), and an action word by the plain words for it (:data:`_SAID_AS`: "add" by "with")."""
    tokens = words(str(value))
    wanted = [(i, w) for i, w in enumerate(tokens) if w not in _FILLER] or list(enumerate(tokens))
    return all(_word_said(w, heard, i > 0 and tokens[i - 1] in _NOT) for i, w in wanted)


def _word_said(word: str, heard: Heard, negated: bool) -> bool:
    """Whether one word of a value was said (``negated``: it follows a "no" in the value)."""
    if word in _NOT:
        return bool(heard.negated) or word in heard.words
    if negated and word in heard.negated:
        return True
    if any(w in heard.words for w in _SAID_AS.get(word, ())):
        return True
    return word in heard.words or _spelled(word, heard.words, heard.shapes)


def _spelled(word: str, every: frozenset[str], shapes: Mapping[tuple[str, int], list[str]]) -> bool:
    """Whether ``word`` is a said word (``every``) spelled otherwise: its plural or singular; or
    a word a person typed (``shapes``) with one letter added, dropped or changed, in a word of
    six letters or more; never in a word with a digit (an identifier, a card, a phone number is
    exact)."""
    if any(c.isdigit() for c in word):
        return False
    if word + "s" in every or (word.endswith("s") and word[:-1] in every):
        return True  # "latte" for "two lattes"
    if len(word) < 6:
        return False
    near = (w for n in (-1, 0, 1) for w in shapes.get((word[0], len(word) + n), ()))
    return any(_one_edit(word, w) for w in near)


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one letter added, dropped, changed, or two letters
    side by side swapped ("vacicne", "vaccine")."""
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) != len(b):
        return a[i:] == b[i + 1 :]
    swapped = i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2 :] == b[i + 2 :]
    return a[i + 1 :] == b[i + 1 :] or swapped


#: the kinds of values, in the order tried (the first that reads a value is its kind)
KINDS: tuple[ValueKind, ...] = (
    ValueKind(
        "nothing",
        _read_nothing,
        lambda _v, _h: True,
        (("", "hello"), ("dontcare", "any time"), ("N/A", "hi")),
        (),
    ),
    ValueKind(
        "date",
        _read_date,
        _said_date,
        (
            ("2019-03-04", "on March 4th"),
            ("2019-03-04", "the 4th of march"),
            ("2019-03-04", "next Monday"),
            ("03/04/2019", "3/4"),
        ),
        (("2019-03-04", "on March 5th"), ("2019-03-04", "next Tuesday"), ("2019-03-04", "at 4 pm")),
    ),
    ValueKind(
        "weekday",
        _read_weekday,
        _said_weekday,
        (("Friday", "on friday"), ("Tue", "next Tuesday")),
        (("Friday", "on Thursday"),),
    ),
    ValueKind(
        "time",
        _read_time,
        lambda v, h: v in h.times,
        (
            ("19:30", "at 7:30 pm"),
            ("11:30", "half past 11 in the morning"),
            ("18:00", "six o'clock"),
            ("12:00", "at noon"),
            ("7 pm", "seven pm"),
        ),
        (("19:30", "at 7:30 am"), ("19:30", "for 7 people"), ("21:00", "at 7 pm")),
    ),
    ValueKind(
        "email",
        _read_email,
        lambda v, h: v in h.emails,
        (("Bob@Example.com", "mail bob@example.com"),),
        (("eve@evil.com", "mail bob@example.com"),),
    ),
    ValueKind(
        "number",
        _number,
        lambda v, h: v in h.numbers,
        (
            ("2", "a table for two"),
            ("1210", "$1,210.00 in total"),
            ("50.00", "$50"),
            ("4", "4 tickets"),
            ("12", "a dozen donuts"),
            ("2", "a couple of bagels"),
        ),
        (("40", "for 4 people"), ("5000", "$50"), ("3", "two tickets")),
    ),
    ValueKind(
        "text",
        lambda v: v,
        _said_text,
        (
            ("Sino", "can you try sino?"),
            ("San Jose", "restaurants in San Jose"),
            ("Jose's Cafe", "josé's café"),
            ("Pizzeria Delfina", "pizzeria delfina"),
            ("No foam", "a chai latte with no foam please"),
            ("cold with no ice", "make it cold but without ice"),
            ("not too hot", "a mocha, but not too hot"),
            ("ADD", "a latte with vanilla"),
        ),
        (
            ("Nizza", "can you try sino?"),
            ("Zizzi Soho", "Zizzi in Mayfair"),
            ("foam", "no foam please"),
            ("REMOVE", "a latte with vanilla"),
        ),
    ),
)


def kind_of(value: str) -> tuple[ValueKind, object]:
    """The kind of a value written as text, and its normalized form."""
    for kind in KINDS[:-1]:
        read = kind.read(value)
        if read is not None:
            return kind, read
    return KINDS[-1], value  # any other text


def leaves(value: object, path: str = "", depth: int = 0) -> Iterator[tuple[str, object]]:
    """The values of an argument, each with its path ("items[1].name"), leaf by leaf: a list's
    items and an object's values (its keys are the call's, not the conversation's)."""
    if depth > _DEPTH:
        yield path, ...  # too deep to read: never grounded
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]", depth + 1)
    else:
        yield path, value


class Ground:
    """What a conversation said, as the gate heard it, for its calls' values: each text added
    (:meth:`hear`) indexed once, the oldest dropped past ``chars`` characters in all (down to
    three quarters of them, so the index is rebuilt once per quarter of the bound, not at each
    text)."""

    def __init__(
        self, chars: int = GROUND_CHARS, today: Callable[[], datetime.date | None] | None = None
    ) -> None:
        self._pieces: deque[Heard] = deque()
        self._chars = chars
        #: the tools' results are given (by the surface, or a result was heard): identifiers are
        #: checked (see :meth:`ungrounded`)
        self.results = False
        self._recent: deque[int] = deque(maxlen=64)  # the last texts heard, by their hashes
        #: the day a value is judged on ("today" said is that day): the local date by default
        self.today = today or datetime.date.today
        self._all = Heard.union(())

    def hear(self, text: object, result: bool = False, typed: bool = False) -> None:
        """Add a text the conversation said (a message, a tool's ``result``, what the user
        ``typed``)."""
        if not isinstance(text, str) or not text.strip():
            return
        self.results |= result
        if hash(text) in self._recent:  # the same turn given again (each request's history)
            return
        self._recent.append(hash(text))
        piece = Heard.of(text[-self._chars :], typed)
        self._pieces.append(piece)
        if self._all.size + piece.size <= self._chars:
            self._all = Heard.union((self._all, piece))
            return
        size = self._all.size + piece.size
        while size > self._chars * 3 // 4 and len(self._pieces) > 1:
            size -= self._pieces.popleft().size
        self._all = Heard.union(self._pieces)

    def ungrounded(
        self, arguments: Mapping[str, object] | None, also: Heard | None = None
    ) -> tuple[str, ...]:
        """The paths of the arguments' values said nowhere in the conversation nor in ``also``
        (all of them where the call has more values than are read one by one). An identifier
        (an argument named ``id``, ``..._id``, ``ref``, ``key``, ``...Id``) comes from a tool's
        result: it is checked only where the gate hears the tools' results (:attr:`results`),
        and a surface that gives it none leaves identifiers to the reader's other rules."""
        if not arguments:
            return ()
        found = list(zip(range(_LEAVES + 1), leaves(arguments), strict=False))
        size = sum(len(v) if isinstance(v, str) else 20 for _, (_, v) in found)
        if len(found) > _LEAVES or size > self._chars:  # more than is read one by one
            return tuple(path for _, (path, _) in found)
        heard = self._dated(self._all)
        missing = [(p, v) for _, (p, v) in found if not grounded(v, heard, p)
                   and (self.results or not (_ID_KEY.search(_key(p)) and _id_like(v)))]  # fmt: skip
        if missing and also is not None:  # said in the two together ("Sino" here, "San" there)
            heard = self._dated(Heard.union((self._all, also)))
            missing = [(p, v) for p, v in missing if not grounded(v, heard, p)]
        leaves_of = [pv for _, pv in found]
        return tuple(p for p, v in missing if not _action_of_named(p, v, leaves_of, heard))

    def _dated(self, heard: Heard) -> Heard:
        """``heard`` judged on :attr:`today` (a day that cannot be read: "today" and "tomorrow"
        said ground no date); the conversation's index keeps its day, and its cached words."""
        try:
            day = self.today()
        except Exception:  # the caller's function failed: no day, and no day grounded by it
            day = _UNREADABLE
        if day is not None and not isinstance(day, datetime.date):
            day = _UNREADABLE
        if heard.today == day:
            return heard
        dated = dataclasses.replace(heard, today=day)
        if heard is self._all:
            self._all = dated
        return dated


def grounded(value: object, heard: Heard, path: str = "") -> bool:
    """Whether one value was said in what was ``heard`` (see the module); ``path`` is the
    argument's ("items[0].milk"): a value of none ("None") is said by "no" or "without" before a
    word of its name ("no subtitles" for ``subtitle_language``), a switch turned on (``True``,
    ``"true"``) by a word of its name (which way is the reader's rules': "without subtitles");
    a switch left off is said by anything."""
    if value is None:
        return True
    if value is False or (isinstance(value, str) and value.strip().lower() == "false"):
        return True  # a switch left off does nothing nobody asked for
    if value is True or (isinstance(value, str) and value.strip().lower() == "true"):
        named = _named(path)  # a switch turned on: by a word of its name said
        return not named or bool(named & (_stems(heard.words) | heard.negated))
    if isinstance(value, float) and not math.isfinite(value):
        return False
    text = str(value) if isinstance(value, int | float) else value
    if not isinstance(text, str) or len(text) > 100_000:
        return False  # too deep to read (...), or no value a person says
    if any(unicodedata.category(c) in ("Cf", "Co", "Cs") for c in text):
        return False  # an invisible character: the value is not the one said, whatever it reads
    if text.strip().lower() in _NONE:
        return bool(_named(path) & heard.negated)
    if nth := _ORDINAL_DAY.fullmatch(text.strip().lower()):  # "12th": a day of the month
        day = int(nth.group(1))
        return day in heard.nths or any(d == day for _, d in heard.days)
    kind, read = kind_of(text)
    if kind.name == "text" and not words(text):
        return True  # punctuation alone names nothing
    return kind.said(read, heard)


def _action_of_named(
    path: str, value: object, found: list[tuple[str, object]], heard: Heard
) -> bool:
    """Whether ``value`` is the action word "add" of a thing the user named plainly: a sibling
    value (the same object's) has a word the user typed, not after a "no" ("a latte that has
    vanilla": the vanilla addon's option ``"ADD"``). A "remove" is never said this way."""
    if not isinstance(value, str) or value.strip().lower() != "add" or "." not in path:
        return False
    parent = path.rsplit(".", 1)[0]
    return any(
        p.rsplit(".", 1)[0] == parent
        and p != path
        and isinstance(v, str)
        and any(
            len(w) > 2 and not w.isdigit() and w in heard.typed and w not in heard.negated
            for w in words(v)
        )
        for p, v in found
    )


#: the kinds a proposal pins: where it states a value of the kind, the call's is one it states
_PINNED: dict[str, Callable[[Heard], bool]] = {
    "date": lambda h: bool(h.days or h.nths or h.relative),
    "weekday": lambda h: bool(h.weekdays or h.relative),
    "time": lambda h: bool(h.times),
}


def displaced(arguments: Mapping[str, object] | None, stated: Heard) -> tuple[str, ...]:
    """The paths of a call's dates, weekdays and times that differ from those the confirmed
    proposal states (``stated``: the proposal and the user's reply to it): "Friday at 7 pm?"
    "Yes." is no Saturday and no 21:00, even where another day or time was said elsewhere in
    the conversation (that grounds the value, not the agreement). A proposal that states no
    value of a kind pins none of it."""
    out = []
    for _, (path, value) in zip(range(_LEAVES), leaves(arguments or {}), strict=False):
        if not isinstance(value, str) or len(value) > 64:
            continue
        if nth := _ORDINAL_DAY.fullmatch(value.strip().lower()):  # "12th": a day of the month
            day = int(nth.group(1))
            if (stated.nths or stated.days) and not (
                day in stated.nths or any(d == day for _, d in stated.days)
            ):
                out.append(path)
            continue
        kind, read = kind_of(value)
        pinned = _PINNED.get(kind.name)
        if pinned is not None and pinned(stated) and not kind.said(read, stated):
            out.append(path)
    return tuple(out)


def _named(path: str) -> set[str]:
    """The words of an argument's name, singular ("subtitle_language": subtitle, language)."""
    key = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", _key(path)).replace("_", " ")
    return {w.removesuffix("s") for w in _TOKEN.findall(key.casefold()) if len(w) > 2}


def _stems(said: frozenset[str]) -> set[str]:
    return {w.removesuffix("s") for w in said}


def _id_like(value: object) -> bool:
    """A value shaped like an identifier: one token of letters, digits and separators, with a
    digit, no address ("rst-8841", "A-7731"; not "Nizza", not "eve@evil.com")."""
    v = str(value).strip()
    return bool(_ID_VALUE.fullmatch(v)) and any(c.isdigit() for c in v) and "@" not in v


def _key(path: str) -> str:
    """The last key of an argument's path ("items[0].menu_item_id": menu_item_id)."""
    return re.split(r"[.\[]", path)[-1] if path else ""


def result_text(result: object) -> str:
    """A tool's result as the text it says (a string as it is, data as JSON, anything else as
    ``str``; bytes say nothing), at most :data:`GROUND_CHARS` characters of it."""
    if isinstance(result, str):
        return result[:GROUND_CHARS]
    if isinstance(result, bytes | bytearray | memoryview) or result is None:
        return ""
    try:
        text = json.dumps(result, default=str, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = str(result)
    return text[:GROUND_CHARS]
