"""One vocabulary: every testbed takes the ladder's names for the same couplings on ``--arms``,
keeps the paper's names in its tables, and the proxy's rungs are the ladder's arms."""

from __future__ import annotations

import pytest

from taskgate import RUNGS
from taskgate.lab.arms.registry import ARMS
from taskgate.lab.experiments.onenode.run import ARMS as ONENODE_ARMS
from taskgate.lab.experiments.pmbench.coupling import PMBENCH_RUNGS
from taskgate.lab.experiments.tau2.live import ARMS as TAU2_ARMS
from taskgate.registry import Registry


def test_the_proxys_rungs_are_the_ladders_arms() -> None:
    for name, rung in RUNGS.items():
        arm = ARMS[name]
        assert (arm.checklist, arm.directive_role, arm.policy) == (
            rung.checklist,
            rung.directive_role,
            rung.policy,
        )


@pytest.mark.parametrize(
    ("registry", "ladder", "own"),
    [
        (TAU2_ARMS, "raw", "ungated"),
        (TAU2_ARMS, "checklist", "state-block"),
        (TAU2_ARMS, "directive", "advisory"),
        (TAU2_ARMS, "enforcement", "gated"),
        (ONENODE_ARMS, "raw", "transcript"),
        (ONENODE_ARMS, "checklist", "manifest"),
        (ONENODE_ARMS, "enforcement", "trigger"),
        (PMBENCH_RUNGS, "self-ledger", "self-ledger"),
        (PMBENCH_RUNGS, "enforcement", "enforcement"),
        (PMBENCH_RUNGS, "enforce-state", "enforcement"),  # an earlier taskgate's name
    ],
)
def test_every_testbed_takes_the_ladders_names(
    registry: Registry[str], ladder: str, own: str
) -> None:
    assert registry.canonical(ladder) == own


#: names an earlier taskgate gave PM-Bench's rungs, kept as aliases for old scripts
EARLIER = {"ledger", "enforce-state", "enforce-judgement"}


def test_every_alias_is_a_ladder_name_or_an_earlier_one() -> None:
    for registry in (TAU2_ARMS, ONENODE_ARMS, PMBENCH_RUNGS):
        assert [a for a in registry.aliases if a not in ARMS and a not in EARLIER] == []


def test_pmbenchs_rungs_are_named_as_the_ladders() -> None:
    assert [r for r in PMBENCH_RUNGS if r not in ARMS] == ["enforcement-judgement"]
