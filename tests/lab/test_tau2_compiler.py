"""The rule compiler through a real HTTP server: validated ruleset, one re-ask, battery score."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from conftest import TAU2_DATA
from taskgate import ChatClient, Endpoint, FakeServer, script
from taskgate.cli import app
from taskgate.lab.experiments.tau2.battery import battery, run_battery
from taskgate.lab.experiments.tau2.compiler import compile_prompt, compile_ruleset
from taskgate.lab.experiments.tau2.rules import (
    Ruleset,
    load_ruleset,
    named_ruleset,
    reference_ruleset,
)

DATA = TAU2_DATA


def compile_with(replies: list[str]) -> tuple[Ruleset | None, str | None, FakeServer]:
    with FakeServer(script(replies)) as srv:

        async def go() -> tuple[Ruleset | None, str | None]:
            client = ChatClient(Endpoint(base_url=srv.base_url, model="fake"))
            try:
                return await compile_ruleset(client, (DATA / "policy.md").read_text())
            finally:
                await client.close()

        rules, problem = asyncio.run(go())
    return rules, problem, srv


def test_a_compiled_ruleset_is_validated_and_interchangeable() -> None:
    reference = reference_ruleset()
    rules, problem, srv = compile_with(
        ['{"rule": [{"id": "x", "tool": "fly"}]}', reference.model_dump_json()]
    )
    assert problem is None and rules == reference
    assert "could not be used" in srv.requests[1]["messages"][-1]["content"]  # the re-ask
    prompt = srv.requests[0]["messages"][0]["content"]
    assert (DATA / "policy.md").read_text().strip() in prompt and "reservation.any_flown" in prompt
    db = json.loads((DATA / "db.json").read_text())
    assert all(o.passed for o in run_battery(rules, db, battery("pre-audit")))


def test_an_unusable_compile_says_why() -> None:
    rules, problem, _ = compile_with(
        [
            "no rules today",
            '{"rule": [{"id": "x", "tool": "cancel_reservation", "when": ["moon.phase"], "reason": "r"}]}',
        ]
    )
    assert rules is None and problem is not None and "moon.phase" in problem


def test_json_rulesets_load_like_toml(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(reference_ruleset().model_dump_json())
    assert load_ruleset(path) == reference_ruleset()


def test_prompt_names_every_tool_and_fact() -> None:
    prompt = compile_prompt("P")
    assert "send_certificate" in prompt and "args.unknown_payments" in prompt


def test_cli_compile_against_an_endpoint(tmp_path: Path) -> None:
    out = tmp_path / "compiled.json"
    post = named_ruleset("post-audit")  # the model "compiles" the post-audit ruleset
    with FakeServer(script([post.model_dump_json()])) as srv:
        result = CliRunner().invoke(
            app,
            ["tau2", "compile-rules", "--out", str(out), "--policy", str(DATA / "policy.md"),
             "--db", str(DATA / "db.json"), "--base-url", srv.base_url, "--model", "fake"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "compiled 16 rules" in result.output and "battery: 33/33" in result.output
    assert load_ruleset(out) == post
