"""The CLI catches a wrong endpoint before the run, each in one line with the fix: a base URL
without /v1, a model name the server does not list (the nearest named), an unknown command (the
nearest named); and ``taskgate fake-server`` serves a set-up with no model."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("aiohttp", reason="needs the llm extra")

from taskgate.cli import app
from taskgate.llm.fake import FakeServer, protocol_responder

LADDER = ["ladder", "--agent", "llm", "--arms", "raw", "--steps", "5", "--episodes", "1"]


def ladder(tmp: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*LADDER, *args, "--out", str(tmp / "o")])
    return result.exit_code, result.output


def test_a_base_url_without_v1_is_one_line_with_the_fix(tmp_path: Path) -> None:
    with FakeServer(protocol_responder, models=("fake",)) as srv:
        bare = srv.base_url.removesuffix("/v1")
        code, out = ladder(tmp_path, "--base-url", bare, "--model", "fake")
    assert code == 1, out
    assert f"try --base-url {bare}/v1" in out and "Traceback" not in out
    assert not (tmp_path / "o" / "log.jsonl").exists()


def test_a_model_the_server_does_not_list_is_one_line_naming_the_nearest(tmp_path: Path) -> None:
    with FakeServer(protocol_responder, models=("smollm2-135m", "qwen3-8b")) as srv:
        code, out = ladder(tmp_path, "--base-url", srv.base_url, "--model", "smollm2-135")
    assert code == 1, out
    assert "serves no model named 'smollm2-135'" in out and "did you mean 'smollm2-135m'" in out


def test_the_listed_model_runs(tmp_path: Path) -> None:
    with FakeServer(protocol_responder, models=("fake",)) as srv:
        code, out = ladder(tmp_path, "--base-url", srv.base_url, "--model", "fake")
    assert code == 0, out


def test_an_unknown_command_names_the_nearest() -> None:
    result = CliRunner().invoke(app, ["laddr"])
    assert result.exit_code == 2 and "did you mean 'ladder'" in result.output


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_fake_server_serves_a_set_up_with_no_model(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskgate", "fake-server", "--port", str(port), "--model", "m1"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        banner = proc.stderr.readline() if proc.stderr else ""
        url = f"http://127.0.0.1:{port}/v1"
        assert url in banner
        for _ in range(50):
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as resp:
                    listed = json.load(resp)
                break
            except OSError:
                time.sleep(0.1)
        assert [m["id"] for m in listed["data"]] == ["m1"]
        code, out = ladder(tmp_path, "--base-url", url, "--model", "m1")
        assert code == 0, out
    finally:
        proc.terminate()
        proc.wait(10)
    taken = CliRunner().invoke(app, ["fake-server", "--port", str(port), "--responder", "carless"])
    assert taken.exit_code == 2 and "did you mean 'careless'" in taken.output


def test_the_ladders_help_shows_every_default() -> None:
    shown = CliRunner().invoke(app, ["ladder", "--help"], terminal_width=200).output
    assert "(10; 5 on the embedded model)" in shown
    assert "(16; 1 on the" in shown
