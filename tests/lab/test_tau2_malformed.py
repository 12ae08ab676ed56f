"""Hostile arguments to every WRITE tool, behind the gate in tau2's real airline environment.

Each base call passes the gate and writes; each variant breaks one argument. No exception may
escape ``get_response`` on any rung; behind the gate and the advisory rung the variant is refused
naming the bad argument and the database stays byte-identical.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
from typing import Any

import pytest

from conftest import TAU2_DATA
from taskgate.lab.experiments.tau2.arguments import SIGNATURES, parse_arguments
from taskgate.lab.experiments.tau2.battery import battery
from taskgate.lab.experiments.tau2.facts import DbView
from taskgate.lab.experiments.tau2.gate import REFUSAL_PREFIX, Mode, gate_environment
from taskgate.lab.experiments.tau2.rules import load_ruleset, reference_ruleset
from taskgate.lab.experiments.tau2.verdict import MALFORMED, judge

DATA = TAU2_DATA
pytest.importorskip("tau2", reason="needs the tau2 extra")

CARD = "credit_card_1052991"  # lei_rossi_3206's; VAAOXJ is an economy reservation of theirs
PASSENGER = {"first_name": "Lei", "last_name": "Rossi", "dob": "1990-01-01"}
BASE: dict[str, dict[str, Any]] = {
    "book_reservation": {
        "user_id": "lei_rossi_3206", "origin": "CLT", "destination": "BOS",
        "flight_type": "one_way", "cabin": "economy",
        "flights": [{"flight_number": "HAT287", "date": "2024-05-24"}],
        "passengers": [PASSENGER], "payment_methods": [{"payment_id": CARD, "amount": 115}],
        "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no",
    },
    "cancel_reservation": {"reservation_id": "J7M7UY"},  # insured
    "send_certificate": {"user_id": "lei_rossi_3206", "amount": 100},
    "update_reservation_baggages": {
        "reservation_id": "VAAOXJ", "total_baggages": 2, "nonfree_baggages": 0, "payment_id": CARD,
    },
    "update_reservation_flights": {
        "reservation_id": "VAAOXJ", "cabin": "business", "payment_id": CARD,
        "flights": [{"flight_number": "HAT287", "date": "2024-05-24"},
                    {"flight_number": "HAT235", "date": "2024-05-24"}],
    },
    "update_reservation_passengers": {"reservation_id": "VAAOXJ", "passengers": [PASSENGER]},
}  # fmt: skip

NAN, INF = float("nan"), float("inf")
MISSING = object()
# (tool, argument, value or MISSING, the refusal's reason)
VARIANTS: list[tuple[str, str, Any, str]] = [
    ("book_reservation", "payment_methods", [CARD], f"payment_methods.0 should be an object, got {CARD!r}"),
    ("book_reservation", "payment_methods", [{"payment_id": CARD, "amount": NAN}], "payment_methods.0.amount should be a finite number, got nan"),
    ("book_reservation", "payment_methods", [{"payment_id": CARD, "amount": "115"}], "payment_methods.0.amount should be a valid number, got '115'"),
    ("book_reservation", "payment_methods", [{"payment_id": CARD, "amount": -115}], "payment_methods.0.amount should not be negative, got -115"),
    ("book_reservation", "payment_methods", [], "payment_methods should not be empty, got []"),
    ("book_reservation", "flights", ["HAT287"], "flights.0 should be an object, got 'HAT287'"),
    ("book_reservation", "flights", [{"flight_number": "HAT287"}], "flights.0.date is missing"),
    ("book_reservation", "passengers", [], "passengers should not be empty, got []"),
    ("book_reservation", "total_baggages", "1", "total_baggages should be a valid integer, got '1'"),
    ("book_reservation", "total_baggages", None, "total_baggages should be a valid integer, got None"),
    ("book_reservation", "cabin", "first", "cabin should be 'basic_economy', 'economy' or 'business', got 'first'"),
    ("book_reservation", "insurance", True, "insurance should be 'yes' or 'no', got True"),
    ("book_reservation", "user_id", MISSING, "user_id is missing"),
    ("book_reservation", "coupon", "FREE", "coupon is not an argument of this tool"),
    ("cancel_reservation", "reservation_id", None, "reservation_id should be a valid string, got None"),
    ("cancel_reservation", "reservation_id", ["J7M7UY"], "reservation_id should be a valid string, got ['J7M7UY']"),
    ("cancel_reservation", "reservation_id", MISSING, "reservation_id is missing"),
    ("send_certificate", "amount", NAN, "amount should be a finite number, got nan"),
    ("send_certificate", "amount", INF, "amount should be a finite number, got inf"),
    ("send_certificate", "amount", -100, "amount should not be negative, got -100"),
    ("send_certificate", "amount", "5000", "amount should be a valid number, got '5000'"),
    ("send_certificate", "amount", None, "amount should be a valid number, got None"),
    ("send_certificate", "amount", True, "amount should be a valid number, got True"),
    ("send_certificate", "user_id", 3206, "user_id should be a valid string, got 3206"),
    ("update_reservation_baggages", "total_baggages", "1", "total_baggages should be a valid integer, got '1'"),
    ("update_reservation_baggages", "total_baggages", None, "total_baggages should be a valid integer, got None"),
    ("update_reservation_baggages", "total_baggages", 2.5, "total_baggages should be a valid integer, got 2.5"),
    ("update_reservation_baggages", "nonfree_baggages", -1, "nonfree_baggages should not be negative, got -1"),
    ("update_reservation_baggages", "payment_id", MISSING, "payment_id is missing"),
    ("update_reservation_flights", "flights", ["HAT287", "HAT235"], "flights.0 should be an object, got 'HAT287'"),
    ("update_reservation_flights", "flights", [{"flight_number": "HAT287"}], "flights.0.date is missing"),
    ("update_reservation_flights", "flights", [], "flights should not be empty, got []"),
    ("update_reservation_flights", "flights", "HAT287", "flights should be a valid list, got 'HAT287'"),
    ("update_reservation_flights", "cabin", None, "cabin should be 'basic_economy', 'economy' or 'business', got None"),
    ("update_reservation_passengers", "passengers", ["Lei Rossi"], "passengers.0 should be an object, got 'Lei Rossi'"),
    ("update_reservation_passengers", "passengers", [{"first_name": "Lei"}], "passengers.0.last_name is missing"),
    ("update_reservation_passengers", "passengers", [], "passengers should not be empty, got []"),
]  # fmt: skip


@functools.cache
def excerpt() -> str:
    """db.json cut down to lei_rossi_3206, their reservations and flights (a fresh one loads fast)."""
    db = json.loads((DATA / "db.json").read_text())
    user = db["users"]["lei_rossi_3206"]
    reservations = {rid: db["reservations"][rid] for rid in user["reservations"]}
    numbers = {f["flight_number"] for r in reservations.values() for f in r["flights"]}
    flights = {n: db["flights"][n] for n in numbers | {"HAT287", "HAT235"}}
    return json.dumps(
        {"flights": flights, "users": {user["user_id"]: user}, "reservations": reservations}
    )


def environment():  # type: ignore[no-untyped-def]
    from tau2.domains.airline.data_model import FlightDB
    from tau2.domains.airline.environment import get_environment

    return get_environment(db=FlightDB.model_validate_json(excerpt()))


def call(name: str, arguments: dict[str, Any]):  # type: ignore[no-untyped-def]
    from tau2.data_model.message import ToolCall

    return ToolCall(id="c1", name=name, arguments=arguments, requestor="assistant")


def variant(tool: str, argument: str, value: Any) -> dict[str, Any]:
    args = copy.deepcopy(BASE[tool])
    if value is MISSING:
        del args[argument]
    else:
        args[argument] = value
    return args


def test_the_variants_cover_every_write_tool() -> None:
    assert {tool for tool, *_ in VARIANTS} == set(SIGNATURES) == set(BASE)


@pytest.mark.parametrize("tool", sorted(BASE))
def test_each_base_call_passes_the_gate_and_writes(tool: str) -> None:
    env = environment()
    log = gate_environment(env, reference_ruleset())
    before = env.tools.db.model_dump_json()
    reply = env.get_response(call(tool, copy.deepcopy(BASE[tool])))
    assert reply.error is False, reply.content
    assert env.tools.db.model_dump_json() != before and log.vetoes == []


@pytest.mark.parametrize("mode", ["gated", "advisory"])
@pytest.mark.parametrize(("tool", "argument", "value", "reason"), VARIANTS)
def test_a_malformed_write_is_refused_naming_the_argument(
    mode: Mode, tool: str, argument: str, value: Any, reason: str
) -> None:
    env = environment()
    log = gate_environment(env, reference_ruleset(), mode=mode)
    before = env.tools.db.model_dump_json()
    for _ in range(2):  # refused each time: the advisory rung has no re-issue to offer
        reply = env.get_response(call(tool, variant(tool, argument, value)))
        assert reply.error is True
        assert reply.content == (
            f"{REFUSAL_PREFIX} -- malformed arguments: {reason}. This call was NOT executed."
        )
    assert env.tools.db.model_dump_json() == before
    assert [(v.rules, v.executed) for v in log.vetoes] == [((MALFORMED,), False)] * 2


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # tau2 returning what it stored
@pytest.mark.parametrize(("tool", "argument", "value", "reason"), VARIANTS)
def test_the_state_block_rung_never_raises(
    tool: str, argument: str, value: Any, reason: str
) -> None:
    env = environment()
    gate_environment(env, reference_ruleset(), mode="state-block")
    env.get_response(call(tool, variant(tool, argument, value)))  # unchecked: tau2 decides
    for read in ("get_reservation_details", "get_user_details"):
        entity = {"get_reservation_details": "reservation_id", "get_user_details": "user_id"}[read]
        key = "VAAOXJ" if entity == "reservation_id" else "lei_rossi_3206"
        assert "[TASK-STATE BLOCK]" in env.get_response(call(read, {entity: key})).content


@pytest.mark.parametrize(
    ("tool", "arguments", "answer"),
    [
        ("cancel_reservation", {"reservation_id": "NOPE00"}, "Reservation NOPE00 not found"),
        ("update_reservation_baggages", {**BASE["update_reservation_baggages"], "reservation_id": "NOPE00"}, "Reservation NOPE00 not found"),
        ("update_reservation_flights", {**BASE["update_reservation_flights"], "reservation_id": "NOPE00"}, "Reservation NOPE00 not found"),
        ("update_reservation_passengers", {**BASE["update_reservation_passengers"], "reservation_id": "NOPE00"}, "Reservation NOPE00 not found"),
        ("send_certificate", {"user_id": "nobody_1", "amount": 5000}, "User nobody_1 not found"),
        ("book_reservation", {**BASE["book_reservation"], "user_id": "nobody_1"}, "User nobody_1 not found"),
        ("update_reservation_flights", {**BASE["update_reservation_flights"], "flights": [{"flight_number": "HAT999", "date": "2024-05-24"}]}, "Flight HAT999 not found"),
        ("book_reservation", {**BASE["book_reservation"], "flights": [{"flight_number": "HAT287", "date": "2024-06-30"}]}, "Flight HAT287 not found on date 2024-06-30"),
    ],
)  # fmt: skip
def test_a_call_naming_what_does_not_exist_gets_tau2s_own_answer(
    tool: str, arguments: dict[str, Any], answer: str
) -> None:
    env = environment()
    log = gate_environment(env, reference_ruleset())
    before = env.tools.db.model_dump_json()
    reply = env.get_response(call(tool, arguments))
    assert reply.error is True and reply.content == f"Error: {answer}"
    assert env.tools.db.model_dump_json() == before and log.vetoes == [] and log.checked == 1


def test_tau2s_models_as_arguments_are_judged_as_their_dicts() -> None:
    from tau2.domains.airline.data_model import FlightInfo, Passenger, Payment

    db = DbView(json.loads((DATA / "db.json").read_text()))
    models = {"flights": FlightInfo, "passengers": Passenger, "payment_methods": Payment}
    rules, judged = reference_ruleset(), 0
    for case in battery():
        if not case.patch and models.keys() & case.args.keys():
            as_models = {
                k: [models[k](**item) for item in v] if k in models else v
                for k, v in case.args.items()
            }
            as_dicts = judge(rules, db, case.tool, case.args)
            assert judge(rules, db, case.tool, as_models) == as_dicts, case.id
            judged += 1
    assert judged >= 10


def test_the_signatures_are_tau2s() -> None:
    from tau2.domains.airline.tools import AirlineTools

    for tool, model in SIGNATURES.items():
        params = set(inspect.signature(getattr(AirlineTools, tool)).parameters) - {"self"}
        assert set(model.model_fields) == params, tool


def test_parsed_arguments_are_plain_data() -> None:
    from tau2.domains.airline.data_model import FlightInfo

    args = {
        **BASE["update_reservation_flights"],
        "flights": (FlightInfo(flight_number="HAT287", date="2024-05-24"),),
    }
    assert parse_arguments("update_reservation_flights", args)["flights"] == [
        {"flight_number": "HAT287", "date": "2024-05-24"}
    ]  # fmt: skip


def test_a_rule_the_gate_cannot_evaluate_refuses_the_call() -> None:
    """The last line of defence: a (compiled) rule comparing a string with a number."""
    rules = load_ruleset(
        '[[rule]]\nid = "x"\ntool = "update_reservation_flights"\nwhen = ["args.cabin > 3"]\nreason = "r"'
    )
    env = environment()
    log = gate_environment(env, rules)
    reply = env.get_response(call("update_reservation_flights", BASE["update_reservation_flights"]))
    assert reply.error is True and reply.content == (
        f"{REFUSAL_PREFIX} -- malformed arguments: the gate cannot evaluate this call (TypeError: "
        "'>' not supported between instances of 'str' and 'int'). This call was NOT executed."
    )
    assert [v.rules for v in log.vetoes] == [(MALFORMED,)]


def test_a_state_block_that_cannot_be_computed_is_left_out() -> None:
    rules = load_ruleset(
        '[[rule]]\nid = "x"\ntool = "cancel_reservation"\nwhen = ["reservation.total_baggages > 2"]\nreason = "r"'
    )
    env = environment()
    log = gate_environment(env, rules, mode="state-block")
    junk = {**BASE["update_reservation_baggages"], "total_baggages": None}
    reply = env.get_response(call("update_reservation_baggages", junk))  # unchecked: tau2 stores it
    assert reply.error is False and env.tools.db.reservations["VAAOXJ"].total_baggages is None
    assert "[TASK-STATE BLOCK]" not in reply.content and log.checked == 0
