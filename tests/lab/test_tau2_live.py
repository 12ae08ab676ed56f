"""Live runs on tau2's own orchestrator, agent, user simulator and evaluator, against a scripted
agent and user served over loopback by the fake server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import TAU2_DATA

pytest.importorskip("tau2")

from typer.testing import CliRunner

from taskgate.cli import app
from taskgate.errors import TaskgateError
from taskgate.lab.experiments.tau2.analysis import ArmReport, markdown, paired_delta, run_report
from taskgate.lab.experiments.tau2.live import (
    LiveConfig,
    Role,
    load_task_file,
    read_simulations,
    run_live,
)
from taskgate.lab.experiments.tau2.rules import reference_ruleset
from taskgate.lab.experiments.tau2.scripted import cancelling_responder
from taskgate.lab.experiments.tau2.transcripts import load_results
from taskgate.lab.progress import Progress
from taskgate.llm.fake import FakeServer

DATA = TAU2_DATA
pytestmark = pytest.mark.slow  # tau2's orchestrator and evaluator, end to end
# task 1: the user asks to cancel Q69X3R, which qualifies under no cancellation branch; the gold
# trajectory only reads, so any cancellation fails the benchmark's DB check
TARGETS = {"raj_sanchez_7340": "Q69X3R"}


def task_one() -> list[object]:
    return [t for t in load_task_file(DATA / "tasks.json") if t.id == "1"]


@pytest.fixture(scope="module")
def four_arms(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("live")
    with FakeServer(cancelling_responder(TARGETS)) as srv:
        role = Role.openai_compatible(srv.base_url, "fake")
        progress = Progress()
        run_live(
            LiveConfig(role, role, max_steps=30), task_one(), reference_ruleset(), out, progress
        )
    assert progress.done == 4 and progress.failed == 0
    return out


def test_each_rung_does_what_it_says_and_tau2_scores_it(four_arms: Path) -> None:
    report = run_report(four_arms, reference_ruleset(), DATA / "db.json")
    reports, deltas = report.arms, report.deltas
    by = {r.arm: r for r in reports}
    assert [r.arm for r in reports] == ["ungated", "state-block", "advisory", "gated"]
    # tau2's evaluator: the executed cancellation fails the DB check; the vetoed one passes
    assert {a: r.pass_k()[1] for a, r in by.items()} == {
        "ungated": 0.0, "state-block": 0.0, "advisory": 0.0, "gated": 1.0
    }  # fmt: skip
    assert by["ungated"].violating_writes == 1 and by["ungated"].split == {"extra-only": 1}
    assert (by["ungated"].catchable, by["gated"].catchable) == (1, 0)
    assert by["gated"].refusals == 2 and by["gated"].violating_writes == 0
    assert by["advisory"].refusals == 1 and by["advisory"].violating_writes == 1  # overridden
    assert by["state-block"].state_blocks == 2 and by["state-block"].refusals == 0
    gated = {d.metric: d for d in deltas if d.arm == "gated"}
    assert (gated["pass^1"].value, gated["wrongful"].value) == (1.0, -1.0)
    assert {r.terminations["user_stop"] for r in reports} == {1}
    table = markdown(report)
    assert "| gated | 1.000 | 0.000 (0/1) | 0 / 0 / 0 | 2 in 1 ep. | 0 |" in table
    assert "| gold overblock | 0/0 " in table  # task 1's gold only reads


def test_the_refusal_is_an_ordinary_tool_error_in_the_transcript(four_arms: Path) -> None:
    (sim,) = load_results(four_arms / "gated.json").simulations
    refusals = [m for m in sim.messages if m.role == "tool" and m.error]
    assert len(refusals) == 2
    assert (refusals[0].content or "").startswith(
        "Refused by the policy gate -- rule cancel-eligibility"
    )


def test_a_rerun_resumes_and_other_settings_are_refused(four_arms: Path) -> None:
    before = {a: len(read_simulations(four_arms / f"{a}.jsonl")) for a in ("ungated", "gated")}
    dead = Role.openai_compatible("http://127.0.0.1:9/v1", "fake")  # served elsewhere: same run
    progress = Progress()
    run_live(
        LiveConfig(dead, dead, max_steps=30), task_one(), reference_ruleset(), four_arms, progress
    )
    assert progress.skipped == 4 and progress.total == 0  # nothing left to run: no call made
    assert {a: len(read_simulations(four_arms / f"{a}.jsonl")) for a in before} == before
    with pytest.raises(TaskgateError, match="max_steps"):
        run_live(LiveConfig(dead, dead, max_steps=5), task_one(), reference_ruleset(), four_arms)


def test_a_dead_endpoint_leaves_simulations_for_a_rerun(tmp_path: Path) -> None:
    closed = Role.openai_compatible("http://127.0.0.1:9/v1", "fake")  # nothing listens there
    dead = Role(closed.model, {**closed.args, "num_retries": 0})
    progress = Progress()
    config = LiveConfig(dead, dead, arms=("gated",), max_steps=30)
    run_live(config, task_one(), reference_ruleset(), tmp_path, progress)
    assert progress.failed == 1 and "Connection error" in progress.failures[0]
    assert read_simulations(tmp_path / "gated.jsonl") == []
    with FakeServer(cancelling_responder(TARGETS)) as srv:
        live = Role.openai_compatible(srv.base_url, "fake")
        config = LiveConfig(live, live, arms=("gated",), max_steps=30)
        run_live(config, task_one(), reference_ruleset(), tmp_path)
    assert len(read_simulations(tmp_path / "gated.jsonl")) == 1


def test_a_torn_last_line_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "gated.jsonl"
    path.write_text('{"task_id": "1", "trial": 0}\n{"task_id": "2", "tri')
    assert read_simulations(path) == [{"task_id": "1", "trial": 0}]
    assert path.read_text() == '{"task_id": "1", "trial": 0}\n'


def test_unknown_arms_and_bad_counts_are_named() -> None:
    role = Role("openai/x")
    with pytest.raises(TaskgateError, match="enforced"):
        LiveConfig(role, role, arms=("enforced",))
    with pytest.raises(TaskgateError, match="trials"):
        LiveConfig(role, role, trials=0)


def test_paired_seeds_are_tau2s_and_extend_with_more_trials() -> None:
    role = Role("openai/x")
    assert LiveConfig(role, role, trials=4).seeds()[:2] == LiveConfig(role, role, trials=2).seeds()


def report_of(arm: str, success: dict[tuple[str, int], bool]) -> ArmReport:
    r = ArmReport(arm)
    r.success = dict(success)
    r.wrongful = {k: not v for k, v in success.items()}
    return r


def test_pass_k_is_tau2s_estimator() -> None:
    r = report_of("x", {("a", 0): True, ("a", 1): True, ("a", 2): True, ("a", 3): False})
    assert r.pass_k() == {1: 0.75, 2: 0.5, 3: 0.25, 4: 0.0}


def test_paired_bootstrap_interval() -> None:
    tasks = [str(i) for i in range(40)]
    base = report_of("ungated", {(t, 0): i % 2 == 0 for i, t in enumerate(tasks)})
    same = paired_delta(report_of("gated", base.success), base, "pass^1")
    assert (same.value, same.low, same.high, same.pairs) == (0.0, 0.0, 0.0, 40)
    # ten of the twenty failing tasks flip to passes: +0.25, an interval around it excluding 0
    better = {k: v or int(k[0]) % 4 == 1 for k, v in base.success.items()}
    d = paired_delta(report_of("gated", better), base, "pass^1")
    assert d.value == 0.25 and 0.0 < d.low < 0.25 < d.high < 0.5
    assert paired_delta(report_of("gated", better), base, "wrongful").value == -0.25
    with pytest.raises(TaskgateError, match="share no"):
        paired_delta(report_of("gated", {("z", 0): True}), base, "pass^1")


def test_cli_run_and_report(tmp_path: Path) -> None:
    out, rows = tmp_path / "run", tmp_path / "report.json"
    with FakeServer(cancelling_responder(TARGETS)) as srv:
        result = CliRunner().invoke(
            app,
            ["tau2", "run", "--out", str(out), "--tasks", str(DATA / "tasks.json"),
             "--task-ids", "1", "--arms", "ungated,gated", "--max-steps", "30",
             "--base-url", srv.base_url, "--model", "fake", "--json", str(rows),
             "--disable-thinking", "--max-tokens", "300"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    sent = srv.requests[0]
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}
    assert (sent["max_tokens"], sent["temperature"], sent["model"]) == (300, 0.0, "fake")
    assert "| Paired delta, gated | +1.000 [+1.000, +1.000] |" in result.output
    data = json.loads(rows.read_text())
    assert [a["arm"] for a in data["arms"]] == ["ungated", "gated"]
    again = CliRunner().invoke(app, ["tau2", "report", str(out), "--db", str(DATA / "db.json")])
    assert again.exit_code == 0 and "| gated | 1.000 |" in again.output
    # the arm's results file is tau2's format: the transcript replay reads it
    replay = CliRunner().invoke(
        app,
        ["tau2", "replay", "--results", str(out / "ungated.json"), "--db", str(DATA / "db.json")],
    )
    assert json.loads(replay.output)["executed_violating_writes"] == 1


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--arms", "ungated,enforced"], "enforced"),
        (["--task-ids", "1,999"], "999"),
        (["--tasks", "{DATA}/policy.md"], "policy.md"),  # resolved in the test: DATA may be absent
        (["--trials", "0"], "trials"),
    ],
)
def test_cli_bad_input_is_named(tmp_path: Path, args: list[str], named: str) -> None:
    args = [str(DATA / a.removeprefix("{DATA}/")) if a.startswith("{DATA}/") else a for a in args]
    base = ["tau2", "run", "--out", str(tmp_path / "o"), "--base-url", "http://127.0.0.1:9/v1"]
    result = CliRunner().invoke(app, [*base, "--model", "m", *args])
    assert result.exit_code == 2 and named in result.output


def test_cli_report_of_a_directory_that_is_no_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["tau2", "report", str(tmp_path)])
    assert result.exit_code == 2 and "config.json" in result.output


def test_a_report_under_another_ruleset_says_so(four_arms: Path) -> None:
    rules = reference_ruleset()
    fewer = rules.model_copy(
        update={"rule": tuple(r for r in rules.rule if r.id != "cancel-flown")}
    )
    report = run_report(four_arms, fewer, DATA / "db.json")
    assert not report.ruleset_of_run and "other than the run's" in markdown(report)
    assert run_report(four_arms, rules, DATA / "db.json").ruleset_of_run


def test_an_arm_with_no_pair_yet_gets_no_delta(tmp_path: Path) -> None:
    with FakeServer(cancelling_responder(TARGETS)) as srv:
        role = Role.openai_compatible(srv.base_url, "fake")
        run_live(
            LiveConfig(role, role, ("gated",), max_steps=30),
            task_one(),
            reference_ruleset(),
            tmp_path,
        )
    closed = Role.openai_compatible("http://127.0.0.1:9/v1", "fake")
    dead = Role(closed.model, {**closed.args, "num_retries": 0})
    progress = Progress()  # the ungated arm added later, while its endpoint is down
    run_live(
        LiveConfig(dead, dead, ("ungated",), max_steps=30),
        task_one(),
        reference_ruleset(),
        tmp_path,
        progress,
    )
    assert progress.failed == 1
    report = run_report(tmp_path, reference_ruleset(), DATA / "db.json")
    assert [(r.arm, r.episodes) for r in report.arms] == [("ungated", 0), ("gated", 1)]
    assert report.deltas == []
