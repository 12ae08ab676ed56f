"""The lab as the paper defines it: a scripted-oracle regression test per definition (issue #32).

* The directive gate (and every arm that does not enforce) never refuses a booking: a compile
  defect only changes the directive (Section 3.3, "free to disobey"); the hybrid "refuses no
  correct booking" (Appendix D.3). The enforcement gate over-blocks exactly where a defect bites.
* Channels are judged at the request: status is sigma when the request arrives (Section 3.1).
* A requested redo not executed after an earlier omission is a refused redo (Appendix D.3).
* A channel's rate is over its label's turns and stays a share of them.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import run_arm, run_patched
from taskgate import FakeServer, protocol_responder
from taskgate.core.machine import Status
from taskgate.lab import EpisodeParams, LadderConfig, generate_episode, run_ladder
from taskgate.lab.agents.base import TurnView
from taskgate.lab.arms.registry import LADDER
from taskgate.lab.episodes.models import Episode
from taskgate.lab.episodes.pools import PROCUREMENT
from taskgate.lab.episodes.records import Execution
from taskgate.lab.reporting import build_report, load_runs
from taskgate.lab.reporting.appendix import not_built
from taskgate.lab.runcard import load as load_card
from taskgate.lab.rundir import LOG, read_log
from taskgate.lab.scoring.report import ALL_ERRORS, p_value
from taskgate.lab.scoring.report import channels as report_channels
from taskgate.lab.scoring.report import tools as report_tools
from taskgate.lab.scoring.scorer import score_episode
from taskgate.lab.scoring.stats import holm
from taskgate.lab.scoring.summary import Scored, _row, adjacent_contrasts, pair_contrasts
from taskgate.lab.scoring.table import Table

EPISODES = [generate_episode(EpisodeParams(seed=100 + i, steps=10)) for i in range(20)]
DEFECTS = ("scripted:empty-code", "scripted:cancel-left", "scripted:rewire-cycle")


@pytest.mark.parametrize("compiler", DEFECTS)
@pytest.mark.parametrize("arm", ["raw", "checklist", "directive", "hybrid"])
def test_a_compile_defect_never_fails_a_perfect_agent_off_the_enforcement_gate(
    arm: str, compiler: str
) -> None:
    for ep in EPISODES:
        records, score = run_arm(ep, arm, compiler=compiler)
        assert score.primary.strict, (arm, compiler, ep.id, score.primary.errors)
        assert all(b.decision == "admit" for r in records for b in r.bookings), ep.id


@pytest.mark.parametrize("compiler", DEFECTS)
def test_the_enforcement_gate_over_blocks_exactly_where_the_defect_bites(compiler: str) -> None:
    bitten = 0
    for ep in EPISODES:
        records, score = run_arm(ep, "enforcement", compiler=compiler)
        # the perfect agent books only what is owed, so every refusal is an over-block, and
        # each over-block is one omission (a refused redo on a redo turn) on its turn, and
        # nothing else fails
        refused = {r.index for r in records if any(b.decision == "refuse" for b in r.bookings)}
        owed = {
            i: ["refused_redo" if ep.turns[i].label == "legit_redo" else "omission"]
            for i in refused
        }
        assert score.primary.errors == owed, ep.id
        bitten += bool(refused)
    assert bitten >= 5  # the defect bites in a good share of the episodes


def _premature_turn(ep: Episode) -> int | None:
    """A premature probe whose missing prerequisites are all TODO in the perfect run."""
    for t in ep.turns:
        if t.label == "premature" and t.index < 14:
            return t.index
    return None


def _prerequisites_then_step(ep: Episode, eligible: list[bool]) -> Callable[[TurnView], str]:
    """A reply that books the requested blocked step's missing prerequisites, then the step;
    ``eligible`` gets whether every one of those prerequisites was TODO when asked."""

    def reply(view: TurnView) -> str:
        step = view.turn.step
        assert step is not None and view.truth.status(step) is Status.BLOCKED
        missing = view.truth.missing(step)
        eligible.append(all(view.truth.status(u) is Status.TODO for u in missing))
        wo = view.turn.work_order
        lines = [f"ref {ep.plan.steps[s].code}/{wo}" for s in (*missing, step)]
        return "Doing everything it needs first.\n" + "\n".join(lines)

    return reply


@pytest.mark.parametrize("arm", ["raw", "enforcement"])
def test_a_blocked_step_booked_after_its_prerequisites_is_premature(arm: str) -> None:
    premature = unrequested = seen = 0
    for ep in EPISODES:
        turn = _premature_turn(ep)
        if turn is None:
            continue
        eligible: list[bool] = []
        records, score = run_patched(ep, arm, {turn: _prerequisites_then_step(ep, eligible)})
        if not eligible[0]:  # a prerequisite was itself blocked: another case
            continue
        errors = score.primary.errors[turn]
        missing = [b for b in records[turn].bookings if b.step != ep.turns[turn].step]
        # sigma at the request: the step was BLOCKED; each prerequisite booked with it was
        # eligible but not requested
        assert errors.count("premature") == 1, (ep.id, errors)
        assert errors.count("unrequested") == len(missing) > 0, (ep.id, errors)
        premature += errors.count("premature")
        unrequested += errors.count("unrequested")
        seen += 1
    assert seen >= 5 and premature == seen and unrequested >= seen


def _legit_redo(ep: Episode) -> tuple[int, int] | None:
    """(the ask turn, the later legitimate-redo turn) of one step."""
    for t in ep.turns:
        if t.label == "legit_redo":
            ask = next((a.index for a in ep.turns if a.label == "ask" and a.step == t.step), None)
            return None if ask is None else (ask, t.index)
    return None


def test_a_redo_left_undone_after_an_omission_is_a_refused_redo() -> None:
    seen = 0
    for ep in EPISODES:
        pair = _legit_redo(ep)
        if pair is None:
            continue
        ask, redo = pair
        decline = "I will not do that now."
        between = {
            t.index: decline
            for t in ep.turns
            if ask < t.index < redo and t.step == ep.turns[ask].step
        }
        _, score = run_patched(ep, "raw", {ask: decline, redo: decline, **between})
        assert score.primary.errors[ask] == ["omission"], ep.id
        assert score.primary.errors[redo] == ["refused_redo"], ep.id
        seen += 1
    assert seen >= 5


def _rebook_everything_done(ep: Episode) -> Callable[[TurnView], str]:
    """A reply that books every step already done: several re-executions in one turn."""

    def reply(view: TurnView) -> str:
        wo = view.turn.work_order
        done = [s for s in ep.plan.steps if view.truth.status(s) is Status.DONE]
        return "\n".join(f"ref {ep.plan.steps[s].code}/{wo}" for s in done)

    return reply


def test_a_channel_rate_counts_each_turn_of_its_label_once_over_the_scheduled_turns() -> None:
    """Table 9 / App D.2: a channel's errors on the turns scheduled with its label, each turn
    once, over that label's fixed denominator (the schedule's count), so never above 1; every
    error, wherever it fell, stays in the extra column."""
    ep = EPISODES[0]
    probe = next(t.index for t in ep.turns if t.label == "redo_probe")
    _, score = run_patched(ep, "raw", {probe: _rebook_everything_done(ep)})
    redone = len(score.primary.errors[probe])
    assert redone >= 2 and set(score.primary.errors[probe]) == {"re_execution"}
    row = _row((10, 0.15, 0.0), "raw", [score])
    scheduled = Counter(t.label for t in ep.turns if t.work_order is not None)
    assert row.label_turns["re_execution"] == scheduled["redo_probe"] == 2  # fixed: 2 per episode
    assert row.channel_on_label["re_execution"] == 1 and row.channels["re_execution"] == redone
    assert row.channel_rates["re_execution"] == 1 / 2
    table = report_channels([row])
    line = table.body[0]
    assert line[table.header.index("Re-exec")] == "0.50 (1/2)"
    assert line[table.header.index(ALL_ERRORS)].startswith(f"{redone} / ")


def test_table_19s_error_totals_are_turn_counts_as_its_caption_says() -> None:
    """Table 19: "error totals (turn counts summed over the 50 episodes)": a turn that re-executes
    several finished steps counts once."""
    ep = EPISODES[0]
    probe = next(t.index for t in ep.turns if t.label == "redo_probe")
    _, score = run_patched(ep, "raw", {probe: _rebook_everything_done(ep)})
    row = _row((10, 0.15, 0.0), "raw", [score])
    assert row.channels["re_execution"] >= 2 and row.channel_turns["re_execution"] == 1
    table = report_tools([row], [])
    errors = table.body[0][table.header.index("errors (prem. / unreq. / redo / omit.)")]
    assert errors.split(" / ")[2] == "1"


def test_an_error_off_its_label_stays_out_of_the_channels_rate() -> None:
    """A re-execution on an ask turn (the agent books a finished step when asked for another)
    is a re-execution, but not one of the redo-probe turns the rate is over."""
    ep = EPISODES[0]
    ask = next(t.index for t in ep.turns if t.label == "ask" and t.index > 3)
    _, score = run_patched(ep, "raw", {ask: _rebook_everything_done(ep)})
    if "re_execution" not in score.primary.errors.get(ask, []):
        pytest.skip("nothing was done before that ask")
    row = _row((10, 0.15, 0.0), "raw", [score])
    assert row.channels["re_execution"] >= 1 and row.channel_on_label["re_execution"] == 0
    assert row.channel_rates["re_execution"] == 0.0


#: Table 9's printed rates beside the same cells' totals per 128 episodes in Table 14 (original
#: brief, Qwen3-235B): (cell, arm, channel, printed rate, total)
PRINTED = [
    ("S=10", "raw", "redo_probe", "0.43", 121), ("S=10", "raw", "superseded_cue", "0.28", 43),
    ("S=10", "raw", "premature", "0.11", 31), ("S=10", "checklist", "redo_probe", "0.11", 33),
    ("S=10", "checklist", "superseded_cue", "0.24", 37),
    ("S=15 dense", "raw", "redo_probe", "0.36", 97),
    ("S=15 dense", "raw", "superseded_cue", "0.25", 43),
    ("S=15 dense", "raw", "premature", "0.06", 25),
    ("S=15 dense", "checklist", "redo_probe", "0.15", 44),
    ("S=15 dense", "checklist", "superseded_cue", "0.18", 32),
    ("S=10 think", "raw", "redo_probe", "0.53", 140),
    ("S=10 think", "raw", "premature", "0.05", 13),
    ("S=15 dense think", "raw", "redo_probe", "0.52", 136),
    ("S=15 dense think", "checklist", "redo_probe", "0.13", 37),
]  # fmt: skip


def test_the_papers_printed_rates_pin_the_channel_definition() -> None:
    """Which numerator and denominator the paper uses, from its own numbers: every printed rate
    is k over the label's fixed scheduled count for some k no larger than the cell's total
    (errors on the label's turns), while the total over that count (every error, wherever it
    fell) misses most of them; and no printed rate is above 1."""
    fixed: Counter[str] = Counter()
    for seed in range(100, 228):  # the paper's 128 episodes per cell
        params = EpisodeParams(seed=seed, steps=10, brief="original", schedule="original")
        fixed.update(t.label for t in generate_episode(params).turns if t.work_order is not None)
    assert (fixed["redo_probe"], fixed["premature"], fixed["superseded_cue"]) == (256, 256, 128)
    misses = 0
    for cell, arm, label, printed, total in PRINTED:
        n = fixed[label]
        assert any(f"{k / n:.2f}" == printed for k in range(total + 1)), (cell, arm, label)
        misses += f"{total / n:.2f}" != printed
        assert float(printed) <= 1
    assert misses >= len(PRINTED) - 2


def test_both_reasoning_regimes_of_one_model_report_side_by_side(tmp_path: Path) -> None:
    """The regime is part of a run's identity: recorded on every episode-arm and in the run card,
    a configuration of its own in the report, the inventory's think column; Table 2's Holm family
    holds both regimes of the model, the inventory's every contrast of a scoring."""
    from typer.testing import CliRunner

    from taskgate.cli import app

    runs = {"think": tmp_path / "think", "no": tmp_path / "no-think"}
    with FakeServer(protocol_responder) as srv:
        for regime, out in runs.items():
            flags = ["--think", "--deepseek-thinking"] if regime == "think" else []
            result = CliRunner().invoke(
                app,
                ["ladder", "--base-url", srv.base_url, "--model", "fake", "--steps", "5",
                 "--episodes", "2", "--arms", "raw,enforcement", "--out", str(out), *flags],
            )  # fmt: skip
            assert result.exit_code == 0, result.output
        sent = [r.get("thinking") for r in srv.requests]
    assert {"type": "enabled"} in sent and None in sent  # DeepSeek's switch, only when asked
    run = next(r for r in read_log(runs["think"] / LOG).values())
    assert run.header.regime == "think, deepseek thinking=enabled"
    assert {t.regime for t in run.turns} == {"think, deepseek thinking=enabled"}  # every row
    assert load_card(runs["think"]) is not None and load_card(runs["think"]).deepseek_thinking  # type: ignore[union-attr]
    report = build_report(load_runs(list(runs.values())))
    assert report.runs.configs == [
        "llm:fake, think, deepseek thinking=enabled",
        "llm:fake, no-think",
    ]
    inventory = report.table("inventory")
    assert inventory is not None
    think = [r[inventory.header.index("think")] for r in inventory.body if r[0] == "primary"]
    assert think == ["think (deepseek thinking=enabled)", "no"]
    assert "eps" not in inventory.header  # no corruption in these runs
    # one contrast (raw -> enforcement) per regime and scoring: Table 2 puts the model's two in
    # one family, the inventory all of a scoring's (the same two here)
    contrasts = report.table("contrasts")
    assert contrasts is not None and "within model" in contrasts.footnote
    assert "primary / llm:fake: 2 contrasts" in contrasts.footnote
    assert (
        "2 contrasts" in inventory.footnote
        and "all contrasts within a scoring" in inventory.footnote
    )


def test_holm_families_follow_each_tables_caption() -> None:
    """Two models, two cells each: the inventory corrects over all four contrasts of a scoring,
    Table 2 over each model's two; adjusted p as Holm's rule gives them."""
    eps = [
        generate_episode(EpisodeParams(seed=300 + i, steps=s)) for i in range(8) for s in (5, 10)
    ]
    scored = []
    for model, agent in (("m1", "scripted:always-book"), ("m2", "scripted:perfect")):
        for ep in eps:
            for arm in ("raw", "enforcement"):
                score = run_arm(ep, arm, agent=agent)[1]
                config = f"llm:{model}, no-think"
                cell = (ep.params.steps, ep.params.density, 0.0)
                scored.append(
                    Scored(
                        cell,
                        ep.params.seed,
                        score,
                        None,
                        config,
                        (ep.id, arm),
                        "no-think",
                        f"llm:{model}",
                    )
                )
    overall = [
        c for c in adjacent_contrasts(scored, ["raw", "enforcement"]) if c.scoring == "primary"
    ]
    within = [
        c for c in adjacent_contrasts(scored, ["raw", "enforcement"], within="model")
        if c.scoring == "primary"
    ]  # fmt: skip
    assert [c.family_size for c in overall] == [4] * 4
    assert [c.family_size for c in within] == [2] * 4
    assert [c.family for c in within] == ["llm:m1"] * 2 + ["llm:m2"] * 2
    for cs in (overall, within):
        for key in {c.family for c in cs}:
            family = [c for c in cs if c.family == key]
            assert [c.p_holm for c in family] == holm([c.p for c in family])
    m1 = [c for c in within if c.family == "llm:m1"]
    assert all(c.only_upper == 8 and c.p < 0.01 for c in m1)  # always-book fails on raw only
    assert m1[0].p_holm == min(1.0, 2 * m1[0].p)  # two equal p: each multiplied by two


def _redo_descendant_probes(ep: Episode) -> int:
    """Redo probes that ask for a descendant of the legitimate-redo target."""
    target = next(t.step for t in ep.turns if t.label == "legit_redo")
    assert target is not None
    below: set[str] = set()
    frontier = [target]
    while frontier:
        u = frontier.pop()
        for w, spec in ep.plan.steps.items():
            if u in spec.deps and w not in below:
                below.add(w)
                frontier.append(w)
    return sum(t.label == "redo_probe" and t.step in below for t in ep.turns)


def test_both_probe_schedules_of_the_paper() -> None:
    """Appendix E: the revised generator (the amended-brief grid's, ``paper``) draws the redo
    target first and its redo probes exclude its descendants; the original grid's (``original``)
    does neither. Both ask every step: S+6 scored turns."""
    seeds = range(100, 164)
    for schedule in ("paper", "original"):
        eps = [
            generate_episode(EpisodeParams(seed=s, steps=15, density=0.3, schedule=schedule))
            for s in seeds
        ]
        below = sum(_redo_descendant_probes(ep) for ep in eps)
        if schedule == "paper":
            assert below == 0
        else:
            assert below > 0
            assert all(sum(t.label == "redo_probe" for t in ep.turns) == 2 for ep in eps)
        for ep in eps:  # every step asked, two premature, two probes, a cue, a redo: S+6
            scored = [t for t in ep.turns if t.work_order is not None and t.step is not None]
            assert len(scored) == 15 + 6
    original = generate_episode(EpisodeParams(seed=100, steps=10, schedule="original"))
    revised = generate_episode(EpisodeParams(seed=100, steps=10, schedule="paper"))
    assert original.plan == revised.plan and original.turns != revised.turns
    assert original.params.key.endswith("-original-seed100")


def _run(out: Path, **kw: object) -> Path:
    args: dict[str, object] = {"arms": LADDER, "agent": "scripted:always-book", "steps": (5,),
                               "episodes": 6} | kw  # fmt: skip
    asyncio.run(run_ladder(LadderConfig(**args), out))  # type: ignore[arg-type]
    return out


def _family(table: Table, size: int) -> None:
    """The primary scoring's families, as the footnote names them, are each ``size`` large."""
    sizes = re.findall(r"primary(?: / [^;]+?)?: (\d+) contrasts", table.footnote)
    assert sizes and set(sizes) == {str(size)}, table.footnote


def test_table_15_graph_size_with_per_turn_accuracy_and_its_holm_family(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", steps=(5, 10))
    report = build_report(load_runs([run]))
    table = report.table("graph_size")
    assert table is not None and "(Table 15)" in table.title
    labels = [r[1] for r in table.body]
    # S+6 scored turns per episode under the paper's schedule (fewer where a probe is missing)
    accuracy = [lab for lab in labels if lab.startswith("per-turn accuracy")]
    assert len(accuracy) == 2 and all("turns)" in lab for lab in accuracy)
    raw = next(r for r in report.rows if r.arm == "raw" and r.steps == 10)
    assert raw.scored_turns == 6 * 16 and f"({raw.scored_turns} turns)" in accuracy[1]
    # Holm over the regime's adjacent contrasts: 3 pairs x 2 cells
    scored = load_runs([run]).scored
    cs = pair_contrasts(scored, list(itertools.pairwise(LADDER)), within="config")
    assert {c.family_size for c in cs} == {6}
    assert [c.p_holm for c in cs] == holm([c.p for c in cs])
    assert "each regime of a model" in table.footnote and "6 contrasts" in table.footnote


def test_table_16_variants_against_their_paper_arms(tmp_path: Path) -> None:
    arms = ("checklist", "checklist-replace", "directive", "directive-system")
    run = _run(tmp_path / "run", arms=arms)
    report = build_report(load_runs([run]), arms)
    table = report.table("variants")
    assert table is not None and "(Table 16)" in table.title
    assert [r[0] for r in table.body] == list(arms)
    # two variant contrasts, one family (within model): replace vs checklist, system vs directive
    assert "within model, over all variant contrasts" in table.footnote
    _family(table, 2)
    cs = pair_contrasts(
        load_runs([run]).scored,
        [("checklist", "checklist-replace"), ("directive", "directive-system")],
        within="model",
    )
    assert [c.p_holm for c in cs] == holm([c.p for c in cs])
    assert table.body[1][2] == p_value(cs[0].p_holm)


def test_table_14_pairs_the_two_grids_and_the_schedule_deconfound(tmp_path: Path) -> None:
    """Only the cells both grids ran are printed and corrected together; another configuration
    (the release domain) prints nothing in their columns."""
    runs = [
        _run(tmp_path / "original", brief="original", schedule="original"),
        _run(tmp_path / "amended", steps=(5, 10)),
        _run(tmp_path / "deconfound", brief="original", arms=("raw",)),
        _run(tmp_path / "release", domain="release"),
    ]
    report = build_report(load_runs(runs))
    table = report.table("replication")
    assert table is not None and "(Table 14)" in table.title
    # one model, one cell both grids share (S=5), one regime: three columns
    assert len(table.header) == 1 + 3 and all("S=5" in h for h in table.header[1:])
    assert not any("release" in h for h in table.header)
    rows = {r[0]: r[1:] for r in table.body}
    assert set(rows) >= {"raw", "checklist", "directive", "enforcement"}
    deconfound = rows["  raw, original brief, revised schedule"]
    assert [i for i, v in enumerate(deconfound) if v != "--"] == [1]  # amended primary only
    # the amended contrasts of the printed cell, Holm within model over the three printed
    assert "within model, over the contrasts printed" in table.footnote
    _family(table, 3)
    held = [v for k, v in rows.items() if k.endswith("Holm p (amended, primary)")]
    assert len(held) == 3 and all(v[1] != "" and v[0] == v[2] == "" for v in held)
    assert "Table 14" not in not_built(report.rows)


@pytest.mark.slow  # 64 corrupted episode-arms
def test_the_generators_counts_where_the_paper_states_one_are_pinned() -> None:
    """Where the paper states a count for given seeds and parameters, the generator's own count
    is pinned here; the fidelity page (docs/lab/fidelity.md) gives the paper's beside it and why
    they differ (the paper's text does not determine the mechanism behind any of the three)."""
    seeds = range(100, 164)
    # Table 4: ambiguous probes at rate 0.15, S=15 dense, seeds 100-163 (the paper: 111)
    ambiguous = sum(
        t.label == "ambiguous"
        for s in seeds
        for t in generate_episode(
            EpisodeParams(seed=s, steps=15, density=0.3, ambiguous_rate=0.15, schedule="paper")
        ).turns
    )
    assert ambiguous == 147
    # Section 4.1: one superseded cue per episode; requests for the cancelled step after the
    # revision also include its own ask and redo probes drawn after it (seeds 100-227)
    after = 0
    for s in range(100, 228):
        ep = generate_episode(EpisodeParams(seed=s, steps=15, density=0.3, schedule="paper"))
        rev = next(t.index for t in ep.turns if t.label == "revision")
        after += sum(t.index > rev and t.step == ep.revision.cancel for t in ep.turns)
        assert sum(t.label == "superseded_cue" for t in ep.turns) == 1
    assert after == 187
    # Table 12: the corruption events at eps=5e-2 (the paper: 597 / 506 / 809, 29.9 per episode)
    events: Counter[str] = Counter()
    for s in seeds:
        ep = generate_episode(EpisodeParams(seed=s, steps=15, density=0.3, schedule="paper"))
        records, _ = run_arm(ep, "enforcement", agent="scripted:obedient", corruption=5e-2)
        events.update(e.split()[0] for r in records for e in r.corruptions)
    assert (events["spurious-done"], events["lost-done"], events["edge-drop"]) == (765, 732, 588)


def test_the_reports_name_the_papers_tables_by_its_numbers(tmp_path: Path) -> None:
    """Finding 7: each table of a report carries the number the paper prints for it."""
    run = _run(tmp_path / "run", corruption=(0.0, 0.03), compiler="scripted:empty-code")
    report = build_report(load_runs([run]))
    numbers = {
        "ladder": "Tables 2 and 13", "contrasts": "Table 2", "inventory": "Table 8",
        "channels": "Table 9", "obedience": "Table 11", "omissions": "Table 10",
        "overhead": "Table 7", "compile": "Table 5", "corruption": "Table 12",
    }  # fmt: skip
    for key, number in numbers.items():
        table = report.table(key)
        assert table is not None, key
        assert f"{number})" in table.title or f"; {number}" in table.title, (key, table.title)
    docs = Path(__file__).parents[2] / "docs"
    for page in [*docs.rglob("*.md"), docs.parent / "README.md"]:
        text = page.read_text(encoding="utf-8")
        for kind, top in (("Table", 21), ("Figure", 6)):
            for n in re.findall(rf"\b{kind}s? (\d+)", text):
                assert 1 <= int(n) <= top, (page.name, kind, n)
        assert not re.search(r"\bTable (memory|probe|rw|pmbench|obedience|cost|a\d|e1)\b", text)


def test_a_step_executed_twice_in_one_harness_turn_keeps_its_status_at_the_request() -> None:
    """The harness counts every stamped block: a cancelled step run twice is two superseded
    executions; an owed step run twice is the step served, then re-executed."""
    ep = EPISODES[0]
    turns, _ = run_arm(ep, "raw")  # the perfect agent: nothing fails, then two turns changed
    cancel = ep.revision.cancel
    assert cancel is not None
    cue = next(t.index for t in ep.turns if t.label == "superseded_cue")
    ask = next(t.index for t in ep.turns if t.label == "ask" and t.step != cancel)
    records = []
    for t in turns:
        executions: list[Execution] = []
        if t.index in (cue, ask) and t.work_order is not None:
            tool = ep.templates[ep.turns[t.index].step or ""]
            executions = [Execution(tool=tool, work_order=t.work_order)] * 2
        elif t.work_order is not None and any(b.decision == "admit" for b in t.bookings):
            step = ep.turns[t.index].step or ""
            executions = [Execution(tool=ep.templates[step], work_order=t.work_order)]
        records.append(t.model_copy(update={"executions": executions}))
    score = score_episode(ep, records)
    assert score.primary.errors[cue] == ["superseded", "superseded"]
    assert score.primary.errors[ask] == ["re_execution"]
    assert set(score.primary.errors) == {cue, ask}


def test_figure_3s_two_edges_cannot_arise_under_the_phase_rule_the_page_states() -> None:
    """The fidelity page's Figure 3 row: the paper gives no template's phase; here select vendor,
    negotiate and insurance share phase 2 and the phase-consistent sampler draws an edge only
    from an earlier phase to a later one, so the figure's "negotiate requires select vendor" and
    "insurance requires negotiate" never arise (and seed 152 gives another plan)."""
    phase = {t.slug: t.phase for t in PROCUREMENT}
    figure = ("select_vendor", "record_negotiation", "obtain_insurance_cert")
    assert {phase[s] for s in figure} == {2}
    for seed in range(100, 400):
        ep = generate_episode(EpisodeParams(seed=seed, steps=10, density=0.15))
        slug = ep.templates
        for sid, spec in ep.plan.steps.items():
            for dep in spec.deps:
                assert phase[slug[dep]] < phase[slug[sid]], (seed, sid, dep)
