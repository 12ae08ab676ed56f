"""``taskgate tools`` end to end: scripted agents, an llm agent on FakeServer in both modes, and
bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from taskgate.cli import app
from taskgate.llm.fake import FakeServer, protocol_responder

runner = CliRunner()


def table_rw(output: str) -> dict[str, str]:
    """Table 19's lines by arm."""
    table = output.split("(Table 19)")[1].split("Error channels")[0]
    return {ln.split("|")[2].strip(): ln for ln in table.splitlines() if ln.startswith("| S=")}


@pytest.mark.slow  # a whole grid: CI runs it, make quick does not
def test_tools_prints_table_rw_for_scripted_agents(tmp_path: Path) -> None:
    out = tmp_path / "run"
    rows = tmp_path / "rows.json"
    argv = ["tools", "--agent", "scripted:always-book", "--episodes", "4", "--out", str(out)]
    result = runner.invoke(app, [*argv, "--json", str(rows)])
    assert result.exit_code == 0, result.output
    assert "Tool-dispatch harness (Table 19)" in result.output
    lines = table_rw(result.output)
    assert "| 0.00 | [0.00, 0.49] | -- | -- |" in lines["raw"]
    assert "| 1.00 | [0.51, 1.00] |" in lines["enforcement-request"]
    assert [r["arm"] for r in json.loads(rows.read_text())["rows"]][:5] == [
        "raw", "checklist", "directive", "enforcement", "enforcement-request"
    ]  # fmt: skip
    # rerunning into the same directory resumes: nothing is run again, the table is the same
    again = runner.invoke(app, argv)
    assert again.exit_code == 0 and lines["raw"] in again.output
    report = runner.invoke(app, ["report", str(out)])
    assert report.exit_code == 0 and "Table 19" in report.output


@pytest.mark.parametrize(
    "mode",
    ["actions", pytest.param("native", marks=pytest.mark.slow)],  # native: 12 s
)
def test_an_llm_agent_on_an_endpoint_in_both_modes(tmp_path: Path, mode: str) -> None:
    with FakeServer(protocol_responder) as srv:
        argv = ["tools", "--base-url", srv.base_url, "--model", "fake", "--mode", mode]
        result = runner.invoke(
            app, [*argv, "--episodes", "2", "--steps", "5", "--out", str(tmp_path)]
        )
    assert result.exit_code == 0, result.output
    # the careful fake obeys the directive: every gate arm is perfect; the text arms are not
    lines = table_rw(result.output)
    for arm in ("directive", "enforcement", "enforcement-request"):
        assert "| 1.00 |" in lines[arm], result.output
    assert "Compile accuracy" in result.output and "| 1.000 | 1.000 |" in result.output
    agent = [r for r in srv.requests if r["messages"][0]["role"] == "system"]
    assert all(("tools" in r) == (mode == "native") for r in agent)
    if mode == "native":  # each call answered by a tool message, through ChatOpenAI
        assert any(m["role"] == "tool" for r in agent for m in r["messages"])


def test_a_workspace_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "workspaces").write_text("not a folder")
    result = runner.invoke(
        app, ["tools", "--agent", "scripted:perfect", "--episodes", "1", "--out", str(tmp_path)]
    )
    assert result.exit_code != 0
    assert "workspace" in result.output and "Traceback" not in result.output
    assert len([ln for ln in result.output.splitlines() if "error" in ln]) == 1


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--arms", "raw,self-ledger", "self-ledger"),
        ("--mode", "telepathy", "telepathy"),
        ("--steps", "40", "--steps"),
    ],
)
def test_bad_flags_are_named(flag: str, value: str, said: str) -> None:
    result = runner.invoke(app, ["tools", "--agent", "scripted:perfect", flag, value])
    assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output


@pytest.mark.slow  # a whole grid: CI runs it, make quick does not
def test_report_orders_the_rungs_and_refuses_to_merge_modes(tmp_path: Path) -> None:
    base = ["tools", "--agent", "scripted:perfect", "--episodes", "2", "--out", str(tmp_path)]
    assert runner.invoke(app, base).exit_code == 0
    report = runner.invoke(app, ["report", str(tmp_path)])
    assert list(table_rw(report.output)) == [
        "raw", "checklist", "directive", "enforcement", "enforcement-request"
    ]  # fmt: skip
    into_it = runner.invoke(app, [*base, "--mode", "native"])  # another kind: its own directory
    assert into_it.exit_code != 0 and "use another --out directory" in into_it.output
    native_dir = tmp_path / "native"
    native = runner.invoke(app, [*base[:-1], str(native_dir), "--mode", "native"])
    assert native.exit_code == 0 and "| [0.34, 1.00] |" in native.output  # n=2, its own runs
    mixed = runner.invoke(app, ["report", str(tmp_path), str(native_dir)])
    assert mixed.exit_code != 0 and "several kinds" in mixed.output


@pytest.mark.parametrize(
    "argv",
    [
        ["--agent", "llm:constrained", "--mode", "native", "--base-url", "http://127.0.0.1:9/v1"],
        ["--mode", "native"],  # no endpoint: the embedded model, which runs the actions mode
    ],
)
def test_native_mode_needs_an_agent_that_calls_natively(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = runner.invoke(app, ["tools", "--model", "m", *argv])
    assert result.exit_code == 2 and "--mode" in result.output
