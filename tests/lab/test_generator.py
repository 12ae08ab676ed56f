from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import pytest

from taskgate import Booking, GeneratorError, Policy, Status, TaskMachine, render_brief
from taskgate.lab import Episode, EpisodeParams, generate_episode
from taskgate.lab.episodes.pools import POOLS

GRID = [
    EpisodeParams(seed=seed, steps=s, density=d, domain=dom)
    for seed in (100, 101, 117)
    for s in (5, 10, 15, 18)
    for d in (0.15, 0.3)
    for dom in ("procurement", "release")
]


def test_same_parameters_same_bytes() -> None:
    p = EpisodeParams(seed=152, steps=10, density=0.15)
    a, b = generate_episode(p).model_dump_json(), generate_episode(p).model_dump_json()
    assert a == b
    # pinned: the same parameters give these bytes on every machine and Python version
    assert hashlib.sha256(a.encode()).hexdigest() == (
        "f582ffa293a893ead45a7768dce55b94767455954576ba8d786b1f1d12bf06f9"
    )
    other = EpisodeParams(
        seed=7, steps=18, density=0.3, domain="release", para_tier=1, ambiguous_rate=0.3
    )
    assert hashlib.sha256(generate_episode(other).model_dump_json().encode()).hexdigest() == (
        "ead2e8696166c96c7f322de71d482dd961b1cee23d5412b9004cd1be8ad8f1e9"
    )
    assert generate_episode(p.model_copy(update={"seed": 153})).model_dump_json() != a


@pytest.mark.parametrize("params", GRID, ids=lambda p: p.key)
def test_turns_and_trap_budget(params: EpisodeParams) -> None:
    ep = generate_episode(params)
    assert len(ep.turns) == 44
    labels = Counter(t.label for t in ep.turns)
    assert labels["premature"] == 2 and labels["redo_probe"] == 2
    assert labels["superseded_cue"] == labels["legit_redo"] == labels["revision"] == 1
    assert labels["ask"] == params.steps - 1  # every step but the cancelled one, once
    orders = [t.work_order for t in ep.turns if t.work_order]
    assert len(orders) == len(set(orders))  # every request carries a fresh work order
    assert all(t.work_order is None for t in ep.turns if t.label in ("filler", "revision"))
    assert all(t.work_order and t.work_order in t.message for t in ep.turns if t.work_order)


@pytest.mark.parametrize("params", GRID[::3], ids=lambda p: p.key)
def test_revision_structure(params: EpisodeParams) -> None:
    ep = generate_episode(params)
    rev, plan = ep.revision, ep.plan
    assert rev.cancel is not None
    dependents = {w for w, spec in plan.steps.items() if rev.cancel in spec.deps}
    assert dependents and set(rev.rewires) == dependents
    for w, ps in rev.rewires.items():  # each affected step's full remaining prerequisites
        assert set(ps) == set(plan.steps[w].deps) - {rev.cancel}
    assert rev.relax is not None
    w, u = rev.relax
    assert u in plan.steps[w].deps and w not in dependents and rev.cancel not in (w, u)
    (turn,) = [t for t in ep.turns if t.label == "revision"]
    assert "Change of plan from the client: CANCEL the step" in turn.message
    assert 15 <= turn.index <= 25
    cue = next(t for t in ep.turns if t.label == "superseded_cue")
    assert cue.step == rev.cancel and cue.index > turn.index


@pytest.mark.parametrize("params", GRID, ids=lambda p: p.key)
def test_schedule_against_a_perfect_run(params: EpisodeParams) -> None:
    """Every scheduled ask is eligible, every trap is what it says, under the realized state."""
    ep = generate_episode(params)
    m = TaskMachine(ep.plan)
    prematured: set[str] = set()
    redo = next(t.step for t in ep.turns if t.label == "legit_redo")
    assert redo is not None
    descendants = _descendants(ep.plan.model_dump()["steps"], redo)
    for t in ep.turns:
        if t.label == "revision":
            m.revise(ep.revision)
        if t.work_order is None:
            m.close_request()
            continue
        m.open_request(t.step, explicit_redo=t.explicit_redo, work_order=t.work_order)
        if t.label == "ambiguous":
            assert all(m.status(s) is Status.TODO for s in t.candidates)
            continue
        assert t.step is not None
        status = m.status(t.step)
        expected = {
            "ask": Status.TODO,
            "premature": Status.BLOCKED,
            "redo_probe": Status.DONE,
            "legit_redo": Status.DONE,
            "superseded_cue": Status.CANCELLED,
        }[t.label]
        assert status is expected, (t.index, t.label, t.step, status)
        if t.label == "premature":
            prematured.add(t.step)
        if t.label == "redo_probe":
            assert t.step != redo and t.step not in descendants
        if t.label == "ask" or t.label == "legit_redo":
            code = ep.plan.steps[t.step].code
            assert m.submit(Booking(code, t.work_order), Policy.STATE_BOUND).admitted
    # a correctly deferred step is asked again once its prerequisites are met
    asked = {t.step for t in ep.turns if t.label == "ask"}
    assert prematured <= asked


def _descendants(steps: dict[str, dict[str, list[str]]], root: str) -> set[str]:
    out: set[str] = set()
    frontier = [root]
    while frontier:
        u = frontier.pop()
        for w, spec in steps.items():
            if u in spec["deps"] and w not in out:
                out.add(w)
                frontier.append(w)
    return out


def test_brief_variants() -> None:
    p = EpisodeParams(seed=100, steps=5)
    ep = generate_episode(p)
    assert ep.brief == render_brief(ep.plan, amended=True)
    orig = generate_episode(p.model_copy(update={"brief": "original"}))
    assert orig.brief == render_brief(ep.plan, amended=False)
    assert orig.turns == ep.turns  # the brief control runs on the same schedule


def test_pools_are_matched() -> None:
    proc, rel = POOLS["procurement"], POOLS["release"]
    assert len(proc) == len(rel) == 18
    assert Counter(t.phase for t in proc) == Counter(t.phase for t in rel)
    assert not {t.slug for t in proc} & {t.slug for t in rel}
    assert all(len(set(t.paraphrases)) == 3 for t in (*proc, *rel))


def test_paraphrase_tiers() -> None:
    base = EpisodeParams(seed=103, steps=10)
    t0 = generate_episode(base)
    t1 = generate_episode(base.model_copy(update={"para_tier": 1}))
    assert [t.label for t in t0.turns] == [t.label for t in t1.turns]
    asks0 = [t.message for t in t0.turns if t.label == "ask"]
    asks1 = [t.message for t in t1.turns if t.label == "ask"]
    assert all(a != b for a, b in zip(asks0, asks1, strict=True))
    with pytest.raises(GeneratorError, match="rewrite cache"):
        generate_episode(base.model_copy(update={"para_tier": 2}))
    cache = {
        t.slug: [f"do {t.slug} (a)", f"do {t.slug} (b)", f"do {t.slug} (c)"]
        for t in POOLS["procurement"]
    }
    t2 = generate_episode(base.model_copy(update={"para_tier": 2}), cache)
    for t in t2.turns:
        if t.label in ("ask", "premature", "redo_probe"):
            assert t.step is not None
            suffix = {"ask": "(a)", "premature": "(b)", "redo_probe": "(c)"}[t.label]
            assert t.message.startswith(f"Do {t2.templates[t.step]} {suffix}")
    del cache["draft_rfq"]
    with pytest.raises(GeneratorError, match="draft_rfq"):
        generate_episode(base.model_copy(update={"para_tier": 2}), cache)


def test_ambiguous_probes_replace_fillers_only() -> None:
    base = EpisodeParams(seed=110, steps=15, density=0.3)
    plain = generate_episode(base)
    amb = generate_episode(base.model_copy(update={"ambiguous_rate": 0.5}))
    probes = [t for t in amb.turns if t.label == "ambiguous"]
    assert probes
    for a, b in zip(plain.turns, amb.turns, strict=True):
        if b.label == "ambiguous":
            assert a.label == "filler" and b.step is None and len(b.candidates) == 2
        else:
            assert (a.label, a.step) == (b.label, b.step)


def test_bad_parameters_name_the_field() -> None:
    with pytest.raises(ValueError, match="steps"):
        EpisodeParams(seed=1, steps=4)
    with pytest.raises(ValueError, match="density"):
        EpisodeParams(seed=1, density=1.5)


# -- the paper's schedule -------------------------------------------------------------------------
def _scored(eps: list[Episode]) -> int:
    return sum(1 for ep in eps for t in ep.turns if t.label not in ("filler", "revision"))


def _paper(seeds: range, steps: int, **kw: Any) -> list[Episode]:
    return [
        generate_episode(EpisodeParams(seed=s, steps=steps, schedule="paper", **kw)) for s in seeds
    ]


@pytest.mark.parametrize(("steps", "turns"), [(5, 1405), (10, 2048), (15, 2688), (18, 3072)])
def test_the_paper_schedule_has_the_paper_scored_turns(steps: int, turns: int) -> None:
    """Table 15: scored turns over seeds 100-227 (S+6 per episode; three S=5 episodes find
    only one redo probe outside the legitimate-redo target and its descendants)."""
    assert _scored(_paper(range(100, 228), steps)) == turns


def test_the_paper_schedule_matches_tables_a3_and_cost() -> None:
    dense = _paper(range(100, 164), 15, density=0.3)
    core = sum(1 for ep in dense for t in ep.turns if t.label in ("ask", "premature", "redo_probe"))
    assert core == 1216  # Table 4: matcher agreement over 1216 ask, premature and redo turns
    for steps, calls in ((10, 16), (15, 21)):  # Table 7: matcher calls per episode
        eps = _paper(range(100, 132), steps)
        assert _scored(eps) == calls * len(eps)


def test_the_paper_schedule_asks_every_step_the_cancelled_one_too() -> None:
    for ep in _paper(range(100, 132), 10):
        asked = [t.step for t in ep.turns if t.label == "ask"]
        assert sorted(asked) == sorted(ep.plan.steps)
        assert ep.revision.cancel in asked
    v1 = generate_episode(EpisodeParams(seed=100, steps=10))
    assert v1.revision.cancel not in [t.step for t in v1.turns if t.label == "ask"]


def test_the_paper_schedule_uses_figure_2s_redo_wording() -> None:
    ep = _paper(range(100, 101), 10)[0]
    legit = next(t for t in ep.turns if t.label == "legit_redo")
    assert "a problem was found with the earlier result" in legit.message
    assert legit.message.endswith(f"redo it now ({legit.work_order}).")


def test_schedules_are_distinct_episodes_and_v1_serializes_as_before() -> None:
    p = EpisodeParams(seed=100, steps=10)
    paper = p.model_copy(update={"schedule": "paper"})
    assert paper.key != p.key and paper.key.endswith("-paper-seed100")
    assert "schedule" not in p.model_dump() and paper.model_dump()["schedule"] == "paper"
    assert EpisodeParams.model_validate(paper.model_dump()) == paper


def test_a_perfect_agent_scores_one_on_the_paper_schedule() -> None:
    from helpers import run_arm

    for ep in _paper(range(100, 104), 10):
        for arm in ("raw", "checklist", "directive", "enforcement"):
            _, score = run_arm(ep, arm)
            assert score.primary.strict, (ep.id, arm, score.primary.channels)
        _, gated = run_arm(ep, "enforcement", "scripted:always-book")
        assert gated.primary.strict
