"""Facts a rule can test: derived from the airline database and a WRITE call's arguments.

Each fact is a small named function, so a reader can audit what a rule's condition means. The
database is read through :class:`DbView`, built from the benchmark's ``db.json`` (a dict) or from a
live ``FlightDB``; nothing here imports tau2. The call's arguments are the plain, validated data of
:func:`.arguments.parse_arguments`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

#: tau2's airline tools run at this fixed "now" (``AirlineTools._get_datetime``).
NOW = datetime(2024, 5, 15, 15, 0, 0)
FLOWN = frozenset({"landed", "flying"})


class DbView:
    """Read access to the airline database, whatever holds it."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    @classmethod
    def of(cls, db: Any) -> DbView:
        """From a ``db.json`` dict, or from a tau2 ``FlightDB`` (read live, not copied)."""
        if isinstance(db, Mapping):
            return cls(db)
        return _LiveView(db)

    def reservation(self, rid: str) -> dict[str, Any] | None:
        r = self._data["reservations"].get(rid)
        return dict(r) if r is not None else None

    def user(self, uid: str) -> dict[str, Any] | None:
        u = self._data["users"].get(uid)
        return dict(u) if u is not None else None

    def flight_status(self, number: str, date: str) -> str | None:
        flight = self._data["flights"].get(number)
        if flight is None:
            return None
        day = flight["dates"].get(date)
        return None if day is None else str(day["status"])

    def route(self, number: str) -> tuple[str | None, str | None]:
        flight = self._data["flights"].get(number)
        return (flight["origin"], flight["destination"]) if flight else (None, None)


class _LiveView(DbView):
    def __init__(self, db: Any) -> None:
        self._db = db

    def reservation(self, rid: str) -> dict[str, Any] | None:
        r = self._db.reservations.get(rid)
        # an unchecked write (state-block rung, ungated replay) may have stored a value of the wrong type
        return r.model_dump(mode="json", warnings=False) if r is not None else None

    def user(self, uid: str) -> dict[str, Any] | None:
        u = self._db.users.get(uid)
        return u.model_dump(mode="json", warnings=False) if u is not None else None

    def flight_status(self, number: str, date: str) -> str | None:
        flight = self._db.flights.get(number)
        if flight is None or date not in flight.dates:
            return None
        return str(flight.dates[date].status)

    def route(self, number: str) -> tuple[str | None, str | None]:
        f = self._db.flights.get(number)
        return (f.origin, f.destination) if f is not None else (None, None)


Call = Mapping[str, Any]
Fact = Callable[[DbView, Call], Any]


def _res(db: DbView, args: Call) -> dict[str, Any]:
    return db.reservation(str(args.get("reservation_id", ""))) or {}


def _user(db: DbView, args: Call) -> dict[str, Any]:
    uid = args.get("user_id") or _res(db, args).get("user_id", "")
    return db.user(str(uid)) or {}


def _segments_flown(db: DbView, res: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [
        (f["flight_number"], f["date"])
        for f in res.get("flights", [])
        if db.flight_status(f["flight_number"], f["date"]) in FLOWN
    ]


def _new_flights(args: Call) -> list[tuple[str, str]]:
    return [(f["flight_number"], f["date"]) for f in args.get("flights") or []]


def _payments(args: Call) -> list[str]:
    methods = args.get("payment_methods") or []
    return [str(m.get("payment_id")) for m in methods]


def _sources(db: DbView, args: Call) -> list[str]:
    profile = _user(db, args).get("payment_methods", {})
    return [profile.get(pid, {}).get("source", "unknown") for pid in _payments(args)]


#: Airports of one metropolitan area, by IATA metropolitan-area code: a flight change may swap one
#: for another without changing the trip's endpoints (the paper's audit: LGA for JFK). Of the
#: airline database's 20 airports only New York's three share a metro area.
METRO: dict[str, str] = {"JFK": "NYC", "LGA": "NYC", "EWR": "NYC"}


def _airport(code: Any) -> Any:
    return code


def _metro(code: Any) -> Any:
    return METRO.get(code, code) if isinstance(code, str) else code


def _endpoints_changed(db: DbView, args: Call, place: Callable[[Any], Any] = _airport) -> bool:
    """Do the new flights leave the reservation's origin, destination or trip type? Airports are
    compared as ``place`` names them: themselves, or their metro area."""
    res = _res(db, args)
    legs = [db.route(f["flight_number"]) for f in args.get("flights") or []]
    if not legs or not res:
        return False
    start, end = place(legs[0][0]), place(legs[-1][1])
    origin, destination = place(res.get("origin")), place(res.get("destination"))
    if res.get("flight_type") == "round_trip":
        return not (start == origin == end and destination in {place(d) for _, d in legs})
    return not (start == origin and end == destination)


def _over_payment_limits(db: DbView, args: Call) -> bool:
    """More than one travel certificate, one credit card or three gift cards (the policy's one
    sentence on a booking's payment methods)."""
    s = _sources(db, args)
    return s.count("certificate") > 1 or s.count("credit_card") > 1 or s.count("gift_card") > 3


def unknown_entity(db: DbView, args: Call) -> str | None:
    """What the call names that the database lacks: its reservation, its user, or a flight it
    adds. tau2's tools look each up before they change anything and refuse the call themselves
    ("... not found"), so the gate leaves such a call to them."""
    res = db.reservation(args["reservation_id"]) if "reservation_id" in args else {}
    if res is None:
        return f"reservation {args['reservation_id']}"
    if "user_id" in args and db.user(args["user_id"]) is None:
        return f"user {args['user_id']}"
    kept = {(f["flight_number"], f["date"]) for f in res.get("flights", [])}
    for number, date in _new_flights(args):
        if (number, date) not in kept and db.flight_status(number, date) is None:
            return f"flight {number} on {date}"
    return None


def _created(res: Mapping[str, Any]) -> datetime | None:
    try:
        return datetime.fromisoformat(str(res.get("created_at")))
    except ValueError:
        return None


def _user_reservations(db: DbView, args: Call) -> list[dict[str, Any]]:
    return [r for rid in _user(db, args).get("reservations", []) if (r := db.reservation(rid))]


FACTS: dict[str, Fact] = {
    # the reservation named by the call
    "reservation.exists": lambda db, a: bool(_res(db, a)),
    "reservation.cancelled": lambda db, a: _res(db, a).get("status") == "cancelled",
    "reservation.cabin": lambda db, a: _res(db, a).get("cabin"),
    "reservation.insured": lambda db, a: _res(db, a).get("insurance") == "yes",
    "reservation.passengers": lambda db, a: len(_res(db, a).get("passengers", [])),
    "reservation.total_baggages": lambda db, a: _res(db, a).get("total_baggages", 0),
    "reservation.any_flown": lambda db, a: bool(_segments_flown(db, _res(db, a))),
    "reservation.airline_cancelled": lambda db, a: any(
        db.flight_status(f["flight_number"], f["date"]) == "cancelled"
        for f in _res(db, a).get("flights", [])
    ),
    "reservation.booked_within_24h": lambda db, a: (
        (c := _created(_res(db, a))) is not None and NOW - c <= timedelta(hours=24)
    ),
    # the user (named by the call, or owning the reservation)
    "user.membership": lambda db, a: _user(db, a).get("membership"),
    "user.any_insured": lambda db, a: any(
        r.get("insurance") == "yes" for r in _user_reservations(db, a)
    ),
    "user.any_business": lambda db, a: any(
        r.get("cabin") == "business" for r in _user_reservations(db, a)
    ),
    "user.max_passengers": lambda db, a: max(
        (len(r.get("passengers", [])) for r in _user_reservations(db, a)), default=0
    ),
    # the call's arguments
    "args.cabin": lambda db, a: a.get("cabin"),
    "args.cabin_changed": lambda db, a: "cabin" in a and a.get("cabin") != _res(db, a).get("cabin"),
    "args.flights_changed": lambda db, a: (
        sorted(_new_flights(a))
        != sorted((f["flight_number"], f["date"]) for f in _res(db, a).get("flights", []))
    ),
    "args.flown_segment_dropped": lambda db, a: (
        not set(_segments_flown(db, _res(db, a))) <= set(_new_flights(a))
    ),
    "args.endpoints_changed": _endpoints_changed,
    "args.metro_endpoints_changed": lambda db, a: _endpoints_changed(db, a, _metro),
    "args.passengers": lambda db, a: len(a.get("passengers") or []),
    "args.total_baggages": lambda db, a: a.get("total_baggages", 0),
    "args.amount": lambda db, a: a.get("amount", 0),
    "args.payment_in_profile": lambda db, a: (
        str(a.get("payment_id")) in _user(db, a).get("payment_methods", {})
    ),
    "args.payment_source": lambda db, a: (
        _user(db, a).get("payment_methods", {}).get(str(a.get("payment_id")), {}).get("source")
    ),
    "args.certificates": lambda db, a: _sources(db, a).count("certificate"),
    "args.credit_cards": lambda db, a: _sources(db, a).count("credit_card"),
    "args.gift_cards": lambda db, a: _sources(db, a).count("gift_card"),
    "args.unknown_payments": lambda db, a: _sources(db, a).count("unknown"),
    "args.over_payment_limits": _over_payment_limits,
}


#: One line per fact, for people auditing a rule and for the rule compiler's prompt.
FACT_DOCS: dict[str, str] = {
    "reservation.exists": "the call's reservation_id names a reservation",
    "reservation.cancelled": "that reservation is already cancelled",
    "reservation.cabin": "its cabin: basic_economy, economy or business",
    "reservation.insured": "it has travel insurance",
    "reservation.passengers": "its number of passengers",
    "reservation.total_baggages": "its current number of checked bags",
    "reservation.any_flown": "some segment has already been flown (landed or flying)",
    "reservation.airline_cancelled": "some segment was cancelled by the airline",
    "reservation.booked_within_24h": "it was booked within the last 24 hours",
    "user.membership": "the user's membership: regular, silver or gold",
    "user.any_insured": "some reservation of the user has travel insurance",
    "user.any_business": "some reservation of the user is in business",
    "user.max_passengers": "the most passengers on any reservation of the user",
    "args.cabin": "the cabin the call asks for",
    "args.cabin_changed": "the call changes the reservation's cabin",
    "args.flights_changed": "the call's flights differ from the reservation's",
    "args.flown_segment_dropped": "the call drops or changes a segment already flown",
    "args.endpoints_changed": "the new flights change the origin, destination or trip type",
    "args.metro_endpoints_changed": "the new flights change the origin, destination or trip type, "
    "an airport of the same metro area counting as the same endpoint (JFK, LGA, EWR: New York)",
    "args.passengers": "the number of passengers in the call",
    "args.total_baggages": "the total checked bags the call asks for",
    "args.amount": "the certificate amount the call sends",
    "args.payment_in_profile": "the call's payment_id is in the user's profile",
    "args.payment_source": "the source of the call's payment_id: credit_card, gift_card or certificate",
    "args.certificates": "how many travel certificates the call pays with",
    "args.credit_cards": "how many credit cards the call pays with",
    "args.gift_cards": "how many gift cards the call pays with",
    "args.unknown_payments": "how many of the call's payment methods are not in the user's profile",
    "args.over_payment_limits": "the call pays with more than one travel certificate, more than one "
    "credit card, or more than three gift cards",
}
