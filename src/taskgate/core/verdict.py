"""Gate verdicts: admit or refuse one booking, with a typed reason.

Policies (Section 3.3 of the paper):

* ``ungated``: no gate. Every booking that is a real execution (a known code with the current
  work order) is admitted; this is how the text rungs record what the agent executed.
* ``state-bound``: also refuse a CANCELLED step, a DONE step without authorization, and a BLOCKED
  step (naming its missing prerequisites); admit anything else, unrequested steps included.
* ``request-bound``: also refuse any step other than the one the request resolved to, and every
  booking when the request resolved to no step. These are judged before the state, so a refused
  call of another step reads NOT REQUESTED even when that step is also DONE or BLOCKED (as the
  paper's harness reports: re-issued batches "are caught as not-requested first").

Under every policy a booking whose work order is not the current request's, or whose completion
code names no step, is refused: it is not an execution. A booking carrying an earlier request's
work order (or repeating a receipt already admitted) is a *re-display*: it cites past work.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal


class Policy(StrEnum):
    UNGATED = "ungated"
    STATE_BOUND = "state-bound"
    REQUEST_BOUND = "request-bound"


class Reason(StrEnum):
    """Why a booking was refused."""

    NO_REQUEST = "no-request"  # no request is open, so no work order is current
    STALE_WORK_ORDER = "stale-work-order"  # an earlier request's work order: a re-display
    REPEATED_RECEIPT = "repeated-receipt"  # this exact receipt was already admitted: a re-display
    UNKNOWN_WORK_ORDER = "unknown-work-order"  # a work order never issued
    UNKNOWN_CODE = "unknown-code"  # a completion code that names no step
    UNKNOWN_TOOL = "unknown-tool"  # a tool that no step of a tool-bound plan is bound to
    CANCELLED = "cancelled"
    ALREADY_DONE = "already-done"  # DONE and not authorized for re-execution
    BLOCKED = "blocked"
    NOT_REQUESTED = "not-requested"  # request-bound: another step than the resolved one
    NO_RESOLVED_STEP = "no-resolved-step"  # the request resolved to no step (request-bound, or
    # a tool gate's default that runs nothing unrequested)
    IN_PROGRESS = "in-progress"  # a tool gate: another admitted call of this step is executing
    MALFORMED_CALL = "malformed-call"  # a tool call whose name or arguments could not be read
    #: the step's plan says a person confirms every call (``confirm = "always"``) and none has
    UNCONFIRMED = "unconfirmed"
    #: held: the gate could not tell the user agreed to exactly this call, and asked the person
    ASKED = "asked"


REDISPLAY_REASONS = frozenset({Reason.STALE_WORK_ORDER, Reason.REPEATED_RECEIPT})
#: refused because the work order is not the current request's (every policy refuses these)
WORK_ORDER_REASONS = frozenset(
    {Reason.STALE_WORK_ORDER, Reason.UNKNOWN_WORK_ORDER, Reason.NO_REQUEST}
)
STATE_REASONS = frozenset({Reason.CANCELLED, Reason.ALREADY_DONE, Reason.BLOCKED})


@dataclass(frozen=True, slots=True)
class Verdict:
    """The gate's decision on one booking; ``step`` is the step its code names, if any."""

    decision: Literal["admit", "refuse"]
    step: str | None
    reason: Reason | None = None
    missing: tuple[str, ...] = ()

    @property
    def admitted(self) -> bool:
        return self.decision == "admit"

    @property
    def redisplay(self) -> bool:
        """True for a citation of past work (stale work order or repeated receipt)."""
        return self.reason in REDISPLAY_REASONS
