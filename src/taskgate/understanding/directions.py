"""Which way a call goes: a proposal of a bus "from Anaheim to Las Vegas" or a transfer "from
your checking account to Yumi's savings account" is no call the other way round.

A call's field is a source where its name says so (``from_location``, ``originCity``,
``sender``, ``pickup``), a destination where its name says so (``to_location``,
``destination``, ``recipient_account_type``); a field of neither side is the source of a
destination field named like it (``account_type`` beside ``recipient_account_type``). Fields are
paired within one table (a nested ``{"route": {"from": ..., "to": ...}}`` too), not across the
legs of a list. A call whose source holds a value the proposal says only on the "to" side, and
whose destination holds another value the proposal says only on the "from" side, goes the other
way. (A call from and to one place is not this module's to refuse.)

A value is on the "from" side right after "from", "leaving", "departing" or a "From:" label, or
right before "to" ("Anaheim to Las Vegas", "Anaheim -> Las Vegas"); on the "to" side right after
"to", "into", "bound for", a "To:" label, or before "-bound". A determiner or an owner may stand
between ("from your checking account", "to Yumi's savings"); a verb may not ("you wish to leave
Vancouver"). A mention in a clause about a return trip ("the return bus to Anaheim"), after a
distance ("30 minutes from JFK"), on neither side ("in savings"), or said on both turns nothing
round: the other checks of the reading decide.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from taskgate.understanding.acts import spoken_forms
from taskgate.understanding.calls import _tables
from taskgate.understanding.patterns import pattern

_SOURCE = pattern(
    r"(?:^|_)(?:from|origin|source|src|sender|pickup|pick_up|start|start_point|departure|"
    r"departing|leaving|debit|withdraw\w*)(?:_|$)"
)
_DESTINATION = pattern(
    r"(?:^|_)(?:to|destination|dest|dst|recipient|target|arrival|arriving|arrive_at|dropoff|"
    r"drop_off|end|end_point|payee|where_to|receiver|credit)(?:_|$)"
)
#: the word that puts what follows it on one side ("from", "leaving"; "to", "into"), or on
#: neither ("in", "at", "on", "for": "from March 1st in Nairobi" says no Nairobi to start from)
_SIDE = pattern(
    r"\b(?:(from|leaving|departing|out of)|(to|into|towards?|bound for|headed for|heading for|"
    r"destined for)|(in|at|on|for|of|until|till|by|with|near|around|about|via|through))\b"
)
#: a label before the value ("From: checking", "Arrival: Las Vegas")
_LABEL = pattern(
    r"\b(?:(from|origin|departure|departing|source)|(to|destination|arrival|arriving))\s*:\s*"
    r"[\"'\u2018\u201c]?$"
)
#: what follows a value on the "from" side ("Anaheim to Las Vegas") or the "to" side
#: ("Las Vegas-bound")
_AFTER = pattern(r"[\"'\u2019\u201d]?\s*(?:(to|->|\u2192)\s|(-bound|\s+bound)\b)")
_ARROW = pattern(r"(?:->|\u2192)\s*[\"'\u2018\u201c]?$")
_CLAUSE_END = pattern(r"[,.;:!?()]")
#: a clause that speaks of coming back or of a distance: its "to" and "from" are not the call's
_ASIDE = pattern(
    r"\b(?:return\w*|back|inbound|minutes?|miles?|hours?|blocks?|km|kilometers?|away|far)\b"
)
#: what may stand between a side's word and the value: a determiner or an owner ("from your
#: checking account", "to Yumi's savings"); not a verb ("wish to leave Vancouver")
_GAP = pattern(
    r"(?:\s+(?:the|a|an|your|my|his|her|their|our|its|this|that|[\w-]+'s?)){0,2}\s*"
    r"[\"'\u2018\u201c]?"
)
_ISO = pattern(r"\d{4}-\d{2}-\d{2}")
#: how many words back from a value its side is looked for
_REACH = 6
#: how many tables are read
_FIELDS = 64


def _side(said: str, start: int, end: int) -> str:
    """The side of the mention of a value at ``said[start:end]``: "from", "to" or "?"."""
    window = said[max(0, start - 80) : start]
    label = _LABEL.search(window)
    if label:
        return "from" if label.group(1) else "to"
    clause = _CLAUSE_END.split(window)[-1]
    rest = said[end : end + 80]
    if _ASIDE.search(clause) or _ASIDE.search(_CLAUSE_END.split(rest, maxsplit=1)[0]):
        return "?"
    before = " ".join(clause.split()[-_REACH:])
    if _ARROW.search(before):  # "Anaheim -> Las Vegas"
        return "to"
    marks = list(_SIDE.finditer(before))
    last = marks[-1] if marks else None
    if last is not None and not last.group(3) and _GAP.fullmatch(before, last.end()):
        return "from" if last.group(1) else "to"
    after = _AFTER.match(rest)
    if after is not None and (last is None or last.group(3)):
        return "from" if after.group(1) else "to"
    return "?"


def _sides(said: str, value: str) -> set[str]:
    """The sides on which ``said`` (lowercase) names ``value``."""
    sides: set[str] = set()
    for form in spoken_forms(value):
        for m in itertools.islice(form.finditer(said), 16):
            sides.add(_side(said, m.start(), m.end()))
    return sides


def turned_round(arguments: Mapping[str, object], said: str) -> bool:
    """Whether the call goes the other way from the proposal ``said`` (its text)."""
    text = said.lower()
    for table in itertools.islice(_tables(arguments), _FIELDS):
        fields = [(k, v) for k, v in table if not _ISO.match(v)]  # a date goes nowhere
        ends = [(k, v) for k, v in fields if _DESTINATION.search(k) and not _SOURCE.search(k)]
        starts = [(k, v) for k, v in fields if _SOURCE.search(k) and not _DESTINATION.search(k)]
        starts += [(k, v) for k, v in fields if not _SOURCE.search(k)
                   and not _DESTINATION.search(k) and any(e.endswith("_" + k) for e, _ in ends)]  # fmt: skip
        if not (starts and ends):
            continue
        sides = {v.lower(): _sides(text, v) for _, v in starts + ends}
        if any(
            a.lower() != b.lower() and sides[a.lower()] == {"to"} and sides[b.lower()] == {"from"}
            for _, a in starts
            for _, b in ends
        ):
            return True
    return False
