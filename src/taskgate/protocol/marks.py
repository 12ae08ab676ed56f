"""Read the self-ledger arm's marks (``LEDGER <completion code> DONE``) from a model's reply.

The self-ledger arm asks the agent to keep its own ledger of step statuses, one line per change:
``LEDGER RC-4808 DONE``, ``LEDGER RC-4808 CANCELLED`` or ``LEDGER RC-4808 TODO``. Tolerated: a
bullet, quote or markdown emphasis before the line, emphasis or a colon between its words, any
letter case, and spaces around the code's hyphen. The code's digits must be ASCII ``0-9``.
``taskgate.lab.arms.marks`` keeps them for the arm and shows them back to the agent.

A reply is untrusted text, so reading it is linear in its length: the runs are possessive, and the
run before ``LEDGER`` stays on its own line, so no line start rescans the blank lines after it.
"""

from __future__ import annotations

import re

_MARK = re.compile(
    r"^(?:(?!\n)[\s*_`>\-])*+"  # bullets, quotes, emphasis and spaces, on the mark's own line
    r"LEDGER[\s*_`]++RC\s*+(?:-\s*+)?([0-9]++)[\s*_`:]++(DONE|CANCELLED|TODO)\b",
    re.IGNORECASE | re.MULTILINE,
)


def parse_marks(reply: str) -> list[tuple[str, str]]:
    """Every ``(code, status)`` mark in ``reply``, in order: ``[("RC-4808", "DONE")]``."""
    return [(f"RC-{m.group(1)}", m.group(2).upper()) for m in _MARK.finditer(reply)]
