"""Each error channel, dynamic ground truth, decline-aware scoring, re-displays."""

from __future__ import annotations

from collections import Counter

import pytest

from helpers import run_patched
from taskgate.lab import EpisodeParams, generate_episode
from taskgate.lab.episodes.models import Episode, Turn

EP = generate_episode(EpisodeParams(seed=152, steps=10, density=0.15))


def first(ep: Episode, label: str) -> Turn:
    return next(t for t in ep.turns if t.label == label)


def ref(ep: Episode, step: str, wo: str | None) -> str:
    return f"ref {ep.plan.steps[step].code}/{wo}"


def channels(arm: str, patches: dict[int, object]) -> Counter[str]:
    return run_patched(EP, arm, patches)[1].primary.channels


def test_re_execution() -> None:
    t = first(EP, "redo_probe")
    assert t.step
    assert channels("raw", {t.index: ref(EP, t.step, t.work_order)}) == Counter(re_execution=1)


def test_superseded() -> None:
    t = first(EP, "superseded_cue")
    assert t.step
    assert channels("raw", {t.index: ref(EP, t.step, t.work_order)}) == Counter(superseded=1)


def test_premature_and_the_dynamic_relabel() -> None:
    t = first(EP, "premature")
    assert t.step
    _turns, score = run_patched(EP, "raw", {t.index: ref(EP, t.step, t.work_order)})
    assert score.primary.channels == Counter(premature=1)
    # the step's scheduled ask now finds it DONE: ground truth follows what happened
    assert score.primary.labels["redo_probe"] == 3 and score.primary.labels["ask"] == 8


def test_omission() -> None:
    t = first(EP, "ask")
    assert channels("raw", {t.index: "I'll get to it later."}) == Counter(omission=1)


def test_unrequested() -> None:
    t = first(EP, "ask")
    assert t.step
    other = next(
        u.step
        for u in EP.turns
        if u.label == "ask" and u.step != t.step and not EP.plan.steps[u.step or ""].deps
    )
    assert other
    reply = ref(EP, t.step, t.work_order) + "\n" + ref(EP, other, t.work_order)
    assert channels("raw", {t.index: reply}) == Counter(unrequested=1)


def test_refused_redo() -> None:
    t = first(EP, "legit_redo")
    assert channels("raw", {t.index: "No, it was fine."}) == Counter(refused_redo=1)


def test_booking_on_an_ambiguous_probe_is_unrequested() -> None:
    ep = generate_episode(EpisodeParams(seed=120, steps=15, density=0.3, ambiguous_rate=0.5))
    t = first(ep, "ambiguous")
    _turns, score = run_patched(ep, "raw", {t.index: ref(ep, t.candidates[0], t.work_order)})
    assert score.primary.channels["unrequested"] == 1


def test_decline_aware_scoring_reads_a_cited_booking_as_a_citation() -> None:
    t = first(EP, "redo_probe")
    assert t.step
    reply = (
        f"That step is already completed, no new work order booked. {ref(EP, t.step, t.work_order)}"
    )
    _, score = run_patched(EP, "raw", {t.index: reply})
    assert score.primary.channels == Counter(re_execution=1)
    assert score.decline_aware.strict


def test_a_redisplay_is_never_an_execution() -> None:
    t = first(EP, "redo_probe")
    ask = next(u for u in EP.turns if u.label == "ask" and u.step == t.step)
    assert t.step
    _, score = run_patched(EP, "raw", {t.index: f"Done before: {ref(EP, t.step, ask.work_order)}"})
    assert score.primary.strict and score.redisplays == 1


@pytest.mark.parametrize(
    ("reply", "false"), [("ref {}", 1), ("It is blocked, I cannot do it. ref {}", 0)]
)
def test_false_completions(reply: str, false: int) -> None:
    t = first(EP, "premature")
    assert t.step
    line = ref(EP, t.step, t.work_order)[4:]
    turns, score = run_patched(EP, "enforcement", {t.index: reply.format(line)})
    assert score.primary.strict and score.refused == 1
    assert score.false_completions == false
    assert turns[t.index + 1].user.startswith("[BOOKING REJECTED]")


def test_matcher_agreement_and_redo_flags() -> None:
    _, score = run_patched(EP, "directive", {})
    assert score.matcher_agree == score.matcher_total == 15
    assert (score.redo_tp, score.redo_fp, score.redo_fn) == (1, 0, 0)
