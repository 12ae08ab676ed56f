"""The tool-bound plans several test files gate: a procurement chain of two or three steps, and
a restaurant's table and tickets."""

from __future__ import annotations

from taskgate import Plan

#: the chain's steps, in order: (tool, text)
CHAIN = (
    ("collect_requirements", "collect the requirements"),
    ("draft_rfq", "draft the RFQ"),
    ("send_rfq", "send the RFQ"),
)


def tool_chain(n: int = 2) -> Plan:
    """s1 -> s2 (-> s3): each step bound to its tool and depending on the one before."""
    steps: dict[str, dict[str, object]] = {}
    for i, (tool, text) in enumerate(CHAIN[:n], 1):
        steps[f"s{i}"] = {"tool": tool, "text": text, **({"deps": [f"s{i - 1}"]} if i > 1 else {})}
    return Plan.model_validate({"binding": "tool", "steps": steps})


#: a table reserved (again and again) and tickets bought, and the agent's proposal of a table
TABLES = Plan.model_validate({"binding": "tool", "steps": {
    "reserve": {"tool": "reserve_table", "text": "reserve a table at a restaurant",
                "repeatable": True},
    "tickets": {"tool": "buy_tickets", "text": "buy tickets for an event"},
}})  # fmt: skip
PROPOSAL = "Shall I book a table for 2 at Chez Pierre tomorrow at 7 pm?"
