"""A booking: one execution attempt, the line ``ref <completion code>/<work order>``."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BookingError, WorkOrderError
from .ids import normalize_code, normalize_work_order


@dataclass(frozen=True, slots=True)
class Booking:
    """A booking line found in a reply (or made by hand): normalized code and work order.

    ``span`` is the ``(start, end)`` of the line's ``ref ...`` text in the reply it came from,
    ``(0, 0)`` for a booking not parsed from text.
    """

    code: str
    work_order: str
    span: tuple[int, int] = (0, 0)

    @classmethod
    def of(cls, code: str, work_order: str) -> Booking:
        """Build a booking from loosely written identifiers, or raise :class:`BookingError`."""
        c, w = normalize_code(code), normalize_work_order(work_order)
        if c is None:
            raise BookingError(f"{code!r} is not a completion code; expected RC-<digits>")
        if w is None:
            raise WorkOrderError(f"{work_order!r} is not a work order; expected #W<digits>")
        return cls(c, w)

    @property
    def line(self) -> str:
        """The canonical booking line, as quoted in rejection notices."""
        return f"ref {self.code}/{self.work_order}"
