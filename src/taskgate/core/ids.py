"""The two identifiers of the booking protocol: completion codes and work orders.

A completion code (``RC-4808``) names a step and is visible only in the brief; a work order
(``#W1941``) is a nonce issued with one request. Both are normalized here, and only here.
"""

from __future__ import annotations

import re

_CODE = re.compile(r"\s*RC\s*[-\u2010-\u2013]?\s*(\d+)\s*", re.IGNORECASE)
_WORK_ORDER = re.compile(r"\s*#?\s*W\s*[-\u2010-\u2013]?\s*(\d+)\s*", re.IGNORECASE)


def normalize_code(text: str) -> str | None:
    """``'rc 4808'`` -> ``'RC-4808'``; ``None`` when ``text`` is not a completion code."""
    m = _CODE.fullmatch(text)
    return f"RC-{m.group(1)}" if m else None


def normalize_work_order(text: str) -> str | None:
    """``'w1941'`` -> ``'#W1941'``; ``None`` when ``text`` is not a work order."""
    m = _WORK_ORDER.fullmatch(text)
    return f"#W{m.group(1)}" if m else None
