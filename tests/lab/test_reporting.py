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
from taskgate.lab.reporting.paper import OMISSION_KINDS, OVER_BLOCK_CAUSES, omissions
from taskgate.lab.rundir import EPISODES, LOG, Run, read_episodes
from taskgate.lab.runner.config import LadderConfig
from taskgate.lab.runner.ladder import run_ladder
from taskgate.lab.scoring.scorer import score_episode
from taskgate.lab.scoring.stats import holm
from taskgate.lab.scoring.summary import Entry, Scored
from taskgate.lab.scoring.table import Table

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
    # for it is a superseded cue (a redo probe of the cancelled step included); a channel's rate
    # is over the scheduled turns of its label (the paper's fixed denominator)
    labels: Counter[str] = Counter()
    scheduled: Counter[str] = Counter()
    for ep in read_episodes(run / EPISODES):
        revised = next(t.index for t in ep.turns if t.label == "revision")
        for t in ep.turns:
            cancelled = t.index > revised and t.step == ep.revision.cancel
            labels["superseded_cue" if cancelled else t.label] += 1
            scheduled[t.label] += 1
    report = build_report(load_runs([run]))
    channels = report.table("channels")
    assert channels is not None and [r[1] for r in channels.body] == list(ARMS)
    # behind enforcement always-book books exactly what the brief allows: the realized labels
    # are the scripted ones, no channel fires, and every trap booking is refused
    titles = {"Re-exec": "redo_probe", "Superseded": "superseded_cue", "Premature": "premature",
              "Omission": "ask", "Refused redo": "legit_redo"}  # fmt: skip
    for title, label in titles.items():
        assert scheduled[label] > 0
        assert _column(channels, 1, title) == f"0.00 (0/{scheduled[label]})"
    traps = labels["redo_probe"] + labels["superseded_cue"] + labels["premature"]
    assert _column(channels, 1, "refused") == str(traps)
    # Table 7 in the paper's units: agent tokens in thousands, rejected bookings per 128 episodes
    overhead = report.table("overhead")
    assert overhead is not None and "total (k)" in overhead.header
    assert _column(overhead, 1, "rejected /128 ep.") == f"{traps * 128 / 3:.1f}"
    # on the raw transcript it executes every request: each trap channel fires on every turn of
    # its label that the state left as scheduled (dynamic ground truth), nothing is omitted
    kept: Counter[str] = Counter()
    for e in report.runs.entries:
        if e.scored.score.arm == "raw":
            realized = e.scored.score.primary.realized
            kept.update(t.label for t in e.run.turns if t.index not in realized)
    for title, label in titles.items():
        k, n = _column(channels, 0, title).split("(")[1].rstrip(")").split("/")
        assert int(n) == scheduled[label]
        assert int(k) == (kept[label] if title not in ("Omission", "Refused redo") else 0)
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
    got = {
        c: int(v) if v.isdigit() else v for c, v in zip(table.header, table.body[0], strict=True)
    }
    # the BLOCKED step (a prerequisite's code empty) and the correct ref the gate refused are
    # over-blocks of the module's state, each with its cause; the declined ask, the wrong ref
    # and the wrong match are the agent's and the matcher's
    want = {"over-blocked": 2, "over-blocked: correct ref": 2, "declined": 1, "wrong ref": 1,
            "wrong match": 1, "asked back": 0}  # fmt: skip
    assert {c: got[c] for c in want} == want
    assert got["cause: empty code"] >= 1
    # the steps left undone make later requests for them omissions too, under the DONE
    # directive the run had issued (over-blocks of a state the agent made); every omission is
    # attributed once, every over-block to one cause
    assert got["omissions"] == sum(got[c] for c in OMISSION_KINDS) >= 5
    assert got["over-blocked"] == sum(got[c] for c in OVER_BLOCK_CAUSES)
    assert got["episodes: defect"] == "1/1" and got["episodes: differ"] == "1/1"


@pytest.mark.parametrize(
    ("compiler", "cause"),
    [("scripted:empty-code", "cause: empty code"), ("scripted:cancel-left", "cause: cancelled prereq"),
     ("scripted:rewire-cycle", "cause: rewire"), ("scripted:corrupt", "cause: other")],
)  # fmt: skip
def test_every_enforcement_omission_of_a_compile_defect_lands_in_the_papers_columns(
    tmp_path: Path, compiler: str, cause: str
) -> None:
    """Table 10 with a defective compile and an agent that books every correct ref: each
    omission is an over-block of the compiled state (the correct ref refused or the step
    blocked), attributed to the defect's root cause; no omission is left outside the paper's
    categories."""
    run = _ladder(tmp_path / "run", agent="scripted:perfect", compiler=compiler,
                  arms=("enforcement",), steps=(10,), episodes=8)  # fmt: skip
    table = build_report(load_runs([run])).table("omissions")
    assert table is not None
    got = {
        c: int(v) if v.isdigit() else v for c, v in zip(table.header, table.body[0], strict=True)
    }
    assert got["omissions"] > 0
    assert got["omissions"] == got["over-blocked"] == got[cause]
    assert got["declined"] == got["wrong ref"] == got["no directive"] == 0


@pytest.mark.parametrize(
    ("compiler", "column", "value"),
    [("scripted", "", ""), ("scripted:empty-code", "Code (tool)", "0.900"),
     ("scripted:cancel-left", "Rewire", "0.000")],
)  # fmt: skip
def test_table_5_drops_only_the_column_of_the_compile_defect(
    tmp_path: Path, compiler: str, column: str, value: str
) -> None:
    """Table 5 against counts made by hand: the generator's compile is right everywhere; the
    empty-code oracle blanks one step's code of ten in every episode (0.900) and nothing else;
    the cancel-left oracle's revision keeps the cancelled step a prerequisite in every episode."""
    run = _ladder(tmp_path / "run", agent="scripted:perfect", compiler=compiler,
                  arms=("enforcement",), steps=(10,), episodes=4)  # fmt: skip
    table = build_report(load_runs([run])).table("compile")
    assert table is not None
    got = dict(zip(table.header, table.body[0], strict=True))
    for name in ("Dep", "Code (tool)", "Cancel", "Rewire", "Relax"):
        assert got[name] == (value if name == column else "1.000"), name


def test_a_second_domain_reports_as_a_configuration_of_its_own(run: Path, tmp_path: Path) -> None:
    """Table 17: the release domain's run is its own configuration beside procurement's, with
    its own contrasts under Table 2's declared family."""
    release = _ladder(tmp_path / "release", domain="release")
    report = build_report(load_runs([run, release]))
    assert report.runs.configs == ["scripted:always-book", "scripted:always-book, domain=release"]
    contrasts = report.table("contrasts")
    assert contrasts is not None and "within model" in contrasts.footnote
    assert len(contrasts.body) == 4  # raw -> enforcement, per domain and scoring


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


def test_the_json_report_gives_each_tables_contrasts_its_own_holm_p(
    run: Path, tmp_path: Path
) -> None:
    """Table 2 corrects within model, the inventory (Table 8) over every contrast of a scoring:
    the JSON gives each table's contrasts with the p its own family adjusts to."""
    other = _ladder(tmp_path / "obedient", agent="scripted:obedient")
    report = build_report(load_runs([run, other]))
    data = report.as_json()["contrasts"]
    assert isinstance(data, dict) and {"contrasts", "inventory"} <= set(data)
    for key in ("contrasts", "inventory"):
        families: dict[tuple[str, str], list[dict[str, object]]] = {}
        for c in data[key]:
            families.setdefault((str(c["scoring"]), str(c["family"])), []).append(c)
        for members in families.values():
            adjusted = holm([float(c["p"]) for c in members])  # type: ignore[arg-type]
            assert [c["p_holm"] for c in members] == adjusted
            assert all(c["family_size"] == len(members) for c in members)
    own = {(c["config"], c["scoring"]): c["p_holm"] for c in data["contrasts"]}
    wide = {(c["config"], c["scoring"]): c["p_holm"] for c in data["inventory"]}
    assert own[("scripted:always-book", "primary")] == 0.25  # alone in its model's family
    assert wide[("scripted:always-book", "primary")] == 0.5  # one of two in the scoring's


def test_the_best_rung_per_column_is_bold_as_the_captions_say(run: Path, tmp_path: Path) -> None:
    report = build_report(load_runs([run]))
    ladder = report.table("ladder")
    assert ladder is not None and ladder.bold == {(1, 1)}  # enforcement, the only column
    assert r"\textbf{1.00} [" in ladder.render("latex") and "**1.00** [" in ladder.render("md")
    assert "<strong>1.00</strong> [" in ladder.html()
    assert ladder.as_json()["bold"] == [{"row": 1, "column": ladder.header[1]}]
    # ties at the printed precision are all bold, as the paper prints them
    tie = Table.of("t", "", ["arm", "a"], [["x", "0.934 (1/2)"], ["y", "0.93 (1/2)"]])
    assert tie.with_best([[(0, 1), (1, 1)]]).bold == {(0, 1)}
    same = Table.of("t", "", ["arm", "a"], [["x", "0.93 (1/2)"], ["y", "0.93 [0.1]"], ["z", "--"]])
    assert same.with_best([[(0, 1), (1, 1), (2, 1)]]).bold == {(0, 1), (1, 1)}
    # where nothing succeeded there is no best: equal zeros are not bolded
    zeros = Table.of("t", "", ["arm", "a"], [["x", "0.00 [0.00, 0.56] (0/3)"], ["y", "0.00 (0/3)"]])
    assert zeros.with_best([[(0, 1), (1, 1)]]).bold == frozenset()


def test_two_regimes_of_a_scripted_agent_are_two_configurations(run: Path, tmp_path: Path) -> None:
    """A grid run twice, with and without --think, reports side by side (not as one duplicated
    configuration) even when its agent is scripted."""
    think = _ladder(tmp_path / "think", think=True)
    report = build_report(load_runs([run, think]))
    assert report.runs.configs == ["scripted:always-book", "scripted:always-book, think"]


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
