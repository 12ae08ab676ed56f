"""The receipts ledger: the append-only record from which all task state is rebuilt.

Four kinds of entry, in the order they happened:

* ``plan``: the plan the machine was built from (always the first entry);
* ``request``: a request was opened, with its work order, resolved step and redo flag (or,
  with no work order, the last request was closed);
* ``attempt``: a booking was judged, with the policy, verdict and reason;
* ``revision``: a revision (cancel, rewires, relax) was applied.

Only ``attempt`` entries with decision ``admit`` are receipts: they alone make a step DONE.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
)

from ..errors import LedgerFormatError
from .plan import Plan, Revision
from .verdict import Policy, Reason


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlanEntry(_Entry):
    kind: Literal["plan"] = "plan"
    plan: Plan
    lenient: bool = False


class RequestEntry(_Entry):
    """A request opened; ``work_order=None`` closes the last one (a turn that is no request)."""

    kind: Literal["request"] = "request"
    work_order: str | None
    step: str | None = None
    explicit_redo: bool = False


class AttemptEntry(_Entry):
    kind: Literal["attempt"] = "attempt"
    code: str
    tool: str | None = None  # a tool call (tool-bound plans); ``code`` is then empty

    @model_serializer(mode="wrap")
    def _code_bound_as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A booking's attempt serializes exactly as before tools existed (no ``tool`` key)."""
        data: dict[str, Any] = handler(self)
        if self.tool is None:
            data.pop("tool", None)
        return data

    work_order: str
    policy: Policy
    decision: Literal["admit", "refuse"]
    step: str | None = None
    reason: Reason | None = None
    missing: tuple[str, ...] = ()


class RevisionEntry(_Entry):
    kind: Literal["revision"] = "revision"
    revision: Revision


LedgerEntry = Annotated[
    PlanEntry | RequestEntry | AttemptEntry | RevisionEntry, Field(discriminator="kind")
]
_ENTRY: TypeAdapter[LedgerEntry] = TypeAdapter(LedgerEntry)


def dump_ledger(entries: Iterable[LedgerEntry]) -> str:
    """Serialize entries as JSON Lines, one entry per line."""
    return "".join(_ENTRY.dump_json(e).decode() + "\n" for e in entries)


def load_ledger(text: str) -> list[LedgerEntry]:
    """Parse JSON Lines written by :func:`dump_ledger`; raise naming the first bad line."""
    out: list[LedgerEntry] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(_ENTRY.validate_json(line))
        except ValidationError as exc:
            raise LedgerFormatError(f"ledger line {n} is not a valid entry: {exc}") from exc
    return out


def receipts(entries: Sequence[LedgerEntry]) -> list[AttemptEntry]:
    """The admitted attempts, in order: the verified executions."""
    return [e for e in entries if isinstance(e, AttemptEntry) and e.decision == "admit"]
