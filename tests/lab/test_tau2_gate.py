"""The gate inside tau2's real airline environment, and the gold replay (real tau2 code)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import TAU2_DATA
from taskgate.errors import LogFormatError
from taskgate.lab.experiments.tau2.gate import gate_environment
from taskgate.lab.experiments.tau2.replay import gold_replay, load_tasks
from taskgate.lab.experiments.tau2.rules import named_ruleset, reference_ruleset

DATA = TAU2_DATA
pytest.importorskip("tau2", reason="needs the tau2 extra")  # installed by make; skipped elsewhere


def environment():  # type: ignore[no-untyped-def]
    from tau2.domains.airline.data_model import FlightDB
    from tau2.domains.airline.environment import get_environment

    return get_environment(db=FlightDB.load(str(DATA / "db.json")))


def call(name: str, **arguments: object):  # type: ignore[no-untyped-def]
    from tau2.data_model.message import ToolCall

    return ToolCall(id="c1", name=name, arguments=arguments, requestor="assistant")


def test_a_violating_cancellation_is_refused_and_the_database_untouched() -> None:
    env = environment()
    log = gate_environment(env, reference_ruleset())
    before = env.tools.db.model_dump_json()
    reply = env.get_response(call("cancel_reservation", reservation_id="VAAOXJ"))
    assert reply.error is True
    assert "cancel-eligibility" in reply.content and "not cancellable" in reply.content
    assert env.tools.db.model_dump_json() == before  # byte-identical
    assert [v.rules for v in log.vetoes] == [("cancel-eligibility",)] and log.checked == 1


def test_allowed_writes_and_reads_pass_through() -> None:
    env = environment()
    gate_environment(env, reference_ruleset())
    read = env.get_response(call("get_reservation_details", reservation_id="VAAOXJ"))
    assert read.error is False and "VAAOXJ" in read.content
    ok = env.get_response(call("cancel_reservation", reservation_id="8B92J5"))  # insured
    assert ok.error is False
    assert env.tools.db.reservations["8B92J5"].status == "cancelled"


def test_advisory_returns_once_then_executes_the_identical_call() -> None:
    env = environment()
    log = gate_environment(env, reference_ruleset(), mode="advisory")
    first = env.get_response(call("cancel_reservation", reservation_id="VAAOXJ"))
    assert first.error and "identical call again, it will execute" in first.content
    assert env.tools.db.reservations["VAAOXJ"].status is None
    second = env.get_response(call("cancel_reservation", reservation_id="VAAOXJ"))
    assert second.error is False and env.tools.db.reservations["VAAOXJ"].status == "cancelled"
    assert [v.executed for v in log.vetoes] == [False, True]


@pytest.mark.slow  # replays every gold action of a task set
def test_gold_replay_current_task_set_has_no_overblock() -> None:
    replays = gold_replay(load_tasks(DATA / "tasks.json"), reference_ruleset(), DATA / "db.json")
    assert len(replays) == 50
    assert sum(r.writes for r in replays) == 49
    assert [o for r in replays for o in r.overblocks] == []
    assert [e for r in replays for e in r.errors] == []


@pytest.mark.slow  # replays every gold action of a task set
def test_gold_replay_first_release_overblocks_only_policy_violations() -> None:
    replays = gold_replay(
        load_tasks(DATA / "tasks_release_37199f3.json"), reference_ruleset(), DATA / "db.json"
    )
    found = {(r.task_id, o.action_id, o.rules) for r in replays for o in r.overblocks}
    # each is a gold action upstream later corrected (see the audit in docs/lab/tau2.md)
    assert found == {
        ("7", "7_3", ("cancel-eligibility",)),
        ("9", "9_0", ("cancel-flown",)),
        ("29", "29_1", ("flights-endpoints",)),
        ("37", "37_0", ("cancel-flown",)),
    }


@pytest.mark.slow  # replays every gold action of both task sets
def test_the_post_audit_ruleset_blocks_only_the_standing_incident() -> None:
    rules = named_ruleset("post-audit")
    current = gold_replay(load_tasks(DATA / "tasks.json"), rules, DATA / "db.json")
    assert sum(r.writes for r in current) == 49
    assert [o for r in current for o in r.overblocks] == []
    first = gold_replay(load_tasks(DATA / "tasks_release_37199f3.json"), rules, DATA / "db.json")
    assert sum(r.writes for r in first) == 55
    found = [(r.task_id, o.action_id, o.rules) for r in first for o in r.overblocks]
    assert found == [("7", "7_3", ("cancel-eligibility",))]  # the paper's 1/55 (and 0/49)
    assert [e for r in [*current, *first] for e in r.errors] == []


def test_a_file_that_is_not_a_task_set_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"not": "tasks"}')
    with pytest.raises(LogFormatError, match=r"x\.json"):
        load_tasks(bad)


def test_cli_battery_and_gold_replay(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from taskgate.cli import app

    runner = CliRunner()
    out = runner.invoke(app, ["tau2", "battery", "--db", str(DATA / "db.json")])
    assert out.exit_code == 0 and "battery: 33/33 cases" in out.output  # post-audit, its own
    pre = ["tau2", "battery", "--db", str(DATA / "db.json"), "--ruleset", "pre-audit"]
    out = runner.invoke(app, pre)
    assert out.exit_code == 0 and "battery: 40/40 cases" in out.output
    out = runner.invoke(app, [*pre, "--battery", "post-audit"])
    assert out.exit_code == 0 and "battery: 31/33 cases" in out.output
    out = runner.invoke(app, [*pre, "--battery", "strict"])
    assert out.exit_code == 2 and "--battery" in out.output
    # the whole task sets are replayed above, through the API; here a few tasks of the first release
    release = json.loads((DATA / "tasks_release_37199f3.json").read_text())
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([t for t in release if t["id"] in ("1", "7", "9", "12")]))
    rows_path = tmp_path / "rows.json"
    out = runner.invoke(
        app,
        ["tau2", "replay-gold", "--tasks", str(tasks), "--json", str(rows_path),
         "--ruleset", "pre-audit"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "4 tasks, 3 with writes" in out.output
    rows = {r["task_id"]: r for r in json.loads(rows_path.read_text())}
    assert rows["9"] == {
        "task_id": "9",
        "gold_writes": 1,
        "overblocked": [
            {"action_id": "9_0", "tool": "cancel_reservation", "rules": ["cancel-flown"]}
        ],
        "tool_errors": [],
    }
    assert rows["1"]["gold_writes"] == 0 and rows["1"]["overblocked"] == []
    assert [o["rules"] for o in rows["7"]["overblocked"]] == [["cancel-eligibility"]]
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[rule]]\nid = "x"\ntool = "fly_plane"\nwhen = ["reservation.cancelled"]\nreason = "r"'
    )
    out = runner.invoke(app, ["tau2", "battery", "--ruleset", str(bad)])
    assert out.exit_code == 2 and "fly_plane" in out.output


def test_state_block_rung_shows_state_and_leaves_writes_unguarded() -> None:
    env = environment()
    log = gate_environment(env, reference_ruleset(), mode="state-block")
    read = env.get_response(call("get_reservation_details", reservation_id="VAAOXJ"))
    assert read.error is False
    block = read.content.split("[TASK-STATE BLOCK]")[1]
    assert (
        "reservation VAAOXJ: cabin economy; insurance no;" in block and "not within 24 h" in block
    )
    assert (
        "- cancel_reservation: fires: cancel-eligibility; clear: cancel-flown, cancel-already-cancelled"
        in block
    )
    assert (
        "update_reservation_baggages: depends on the request: baggage-decrease, baggage-payment"
        in block
    )
    assert "user lei_rossi_3206: membership regular" in block
    write = env.get_response(call("cancel_reservation", reservation_id="VAAOXJ"))
    assert write.error is False  # unguarded: the violating cancellation executes
    assert env.tools.db.reservations["VAAOXJ"].status == "cancelled"
    assert (
        "- cancel_reservation: fires: cancel-eligibility, cancel-already-cancelled" in write.content
    )
    assert log.vetoes == [] and log.checked == 2
