"""A WRITE call's arguments, normalized once and checked against its tool's signature.

tau2's airline tools take their list arguments as plain dicts or as tau2's own pydantic models
(``FlightInfo``, ``Passenger``, ``Payment``), and check none of their types: a count sent as
``"1"`` or ``null`` is stored as it is, a certificate of ``NaN`` dollars is issued. The facts read
the call through :func:`parse_arguments` instead: models become dicts, and every argument must
have its JSON type (strict: no ``"1"`` for ``1``, no ``null``), counts and amounts must be finite
and not negative, and a reservation or booking must name at least one flight and one passenger.
A call that fails is *malformed*; :class:`MalformedArgumentsError` names the first bad argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskgate.errors import TaskgateError

Id = Annotated[str, Field(strict=True, min_length=1)]
Count = Annotated[int, Field(strict=True, ge=0)]
Amount = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
Cabin = Literal["basic_economy", "economy", "business"]


class MalformedArgumentsError(TaskgateError, ValueError):
    """A WRITE call whose arguments do not fit its tool's signature."""


class _Item(BaseModel):
    # tau2 builds these with FlightInfo(**item) etc., which ignores keys it does not know
    model_config = ConfigDict(strict=True, extra="ignore")


class Flight(_Item):
    flight_number: Id
    date: Id


class Passenger(_Item):
    first_name: str
    last_name: str
    dob: str


class Payment(_Item):
    payment_id: Id
    amount: Amount


class _Call(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")  # tau2's call would fail on extras


class BookReservation(_Call):
    user_id: Id
    origin: Id
    destination: Id
    flight_type: Literal["one_way", "round_trip"]
    cabin: Cabin
    flights: Annotated[list[Flight], Field(min_length=1)]
    passengers: Annotated[list[Passenger], Field(min_length=1)]
    payment_methods: Annotated[list[Payment], Field(min_length=1)]
    total_baggages: Count
    nonfree_baggages: Count
    insurance: Literal["yes", "no"]


class CancelReservation(_Call):
    reservation_id: Id


class SendCertificate(_Call):
    user_id: Id
    amount: Amount


class UpdateReservationBaggages(_Call):
    reservation_id: Id
    total_baggages: Count
    nonfree_baggages: Count
    payment_id: Id


class UpdateReservationFlights(_Call):
    reservation_id: Id
    cabin: Cabin
    flights: Annotated[list[Flight], Field(min_length=1)]
    payment_id: Id


class UpdateReservationPassengers(_Call):
    reservation_id: Id
    passengers: Annotated[list[Passenger], Field(min_length=1)]


#: Each WRITE tool's arguments, as tau2's ``AirlineTools`` declares them.
SIGNATURES: dict[str, type[_Call]] = {
    "book_reservation": BookReservation,
    "cancel_reservation": CancelReservation,
    "send_certificate": SendCertificate,
    "update_reservation_baggages": UpdateReservationBaggages,
    "update_reservation_flights": UpdateReservationFlights,
    "update_reservation_passengers": UpdateReservationPassengers,
}


def plain(value: Any) -> Any:
    """``value`` with every pydantic model dumped to a dict and every tuple made a list."""
    if isinstance(value, BaseModel):
        return plain(value.model_dump())
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def parse_arguments(tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A WRITE call's arguments as plain validated data; raise naming the first bad argument."""
    try:
        return SIGNATURES[tool].model_validate(plain(arguments)).model_dump()
    except ValidationError as exc:
        raise MalformedArgumentsError(_first_error(exc)) from None


_SAID = {
    "missing": "is missing",
    "extra_forbidden": "is not an argument of this tool",
    "model_type": "should be an object",
    "too_short": "should not be empty",
    "greater_than_equal": "should not be negative",
}


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(x) for x in error["loc"]) or "the arguments"
    said = _SAID.get(error["type"]) or error["msg"].replace("Input should", "should", 1)
    if error["type"] in ("missing", "extra_forbidden"):
        return f"{where} {said}"
    got = repr(error["input"])
    return f"{where} {said}, got {got if len(got) <= 60 else got[:57] + '...'}"
