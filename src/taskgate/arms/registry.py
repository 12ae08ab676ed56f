"""The arms the CLI accepts, by name."""

from __future__ import annotations

from ..core.verdict import Policy
from ..errors import UnknownNameError
from .arm import Arm

SB, RB = Policy.STATE_BOUND, Policy.REQUEST_BOUND

ARMS: dict[str, Arm] = {
    a.name: a
    for a in (
        Arm("raw"),
        Arm("checklist", checklist="append"),
        Arm("checklist-replace", checklist="replace"),
        Arm("checklist-matched", checklist="replace", matched_line=True),
        Arm("self-ledger", self_ledger=True),
        Arm("directive", directive_role="user"),
        Arm("directive-system", directive_role="system"),
        Arm("enforcement", directive_role="user", policy=SB),
        Arm("enforcement-request", directive_role="user", policy=RB),
        Arm("enforcement-same-turn", directive_role="user", policy=SB, surface="same-turn"),
        # Appendix E.2's control: the directive in the system prompt (for that call only);
        # rejection notices stay in the next user turn, as the paper has them
        Arm("enforcement-system", directive_role="system", policy=SB),
        Arm("hybrid", directive_role="user", policy=SB, hybrid=True),
    )
}

#: The paper's four-rung ladder, in order.
LADDER = ("raw", "checklist", "directive", "enforcement")
#: The real-tool harness's five arms (Appendix G), in order: raw transcript, text checklist,
#: directive gate, state-bound and request-bound enforcement.
TOOL_LADDER = ("raw", "checklist", "directive", "enforcement", "enforcement-request")


def compiled_arm(name: str) -> bool:
    """Whether the arm of that name acts on a compiled state (an arm unknown here does not)."""
    arm = ARMS.get(name)
    return arm is not None and arm.compiled


def get_arm(name: str) -> Arm:
    try:
        return ARMS[name]
    except KeyError:
        raise UnknownNameError(f"unknown arm {name!r}; choose from: {', '.join(ARMS)}") from None
