"""The two identifiers of the booking protocol: completion codes and work orders.

A completion code (``RC-4808``) names a step and is visible only in the brief; a work order
(``#W1941``) is a nonce issued with one request. Both are normalized here, and only here.

Only ASCII digits count: ``RC-4808`` written in fullwidth digits (or any other script's digits)
is no completion code, and likewise no work order, so a look-alike never equals, or passes for, a
real identifier.
The patterns are possessive, so a long run of spaces is rejected in linear time.
"""

from __future__ import annotations

import functools
import re

_DASH_SP = r"\s*+(?:[-\u2010-\u2013]\s*+)?"  # spaces, then an optional hyphen or dash and spaces
_CODE = re.compile(r"\s*+RC" + _DASH_SP + r"([0-9]++)\s*+", re.IGNORECASE)
_WORK_ORDER = re.compile(r"\s*+(?:#\s*+)?W" + _DASH_SP + r"([0-9]++)\s*+", re.IGNORECASE)


def normalize_code(text: str) -> str | None:
    """``'rc 4808'`` -> ``'RC-4808'``; ``None`` when ``text`` is not a completion code."""
    m = _CODE.fullmatch(text)
    return f"RC-{m.group(1)}" if m else None


def normalize_work_order(text: str) -> str | None:
    """``'w1941'`` -> ``'#W1941'``; ``None`` when ``text`` is not a work order."""
    m = _WORK_ORDER.fullmatch(text)
    return f"#W{m.group(1)}" if m else None


_TOOL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*+")


def normalize_tool(text: str) -> str | None:
    """``' draft_rfq '`` -> ``'draft_rfq'``; ``None`` when ``text`` is not a tool name (ASCII
    letters, digits, ``_``, ``.`` and ``-``, as function names of the OpenAI API and more)."""
    name = text.strip()
    return name if _TOOL.fullmatch(name) else None


#: namespace prefixes that agent frameworks put before a function's name
_PREFIXES = ("functions.", "function.", "tools.")


@functools.lru_cache(maxsize=4096)  # a gate sees few tool names, each judged many times
def tool_key(name: str) -> str:
    """What a tool name is matched by: case folded, ``-`` and ``.`` read as ``_``, and a
    framework's namespace prefix (``functions.``) dropped. So ``Draft_RFQ``, ``DRAFT-RFQ`` and
    ``functions.draft_rfq`` all name the tool ``draft_rfq``, and ``crm_send_quote`` the tool
    ``crm.send_quote`` (OpenAI function names cannot hold a dot): a variant of a bound tool's name
    is judged as that tool, never passed as an unbound one; ``mail.send_quote`` stays another
    tool."""
    key = name.strip().casefold()
    for prefix in _PREFIXES:
        if key.startswith(prefix):
            key = key[len(prefix) :]
            break
    return key.replace("-", "_").replace(".", "_")
