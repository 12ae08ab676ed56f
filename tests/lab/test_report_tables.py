"""The report's directive-obedience table against counts made by hand from the turn records."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from helpers import run_arm
from taskgate.cli import app
from taskgate.lab import EpisodeParams, generate_episode
from taskgate.lab.scoring.report import obedience_table
from taskgate.lab.scoring.scorer import directive_type
from taskgate.lab.scoring.summary import Scored, summarize

EP = generate_episode(EpisodeParams(seed=101, steps=10, schedule="paper"))


def _row(agent: str) -> tuple[str, Counter[str]]:
    turns, score = run_arm(EP, "directive", agent)
    by_hand = Counter(directive_type(t.directive)[0] for t in turns if t.directive)
    table = obedience_table(summarize([Scored((10, 0.15, 0.0), 101, score)], ["directive"]))
    return table, by_hand


def test_an_obedient_agent_obeys_every_directive_type() -> None:
    table, by_hand = _row("scripted:obedient")
    assert set(by_hand) == {"ELIGIBLE", "BLOCKED", "DONE", "REDO", "CANCELLED"}
    for n in by_hand.values():
        assert "1.00 [" in table and f"({n}/{n})" in table


def test_an_agent_that_books_everything_disobeys_every_trap_directive() -> None:
    table, by_hand = _row("scripted:always-book")
    cells = [c.strip() for c in table.splitlines()[-1].strip("|").split("|")][2:]
    kinds = ["ELIGIBLE", "BLOCKED", "DONE", "REDO", "CANCELLED", "all traps", "episodes"]
    got = dict(zip(kinds, cells, strict=True))
    traps = sum(by_hand[k] for k in ("BLOCKED", "DONE", "CANCELLED"))
    assert got["all traps"].endswith(f"(0/{traps})") and got["episodes"] == "0/1"
    for kind in ("BLOCKED", "DONE", "CANCELLED"):
        assert got[kind].endswith(f"(0/{by_hand[kind]})"), got
    for kind in ("ELIGIBLE", "REDO"):
        assert got[kind].endswith(f"({by_hand[kind]}/{by_hand[kind]})"), got


def test_report_prints_obedience_and_no_usage_for_a_scripted_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ["ladder", "--agent", "scripted:obedient", "--arms", "raw,directive", "--steps", "5",
            "--episodes", "2", "--out", str(run)]  # fmt: skip
    assert CliRunner().invoke(app, args).exit_code == 0
    out = CliRunner().invoke(app, ["report", str(run)])
    assert out.exit_code == 0, out.output
    assert "Directive obedience per directive type" in out.output
    assert "| S=5, rho=0.15 | directive |" in out.output.split("Directive obedience")[1]
    assert "Token usage" not in out.output
