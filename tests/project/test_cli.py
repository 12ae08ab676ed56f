from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from taskgate import __version__
from taskgate.cli import app
from taskgate.cli.names import LAB_COMMANDS

runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"taskgate {__version__}"


def test_help_lists_every_command_under_its_heading() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    engineer, lab = result.output.split("For engineers")[1].split("The lab")

    def names(text: str) -> set[str]:  # a summary's wrapped lines are indented further
        return {ln.split()[0] for ln in text.splitlines()[1:] if ln[:3].strip() and ln.strip()}

    engineers = {"proxy", "proxy-status", "mcp-status", "demo", "plan", "mcp", "fake-server"}
    assert names(engineer) == engineers
    assert names(engineer) | names(lab) == {*engineers, *LAB_COMMANDS}
    assert "..." not in result.output.split("\n", 1)[1]  # each summary whole, wrapped
    assert "Print a session's checklist (or list the sessions) from a" in result.output


def test_the_engineers_commands_do_not_load_the_lab() -> None:
    code = (
        "import sys; from typer.testing import CliRunner; from taskgate.cli import app; "
        "r = CliRunner().invoke(app, ['demo']); assert r.exit_code == 0, r.output; "
        "print(sorted(m for m in sys.modules if m.startswith(('taskgate.lab', 'scipy'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr


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
