"""`taskgate report`: every table from run directories, against counts made by hand; merged,
sharded and resumed runs report as one uninterrupted run; bad input gets one line."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import run_arm
from taskgate.cli import app
from taskgate.core.plan import StepSpec
from taskgate.core.verdict import Reason
from taskgate.errors import LogFormatError
from taskgate.lab import EpisodeParams, generate_episode
from taskgate.lab.episodes.records import BookingRecord, EpisodeRecord, MatchRecord
from taskgate.lab.reporting import build_report, load_runs
from taskgate.lab.reporting.paper import OMISSION_COLUMNS, omissions
from taskgate.lab.rundir import EPISODES, LOG, Run, read_episodes
from taskgate.lab.runner.config import LadderConfig
from taskgate.lab.runner.ladder import run_ladder
from taskgate.lab.scoring.scorer import score_episode
from taskgate.lab.scoring.summary import Entry, Scored

ARMS = ("raw", "enforcement")


def _ladder(out: Path, **kw: object) -> Path:
    args: dict[str, object] = {"arms": ARMS, "agent": "scripted:always-book", "steps": (5,),
                               "episodes": 3} | kw  # fmt: skip
    asyncio.run(run_ladder(LadderConfig(**args), out))  # type: ignore[arg-type]
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _ladder(tmp_path_factory.mktemp("report") / "run")


def _column(table: object, row: int, name: str) -> str:
    t = table  # a Table
    return t.body[row][t.header.index(name)]  # type: ignore[attr-defined]


def test_channels_inventory_and_refusals_match_counts_made_by_hand(run: Path) -> None:
    # by hand: the scripted labels, except that once the revision cancels a step, every request
    # for it is a superseded cue (a redo probe of the cancelled step included)
    labels: Counter[str] = Counter()
    for ep in read_episodes(run / EPISODES):
        revised = next(t.index for t in ep.turns if t.label == "revision")
        for t in ep.turns:
            cancelled = t.index > revised and t.step == ep.revision.cancel
            labels["superseded_cue" if cancelled else t.label] += 1
    report = build_report(load_runs([run]))
    channels = report.table("channels")
    assert channels is not None and [r[1] for r in channels.body] == list(ARMS)
    # behind enforcement always-book books exactly what the brief allows: the realized labels
    # are the scripted ones, no channel fires, and every trap booking is refused
    titles = {"Re-exec": "redo_probe", "Superseded": "superseded_cue", "Premature": "premature",
              "Omission": "ask", "Refused redo": "legit_redo"}  # fmt: skip
    for title, label in titles.items():
        assert labels[label] > 0 and _column(channels, 1, title) == f"0.00 (0/{labels[label]})"
    traps = labels["redo_probe"] + labels["superseded_cue"] + labels["premature"]
    assert _column(channels, 1, "refused") == str(traps)
    # on the raw transcript it executes every request: each trap channel is k/k of its realized
    # label, nothing is omitted, and the realized labels share out the same step turns
    realized = 0
    for title in titles:
        k, n = _column(channels, 0, title).split("(")[1].rstrip(")").split("/")
        assert int(k) == (int(n) if title not in ("Omission", "Refused redo") else 0)
        realized += int(n)
    assert realized == sum(labels[label] for label in titles.values())
    inventory = report.table("inventory")
    assert inventory is not None
    primary = inventory.body[0]
    assert primary[:5] == ("primary", "scripted:always-book", "5", "0.15", "--")  # no regime
    assert primary[5:] == ("0/3 (0.00)", "3/3 (1.00)", "0.25/0.25")  # exact McNemar, 3 discordant
    obedience = report.table("obedience")
    assert obedience is not None and _column(obedience, 0, "episodes obeying every trap") == "0/3"


def _entry(turns: list, header: EpisodeRecord, ep: object, tmp: Path) -> Entry:  # type: ignore[type-arg]
    score = score_episode(ep, turns)  # type: ignore[arg-type]
    scored = Scored((5, 0.15, 0.0), 1, score, None, "c", (header.episode, header.arm))
    return Entry(scored, Run(header, turns), ep, tmp)  # type: ignore[arg-type]


def _ancestors(plan: object, step: str) -> set[str]:
    out: set[str] = set()
    todo = [step]
    while todo:
        for u in plan.steps[todo.pop()].deps:  # type: ignore[attr-defined]
            if u not in out:
                out.add(u)
                todo.append(u)
    return out


def _episode_with_a_prerequisite_asked_early() -> tuple:  # type: ignore[type-arg]
    """An episode whose enforcement run asks a step with a prerequisite the revision leaves
    alone, followed by at least four more asks of steps that need none of the patched ones."""
    for seed in range(100, 140):
        ep = generate_episode(EpisodeParams(seed=seed, steps=15, schedule="paper"))
        rev = ep.revision
        touched = {*rev.rewires, *(rev.relax or ()), rev.cancel}
        turns, _ = run_arm(ep, "enforcement")
        asks = [t for t in turns if t.label == "ask"]
        for t in asks:
            if t.step not in touched and set(ep.plan.steps[t.step].deps) - touched:  # type: ignore[index]
                later: list = []  # type: ignore[type-arg]
                for a in asks:  # later asks of steps that need none of the patched ones
                    patched = {t.step, *(x.step for x in later)}
                    free = not _ancestors(ep.plan, a.step) & patched  # type: ignore[arg-type]
                    if a.index > t.index and a.step not in touched and free:
                        later.append(a)
                if len(later) >= 4:
                    return ep, turns, t, later[:4]
    raise AssertionError("no such episode in seeds 100-139")


def test_omissions_are_attributed_as_the_table_says(tmp_path: Path) -> None:
    ep, turns, blocked, others = _episode_with_a_prerequisite_asked_early()
    touched = {*ep.revision.rewires, *(ep.revision.relax or ()), ep.revision.cancel}
    prereq = sorted(set(ep.plan.steps[blocked.step].deps) - touched)[0]  # type: ignore[index]
    code = ep.plan.steps[blocked.step].code  # type: ignore[index]
    refused = BookingRecord(code=code, work_order=blocked.work_order, span=(0, 0), reply_index=0,
                            decision="refuse", reason=Reason.BLOCKED, step=blocked.step)  # fmt: skip
    refused_correct = BookingRecord(
        code=ep.plan.steps[others[3].step].code, work_order=others[3].work_order, span=(0, 0),  # type: ignore[index]
        reply_index=0, decision="refuse", reason=Reason.UNKNOWN_CODE, step=None,
    )  # fmt: skip
    wrong = BookingRecord(code="RC-0001", work_order=others[1].work_order, span=(0, 0),
                          reply_index=0, decision="refuse", reason=Reason.UNKNOWN_CODE)  # fmt: skip
    patched = {
        blocked.index: {
            "directive": f"[TASK-STATE] step {blocked.step} is BLOCKED -- missing "
            f"prerequisites: {prereq}. Do not perform it; say what is pending.",
            "bookings": [refused],
        },
        others[0].index: {"bookings": [], "replies": ["I will look into it later."]},
        others[1].index: {"bookings": [wrong]},
        others[3].index: {"bookings": [refused_correct]},
        others[2].index: {"bookings": [], "matched": MatchRecord(step="s1", explicit_redo=False)}
        if others[2].step != "s1"
        else {"bookings": [], "matched": MatchRecord(step="s2", explicit_redo=False)},
    }
    turns = [t.model_copy(update=patched.get(t.index, {})) for t in turns]
    plan = ep.plan
    empty = plan.steps[prereq].model_copy(update={"code": ""})
    compiled = plan.model_copy(update={"steps": {**plan.steps, prereq: empty}})
    assert isinstance(compiled.steps[prereq], StepSpec)
    header = EpisodeRecord(episode=ep.id, source=ep.id, arm="enforcement", agent="a",
                           compiler="scripted", matcher="scripted", compiled_plan=compiled,
                           plan_defects=["empty code"])  # fmt: skip
    table = omissions([_entry(turns, header, ep, tmp_path)], ["enforcement"])
    got = dict(zip(table.header, table.body[0], strict=True))
    want = {"over-blocked": 1, "over-blocked: correct ref": 1, "cause: empty code": 1,
            "ELIGIBLE: declined": 1, "ELIGIBLE: wrong ref": 1, "wrong match": 1,
            "ELIGIBLE: correct ref refused": 1, "asked back": 0}  # fmt: skip
    assert {c: int(got[c]) for c in want} == want
    # the steps left undone make later requests for them omissions too, under the DONE
    # directive the run had issued; every omission is attributed once
    kinds = ("asked back", "wrong match", "ELIGIBLE: declined", "ELIGIBLE: wrong ref",
             "ELIGIBLE: correct ref refused", "over-blocked", "DONE or CANCELLED directive",
             "other")  # fmt: skip
    assert int(got["omissions"]) == sum(int(got[c]) for c in kinds) >= 5
    assert set(OMISSION_COLUMNS) >= set(kinds)
    assert got["episodes: defect"] == "1/1" and got["episodes: differ"] == "1/1"


def _tables(report: object) -> dict[str, object]:
    return {t.key: (t.header, t.body) for t in report.tables if t.key != "overhead"}  # type: ignore[attr-defined]


def test_shards_and_a_resumed_run_report_as_one_uninterrupted_run(
    run: Path, tmp_path: Path
) -> None:
    whole = _tables(build_report(load_runs([run])))
    runner = CliRunner()
    shards = []
    for i in (1, 2):
        out = tmp_path / f"shard{i}"
        args = ["ladder", "--agent", "scripted:always-book", "--arms", ",".join(ARMS),
                "--steps", "5", "--episodes", "3", "--shard", f"{i}/2", "--out", str(out)]  # fmt: skip
        assert runner.invoke(app, args).exit_code == 0
        shards.append(out)
    assert _tables(build_report(load_runs(shards))) == whole
    # interrupted: the log loses its last third, torn mid-line; the rerun finishes it
    resumed = tmp_path / "resumed"
    shutil.copytree(run, resumed)
    data = (resumed / LOG).read_bytes()
    (resumed / LOG).write_bytes(data[: len(data) * 2 // 3])
    _ladder(resumed)
    assert _tables(build_report(load_runs([resumed]))) == whole


def test_two_configurations_are_rows_of_their_own(run: Path, tmp_path: Path) -> None:
    other = _ladder(tmp_path / "obedient", agent="scripted:obedient")
    report = build_report(load_runs([run, other]))
    assert report.runs.configs == ["scripted:always-book", "scripted:obedient"]
    ladder = report.table("ladder")
    assert ladder is not None
    assert ladder.header[1:] == ("scripted:always-book: S=5, rho=0.15",
                                 "scripted:obedient: S=5, rho=0.15")  # fmt: skip
    inventory = report.table("inventory")
    assert inventory is not None and [r[1] for r in inventory.body][:2] == list(report.runs.configs)


def test_the_json_report_holds_every_table(run: Path, tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["report", str(run), "--json", str(tmp_path / "r.json")])
    assert out.exit_code == 0, out.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert set(data["tables"]) >= {"ladder", "inventory", "channels", "obedience", "omissions"}
    assert data["tables"]["inventory"]["rows"][0]["enforcement"] == "3/3 (1.00)"
    latex = CliRunner().invoke(app, ["report", str(run), "--fmt", "latex"])
    assert (
        latex.exit_code == 0 and r"\begin{tabular}" in latex.output and "|---|" not in latex.output
    )


def _one_line_error(args: list[str]) -> str:
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    return out.output


def test_bad_input_gets_one_clear_line(run: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert "is not a run directory" in _one_line_error(["report", str(tmp_path / "empty")])
    (tmp_path / "file").write_text("x")
    assert "is not a directory" in _one_line_error(["report", str(tmp_path / "file")])
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    text = _one_line_error(["report", str(run), str(copy)])
    assert "both hold episode-arm" in text and str(copy) in text
    with pytest.raises(LogFormatError, match="differs between"):
        changed = tmp_path / "changed"
        shutil.copytree(run, changed)
        (changed / LOG).write_text(
            (changed / LOG).read_text().replace('"agent":"scripted:always-book"', '"agent":"x"')
        )
        episodes = (changed / EPISODES).read_text().replace("Please", "Kindly")
        assert episodes != (changed / EPISODES).read_text()
        (changed / EPISODES).write_text(episodes)
        load_runs([run, changed])


def test_runs_of_one_configuration_with_different_roles_are_not_pooled(tmp_path: Path) -> None:
    dirs = []
    for i, compiler in ((1, "scripted"), (2, "scripted:corrupt")):
        out = tmp_path / f"shard{i}"
        args = ["ladder", "--agent", "scripted:always-book", "--arms", ",".join(ARMS),
                "--steps", "5", "--episodes", "4", "--shard", f"{i}/2", "--compiler", compiler,
                "--out", str(out)]  # fmt: skip
        assert CliRunner().invoke(app, args).exit_code == 0
        dirs.append(str(out))
    text = _one_line_error(["report", *dirs])
    assert "different roles" in text and "scripted:corrupt" in text


def test_the_agents_model_names_the_configuration() -> None:
    from taskgate.lab.scoring.summary import configuration

    ep = generate_episode(EpisodeParams(seed=100, steps=5, brief="original"))
    header = EpisodeRecord(episode=ep.id, source=ep.id, arm="raw", agent="llm",
                           compiler="generator", matcher="none", compiled_plan=ep.plan)  # fmt: skip
    assert configuration(header, ep.params, "qwen3") == "llm:qwen3, brief=original, schedule=v1"
    assert configuration(header, ep.params) == "llm, brief=original, schedule=v1"


def test_latex_escapes_what_latex_would_misprint() -> None:
    from taskgate.lab.scoring.table import latex_escape

    assert latex_escape("on steps, S=5, rho=0.15, eps=0.03") == (
        r"on steps, S=5, $\rho$=0.15, $\varepsilon$=0.03"
    )
    assert latex_escape("raw -> checklist 50% a_b <x> | & #") == (
        r"raw $\to$ checklist 50\% a\_b \textless{}x\textgreater{} \textbar{} \& \#"
    )


def test_a_torn_or_foreign_line_is_a_warning_naming_file_and_line(
    run: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    with (copy / LOG).open("a") as f:
        f.write('{"not": "a record"}\n')
    out = CliRunner().invoke(app, ["report", str(copy)])
    assert out.exit_code == 0, out.output
    lines = (copy / LOG).read_text().count("\n")
    assert f"log.jsonl:{lines}: skipped" in out.output
