"""The PM-Bench adapter (Appendix I): the checkout, the intention record, the rungs' oracles on
the stand-in's tiny week, resumption, the table, the ledger scaffold, the command line, and (with
``PMBENCH_PATH``) a real checkout: the raw rung's prompts against the benchmark's own runner."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from taskgate.cli import app
from taskgate.errors import UsageError
from taskgate.lab.experiments.pmbench import (
    STANDIN,
    TINY_WEEK,
    IntentionRecord,
    Limits,
    LLMDueJudge,
    LLMIntentionCompiler,
    LLMPMAgent,
    Op,
    PMBenchError,
    PMConfig,
    PMRoles,
    ScriptedDueJudge,
    ScriptedIntentionCompiler,
    StepRecord,
    Week,
    ledger_runner,
    load_checkout,
    pmbench_table,
    run_pmbench,
    run_week,
    scripted_agent,
    selects,
)
from taskgate.lab.experiments.pmbench.coupling import PMBENCH_RUNGS, directives, refuse
from taskgate.lab.experiments.pmbench.experiment import read_run
from taskgate.lab.experiments.pmbench.record import checklist
from taskgate.lab.experiments.pmbench.report import figures
from taskgate.lab.experiments.pmbench.roles import lexical
from taskgate.lab.experiments.pmbench.testing import curious_responder, pmbench_responder
from taskgate.llm.client import ChatClient
from taskgate.llm.endpoint import Endpoint
from taskgate.llm.fake import FakeServer

RECORD_RUNGS = tuple(r for r in PMBENCH_RUNGS if r != "self-ledger")
NAMES = ("scripted:x", "scripted", "scripted")


def standin() -> Any:
    return load_checkout(STANDIN, TINY_WEEK)


def scripted_roles(agent: str) -> PMRoles:
    return PMRoles(scripted_agent(agent), ScriptedIntentionCompiler(), ScriptedDueJudge())


def run(agent: str, out: Path, rungs: tuple[str, ...] = RECORD_RUNGS, checkout: Any = None) -> Any:
    config = PMConfig(rungs=rungs)
    got = checkout or standin()
    asyncio.run(run_pmbench(got, config, out, lambda s: scripted_roles(agent), NAMES))
    return {r[0]: r[1:] for r in pmbench_table(out).body}


# -- the checkout ---------------------------------------------------------------------------


def test_a_path_that_is_not_a_checkout_is_named(tmp_path: Path) -> None:
    with pytest.raises(PMBenchError, match="no such directory"):
        load_checkout(tmp_path / "nowhere")
    with pytest.raises(PMBenchError, match=r"not a PM-Bench checkout \(no sim/pm_bench.py\)"):
        load_checkout(tmp_path)


def _checkout(tmp_path: Path, module: str, week: str | None = None) -> Path:
    (tmp_path / "sim").mkdir(parents=True)
    (tmp_path / "data").mkdir()
    (tmp_path / "sim" / "pm_bench.py").write_text(module)
    (tmp_path / "data" / "synthetic_week_v9.json").write_text(week or TINY_WEEK.read_text())
    return tmp_path


def test_a_module_that_fails_or_lacks_functions_is_named(tmp_path: Path) -> None:
    broken = _checkout(tmp_path / "a", "raise RuntimeError('no deps here')\n")
    with pytest.raises(PMBenchError, match="failed to import: RuntimeError: no deps here"):
        load_checkout(broken)
    exits = _checkout(tmp_path / "b", "raise SystemExit('bye')\n")
    with pytest.raises(PMBenchError, match="failed to import: SystemExit"):
        load_checkout(exits)
    thin = _checkout(tmp_path / "c", "def score_log(s, e): pass\n")
    with pytest.raises(PMBenchError, match=r"lacks DAILY_TASK_HEADER_LINES.*not the PM-Bench"):
        load_checkout(thin)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not a PM-Bench scenario"),
        ('{"days": []}', "no days"),
        ('{"days": [{"name": "Monday"}]}', "day 1 lacks a name, tasks or steps"),
        ('{"days": [{"name": "M", "tasks": [], "steps": [{"id": "s"}]}]}', "lacks id, time"),
    ],
)
def test_a_week_that_is_not_pmbench_json_is_named(tmp_path: Path, text: str, problem: str) -> None:
    week = tmp_path / "week.json"
    week.write_text(text)
    with pytest.raises(PMBenchError, match=problem):
        load_checkout(STANDIN, week)


def test_the_checkouts_validator_is_asked(tmp_path: Path) -> None:
    data = json.loads(TINY_WEEK.read_text())
    data["days"][0]["steps"][0]["options"] = ["A) only one"]
    week = tmp_path / "week.json"
    week.write_text(json.dumps(data))
    with pytest.raises(PMBenchError, match=r"1 validation error.*three options"):
        load_checkout(STANDIN, week)


def test_the_standin_says_it_is_not_pmbench() -> None:
    got = standin()
    assert got.version.startswith("sha256:")
    assert any("stand-in checkout, not PM-Bench" in w for w in got.warnings)
    assert got.first_days(1).days == 1 and got.days == 2


# -- the intention record -------------------------------------------------------------------


def test_the_record_applies_what_it_can_and_names_the_rest() -> None:
    record = IntentionRecord(["email"])
    problems = record.apply(
        [
            Op(op="add", text="Send the report", trigger="time", when="9:00"),
            Op(op="add", text="Forward the invoice", trigger="channel", when="Email"),
            Op(op="add", text="Water", trigger="channel", when="fax"),
            Op(op="add", text="Pill", trigger="cue", when="breakfast", day="every day"),
            Op(op="retime", id="i1", when="10:30", day="Tuesday"),
            Op(op="cancel", id="i9"),
            Op(op="recue", id="i2", trigger="time", when="10:00"),
        ],
        "Monday",
    )
    assert [i.id for i in record.items] == ["i1", "i2", "i3"]
    assert record.get("i1") is not None and record.get("i1").when == "10:30"  # type: ignore[union-attr]
    assert record.get("i1").day == "Tuesday"  # type: ignore[union-attr]
    assert record.get("i2").when == "email"  # type: ignore[union-attr]
    assert len(problems) == 3 and "no intention 'i9'" in problems[1]
    assert record.apply([Op(op="cancel", id="i2"), Op(op="cancel", id="i2")], "Monday") == [
        "cancel: i2 is already cancelled"
    ]
    assert record.done(["i3", "i2"]) == ["i3"]
    record.new_day()  # every-day intentions are owed again
    assert record.get("i3").status == "pending"  # type: ignore[union-attr]
    shown = checklist(record, "Monday")
    assert "CANCELLED, do not do it: Forward the invoice" in shown
    assert "Notes for later days (not today):\n- Tuesday: Send the report (at 10:30)" in shown


def test_lexical_resolution_and_the_keyword_selector() -> None:
    record = IntentionRecord()
    record.apply(
        [
            Op(op="add", text="Send the weekly report", trigger="time", when="09:00"),
            Op(op="add", text="Forward the invoice", trigger="cue", when="email"),
        ],
        "Monday",
    )
    assert lexical("Send the report.", record, "Monday") == ("i1",)
    assert lexical("Make a cup of tea.", record, "Monday") == ()
    assert selects("Mum messages: call her at 11:00 instead.")
    assert selects("A note to self: on Tuesday, pay the rent.")
    assert not selects("You walk past the corner shop on your way to a meeting.")


def test_the_gates_decide_by_judgement_or_by_state() -> None:
    record = IntentionRecord()
    record.apply([Op(op="add", text="Water the plants", trigger="time", when="10:00")], "Monday")
    menu = {"task_1": "Water the plants.", "task_2": "Make tea."}
    assert refuse("enforcement-judgement", "task_1", menu, frozenset(), {}, record, "Monday")
    assert not refuse(
        "enforcement-judgement", "task_1", menu, frozenset({"task_1"}), {}, record, "Monday"
    )
    none = frozenset[str]()
    assert not refuse("enforcement", "task_1", menu, none, None, record, "Monday")
    assert not refuse("enforcement", "task_2", menu, none, None, record, "Monday")
    record.apply([Op(op="cancel", id="i1")], "Monday")
    r = refuse("enforcement", "task_1", menu, none, None, record, "Monday")  # lexical
    assert r is not None and "already cancelled" in r.why
    # on a rung with a matcher its resolution decides: a handle it resolved to no intention
    # passes, whatever its words
    assert not refuse("enforcement", "task_1", menu, none, {"task_1": ()}, record, "Monday")
    assert refuse("enforcement", "task_1", menu, none, {"task_1": ("i1",)}, record, "Monday")
    lines = directives(["task_2"], [], menu, IntentionRecord(), "Monday", ())
    assert lines == ["DUE NOW: task_2 (Make tea.)"]


# -- oracles on the stand-in's tiny week ----------------------------------------------------


def test_a_perfect_agent_scores_one_on_every_rung(tmp_path: Path) -> None:
    rows = run("scripted:perfect", tmp_path)
    assert len(rows) == 5
    for name, row in rows.items():
        f1, _, hit, miss, fa, uv, queries, pr, _, _, failed = row
        assert (f1, hit, miss, fa, uv, failed) == ("1.00", "100", "0", "0", "0", "0"), name
        assert queries == "4"  # the clock three times, the email channel once
        if name in ("directive gate", "enforcement gate (judgement)", "enforcement gate (state)"):
            assert pr == "1.00/1.00"
    assert rows["enforcement gate (state)"][8] == "0.0/0.0"


def test_an_agent_that_never_selects_misses_everything(tmp_path: Path) -> None:
    rows = run("scripted:none", tmp_path, ("raw", "enforcement"))
    assert rows["raw transcript"][:5] == ("0.00", "--", "0", "100", "0")


def test_enforcing_a_perfect_matcher_demands_evidence(tmp_path: Path) -> None:
    """An agent that selects the whole menu and never reads the clock or a channel: the gate
    bound to a perfect matcher's judgement admits only what the step text shows due (the two
    pills and the milk) and refuses the four due selections made without their clock or email
    reading, as Appendix I's gate does; the state-bound gate refuses only the cancelled one."""
    rows = run("scripted:eager", tmp_path)
    raw, judged, state = (
        rows["raw transcript"],
        rows["enforcement gate (judgement)"],
        rows["enforcement gate (state)"],
    )
    assert raw[2] == "100" and int(raw[4]) > 0 and int(raw[5]) > 0  # FA and update violations
    assert judged[2:6] == ("43", "57", "0", "0")  # 3 of 7 hit, nothing false
    refused, refused_due = judged[8].split("/")
    assert float(refused) > int(raw[4]) and refused_due == "4.0"  # each refused again later
    # the state-bound gate refuses the cancelled intention, never a due one
    assert int(state[5]) < int(raw[5]) and state[8].endswith("/0.0")


def test_directives_reach_an_agent_that_obeys_them(tmp_path: Path) -> None:
    rows = run("scripted:obedient", tmp_path, ("checklist", "directive"))
    assert rows["text checklist"][0] == "0.00"  # nothing told: nothing selected
    assert rows["directive gate"][0] == "1.00"


def test_the_runs_files_hold_the_benchmarks_own_log(tmp_path: Path) -> None:
    run("scripted:perfect", tmp_path, ("raw",))
    got = read_run(tmp_path / "runs" / "raw.t0.jsonl")
    assert got is not None
    _, steps, end = got
    assert end.steps == len(steps) == 6 and end.summary["hit"] == 7
    lines = (tmp_path / "logs" / "raw.t0.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["record_type"] == "run_metadata"
    assert [json.loads(x) for x in lines[1:]] == [s.row() for s in steps]
    assert sorted(steps[2].task_ids) == ["buy_milk", "forward_invoice"]
    assert steps[2].state_queries == {"email": 1}


def test_a_run_resumes_and_refuses_other_settings(tmp_path: Path) -> None:
    run("scripted:perfect", tmp_path, ("raw", "checklist"))
    (tmp_path / "runs" / "checklist.t0.jsonl").write_text('{"kind": "start"')  # torn
    config = PMConfig(rungs=("raw", "checklist"))
    calls: list[str] = []

    def roles(spec: Any) -> PMRoles:
        calls.append(spec.name)
        return scripted_roles("scripted:perfect")

    progress = asyncio.run(run_pmbench(standin(), config, tmp_path, roles, NAMES))
    assert calls == ["checklist.t0"] and progress.skipped == 1
    with pytest.raises(UsageError, match="other settings"):
        asyncio.run(run_pmbench(standin(), config, tmp_path, roles, ("llm:m", "llm", "llm")))
    assert pmbench_table(tmp_path).body[1][1] == "1.00"


def test_sampled_runs_report_mean_and_sd(tmp_path: Path) -> None:
    config = PMConfig(rungs=("raw",), greedy=False, samples=3, temperature=0.5)
    asyncio.run(
        run_pmbench(
            standin(), config, tmp_path, lambda s: scripted_roles("scripted:perfect"), NAMES
        )
    )
    table = pmbench_table(tmp_path)
    assert "Set-F1 T=0.5" in table.header
    assert table.body[0][1:4] == ("--", "1.00±0.00", "100±0")
    assert table.body[0][-2] == "3"


def test_invalid_replies_are_reasked_then_the_step_fails(tmp_path: Path) -> None:
    class Broken:
        async def act(self, messages: Any, schema: Any, view: Any) -> str:
            return "I would rather not answer in JSON."

    week = Week(standin())
    steps: list[StepRecord] = []
    asyncio.run(run_week(week, "raw", PMRoles(Broken()), steps.append, Limits(max_invalid=1)))
    assert all(s.failed == "the reply is not a JSON object" and s.invalid == 2 for s in steps)
    assert all(s.task_ids == [] and s.choice == "NONE" for s in steps)


def test_endless_queries_end_the_step(tmp_path: Path) -> None:
    class Asker:
        async def act(self, messages: Any, schema: Any, view: Any) -> str:
            return '{"action": "check_time", "choice": "NONE", "task_ids": [], "channel": "clock"}'

    steps: list[StepRecord] = []
    asyncio.run(
        run_week(Week(standin()), "raw", PMRoles(Asker()), steps.append, Limits(max_queries=3))
    )
    assert steps[0].failed == "more than 3 state queries at one step"
    assert steps[0].state_queries == {"clock": 4}


class Recording:
    """A scripted agent that keeps the last message of each call, by step."""

    def __init__(self, agent: str) -> None:
        self.agent = scripted_agent(agent)
        self.seen: dict[str, list[str]] = {}

    async def act(self, messages: Any, schema: Any, view: Any) -> str:
        self.seen.setdefault(view.step_id, []).append(messages[-1]["content"])
        return await self.agent.act(messages, schema, view)


def play(rung: str, agent: Any) -> list[StepRecord]:
    steps: list[StepRecord] = []
    roles = PMRoles(agent, ScriptedIntentionCompiler(), ScriptedDueJudge())
    asyncio.run(run_week(Week(standin()), rung, roles, steps.append, Limits()))
    return steps


def test_a_receipt_takes_a_done_intention_off_the_checklist() -> None:
    agent = Recording("scripted:perfect")
    play("checklist", agent)
    assert "Take the pill at breakfast (when: breakfast)" in agent.seen["m1"][0]
    assert "Take the pill at breakfast" not in agent.seen["m2"][0]  # executed, off the menu
    assert (
        "Notes for later days (not today):\n- Tuesday: Pay the rent at 12:00" in agent.seen["m4"][0]
    )
    assert "Pay the rent at 12:00 (at 12:00)" in agent.seen["t1"][0]


def test_an_announced_handle_stays_due_for_one_step_and_refusals_are_reported() -> None:
    class LateOnce:
        """Ignores the first step, then obeys."""

        def __init__(self) -> None:
            self.inner = Recording("scripted:obedient")

        async def act(self, messages: Any, schema: Any, view: Any) -> str:
            if view.step_id == "m1":
                self.inner.seen.setdefault("m1", []).append(messages[-1]["content"])
                return '{"action": "choose", "choice": "A", "task_ids": [], "channel": "NONE"}'
            return await self.inner.act(messages, schema, view)

    late = LateOnce()
    steps = play("directive", late)
    pill = next(h for h, t in steps_menu(late.inner.seen["m1"][0]).items() if t == "Take the pill.")
    assert f"DUE NOW: {pill} (Take the pill.)" in late.inner.seen["m1"][0]
    assert f"STILL DUE: {pill} (Take the pill.)" in late.inner.seen["m2"][0]
    assert "pill_mon" in steps[1].task_ids  # late, inside the benchmark's window
    assert all("STILL DUE" not in m for m in late.inner.seen["m3"])
    eager = Recording("scripted:eager")
    refused = play("enforcement-judgement", eager)
    assert refused[0].refused and "REFUSED at the previous step: " in eager.seen["m2"][0]
    reads = Recording("scripted:obedient")
    play("directive", reads)
    assert "you have not read the clock" in reads.seen["m2"][0]
    assert "you have not read the clock" not in reads.seen["m2"][-1]  # after the reading


def steps_menu(prompt: str) -> dict[str, str]:
    return dict(re.findall(r"^- (task_\d+): (.+)$", prompt, re.MULTILINE))


def test_matcher_precision_and_recall_count_announcements_against_the_due_set() -> None:
    def rec(due: list[str], announced: list[str]) -> StepRecord:
        return StepRecord(
            day="M", step_id="s", choice="A", task_ids=[], due=due, announced=announced
        )

    fig = figures({"set_tp": 1}, [rec(["a", "b"], ["a", "c", "d"]), rec(["e"], [])])
    assert fig.precision == 1 / 3 and fig.recall == 1 / 3
    silent = figures({}, [rec(["a"], [])])
    assert silent.precision is None and silent.recall == 0.0


# -- model roles through a real HTTP server -------------------------------------------------


def test_the_llm_roles_call_the_endpoint_with_the_benchmarks_schema(tmp_path: Path) -> None:
    with FakeServer(pmbench_responder) as server:

        async def go() -> None:
            async with ChatClient(Endpoint(server.base_url, "m")) as client:
                roles = PMRoles(
                    LLMPMAgent(client, 0.7, 11), LLMIntentionCompiler(client), LLMDueJudge(client)
                )
                steps: list[StepRecord] = []
                await run_week(Week(standin()), "directive", roles, steps.append, Limits())
                assert len(steps) == 6 and all(s.failed is None for s in steps)

        asyncio.run(go())
        agent = [r for r in server.requests if "response_format" in r]
        compile_ = [r for r in server.requests if "TEXT (" in r["messages"][-1]["content"]]
        assert len(agent) == 6 and agent[0]["temperature"] == 0.7 and agent[0]["seed"] == 11
        schema = agent[0]["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["channel"]["enum"] == ["NONE", "clock", "email"]
        assert len(compile_) >= 3  # the daily header, two morning plans, selected vignettes


def test_the_ledger_rung_runs_the_checkouts_scaffold(tmp_path: Path) -> None:
    with FakeServer(pmbench_responder) as server:
        checkout = standin()
        ledger = ledger_runner(checkout, Endpoint(server.base_url, "m"))
        config = PMConfig(rungs=("self-ledger",))
        asyncio.run(run_pmbench(checkout, config, tmp_path, lambda s: None, NAMES, ledger))  # type: ignore[arg-type,return-value]
        assert server.requests and server.requests[0]["temperature"] == 0.0
    rows = {r[0]: r[1:] for r in pmbench_table(tmp_path).body}
    assert rows["self-written ledger"][:4] == ("0.00", "--", "0", "100")
    assert (tmp_path / "ledger" / "self-ledger.t0" / "run.jsonl").is_file()


def test_the_ledger_rung_plays_the_cut_week(tmp_path: Path) -> None:
    with FakeServer(pmbench_responder) as server:
        checkout = standin().first_days(1)
        ledger = ledger_runner(checkout, Endpoint(server.base_url, "m"))
        config = PMConfig(rungs=("self-ledger", "raw"))
        roles = lambda s: scripted_roles("scripted:none")  # noqa: E731
        progress = asyncio.run(run_pmbench(checkout, config, tmp_path, roles, NAMES, ledger))
    assert progress.failed == 0
    got = read_run(tmp_path / "runs" / "self-ledger.t0.jsonl")
    assert got is not None and got[2].steps == 4  # Monday only


def test_a_checkout_that_fails_mid_run_is_one_failed_run(tmp_path: Path) -> None:
    root = tmp_path / "co"
    shutil.copytree(STANDIN, root)
    module = root / "sim" / "pm_bench.py"
    module.write_text(
        module.read_text() + "\n\ndef compute_due_now(*a, **k):\n    raise KeyError('d1_s9')\n"
    )
    checkout = load_checkout(root, root / "data" / "tiny_week.json")

    def scripted(spec: Any) -> PMRoles:
        return scripted_roles("scripted:none")

    progress = asyncio.run(
        run_pmbench(
            checkout,
            PMConfig(rungs=("raw",)),
            tmp_path / "o",
            scripted,
            NAMES,
        )
    )
    assert progress.failed == 1 and progress.failures[0] == "raw.t0: KeyError: 'd1_s9'"
    assert not (tmp_path / "o" / "runs" / "raw.t0.jsonl").exists()
    module.write_text(
        module.read_text() + "\n\ndef build_updates_by_day(s):\n    return len(s) + None\n"
    )
    broken = load_checkout(root, root / "data" / "tiny_week.json")
    with pytest.raises(PMBenchError, match="failed to set up the week: TypeError"):
        asyncio.run(run_pmbench(broken, PMConfig(rungs=("raw",)), tmp_path / "p", scripted, NAMES))


def test_task_ids_that_are_not_handles_are_an_invalid_reply() -> None:
    class Nested:
        async def act(self, messages: Any, schema: Any, view: Any) -> str:
            return (
                '{"action": "choose", "choice": "A", "task_ids": [["task_1"]], "channel": "NONE"}'
            )

    steps: list[StepRecord] = []
    asyncio.run(run_week(Week(standin()), "raw", PMRoles(Nested()), steps.append, Limits()))
    assert steps[0].failed == "task_ids must be a list of task_N handles"


def test_a_scaffold_that_fails_is_one_failed_run(tmp_path: Path) -> None:
    root = tmp_path / "co"
    shutil.copytree(STANDIN, root)
    (root / "sim" / "run_todo_ledger.py").write_text("raise SystemExit('Exceeded max retries.')\n")
    checkout = load_checkout(root, root / "data" / "tiny_week.json")
    ledger = ledger_runner(checkout, Endpoint("http://127.0.0.1:9/v1", "m"))
    progress = asyncio.run(
        run_pmbench(
            checkout,
            PMConfig(rungs=("self-ledger",)),
            tmp_path / "out",
            lambda s: None,
            NAMES,
            ledger,
        )  # type: ignore[arg-type,return-value]
    )
    assert progress.failed == 1 and "exited 1: Exceeded max retries." in progress.failures[0]


# -- the command line -----------------------------------------------------------------------


def test_the_command_runs_and_reports(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["pmbench", "--pmbench", str(STANDIN), "--scenario", str(TINY_WEEK)]
    roles = ["--agent", "scripted:perfect", "--compiler", "scripted", "--matcher", "scripted"]
    got = runner.invoke(app, [*args, *roles, "--out", str(tmp_path)])
    assert got.exit_code == 0, got.output
    assert "| enforcement gate (state) | 1.00 |" in got.output
    assert "stand-in checkout, not PM-Bench" in got.output
    again = runner.invoke(app, ["pmbench-report", str(tmp_path)])
    assert again.exit_code == 0 and "| raw transcript | 1.00 |" in again.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--pmbench", "/no/such/dir"], "no such directory"),
        (["--pmbench", "."], "not a PM-Bench checkout"),
        (["--pmbench", str(STANDIN), "--arms", "raw,bogus"], "unknown PM-Bench rung 'bogus'"),
        (
            ["--pmbench", str(STANDIN), "--arms", "self-ledger", "--agent", "scripted:none"],
            "needs --agent llm",
        ),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    got = CliRunner().invoke(app, ["pmbench", "--out", str(tmp_path / "o"), *args])
    assert got.exit_code != 0 and says in got.output and "Traceback" not in got.output


def test_no_checkout_given_says_how(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PMBENCH_PATH", raising=False)
    got = CliRunner().invoke(app, ["pmbench", "--out", str(tmp_path)])
    assert got.exit_code != 0 and "PMBENCH_PATH" in got.output
    bad = CliRunner().invoke(app, ["pmbench-report", str(tmp_path)])
    assert bad.exit_code != 0 and "not a PM-Bench run directory" in bad.output


# -- a real checkout (PMBENCH_PATH) ---------------------------------------------------------

REAL = os.environ.get("PMBENCH_PATH")
needs_real = pytest.mark.skipif(
    not REAL,
    reason="PM-Bench has no licence and is not downloaded: set PMBENCH_PATH to a checkout "
    "(github.com/genglinliu/PMBench) to run the adapter against the real benchmark",
)


@needs_real
def test_a_perfect_agent_scores_one_on_the_released_week(tmp_path: Path) -> None:
    checkout = load_checkout(Path(str(REAL)))
    rows = run(
        "scripted:perfect", tmp_path, ("raw", "enforcement-judgement", "enforcement"), checkout
    )
    for row in rows.values():
        assert row[0] == "1.00" and row[2:6] == ("100", "0", "0", "0")
    raw = read_run(tmp_path / "runs" / "raw.t0.jsonl")
    assert raw is not None and raw[2].steps == 80 and raw[2].summary["hit"] == 81


@needs_real
def test_the_keyword_selector_sends_every_update_and_note_to_the_compiler() -> None:
    week = load_checkout(Path(str(REAL))).scenario
    update_steps = [s for d in week["days"] for s in d["steps"] if s.get("updates")]
    assert sum(len(s["updates"]) for s in update_steps) == 11
    assert all(selects(s["text"]) for s in update_steps)
    notes = [
        t["label"].rstrip(".").lower()
        for d in week["days"]
        for t in d["tasks"]
        if t.get("cross_day")
    ]
    texts = [s["text"] for d in week["days"] for s in d["steps"]]
    assert len(notes) == 7
    for note in notes:
        assert any(selects(t) for t in texts if note in t.lower()), note


@needs_real
def test_the_raw_rung_sends_the_benchmarks_own_prompts(tmp_path: Path) -> None:
    """The benchmark's runner and the raw rung, each against the same fake model on loopback:
    every call's messages are the same, byte for byte, over the whole week."""
    checkout = load_checkout(Path(str(REAL)))
    with FakeServer(curious_responder) as server:
        checkout.pm.run_llm(
            checkout.scenario, str(tmp_path / "theirs.jsonl"), "m", None, 0, "sglang",
            server.base_url, "x",
        )  # fmt: skip
        theirs = [r["messages"] for r in server.requests]
        server.requests.clear()

        async def ours() -> None:
            async with ChatClient(Endpoint(server.base_url, "m")) as client:
                roles = PMRoles(LLMPMAgent(client, 0.0, None))
                await run_week(Week(checkout), "raw", roles, lambda s: None, Limits())

        asyncio.run(ours())
        mine = [r["messages"] for r in server.requests]
    assert len(theirs) == len(mine) == 3 * 80  # a clock read, an email query, a choice per step
    assert mine == theirs
    ours_log = [json.loads(x) for x in (tmp_path / "theirs.jsonl").read_text().splitlines()]
    assert len([r for r in ours_log if r.get("record_type") != "run_metadata"]) == 80


@pytest.mark.slow  # the real embedded model on 2 cores: about a minute
def test_the_embedded_model_takes_the_action_schema_as_llama_cpp_wants_it(tmp_path: Path) -> None:
    """llama.cpp's server refuses OpenAI's json_schema form; in its json_object form the schema
    constrains SmolLM2 to the benchmark's actions: every reply of a day parses as one (whether
    it is a valid one, a choose with no channel, is the model's business)."""
    from taskgate import LocalServer
    from taskgate.llm.local import MODEL_NAME

    with LocalServer() as server:

        async def go() -> list[StepRecord]:
            async with ChatClient(Endpoint(server.base_url, MODEL_NAME)) as client:
                steps: list[StepRecord] = []
                agent = LLMPMAgent(client, 0.0, None, "json_object")
                week = Week(standin().first_days(1))
                await run_week(week, "raw", PMRoles(agent), steps.append, Limits(max_queries=3))
                return steps

        steps = asyncio.run(go())
    assert len(steps) == 4
    parse = ("the reply is not a JSON object", "action must be choose, query_state or check_time")
    assert all(s.failed not in parse for s in steps)
