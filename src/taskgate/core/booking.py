"""A booking: one execution attempt, the line ``ref <completion code>/<work order>``."""

from __future__ import annotations

from dataclasses import dataclass

from taskgate.core.ids import normalize_code, normalize_tool, normalize_work_order, tool_key
from taskgate.errors import BookingError, WorkOrderError


@dataclass(frozen=True, slots=True)
class Booking:
    """A booking line found in a reply (or made by hand): normalized code and work order.

    ``span`` is the ``(start, end)`` of the line's ``ref ...`` text in the reply it came from,
    ``(0, 0)`` for a booking not parsed from text.
    """

    code: str
    work_order: str
    span: tuple[int, int] = (0, 0)
    tool: str | None = None  # a tool call of a tool-bound plan (``code`` is then empty)

    @classmethod
    def of(cls, code: str, work_order: str) -> Booking:
        """Build a booking from loosely written identifiers, or raise :class:`BookingError`."""
        c, w = normalize_code(code), normalize_work_order(work_order)
        if c is None:
            raise BookingError(f"{code!r} is not a completion code; expected RC-<digits>")
        if w is None:
            raise WorkOrderError(f"{work_order!r} is not a work order; expected #W<digits>")
        return cls(c, w)

    @classmethod
    def tool_call(cls, tool: str, work_order: str) -> Booking:
        """A call of ``tool`` under ``work_order`` (a tool-bound plan's execution attempt)."""
        t, w = normalize_tool(tool), normalize_work_order(work_order)
        if t is None:
            raise BookingError(f"{tool!r} is not a tool name")
        if w is None:
            raise WorkOrderError(f"{work_order!r} is not a work order; expected #W<digits>")
        return cls("", w, tool=t)

    @property
    def key(self) -> str:
        """What the booking executes: its completion code, or ``tool:<name>``."""
        return receipt_key(self.code, self.tool)

    @property
    def line(self) -> str:
        """The canonical line, as quoted in rejection notices: the booking line, or for a tool
        call the ACTION line of the real-tool protocol."""
        if self.tool is not None:
            return f'ACTION {{"tool": "{self.tool}", "work_order": "{self.work_order}"}}'
        return f"ref {self.code}/{self.work_order}"


def receipt_key(code: str, tool: str | None) -> str:
    """What an execution is of, as the receipts ledger keys it: the code, or ``tool:<name>``
    with the name as the plan matches it (:func:`~taskgate.core.ids.tool_key`), so a respelled
    name is the same execution."""
    return f"tool:{tool_key(tool)}" if tool is not None else code
