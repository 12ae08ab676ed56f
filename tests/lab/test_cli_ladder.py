"""The testbed's commands: generate, run, score, report, ladder; bad flags; resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from taskgate.cli import app
from taskgate.lab.rundir import LOG

runner = CliRunner()
KEYS = {"arm", "steps", "density", "n", "successes", "rate", "ci_low", "ci_high"}


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_ladder_json_rows(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    invoke(
        "ladder", "--agent", "scripted:always-book", "--arms", "raw,checklist,directive,enforcement",
        "--steps", "5,10", "--density", "0.15", "--episodes", "6", "--json", str(out),
        "--out", str(tmp_path / "run"),
    )  # fmt: skip
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 8 and all(set(r) >= KEYS for r in rows)
    by = {(r["arm"], r["steps"]): r for r in rows}
    assert by[("enforcement", 5)]["rate"] == by[("enforcement", 10)]["rate"] == 1.0
    assert by[("raw", 10)]["rate"] == 0.0 and by[("raw", 10)]["n"] == 6


def test_perfect_agent_prints_one_everywhere(tmp_path: Path) -> None:
    output = invoke(
        "ladder", "--agent", "scripted:perfect", "--episodes", "4", "--steps", "5,18",
        "--out", str(tmp_path / "r"),
    )  # fmt: skip
    ladder = output.split("Error channels")[0]
    # 4 arms x 2 cells x 2 scorings, each in bold: every rung ties for best
    assert ladder.count("**1.00** [0.51, 1.00] (4/4)") == 16


def test_an_agent_that_never_succeeds_gets_no_best_rung_and_is_told_where_to_look(
    tmp_path: Path,
) -> None:
    from taskgate.lab.scoring.report import NO_SUCCESS

    output = invoke("ladder", "--agent", "scripted:always-book", "--arms", "raw,checklist",
                    "--episodes", "2", "--steps", "5",
                    "--out", str(tmp_path / "r"))  # fmt: skip
    ladder = output.split("Error channels")[0]
    assert "0.00 [" in ladder and "**0.00**" not in ladder
    assert ladder.count(NO_SUCCESS) == 2  # under the strict and the decline-aware tables


def test_generate_run_score_report(tmp_path: Path) -> None:
    eps = tmp_path / "eps.json"
    invoke("generate", "--seed", "100", "--episodes", "3", "--steps", "6", "--out", str(eps))
    again = tmp_path / "again.json"
    invoke("generate", "--seed", "100", "--episodes", "3", "--steps", "6", "--out", str(again))
    assert eps.read_bytes() == again.read_bytes()
    assert len(json.loads(eps.read_text())) == 3
    run_dir = tmp_path / "run"
    invoke("run", "--episodes", str(eps), "--out", str(run_dir), "--agent", "scripted:always-book")
    scored = invoke("score", str(run_dir))
    assert "enforcement" in scored and "strict=1.00" in scored and "strict=0.00" in scored
    latex = invoke("report", str(run_dir), "--fmt", "latex")
    assert r"\begin{tabular}" in latex and r"$\rho$" in latex


def test_bad_flags_are_named(tmp_path: Path) -> None:
    for args, named in [
        (["ladder", "--arms", "raw,bogus"], "bogus"),
        (["ladder", "--steps", "4"], "4"),
        (["ladder", "--density", "x"], "'x'"),
        (["ladder", "--agent", "gpt"], "gpt"),
        (["ladder", "--corruption", "2"], "2"),
        (["ladder", "--para-tier", "2"], "--rewrites"),
        (["run", "--episodes", str(tmp_path / "none.json"), "--out", str(tmp_path)], "none.json"),
    ]:
        result = runner.invoke(app, args)
        assert result.exit_code != 0
        text = result.output + str(result.exception or "")
        assert named in text, (args, text)


def _numbers(path: Path) -> dict[str, object]:
    """A JSON report's rows and tables, less the run directories and the wall-clock times."""
    data = json.loads(path.read_text())
    tables = {k: v for k, v in data["tables"].items() if k != "overhead"}
    return {"rows": data["rows"], "contrasts": data["contrasts"], "tables": tables}


@pytest.mark.slow  # a whole grid: CI runs it, make quick does not
def test_resume_gives_the_numbers_of_an_uninterrupted_run(tmp_path: Path) -> None:
    args = ["ladder", "--agent", "scripted:obedient", "--episodes", "5", "--corruption", "0,0.01",
            "--arms", "raw,enforcement"]  # fmt: skip
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    invoke(*args, "--out", str(whole), "--json", str(tmp_path / "whole.json"))
    invoke(*args, "--out", str(cut))
    log = (cut / LOG).read_text().splitlines(keepends=True)
    # interrupt: keep a prefix that ends mid-episode-arm and mid-line
    keep = log[: len(log) // 2]
    keep[-1] = keep[-1][: len(keep[-1]) // 2]
    (cut / LOG).write_text("".join(keep))
    invoke(*args, "--out", str(cut), "--json", str(tmp_path / "cut.json"))
    assert _numbers(tmp_path / "whole.json") == _numbers(tmp_path / "cut.json")
    # and a rerun of a finished directory runs nothing new
    size = (cut / LOG).stat().st_size
    invoke(*args, "--out", str(cut))
    assert (cut / LOG).stat().st_size == size


@pytest.mark.slow  # a whole grid: CI runs it, make quick does not
def test_sharded_runs_merged_report_the_tables_of_one_run(tmp_path: Path) -> None:
    grid = ["--agent", "scripted:always-book", "--steps", "5,10", "--episodes", "5"]
    whole = tmp_path / "whole.json"
    invoke("ladder", *grid, "--out", str(tmp_path / "one"), "--json", str(whole))
    shards = [str(tmp_path / f"s{i}") for i in (1, 2, 3)]
    for i, out in enumerate(shards, 1):
        invoke("ladder", *grid, "--shard", f"{i}/3", "--out", out)
    said = invoke("merge", str(tmp_path / "all"), *shards)
    assert "40 episode-arms (40 added) over 10 episodes" in said
    merged = tmp_path / "merged.json"
    invoke("report", str(tmp_path / "all"), "--json", str(merged))
    assert _numbers(merged) == _numbers(whole)
    run_eps = tmp_path / "eps.jsonl"
    invoke("generate", "--out", str(run_eps), "--episodes", "4", "--steps", "5")
    said = invoke(
        "run", "--episodes", str(run_eps), "--out", str(tmp_path / "r"), "--agent",
        "scripted:perfect", "--shard", "2/3",
    )  # fmt: skip
    assert "logged 4 episode-arms" in said  # 1 episode of 4 (the 2nd) x the ladder's 4 arms
