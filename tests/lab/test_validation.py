"""The validations of the metric (Appendix A.1): scripted agents bound what the scorer can say."""

from __future__ import annotations

import pytest

from helpers import run_arm
from taskgate.lab import ARMS, EpisodeParams, generate_episode

EPISODES = [
    generate_episode(EpisodeParams(seed=seed, steps=s, density=d, domain=dom))
    for seed, s, d, dom in [
        (100, 5, 0.15, "procurement"),
        (101, 10, 0.15, "procurement"),
        (102, 15, 0.3, "procurement"),
        (103, 18, 0.15, "release"),
        (104, 10, 0.3, "release"),
    ]
]


@pytest.mark.parametrize("arm", list(ARMS))
def test_perfect_agent_is_clean_on_every_arm(arm: str) -> None:
    for ep in EPISODES:
        _, score = run_arm(ep, arm)
        assert score.primary.strict and score.decline_aware.strict, (arm, ep.id, score.primary)
        assert score.primary.correct_turns == score.primary.scored_turns


def test_perfect_agent_is_clean_with_ambiguous_probes() -> None:
    ep = generate_episode(EpisodeParams(seed=120, steps=15, density=0.3, ambiguous_rate=0.5))
    assert any(t.label == "ambiguous" for t in ep.turns)
    for arm in ("raw", "enforcement", "enforcement-request"):
        assert run_arm(ep, arm)[1].primary.strict


def test_a_corrupted_module_makes_the_perfect_agent_fail() -> None:
    eps = [generate_episode(EpisodeParams(seed=200 + i, steps=10)) for i in range(15)]
    scores = [run_arm(ep, "enforcement", compiler="scripted:corrupt")[1] for ep in eps]
    assert sum(s.primary.strict for s in scores) == 0
    assert all(s.primary.channels["omission"] > 0 for s in scores)


@pytest.mark.parametrize(
    "arm", ["enforcement", "enforcement-request", "enforcement-same-turn", "hybrid"]
)
def test_always_book_scores_one_behind_the_gate(arm: str) -> None:
    for ep in EPISODES:
        _, score = run_arm(ep, arm, agent="scripted:always-book")
        assert score.primary.strict, (arm, ep.id, score.primary.channels)
        assert score.refused > 0  # the gate did the work


@pytest.mark.parametrize("arm", ["raw", "checklist", "directive", "self-ledger"])
def test_always_book_fails_without_the_gate(arm: str) -> None:
    for ep in EPISODES:
        _, score = run_arm(ep, arm, agent="scripted:always-book")
        assert not score.primary.strict
        assert score.primary.channels["re_execution"] >= 2
        assert score.primary.channels["superseded"] == 1


def test_obedient_agent_follows_directives() -> None:
    for ep in EPISODES:
        _turns, score = run_arm(ep, "directive", agent="scripted:obedient")
        assert score.primary.strict
        assert sum(score.directives.values()) == sum(score.obeyed.values()) > 0
        assert not run_arm(ep, "raw", agent="scripted:obedient")[1].primary.strict


def test_corruption_degrades_the_gate_and_receipts_repair_it() -> None:
    eps = [generate_episode(EpisodeParams(seed=300 + i, steps=15, density=0.3)) for i in range(24)]

    def rate(eps_rate: float, repair: bool) -> int:
        return sum(
            run_arm(ep, "enforcement", "scripted:obedient", corruption=eps_rate, repair=repair)[
                1
            ].primary.strict
            for ep in eps
        )

    clean, low, high = rate(0.0, False), rate(0.003, False), rate(0.03, False)
    assert clean == 24 and clean > low > high
    assert rate(0.003, True) > low  # lost and spurious DONE bits are rebuilt from the ledger
