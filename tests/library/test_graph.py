from __future__ import annotations

import pytest

from taskgate import CycleError, Plan, PlanError, Revision, StepSpec, TaskGraph, UnknownStepError


def test_plan_structure(chain: Plan) -> None:
    g = TaskGraph(chain)
    assert g.steps == ("s1", "s2", "s3", "s4")
    assert g.prerequisites("s3") == {"s2"}
    assert g.edges() == {("s1", "s2"), ("s2", "s3")}
    assert g.step_for_code("RC-1003") == "s3"
    assert g.step_for_code("RC-9999") is None


def test_codes_are_normalized() -> None:
    g = TaskGraph(Plan(steps={"a": StepSpec(code=" rc 0042 ")}))
    assert g.code("a") == "RC-0042"
    assert g.step_for_code("RC-0042") == "a"


def test_revision_applies_all_parts(chain: Plan) -> None:
    g = TaskGraph(chain)
    g.apply(Revision(cancel="s2", rewires={"s3": ("s1", "s4")}, relax=None))
    assert g.cancelled == {"s2"}
    assert g.prerequisites("s3") == {"s1", "s4"}
    g.relax("s3", "s4")
    assert g.prerequisites("s3") == {"s1"}


@pytest.mark.parametrize(
    ("revision", "error", "named"),
    [
        (Revision(cancel="s9"), UnknownStepError, "s9"),
        (Revision(rewires={"s9": ()}), UnknownStepError, "s9"),
        (Revision(rewires={"s3": ("s7",)}), UnknownStepError, "s7"),
        (Revision(relax=("s9", "s1")), UnknownStepError, "s9"),
        (Revision(relax=("s3", "s1")), PlanError, "'s3' does not require 's1'"),
        (Revision(rewires={"s1": ("s3",)}), CycleError, "s1"),
        (Revision(cancel="s4", rewires={"s1": ("s3",)}), CycleError, "cycle"),
    ],
)
def test_bad_revision_raises_and_changes_nothing(
    chain: Plan, revision: Revision, error: type[Exception], named: str
) -> None:
    g = TaskGraph(chain)
    before = (g.edges(), g.cancelled)
    with pytest.raises(error, match=named):
        g.apply(revision)
    assert (g.edges(), g.cancelled) == before


def test_cycle_error_names_the_cycle(chain: Plan) -> None:
    g = TaskGraph(chain)
    with pytest.raises(CycleError) as info:
        g.rewire("s1", ["s3"])
    assert set(info.value.cycle) == {"s1", "s2", "s3"}
    assert info.value.cycle[0] == info.value.cycle[-1]


@pytest.mark.parametrize(
    ("steps", "match"),
    [
        ({"a": StepSpec(code="")}, "completion code ''"),
        ({"a": StepSpec(code="RC-1"), "b": StepSpec(code="RC-1")}, "given to both"),
        ({"a": StepSpec(code="RC-1", deps=("zz",))}, "'zz'"),
        (
            {"a": StepSpec(code="RC-1", deps=("b",)), "b": StepSpec(code="RC-2", deps=("a",))},
            "cycle",
        ),
    ],
)
def test_strict_graph_refuses_defective_plans(steps: dict[str, StepSpec], match: str) -> None:
    with pytest.raises(PlanError, match=match):
        TaskGraph(Plan(steps=steps))


def test_lenient_graph_keeps_compile_errors() -> None:
    plan = Plan(
        steps={
            "a": StepSpec(code="", deps=("ghost",)),
            "b": StepSpec(code="RC-1", deps=("c",)),
            "c": StepSpec(code="RC-1", deps=("b",)),
        }
    )
    g = TaskGraph(plan, lenient=True)
    assert g.prerequisites("a") == {"ghost"}
    assert g.step_for_code("RC-1") == "b"
    g.apply(Revision(relax=("b", "nope")))  # a no-op, not an error, when lenient
    assert g.prerequisites("b") == {"c"}


def test_plan_rejects_bad_step_ids() -> None:
    with pytest.raises(ValueError, match="no whitespace"):
        Plan(steps={"s 1": StepSpec(code="RC-1")})
    with pytest.raises(ValueError):
        Plan(steps={})


def test_a_look_alike_code_is_no_code() -> None:
    look_alike = "RC-\uff14\uff18\uff10\uff18"  # RC-4808 in fullwidth digits
    with pytest.raises(PlanError, match="expected RC-<digits>"):
        TaskGraph(Plan(steps={"a": StepSpec(code=look_alike)}))
    g = TaskGraph(
        Plan(steps={"a": StepSpec(code="RC-4808"), "b": StepSpec(code=look_alike)}), lenient=True
    )
    assert g.step_for_code("RC-4808") == "a"
    assert g.step_for_code(look_alike) is None  # step b stays unbookable
