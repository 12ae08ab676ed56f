"""Which way a call goes: a proposal of a bus "from Anaheim to Las Vegas" or a transfer "from
your checking account to Yumi's savings account" is no call the other way round.

A call's field is a source where its name says so (``from_location``, ``origin_city``,
``sender``), a destination where its name says so (``to_location``, ``destination``,
``recipient_account_type``). A call whose source's value the proposal says only after "to"
and whose destination's value (another) it says only after "from" goes the other way. A value
said on both sides ("from your savings to Yumi's savings"), on neither ("in savings"), or not
at all turns nothing round: the other checks of the reading decide. The word must govern the
value ("from your checking account"; not "you wish to leave Vancouver")."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping

from taskgate.understanding.acts import spoken_forms
from taskgate.understanding.patterns import pattern

#: a field of where the call starts from, or where it goes, by the field's name
_SOURCE = pattern(r"(?:^|_|\b)(?:from|origin|source|sender|pickup|pick_up|departure_?(?:city|"
                  r"location|station|airport)|leaving_from|withdraw\w*)(?:_|\b|$)", re.I)  # fmt: skip
_DESTINATION = pattern(r"(?:^|_|\b)(?:to|destination|dest|recipient|target|arrival_?(?:city|"
                       r"location|station|airport)|dropoff|drop_off|payee|where_to|"
                       r"receiver)(?:_|\b|$)", re.I)  # fmt: skip
#: the word that puts what follows it on one side ("from", "leaving"; "to", "into"), or on
#: neither ("in", "at", "on", "for": "from March 1st in Nairobi" says no Nairobi to start from)
_SIDE = pattern(
    r"\b(?:(from|leaving|departing|out of)|(to|into|towards?|arriving|reaching)|(in|at|on|for|of|"
    r"until|till|by|with|near|around|about|via|through))\b"
)
_CLAUSE_END = pattern(r"[,.;:!?()]")
#: what may stand between a side's word and the value: a determiner or an owner ("from your
#: checking account", "to Yumi's savings"); not a verb ("wish to leave Vancouver")
_GAP = pattern(
    r"(?:\s+(?:the|a|an|your|my|his|her|their|our|its|this|that|[\w-]+'s?)){0,2}\s*"
    r"[\"'\u2018\u201c]?"
)
_NOT_A_PLACE = pattern(r"\s*(?:[\d\W_]+|\d{4}-\d{2}-\d{2}.*|true|false)\s*$", re.I)
#: how many words back from a value its side is looked for
_REACH = 6
#: how many fields are read
_FIELDS = 64


def _sides(said: str, value: str) -> set[str]:
    """The sides on which ``said`` (lowercase) names ``value``: "from", "to", or "?" where a
    mention is on neither or cannot be told ("in savings", "and the destination is Seattle")."""
    sides: set[str] = set()
    for form in spoken_forms(value):
        for m in itertools.islice(form.finditer(said), 16):
            clause = _CLAUSE_END.split(said[max(0, m.start() - 80) : m.start()])[-1]
            before = " ".join(clause.split()[-_REACH:])
            marks = list(_SIDE.finditer(before))
            last = marks[-1] if marks else None
            if last is None or last.group(3) or not _GAP.fullmatch(before, last.end()):
                sides.add("?")
            else:
                sides.add("from" if last.group(1) else "to")
    return sides


def turned_round(arguments: Mapping[str, object], said: str) -> bool:
    """Whether the call goes the other way from the proposal ``said`` (its text): a source field
    whose value the proposal says only after "to" and a destination field whose value, another,
    it says only after "from". A field of no side is the source of a destination field named
    like it ("account_type" for "recipient_account_type")."""
    text = said.lower()
    fields = [(k, v) for k, v in itertools.islice(arguments.items(), _FIELDS)
              if isinstance(k, str) and isinstance(v, str) and not _NOT_A_PLACE.match(v)]  # fmt: skip
    ends = [(k, v) for k, v in fields if _DESTINATION.search(k) and not _SOURCE.search(k)]
    starts = [(k, v) for k, v in fields if _SOURCE.search(k) and not _DESTINATION.search(k)]
    starts += [(k, v) for k, v in fields if not _SOURCE.search(k) and not _DESTINATION.search(k)
               and any(e.lower().endswith("_" + k.lower()) for e, _ in ends)]  # fmt: skip
    if not (starts and ends):
        return False
    sides = {v: _sides(text, v) for _, v in starts + ends}
    return any(
        a.lower() != b.lower() and sides[a] == {"to"} and sides[b] == {"from"}
        for _, a in starts
        for _, b in ends
    )
