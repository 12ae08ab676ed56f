"""taskgate: own an LLM agent's task state outside the prompt, and couple it to the agent.

The public API lives here; import from ``taskgate`` only::

    from taskgate import Plan, TaskMachine, parse_bookings, Policy
"""

from ._version import __version__
from .core.booking import Booking
from .core.graph import TaskGraph
from .core.ids import normalize_code, normalize_work_order
from .core.ledger import (
    AttemptEntry,
    LedgerEntry,
    PlanEntry,
    RequestEntry,
    RevisionEntry,
    dump_ledger,
    load_ledger,
    receipts,
)
from .core.machine import Request, Snapshot, Status, TaskMachine
from .core.plan import Plan, Revision, StepSpec
from .core.validator import Defect, validate
from .core.verdict import Policy, Reason, Verdict
from .errors import (
    CycleError,
    LedgerFormatError,
    PlanError,
    TaskgateError,
    UnknownStepError,
    WorkOrderError,
)
from .protocol.bookings import parse_bookings
from .protocol.refusals import classify, has_refusal_language, is_refusal
from .protocol.render import (
    render_brief,
    render_checklist,
    render_directive,
    render_rejection,
    render_same_turn_notice,
)

__all__ = [
    "AttemptEntry",
    "Booking",
    "CycleError",
    "Defect",
    "LedgerEntry",
    "LedgerFormatError",
    "Plan",
    "PlanEntry",
    "PlanError",
    "Policy",
    "Reason",
    "Request",
    "RequestEntry",
    "Revision",
    "RevisionEntry",
    "Snapshot",
    "Status",
    "StepSpec",
    "TaskGraph",
    "TaskMachine",
    "TaskgateError",
    "UnknownStepError",
    "Verdict",
    "WorkOrderError",
    "__version__",
    "classify",
    "dump_ledger",
    "has_refusal_language",
    "is_refusal",
    "load_ledger",
    "normalize_code",
    "normalize_work_order",
    "parse_bookings",
    "receipts",
    "render_brief",
    "render_checklist",
    "render_directive",
    "render_rejection",
    "render_same_turn_notice",
    "validate",
]
