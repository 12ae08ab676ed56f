"""The self-ledger arm's marks: the step statuses the agent records itself, in its own replies.

These marks are the agent's own claims, shown back to it every turn; they are not the receipts
ledger (which only admitted bookings write) and nothing is gated on them.
"""

from __future__ import annotations

from taskgate.protocol.marks import parse_marks

SELF_LEDGER_CLAUSE = (
    "STATUS LEDGER (mandatory): keep your own ledger of step statuses. Whenever a step's status "
    "changes, add a line 'LEDGER <completion code> DONE', 'LEDGER <completion code> CANCELLED' or "
    "'LEDGER <completion code> TODO' to your reply. Your ledger is shown back to you with every "
    "message; it is your only record of what is done."
)
MARKS_HEADER = "[YOUR STATUS LEDGER -- as you recorded it]"


def read_marks(reply: str) -> dict[str, str]:
    """The marks a reply writes, ``{"RC-4808": "DONE"}``; a later line for a code wins."""
    return dict(parse_marks(reply))


def render_marks(marks: dict[str, str]) -> str:
    """The marks as shown back to the agent."""
    if not marks:
        return f"{MARKS_HEADER}\n(no entries yet)"
    return "\n".join([MARKS_HEADER, *(f"- {c}: {s}" for c, s in marks.items())])
