"""Transcript replay of tau2 results files (real tau2 code, results files built here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import TAU2_DATA
from taskgate.errors import LogFormatError
from taskgate.lab.experiments.tau2.rules import reference_ruleset
from taskgate.lab.experiments.tau2.transcripts import load_results, replay_results

DATA = TAU2_DATA
pytest.importorskip("tau2", reason="needs the tau2 extra")


def sim(sid: str, task: str, calls: list[tuple[str, dict[str, Any], bool]]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    for n, (name, args, error) in enumerate(calls):
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [{"id": f"{sid}-{n}", "name": name, "arguments": args}],
            }
        )
        messages.append({"role": "tool", "id": f"{sid}-{n}", "content": "x", "error": error})
    return {"id": sid, "task_id": task, "messages": messages}


def results_file(tmp_path: Path) -> Path:
    tasks = {t["id"]: t for t in json.loads((DATA / "tasks.json").read_text())}
    sims = [
        # refusal task (gold has no write): a violating cancellation executed
        sim("a", "0", [("get_reservation_details", {"reservation_id": "VAAOXJ"}, False),
                       ("cancel_reservation", {"reservation_id": "VAAOXJ"}, False)]),
        # task 19's gold write exactly
        sim("b", "19", [("cancel_reservation", {"reservation_id": "Z7GOZK"}, False)]),
        # the right tool on the wrong (but cancellable) reservation
        sim("c", "19", [("cancel_reservation", {"reservation_id": "8B92J5"}, False)]),
        # a write that failed in the transcript changes nothing and is not counted
        sim("d", "19", [("cancel_reservation", {"reservation_id": "VAAOXJ"}, True),
                        ("cancel_reservation", {"reservation_id": "Z7GOZK"}, False)]),
    ]  # fmt: skip
    path = tmp_path / "results.json"
    path.write_text(
        json.dumps({"info": {}, "tasks": [tasks["0"], tasks["19"]], "simulations": sims})
    )
    return path


def test_results_are_paired_with_calls_by_position_not_id(tmp_path: Path) -> None:
    tasks = {t["id"]: t for t in json.loads((DATA / "tasks.json").read_text())}
    # a server that numbers every call "call_0": the refused first cancel and the executed second
    reused = sim("r", "19", [("cancel_reservation", {"reservation_id": "VAAOXJ"}, True),
                             ("cancel_reservation", {"reservation_id": "Z7GOZK"}, False)])  # fmt: skip
    for m in reused["messages"]:
        for c in m.get("tool_calls") or []:
            c["id"] = "call_0"
        if m["role"] == "tool":
            m["id"] = "call_0"
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"tasks": [tasks["19"]], "simulations": [reused]}))
    (ep,) = replay_results([path], reference_ruleset(), DATA / "db.json").episodes
    assert (ep.writes, ep.wrongful, ep.divergences) == (1, False, [])


def test_transcript_replay_report(tmp_path: Path) -> None:
    summary = replay_results([results_file(tmp_path)], reference_ruleset(), DATA / "db.json")
    by = {e.simulation: e for e in summary.episodes}
    assert (by["a"].violating, by["a"].kind, by["a"].catchable) == (1, "extra-only", True)
    assert (by["b"].violating, by["b"].wrongful) == (0, False)
    assert (by["c"].violating, by["c"].kind) == (0, "wrong-arguments")
    assert (by["d"].writes, by["d"].wrongful) == (1, False)
    report = summary.report()
    assert report["episodes"] == 4 and report["catchable_episodes"] == 1
    assert report["executed_violating_writes"] == 1
    assert report["wrongful_episodes"] == 2
    assert report["wrongful_split"] == {"extra-only": 1, "wrong-arguments": 1}
    assert report["episode_precision"] == 1.0 and report["call_precision"] == 1.0
    assert report["refusal_subset"] == {"episodes": 1, "with_executed_writes": 1, "catchable": 1}
    assert report["replay_divergences"] == 0


def test_a_file_in_another_format_is_named(tmp_path: Path) -> None:
    other = tmp_path / "log.jsonl"
    other.write_text('{"kind": "turn"}\n')
    with pytest.raises(LogFormatError, match="not a tau2 results file"):
        load_results(other)


def test_cli_replay(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from taskgate.cli import app

    path = results_file(tmp_path)
    out = CliRunner().invoke(
        app, ["tau2", "replay", "--results", str(path), "--db", str(DATA / "db.json")]
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["catchable_episodes"] == 1
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    out = CliRunner().invoke(
        app, ["tau2", "replay", "--results", str(bad), "--db", str(DATA / "db.json")]
    )
    assert out.exit_code == 2 and "bad.json" in out.output


def test_a_write_the_replay_cannot_repeat_is_reported(tmp_path: Path) -> None:
    tasks = {t["id"]: t for t in json.loads((DATA / "tasks.json").read_text())}
    sims = [sim("e", "19", [("cancel_reservation", {"reservation_id": "NOSUCH"}, False)])]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"tasks": [tasks["19"]], "simulations": sims}))
    summary = replay_results([path], reference_ruleset(), DATA / "db.json")
    (episode,) = summary.episodes
    assert len(episode.divergences) == 1 and "NOSUCH" in episode.divergences[0]
    assert summary.report()["replay_divergences"] == 1


def test_malformed_writes_that_executed_are_replayed_and_counted(tmp_path: Path) -> None:
    tasks = {t["id"]: t for t in json.loads((DATA / "tasks.json").read_text())}
    card = "credit_card_1052991"
    bags = {"reservation_id": "VAAOXJ", "nonfree_baggages": 0, "payment_id": card}
    calls = [
        ("send_certificate", {"user_id": "lei_rossi_3206", "amount": "5000"}, False),
        ("update_reservation_baggages", {**bags, "total_baggages": None}, False),
        # well-formed, on the state the last write left: bags the facts cannot compare
        ("update_reservation_baggages", {**bags, "total_baggages": 2}, False),
        ("cancel_reservation", {"reservation_id": "VAAOXJ"}, False),
    ]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"tasks": [tasks["0"]], "simulations": [sim("m", "0", calls)]}))
    summary = replay_results([path], reference_ruleset(), DATA / "db.json")
    (ep,) = summary.episodes
    assert (ep.writes, ep.malformed, ep.violating, ep.divergences) == (4, 3, 1, [])
    assert summary.report()["executed_malformed_writes"] == 3
