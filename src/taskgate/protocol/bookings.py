"""Extract booking lines (``ref <completion code>/<work order>``) from a model's free text.

Tolerated around and inside the line: markdown emphasis (``**``, ``_``, ``~``), backticks and
code blocks, bullets and numbering, ``Ref:``, any letter case, spaces around the slash and the
hyphen, a ``#`` or no ``#`` before the ``W``, and trailing punctuation. Not a booking: a code or a
work order alone, ``ref`` inside a longer word (``prefer``, ``reference``), a code or work order
with no digits or with letters glued to its digits.
"""

from __future__ import annotations

import re

from ..core.booking import Booking

_MD = r"[\s*_~`]*"  # markdown emphasis and spaces
_DASH = r"[-\u2010-\u2013]?"
_BOOKING = re.compile(
    r"(?<![A-Za-z0-9])ref" + _MD + r"(?::" + _MD + r")?"
    r"RC\s*"
    + _DASH
    + r"\s*(?P<code>\d+)(?![A-Za-z0-9])"
    + _MD
    + r"/"
    + _MD
    + r"(?:\#\s*)?W\s*"
    + _DASH
    + r"\s*(?P<wo>\d+)(?![A-Za-z0-9])",
    re.IGNORECASE,
)
_REF = re.compile("ref", re.IGNORECASE)


def parse_bookings(text: str) -> list[Booking]:
    """Every booking line in ``text``, in order, normalized to ``RC-1234`` and ``#W1234``."""
    out: list[Booking] = []
    hit = _REF.search(text)
    while hit is not None:  # try the full regex only where 'ref' occurs: much faster than finditer
        m = _BOOKING.match(text, hit.start())
        if m is None:
            hit = _REF.search(text, hit.start() + 1)
            continue
        out.append(Booking(f"RC-{m.group('code')}", f"#W{m.group('wo')}", m.span()))
        hit = _REF.search(text, m.end())
    return out
