from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from taskgate import Plan, Revision, StepSpec, validate


def kinds(plan: Plan, revision: Revision | None = None) -> list[str]:
    return [d.kind for d in validate(plan, revision)]


def test_clean_plan_and_revision_pass(chain: Plan) -> None:
    assert validate(chain) == []
    assert validate(chain, Revision(cancel="s2", rewires={"s3": ("s1",)})) == []


def test_each_defect_kind() -> None:
    plan = Plan(
        steps={
            "s1": StepSpec(code=""),
            "s2": StepSpec(code="RC-7", deps=("s9",)),
            "s3": StepSpec(code="RC-7"),
            "s4": StepSpec(code="banana"),
        }
    )
    assert kinds(plan) == ["empty-code", "malformed-code", "duplicate-code", "unknown-prerequisite"]
    d = validate(plan)[2]
    assert d.steps == ("s2", "s3") and "RC-7" in d.detail


def test_cancelled_step_left_as_prerequisite(chain: Plan) -> None:
    assert kinds(chain, Revision(cancel="s2")) == ["cancelled-prerequisite"]


def test_rewire_that_closes_a_cycle(chain: Plan) -> None:
    out = validate(chain, Revision(rewires={"s1": ("s3",)}))
    assert [d.kind for d in out] == ["cycle"]
    assert set(out[0].steps) == {"s1", "s2", "s3"}


def test_revision_naming_unknown_steps(chain: Plan) -> None:
    got = kinds(chain, Revision(cancel="s8", rewires={"s9": ()}, relax=("s7", "s1")))
    assert got == ["unknown-revision-step"] * 3


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["s1", "s2", "s3", "s4"]),
        st.builds(
            StepSpec,
            deps=st.lists(st.sampled_from(["s1", "s2", "s3", "s4", "x"]), max_size=3).map(tuple),
            code=st.sampled_from(["", "RC-1", "RC-2", "rc 3", "junk"]),
        ),
        min_size=1,
    ),
    st.builds(
        Revision,
        cancel=st.none() | st.sampled_from(["s1", "s5"]),
        rewires=st.dictionaries(
            st.sampled_from(["s1", "s2", "zz"]),
            st.lists(st.sampled_from(["s1", "s2", "s3"]), max_size=2).map(tuple),
            max_size=2,
        ),
        relax=st.none() | st.tuples(st.sampled_from(["s1", "s2", "q"]), st.just("s1")),
    )
    | st.none(),
)
def test_validator_never_raises(steps: dict[str, StepSpec], revision: Revision | None) -> None:
    out = validate(Plan(steps=steps), revision)
    assert all(d.detail for d in out)


def test_a_look_alike_code_is_malformed_not_a_second_code() -> None:
    # RC-4808 in fullwidth digits is no completion code: never a duplicate of RC-4808, never
    # silently a code of its own
    look_alike = "RC-\uff14\uff18\uff10\uff18"
    plan = Plan(steps={"s1": StepSpec(code="RC-4808"), "s2": StepSpec(code=look_alike)})
    (d,) = validate(plan)
    assert (d.kind, d.steps) == ("malformed-code", ("s2",))
    assert "only ASCII digits" in d.detail
    plan = Plan(steps={"s1": StepSpec(code="RC-4808"), "s2": StepSpec(code="rc 4808")})
    assert kinds(plan) == ["duplicate-code"]  # a loosely written ASCII code still normalizes
