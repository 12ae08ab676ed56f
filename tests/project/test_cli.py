from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from taskgate import __version__
from taskgate.cli import app

runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"taskgate {__version__}"


def test_help_lists_every_registered_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    registered = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    engineer, lab = result.output.split("For engineers")[1].split("The lab")
    listed = {
        line.split()[0] for line in (engineer + lab).splitlines()[1:] if line.startswith("  ")
    }
    assert {line.split()[0] for line in engineer.splitlines()[1:] if line.strip()} == {
        "proxy",
        "proxy-status",
        "demo",
    }
    assert registered == {
        "demo",
        "generate",
        "run",
        "score",
        "report",
        "ladder",
        "matchers",
        "probe",
        "probe-tools",
        "probe-report",
        "one-node",
        "one-node-report",
        "pmbench",
        "pmbench-report",
        "rewrites",
        "raters",
        "raters-report",
        "tools",
        "merge",
        "proxy",
        "proxy-status",
        "tau2",
    }
    assert listed == registered


def test_demo_prints_verdicts_turn_by_turn() -> None:
    result = runner.invoke(app, ["demo", "--seed", "7"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "[BOOKING REJECTED]" in out and "is BLOCKED" in out and "is already DONE" in out
    assert out.count("admitted ref") == 5
    assert "- s3: CANCELLED" in out


def test_bad_flag_is_named() -> None:
    result = runner.invoke(app, ["demo", "--policy", "lax"])
    assert result.exit_code == 2
    assert "lax" in result.output


def test_console_script_entry_point() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "taskgate", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"taskgate {__version__}"
