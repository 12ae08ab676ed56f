"""Bad input on the command line: one clear line naming the culprit, never a traceback.

Each case is a command line and the files it meets. The contract: exit status 2 for bad input
(flags, files, folders) and 1 for a failure of the work itself (an endpoint that refuses); one
error line on stderr that names the flag or file; no traceback; nothing half-written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from taskgate.cli import app

BINARY = bytes(range(256)) * 4
UNKNOWN_TOOL = '[[rule]]\nid = "x"\ntool = "teleport"\nwhen = ["args.amount > 1"]\nreason = "r"\n'
Setup = Callable[[Path], list[str]]


def _episodes(tmp: Path) -> Path:
    path = tmp / "eps.json"
    result = CliRunner().invoke(app, ["generate", "--out", str(path), "--steps", "5"])
    assert result.exit_code == 0, result.output
    return path


def _run_dir(tmp: Path) -> Path:
    run = tmp / "run"
    result = CliRunner().invoke(
        app, ["ladder", "--agent", "scripted:perfect", "--arms", "raw", "--steps", "5",
              "--episodes", "2", "--out", str(run)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return run


def _v1_run(tmp: Path) -> Path:
    run = tmp / "v1"
    result = CliRunner().invoke(
        app, ["ladder", "--agent", "scripted:perfect", "--arms", "raw", "--steps", "5",
              "--episodes", "1", "--schedule", "v1", "--out", str(run)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return run


def _write(tmp: Path, name: str, data: bytes | str) -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


SCRIPTED = ["--agent", "scripted:perfect", "--arms", "raw", "--steps", "5", "--episodes", "1"]

CASES: dict[str, tuple[Setup, int, str]] = {
    # run directories
    "score a missing directory": (lambda t: ["score", str(t / "nope")], 2, "nope"),
    "score an empty directory": (lambda t: ["score", str(_write(t, "e/x", "").parent)], 2, "e"),
    "report a missing directory": (lambda t: ["report", str(t / "nope")], 2, "nope"),
    "report a file": (lambda t: ["report", str(_write(t, "f.txt", "hi"))], 2, "f.txt"),
    "score a torn episodes.jsonl": (
        lambda t: ["score", str(_torn_episodes(t))], 2, "episodes.jsonl",
    ),
    "score a binary log": (lambda t: ["score", str(_binary_log(t))], 2, "log.jsonl"),
    # episodes files
    "run an empty episodes file": (
        lambda t: ["run", "--episodes", str(_write(t, "e.json", "")), "--out", str(t / "o"),
                   *SCRIPTED[:4]], 2, "e.json",
    ),
    "run a malformed episodes file": (
        lambda t: ["run", "--episodes", str(_write(t, "e.json", "{not json")), "--out",
                   str(t / "o"), *SCRIPTED[:4]], 2, "e.json",
    ),
    "run a wrong-shape episodes file": (
        lambda t: ["run", "--episodes", str(_write(t, "e.json", '{"a": 1}')), "--out",
                   str(t / "o"), *SCRIPTED[:4]], 2, "e.json",
    ),
    "run a binary episodes file": (
        lambda t: ["run", "--episodes", str(_write(t, "e.json", BINARY)), "--out",
                   str(t / "o"), *SCRIPTED[:4]], 2, "e.json",
    ),
    "run a missing episodes file": (
        lambda t: ["run", "--episodes", str(t / "none.json"), "--out", str(t / "o"),
                   *SCRIPTED[:4]], 2, "none.json",
    ),
    # outputs
    "generate under a file": (
        lambda t: ["generate", "--out", str(_write(t, "f", "x") / "x.json")], 2, "is a file",
    ),
    "generate onto a folder": (lambda t: ["generate", "--out", str(t)], 2, "is a directory"),
    "ladder --out is a file": (
        lambda t: ["ladder", *SCRIPTED, "--out", str(_write(t, "f", "x"))], 2, "--out",
    ),
    "ladder --json under a file": (
        lambda t: ["ladder", *SCRIPTED, "--json", str(_write(t, "f", "x") / "rows.json")], 2,
        "--json",
    ),
    "ladder --model without an endpoint": (
        lambda t: ["ladder", "--model", "qwen3-8b", "--out", str(t / "o")], 2, "--model",
    ),
    "report --json onto a folder": (
        lambda t: ["report", str(_run_dir(t)), "--json", str(t)], 2, "--json",
    ),
    # flags
    "empty --steps": (lambda t: ["ladder", *SCRIPTED[:4], "--steps", ""], 2, "--steps"),
    "--steps out of range": (lambda t: ["ladder", *SCRIPTED[:4], "--steps", "40"], 2, "--steps"),
    "--steps not a number": (lambda t: ["ladder", *SCRIPTED[:4], "--steps", "x"], 2, "--steps"),
    "huge --episodes": (
        lambda t: ["ladder", *SCRIPTED[:4], "--episodes", "100000000"], 2, "--episodes",
    ),
    "unknown arm": (lambda t: ["ladder", "--agent", "scripted:perfect", "--arms", "rawr"], 2, "rawr"),
    "unknown agent": (lambda t: ["ladder", "--agent", "nobody"], 2, "nobody"),
    "unknown matcher": (
        lambda t: ["ladder", "--agent", "scripted:perfect", "--matcher", "psychic"], 2, "psychic",
    ),
    "bad --corruption": (
        lambda t: ["ladder", *SCRIPTED, "--corruption", "2"], 2, "--corruption",
    ),
    "bad --density": (lambda t: ["ladder", *SCRIPTED, "--density", "-1"], 2, "--density"),
    "report --arms not in the run": (
        lambda t: ["report", str(_run_dir(t)), "--arms", "enforcement"], 2, "enforcement",
    ),
    "binary rewrites": (
        lambda t: ["ladder", *SCRIPTED, "--para-tier", "2", "--rewrites",
                   str(_write(t, "rw.json", BINARY))], 2, "rw.json",
    ),
    "tier 2 without rewrites": (lambda t: ["ladder", *SCRIPTED, "--para-tier", "2"], 2, "--rewrites"),
    # tau2 (needs the tau2 extra)
    "tau2 battery, a missing --db": (
        lambda t: ["tau2", "battery", "--db", str(t / "nope.json")], 2, "nope.json",
    ),
    "tau2 battery, a malformed --db": (
        lambda t: ["tau2", "battery", "--db", str(_write(t, "db.json", "{bad"))], 2, "db.json",
    ),
    "tau2 battery, a --db nested too deep": (
        lambda t: ["tau2", "battery", "--db", str(_write(t, "deep.json", "[" * 100_000))], 2,
        "deep.json",
    ),
    "tau2 battery, a binary --ruleset": (
        lambda t: ["tau2", "battery", "--ruleset", str(_write(t, "r.toml", BINARY))], 2, "r.toml",
    ),
    "tau2 battery, a ruleset with an unknown tool": (
        lambda t: ["tau2", "battery", "--ruleset", str(_write(t, "r.toml", UNKNOWN_TOOL))], 2,
        "teleport",
    ),
    "tau2 replay-gold, binary --tasks": (
        lambda t: ["tau2", "replay-gold", "--tasks", str(_write(t, "tasks.json", BINARY))], 2,
        "tasks.json",
    ),
    "tau2 replay, a missing results file": (
        lambda t: ["tau2", "replay", "--results", str(t / "none.json")], 2, "none.json",
    ),
    "tau2 report, not a run directory": (lambda t: ["tau2", "report", str(t)], 2, "config.json"),
    "tau2 compile-rules, a missing --policy": (
        lambda t: ["tau2", "compile-rules", "--out", str(t / "r.json"), "--policy",
                   str(t / "nope.md"), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], 2,
        "nope.md",
    ),
    "tau2 run, an unknown arm": (
        lambda t: ["tau2", "run", "--out", str(t / "o"), "--arms", "ungated,ledger"], 2, "ledger",
    ),
    "tau2 run, --out is a file": (
        lambda t: ["tau2", "run", "--out", str(_write(t, "f", "x"))], 2, "--out",
    ),
    # endpoints: the work fails, so exit 1
    "endpoint refuses connections": (
        lambda t: ["ladder", "--agent", "llm", "--arms", "raw", "--episodes", "1", "--steps", "5",
                   "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", "1", "--retries", "1",
                   "--out", str(t / "o")], 1, "127.0.0.1:9",
    ),
    "endpoint is not a URL": (
        lambda t: ["ladder", "--agent", "llm", "--arms", "raw", "--episodes", "1", "--steps", "5",
                   "--base-url", "not a url", "--model", "m", "--out", str(t / "o")], 2, "not a url",
    ),
    "endpoints file with a bad line": (
        lambda t: ["ladder", "--agent", "llm", "--arms", "raw", "--episodes", "1",
                   "--endpoints", str(_write(t, "eps.txt", "http://127.0.0.1:9/v1 many\n")),
                   "--model", "m", "--out", str(t / "o")], 2, "eps.txt:1",
    ),
    "endpoints file that lists none": (
        lambda t: ["ladder", "--agent", "llm", "--arms", "raw", "--episodes", "1",
                   "--endpoints", str(_write(t, "eps.txt", "# nothing here\n")),
                   "--model", "m", "--out", str(t / "o")], 2, "lists no endpoint",
    ),
    "every endpoint refuses connections": (
        lambda t: ["ladder", "--agent", "llm", "--arms", "raw", "--episodes", "1", "--steps", "5",
                   "--base-url", "http://127.0.0.1:9/v1", "--base-url", "http://127.0.0.1:7/v1",
                   "--model", "m", "--out", str(t / "o")], 1, "no model endpoint can serve this run",
    ),
    "--shard out of range": (
        lambda t: ["ladder", "--agent", "scripted:perfect", "--shard", "4/3", "--out", str(t / "o")],
        2, "out of range",
    ),
    "--shard with no episodes": (
        lambda t: ["ladder", "--agent", "scripted:perfect", "--episodes", "2", "--shard", "3/3",
                   "--out", str(t / "o")], 2, "holds no episodes",
    ),
    "--shard not I/N": (
        lambda t: ["run", "--episodes", str(t / "e.json"), "--out", str(t / "o"), "--shard", "half"],
        2, "not I/N",
    ),
    "--ray where no cluster answers": (
        lambda t: ["ladder", "--agent", "scripted:perfect", "--ray", "127.0.0.1:9", "--out", str(t / "o")],
        2, "no Ray cluster answers",
    ),
    "--ray for the tool harness": (
        lambda t: ["tools", "--agent", "scripted:perfect", "--ray", "local", "--out", str(t / "o")],
        2, "runs locally",
    ),
    "merge, a source that is not a run directory": (
        lambda t: ["merge", str(t / "out"), str(t)], 2, "is not a run directory",
    ),
    "tau2 run with several endpoints": (
        lambda t: ["tau2", "run", "--out", str(t / "o"), "--base-url", "http://127.0.0.1:9/v1",
                   "--base-url", "http://127.0.0.1:7/v1", "--model", "m"], 2, "one endpoint",
    ),
    "proxy, an unknown rung": (
        lambda t: ["proxy", "--upstream", "http://127.0.0.1:9/v1", "--arm", "gate"], 2,
        "unknown rung 'gate'",
    ),
    "proxy, an upstream that is no URL": (
        lambda t: ["proxy", "--upstream", "localhost:8000"], 2, "--upstream must be",
    ),
    "proxy, a compiler it does not know": (
        lambda t: ["proxy", "--upstream", "http://x/v1", "--compiler", "gpt"], 2, "--compiler",
    ),
    "resume a v1 run with the paper schedule": (
        lambda t: ["ladder", *SCRIPTED, "--out", str(_v1_run(t))], 2, "--schedule v1",
    ),
    "proxy, a matcher it does not know": (
        lambda t: ["proxy", "--upstream", "http://x/v1", "--matcher", "vibes"], 2, "--matcher",
    ),
    "matchers, an unknown matcher": (lambda t: ["matchers", "--matcher", "vibes"], 2, "--matcher"),
    "matchers, an unknown tier": (lambda t: ["matchers", "--tiers", "0,7"], 2, "--tiers"),
    "matchers, tier 2 without rewrites": (lambda t: ["matchers", "--tiers", "2"], 2, "--rewrites"),
    "matchers, a binary rewrite cache": (
        lambda t: ["matchers", "--tiers", "2", "--rewrites", str(_write(t, "r.json", BINARY))],
        2, "r.json",
    ),
    "matchers, a JSON path under a file": (
        lambda t: ["matchers", "--json", str(_write(t, "f", "x") / "m.json")], 2, "--json",
    ),
    "proxy, a journal that is not a database": (
        lambda t: ["proxy", "--upstream", "http://x/v1", "--db", str(_write(t, "j.db", BINARY))],
        2, "not a usable SQLite database",
    ),
    "proxy-status, no proxy there": (
        lambda t: ["proxy-status", "--url", "http://127.0.0.1:9"], 1, "no taskgate proxy answers",
    ),
}  # fmt: skip


def _torn_episodes(tmp: Path) -> Path:
    run = _run_dir(tmp)
    data = (run / "episodes.jsonl").read_bytes()
    (run / "episodes.jsonl").write_bytes(data[: len(data) // 2])
    return run


def _binary_log(tmp: Path) -> Path:
    run = _run_dir(tmp)
    (run / "log.jsonl").write_bytes(BINARY)
    return run


def check(result: Result, code: int, culprit: str) -> None:
    assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    errors = [
        ln for ln in result.stderr.splitlines() if ln.startswith(("Error:", "taskgate: error"))
    ]
    assert len(errors) == 1, result.stderr
    assert culprit in errors[0], errors[0]


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_gets_one_line(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.startswith("tau2"):
        pytest.importorskip("tau2", reason="the tau2 cases need the tau2 extra")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    setup, code, culprit = CASES[case]
    args = setup(tmp_path)
    before = sorted(p for p in tmp_path.rglob("*"))
    result = CliRunner().invoke(app, args)
    check(result, code, culprit)
    if code == 2:  # a usage error writes nothing
        new = [p for p in tmp_path.rglob("*") if p not in before]
        assert not [p for p in new if p.is_file()], new


def test_an_output_files_missing_folders_are_made(tmp_path: Path) -> None:
    """Every output file's folder is made when missing, as ``--out`` makes its directory."""
    rows = tmp_path / "runs" / "new" / "rows.json"
    result = CliRunner().invoke(app, ["ladder", *SCRIPTED, "--out", str(tmp_path / "o"),
                                      "--json", str(rows)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(rows.read_text(encoding="utf-8"))
    episodes = tmp_path / "a" / "b" / "episodes.json"
    assert (
        CliRunner().invoke(app, ["generate", "--out", str(episodes), "--steps", "5"]).exit_code == 0
    )
    assert episodes.is_file()
