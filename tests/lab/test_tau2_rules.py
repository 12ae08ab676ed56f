"""The tau2 airline ruleset as data: reference rules, the battery, and bad rulesets."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from conftest import TAU2_DATA
from taskgate import RulesetError
from taskgate.lab.experiments.tau2.battery import battery, run_battery
from taskgate.lab.experiments.tau2.facts import FACTS, DbView
from taskgate.lab.experiments.tau2.rules import load_ruleset, named_ruleset, reference_ruleset

DATA = TAU2_DATA


@cache
def db() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "db.json").read_text())
    return data


@pytest.mark.parametrize(("name", "n"), [("pre-audit", 40), ("post-audit", 33)])
def test_each_ruleset_scores_its_whole_battery(name: str, n: int) -> None:
    outcomes = run_battery(named_ruleset(name), db(), battery(name))
    assert len(outcomes) == n
    assert [o.case.id for o in outcomes if not o.passed] == []
    for o in outcomes:  # and the rule the case exercises is the one that decides it
        assert (o.case.rule in o.fired) == (o.case.expect == "deny"), o.case.id
        if o.case.expect == "allow":
            assert o.fired == ()


@pytest.mark.parametrize("name", ["pre-audit", "post-audit"])
def test_every_rule_has_an_allow_and_a_deny_case(name: str) -> None:
    cases = battery(name)
    for rule in named_ruleset(name).rule:
        kinds = {c.expect for c in cases if c.rule == rule.id}
        assert kinds == {"allow", "deny"}, rule.id


def test_the_post_audit_ruleset_is_the_audit_of_the_pre_audit_one() -> None:
    pre, post = reference_ruleset(), named_ruleset("post-audit")
    assert len(post.rule) == 16 and len(pre.rule) == 19
    assert "cancel-flown" in {r.id for r in pre.rule} - {r.id for r in post.rule}
    # the pre-audit ruleset fails exactly the two audited cases of the paper's battery
    failed = [o.case.id for o in run_battery(pre, db(), battery("post-audit")) if not o.passed]
    assert failed == ["A1", "A2"]
    assert named_ruleset() == post  # the default


def test_a_same_metro_swap_is_no_endpoint_change() -> None:
    from taskgate.lab.experiments.tau2.facts import FACTS

    view = DbView(db())
    swap = {"reservation_id": "VA5SGQ", "cabin": "economy", "payment_id": "credit_card_8003957",
            "flights": [{"flight_number": "HAT169", "date": "2024-05-17"},
                        {"flight_number": "HAT033", "date": "2024-05-19"}]}  # fmt: skip
    assert FACTS["args.endpoints_changed"](view, swap) is True  # LGA -> JFK, airport by airport
    assert FACTS["args.metro_endpoints_changed"](view, swap) is False  # both New York


def test_an_unknown_ruleset_or_battery_is_named() -> None:
    from taskgate import RulesetError

    with pytest.raises(RulesetError, match="'strict'"):
        named_ruleset("strict")
    with pytest.raises(RulesetError, match="'strict'"):
        battery("strict")


def test_reads_and_writes_of_other_tools_are_never_denied() -> None:
    rs = reference_ruleset()
    assert rs.firing(DbView(db()), "get_reservation_details", {"reservation_id": "I3P269"}) == []


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[[rule]]\nid = "x"\ntool = "delete_everything"\nwhen = ["reservation.cancelled"]\nreason = "r"', "delete_everything"),
        ('[[rule]]\nid = "x"\ntool = "cancel_reservation"\nwhen = ["reservation.colour"]\nreason = "r"', "reservation.colour"),
        ('[[rule]]\nid = "x"\ntool = "cancel_reservation"\nwhen = ["reservation.cancelled"]\nreason = "r"\nseverity = 3', "severity"),
        ('[[rule]]\nid = "x"\ntool = "cancel_reservation"\nwhen = ["args.amount > ?"]\nreason = "r"', "'?'"),
        ('[[rule]]\nid = "x"\ntool = "cancel_reservation"\nwhen = ["=="]\nreason = "r"', "'=='"),
        ("[[rule]\n", "TOML"),
        ('[[rule]]\nid = "a"\ntool = "cancel_reservation"\nwhen = ["reservation.cancelled"]\nreason = "r"\n'
         '[[rule]]\nid = "a"\ntool = "cancel_reservation"\nwhen = ["reservation.cancelled"]\nreason = "r"', "duplicate"),
    ],
)  # fmt: skip
def test_bad_rulesets_are_named(text: str, named: str) -> None:
    with pytest.raises(RulesetError, match=named.replace("?", r"\?")):
        load_ruleset(text)


def test_a_ruleset_file(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(
        '[[rule]]\nid = "x"\ntool = "send_certificate"\nwhen = ["args.amount > 10"]\nreason = "too much"'
    )
    rs = load_ruleset(path)
    view = DbView(db())
    assert [
        r.id for r in rs.firing(view, "send_certificate", {"user_id": "mia_li_3668", "amount": 11})
    ] == ["x"]
    assert rs.firing(view, "send_certificate", {"user_id": "mia_li_3668", "amount": 10}) == []


def test_facts_are_named_functions() -> None:
    assert all(name.split(".")[0] in ("reservation", "user", "args") for name in FACTS)
