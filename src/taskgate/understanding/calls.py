"""What a call's arguments say, for the readers' order and change rules: their values walked within
a budget, the counts among them, the items they name, the options they set and whether each is
made of the user's words (typos one letter off included)."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence

from taskgate.understanding.finishing import _ID_KEY
from taskgate.understanding.patterns import pattern
from taskgate.understanding.words import _WORD, _stem

#: how many of a call's arguments are compared with the proposal (a call of a million is read
#: as its first ones)
_ARGUMENTS = 64
_COUNT_KEY = pattern(
    r"(?<![a-z])(?:number|count|size|tickets|seats|passengers|riders|people|guests|travell?ers|adults|rooms|"
    r"quantity|qty|party|pax|persons|attendees|occupants|heads|children|kids|infants|group|"
    r"riders|units?|servings?|cups?|copies|multiplier|pieces|pcs|times|^n$|quantities|^q$|^x$|"
    r"^num$|num_?items|n_?items|how_?many|qnty|quant|repeat|batch|packs?|boxes|cases|portions?|"
    r"instances|ncopies|volume|weight|amt|pumps?|shots?)",
    re.I,
)
_COUNT = pattern(r"\d{1,6}(?:\.\d+)?")


def _leaves(arguments: Mapping[str, object]) -> tuple[list[tuple[str, object]], bool]:
    """A call's values that are neither tables nor lists, each with the name of the field that
    holds it (nested tables and lists walked, at most ``4 * _ARGUMENTS`` entries read), and
    whether every value was read."""
    todo: list[tuple[str, object]] = [(str(k), v) for k, v in
                                      itertools.islice(arguments.items(), _ARGUMENTS)]  # fmt: skip
    out: list[tuple[str, object]] = []
    seen, whole = 0, len(arguments) <= _ARGUMENTS
    while todo and seen < 4 * _ARGUMENTS:
        key, value = todo.pop()
        seen += 1
        if isinstance(value, Mapping):
            whole &= len(value) <= _ARGUMENTS
            todo.extend((str(k), v) for k, v in itertools.islice(value.items(), _ARGUMENTS))
        elif isinstance(value, list | tuple):
            whole &= len(value) <= _ARGUMENTS
            todo.extend((key, v) for v in value[:_ARGUMENTS])
        else:
            out.append((key, value))
    return out, whole and not todo


def _tables(arguments: Mapping[str, object]) -> list[list[tuple[str, str]]]:
    """The call's tables (itself and the ones nested in it, at most ``4 * _ARGUMENTS`` entries
    visited), each as its fields that hold text with a letter: the field's name in snake case,
    lowercase ("menuItemId": "menu_item_id"), and the text stripped and cut at 200 characters."""
    out: list[list[tuple[str, str]]] = []
    todo: list[object] = [arguments]
    seen = 0
    while todo and seen < 4 * _ARGUMENTS:
        table = todo.pop()
        seen += 1
        if isinstance(table, list | tuple):
            todo.extend(table[:_ARGUMENTS])
            continue
        if not isinstance(table, Mapping):
            continue
        fields = []
        for key, value in itertools.islice(table.items(), _ARGUMENTS):
            if isinstance(value, Mapping | list | tuple):
                todo.append(value)
            elif isinstance(key, str) and isinstance(value, str):
                text = value.strip()[:200]
                if _A_LETTER.search(text):
                    fields.append((_CAMEL.sub(r"\1_\2", key[:200]).lower(), text))
        out.append(fields)
    return out


_A_LETTER = pattern(r"[^\W\d_]")


def _too_many(arguments: Mapping[str, object], most: int) -> bool:
    """Whether a count among the call's values (quantity, tickets, units, ... at any depth; a
    yes-or-no or a word where a number belongs counts as too many) is more than ``most``. A
    size said in words ("large") is no count. A call of more values than are read has too many:
    a count past them could not be checked."""
    leaves, complete = _leaves(arguments)
    total = 0
    for key, value in leaves:
        text = str(value).strip()[:12]
        numeric = not isinstance(value, bool) and _COUNT.fullmatch(text) is not None
        if not _COUNT_KEY.search(_CAMEL.sub(r"\1_\2", key)):
            # any other number but an identifier or a price may count too ("orders": 50)
            if (
                numeric
                and not (_ID_KEY.search(key) or _TERMS_KEY.search(key))
                and float(text) > most
            ):
                return True
            continue
        if numeric:
            total += math.ceil(float(text))  # the counts of its lines together; 1.9 is 2
        elif not (_SIZE_KEY.search(key) and not isinstance(value, bool)):
            return True
    return total > most or not complete


class _Spelling:
    """Words of a call read as the user's words they are one letter off ("cappucino-9983" for
    "cappuccino", "cortado" for "cartado"; a letter added, dropped, changed or two swapped
    inside words of seven letters or more), so a typo on either side names the same thing."""

    def __init__(self, said: set[str]) -> None:
        self.said = said
        self.near: dict[str, str] = {}
        for word in itertools.islice(said, 512):
            if len(word) >= 7:
                for variant in _dropped(word):
                    self.near.setdefault(variant, word)

    def __call__(self, words: set[str]) -> set[str]:
        return {self._as_said(w) for w in words}

    def _as_said(self, word: str) -> str:
        if word in self.said or len(word) < 7 or not self.near:
            return word
        near = (self.near[v] for v in _dropped(word) if v in self.near)
        return next((w for w in near if _one_off(word, w)), word)


def _one_off(a: str, b: str) -> bool:
    """Whether two different words are one letter added, dropped or changed, or two letters
    swapped, apart, inside the word: the first letter the same, and the last too unless one
    was added or dropped ("coffee" is no "toffee", "cortado" no "cortada")."""
    if (
        abs(len(a) - len(b)) > 1
        or a[:1] != b[:1]
        or (len(a) == len(b) + 1 and a[:-1] == b)  # "americanox" is no "americano"
        or (len(a) == len(b) and a[-1:] != b[-1:] and a[-2:] != b[-2:][::-1])
    ):
        return False
    if len(a) != len(b):
        long, short = (a, b) if len(a) > len(b) else (b, a)
        return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))
    off = [i for i in range(len(a)) if a[i] != b[i]]
    return len(off) == 1 or (
        len(off) == 2 and off[1] == off[0] + 1 and a[off[0]] == b[off[1]] and a[off[1]] == b[off[0]]
    )


def _dropped(word: str) -> list[str]:
    """The word, and the word with each one letter dropped (two words one letter off share one)."""
    word = word[:40]
    return [word, *(word[:i] + word[i + 1 :] for i in range(len(word)))]


def _item_words(value: str, spoken: Sequence[str]) -> set[str]:
    """The words of an item's value, numbers aside, as stems; a value that runs two or three of
    the user's words together ("chailatte-0987" for "two chai lattes") has theirs."""
    # numbers aside ("2211"); letters with a number ("12pack", "16gb", "1kg") are a word the
    # user must have said
    words = [w for w in _WORD.findall(value.lower()) if not w.isdigit()]
    if len(words) == 1:
        run = _stem(words[0])
        for n in (2, 3):
            for i in range(min(len(spoken), 64) - n + 1):
                part = spoken[i : i + n]
                if _stem("".join(part)) == run or "".join(_stem(w) for w in part) == run:
                    return {_stem(w) for w in part}
    return {_stem(w) for w in words}


def counted(arguments: Mapping[str, object] | None) -> int:
    """How many a call counts: its counts among its values together, each rounded up (none:
    one); or, where more, how many items it names: a list of them under one field, one named
    twice in one value ("latte-0256 latte-0256") or under two fields."""
    return max(_counts(arguments), _repeats(arguments or {}))


def _repeats(arguments: Mapping[str, object]) -> int:
    """How many items a call names (see :func:`counted`)."""
    per_key: dict[str, int] = {}
    values: dict[str, int] = {}
    most = 1
    for key, value in _leaves(arguments)[0]:
        if (
            isinstance(value, str)
            and (_ITEM_KEY.search(key) or _EXTRA_KEY.search(key))
            and not _NOTE_KEY.search(key)
        ):
            per_key[key] = per_key.get(key, 0) + 1
            values[value.strip().lower()] = values.get(value.strip().lower(), 0) + 1
            words = [w for w in _WORD.findall(value.lower()[:200]) if not w.isdigit()]
            most = max(most, max((words.count(w) for w in set(words)), default=1))
    return max(most, *per_key.values(), *values.values(), 1)


def _counts(arguments: Mapping[str, object] | None) -> int:
    """A call's counts together, each rounded up (none: one)."""
    counts = [math.ceil(float(str(v).strip()[:12])) for k, v in _leaves(arguments or {})[0]
              if _COUNT_KEY.search(_CAMEL.sub(r"\1_\2", k)) and not isinstance(v, bool)
              and _COUNT.fullmatch(str(v).strip()[:12])]  # fmt: skip
    return max(1, sum(counts))


_CAMEL = pattern(r"([a-z])([A-Z])")
_SIZE_KEY = pattern(r"size", re.I)
#: a field of an item's price or terms: an order says none it did not say
_TERMS_KEY = pattern(
    r"price|cost|fee|total|amount|discount|coupon|promo|voucher|code|tip|surcharge|charge|credit",
    re.I,
)


def _unsaid_terms(arguments: Mapping[str, object], said: str) -> bool:
    """Whether a price, discount or code among the call's values (at any depth; a zero too) is
    not in ``said``."""
    for key, value in _leaves(arguments)[0]:
        if (
            _TERMS_KEY.search(key)
            and value is not None
            and value != ""
            and not isinstance(value, bool)
            and str(value).lower()[:64] not in said
        ):
            return True
    return False


#: ways to say "to go" ("for carry out", "takeaway")
_TO_GO = pattern(r"\b(?:carry ?out|take ?out|take ?away)\b")
#: ways to say "decaf" ("non caffeinated", "caffeine-free", "without caffeine")
_DECAF = pattern(r"\b(?:non[- ]?caffeinated|caffeine[- ]?free|no caffeine|without caffeine)\b")


def _plain(text: str) -> str:
    """A user's words with the ways to say a common option read as its name ("carry out": to go,
    "caffeine-free": decaf)."""
    return _DECAF.sub(" decaf ", _TO_GO.sub(" to go ", text))


#: a field that sets an option of what was ordered ("option": "Decaf", "size": "venti")
_CHOICE_KEY = pattern(
    r"option|value|choice|selection|setting|variant|size|flavou?r|milk|temperature|type|style|"
    r"addon|add_on|extra|topping|modifier|caffeine|decaf|status|action",
    re.I,
)
#: a field that names which option a call sets, not what it is set to
_LABEL_KEY = pattern(r"attribute|field|label|param|property", re.I)
#: a value that only switches something on ("ADD", "yes"); removing is :func:`_removes`'s
_SWITCH_VALUE = pattern(r"add|yes|true|on|include", re.I)
#: words that remove something ("take the latte off", "remove it", "none")
_REMOVING = pattern(
    r"\b(?:remov\w*|delet\w*|take (?:\w+ ){0,3}off|drop|cancel\w*|zero|none|no more)\b"
)


def _unsaid_option(
    arguments: Mapping[str, object],
    said: set[str],
    spelled: _Spelling,
    only: re.Pattern[str] | None = None,
) -> bool:
    """Whether a value the call sets has no word the user said, whole or as the start of one
    ("decaf" for "decaffeinated"): every text value but a note's, an identifier's ("14755"),
    a field's name ("attribute_name") or a plain switch ("option": "ADD"), which stands for its
    field's name ("iced": "yes" needs "iced" said); numbers are counted elsewhere. "size":
    "venti", "syrup": "caramel", "upsell": "gift-card-500" for "a latte" are unsaid. ``only``:
    the fields read; :data:`_EVERY` reads every field but a date or a time (a confirmed
    proposal's own, checked by :meth:`~taskgate.understanding.reader.Reading.contradicted`)."""
    starts = {w[:n] for w in itertools.islice(said, 512) for n in range(3, min(len(w), 12) + 1)}

    def spoken(text: str) -> bool:
        low = _CAMEL.sub(r"\1 \2", text[:200]).lower()
        return (
            "".join(_WORD.findall(low)) in said
            or any(  # "To go" for the run "togo"
                w in said or w in starts or any(w[:n] in said for n in range(3, len(w)))
                for w in spelled({_stem(w) for w in _WORD.findall(low)})
            )
        )

    for key, value in _leaves(arguments)[0]:
        if (
            _NOTE_KEY.search(key)
            or _LABEL_KEY.search(key)
            or value is None
            or (only is not None and not only.search(key))
        ):
            continue
        if isinstance(value, bool) or (
            isinstance(value, str) and _SWITCH_VALUE.fullmatch(value.strip())
        ):
            if value is not False and not _GENERIC_KEY.fullmatch(key) and not spoken(key):
                return True  # "decaf": true, "iced": "yes"
            continue
        if not isinstance(value, str) or _COUNT.fullmatch(value.strip()[:12]):
            continue
        if only is _EVERY and _WHEN.fullmatch(value.strip()[:32]):
            continue  # a date or a time: the proposal's own, checked by Reading.contradicted
        if _ID_KEY.search(key) and _ID_LIKE.fullmatch(value.strip()[:64]):
            continue  # "order_item_id": "14755"
        if not spoken(value):
            return True
    return False


#: a field whose switch says what to do with the value beside it ("option": "ADD")
_GENERIC_KEY = pattern(r"option|value|action|op|operation|selected|enabled|state|include", re.I)
#: an identifier: no run of three letters ("14755", "a1-22", "9999-0001")
_ID_LIKE = pattern(r"(?:[a-z]{0,2}[\d_.:-]+)+[a-z]{0,2}", re.I)


def sets_item(arguments: Mapping[str, object] | None) -> bool:
    """Whether a call names an item ("menu_item_id": "latte-0256", not an identifier alone): a
    change under an order of a thing may not swap an item the order did not add."""
    return any(
        isinstance(value, str)
        and _ITEM_KEY.search(key)
        and not _NOTE_KEY.search(key)
        and not _LABEL_KEY.search(key)
        and not _ID_LIKE.fullmatch(value.strip()[:64])
        for key, value in _leaves(arguments or {})[0]
    )


def names_item(arguments: Mapping[str, object] | None) -> bool:
    """Whether a call names an item (:func:`sets_item`), by words under an identifier's field
    ("id": "mocha-2211") or by an identifier under an item's field ("menu_item_id": "12345")."""
    return (
        sets_item(arguments)
        or by_id(arguments)
        or any(
            isinstance(value, str)
            and _ID_KEY.search(key)
            and not _ID_LIKE.fullmatch(value.strip()[:64])
            for key, value in _leaves(arguments or {})[0]
        )
    )


def by_id(arguments: Mapping[str, object] | None) -> bool:
    """Whether an item's field of the call holds an identifier only ("menu_item_id": "12345"):
    no words to check it against what was said."""
    return any(
        isinstance(value, str)
        and _ITEM_KEY.search(key)
        and not _NOTE_KEY.search(key)
        and not _LABEL_KEY.search(key)
        and _ID_LIKE.fullmatch(value.strip()[:64]) is not None
        and "order" not in key.lower()  # "order_item_id": "49692" says which line of the order
        for key, value in _leaves(arguments or {})[0]
    )


def _removes(arguments: Mapping[str, object]) -> bool:
    """Whether a key or a value of the call removes or cancels something."""
    return any(
        _REMOVE_WORD.search(key)
        or (isinstance(value, str) and _REMOVE_WORD.fullmatch(value.strip()))
        for key, value in _leaves(arguments)[0]
    )


_REMOVE_WORD = pattern(r"\b(?:remov|delet|cancel|void|refund|drop|discard|clear)\w*", re.I)


def _zeroed(arguments: Mapping[str, object]) -> bool:
    """Whether a count among the call's values is zero (the item removed)."""
    return any(
        _COUNT_KEY.search(_CAMEL.sub(r"\1_\2", key))
        and not isinstance(value, bool)
        and _COUNT.fullmatch(str(value).strip()[:12]) is not None
        and float(str(value).strip()[:12]) == 0
        for key, value in _leaves(arguments)[0]
    )


#: a field that names the item a call adds ("menu_item_id", "product", "sku", "name")
_ITEM_KEY = pattern(
    r"item|product|sku|menu|name|title|event|drink|dish|article|goods|replace|swap|substitut",
    re.I,
)
#: a field of what is added to an item ("addon_id": "vanilla-sweetener-011")
_EXTRA_KEY = pattern(r"addon|add_on|extra|topping|modifier|side", re.I)
#: every field (for :func:`_unsaid_option`: but dates and times, :data:`_WHEN`)
_EVERY = pattern(r"")
#: a date or a time as a call states it ("2019-03-14", "07:20")
_WHEN = pattern(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?|\d{1,2}:\d{2}(?::\d{2})?")


def _item_values(arguments: Mapping[str, object]) -> list[str]:
    """The values of a call's item fields (at any depth), else every value but a note's."""
    items = [value[:200] for key, value in _leaves(arguments)[0]
             if isinstance(value, str) and _ITEM_KEY.search(key) and not _NOTE_KEY.search(key)]  # fmt: skip
    return items or _flat(arguments, notes=False)


#: a free-text field of a call, where any words may be written ("note": "mocha")
_NOTE_KEY = pattern(
    r"note|comment|message|description|instruction|text|memo|remark|request|detail", re.I
)


def _flat(value: object, budget: int = _ARGUMENTS, *, notes: bool = True) -> list[str]:
    """The text values of a call's arguments, nested lists and tables walked, at most
    ``budget`` of them and each cut at 200 characters; without the values of free-text fields
    (a note, a comment, ...) unless ``notes``."""
    out: list[str] = []
    todo: list[object] = [value]
    seen = 0  # empty tables and lists give no values: the walk is bounded by what it visits too
    while todo and len(out) < budget and seen < 4 * budget:
        item = todo.pop()
        seen += 1
        if isinstance(item, Mapping):
            todo.extend(v for k, v in itertools.islice(item.items(), budget)
                        if notes or not _NOTE_KEY.search(str(k)))  # fmt: skip
        elif isinstance(item, list | tuple):
            todo.extend(item[:budget])
        elif isinstance(item, str | int | float) and not isinstance(item, bool):
            out.append(str(item)[:200])
    return out
