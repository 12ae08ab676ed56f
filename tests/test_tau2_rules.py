"""The tau2 airline ruleset as data: reference rules, the battery, and bad rulesets."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from conftest import TAU2_DATA
from taskgate import RulesetError
from taskgate.integrations.tau2.battery import battery, run_battery
from taskgate.integrations.tau2.facts import FACTS, DbView
from taskgate.integrations.tau2.rules import load_ruleset, reference_ruleset

DATA = TAU2_DATA


@cache
def db() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "db.json").read_text())
    return data


def test_reference_ruleset_scores_the_whole_battery() -> None:
    outcomes = run_battery(reference_ruleset(), db())
    assert len(outcomes) >= 33
    assert [o.case.id for o in outcomes if not o.passed] == []
    for o in outcomes:  # and the rule the case exercises is the one that decides it
        assert (o.case.rule in o.fired) == (o.case.expect == "deny"), o.case.id
        if o.case.expect == "allow":
            assert o.fired == ()


def test_every_rule_has_an_allow_and_a_deny_case() -> None:
    cases = battery()
    for rule in reference_ruleset().rule:
        kinds = {c.expect for c in cases if c.rule == rule.id}
        assert kinds == {"allow", "deny"}, rule.id


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
