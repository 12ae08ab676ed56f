"""The definition's invariants under random graphs and random operation sequences."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from taskgate import (
    Booking,
    Plan,
    Policy,
    Revision,
    Status,
    StepSpec,
    TaskgateError,
    TaskMachine,
    receipts,
)


@st.composite
def dags(draw: st.DrawFn) -> Plan:
    n = draw(st.integers(1, 10))
    steps = {}
    for i in range(1, n + 1):
        deps = draw(st.sets(st.integers(1, i - 1), max_size=3)) if i > 1 else set()
        steps[f"s{i}"] = StepSpec(deps=tuple(f"s{d}" for d in sorted(deps)), code=f"RC-{1000 + i}")
    order = draw(st.permutations(list(steps)))
    return Plan(steps={s: steps[s] for s in order})


def _step(draw: st.DrawFn, n: int) -> str:
    return f"s{draw(st.integers(1, n))}"


@st.composite
def operations(draw: st.DrawFn, n: int) -> list[tuple[str, object]]:
    ops: list[tuple[str, object]] = []
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["request", "book", "book", "redisplay", "revise", "garbage"]))
        if kind == "request":
            step = draw(st.none() | st.just(_step(draw, n)))
            ops.append((kind, (step, draw(st.booleans()))))
        elif kind == "book":
            ops.append((kind, (_step(draw, n), draw(st.sampled_from(list(Policy))))))
        elif kind == "redisplay":
            ops.append((kind, _step(draw, n)))
        elif kind == "revise":
            cancel = draw(st.none() | st.just(_step(draw, n)))
            rewires = {_step(draw, n): tuple(draw(st.sets(st.just(_step(draw, n)), max_size=2)))}
            relax = draw(st.none() | st.tuples(st.just(_step(draw, n)), st.just(_step(draw, n))))
            ops.append(
                (
                    kind,
                    Revision(
                        cancel=cancel, rewires=draw(st.just(rewires) | st.just({})), relax=relax
                    ),
                )
            )
        else:
            ops.append((kind, draw(st.sampled_from(["RC-9", "RC-1001"]))))
    return ops


def run(plan: Plan, ops: list[tuple[str, object]], check: bool = True) -> TaskMachine:
    m = TaskMachine(plan, seed=0)
    for kind, arg in ops:
        before = m.snapshot()
        n_ledger = len(m.ledger)
        try:
            if kind == "request":
                step, redo = arg  # type: ignore[misc]
                m.open_request(step, explicit_redo=redo)
            elif kind == "book" and m.request is not None:
                step, policy = arg  # type: ignore[misc]
                v = m.submit(Booking(m.graph.code(step), m.request.work_order), policy)
                if check and not v.admitted:
                    # a refused booking changes no state
                    after = m.snapshot()
                    assert after == before
            elif kind == "redisplay" and m.request is not None:
                old = [e for e in receipts(m.ledger) if e.work_order != m.request.work_order]
                if old:
                    v = m.submit(Booking(old[0].code, old[0].work_order), Policy.UNGATED)
                    assert v.redisplay and m.snapshot() == before
            elif kind == "revise":
                m.revise(arg)  # type: ignore[arg-type]
            elif kind == "garbage" and m.request is not None:
                v = m.submit(Booking(str(arg), "#W0"), Policy.UNGATED)
                assert not v.admitted and m.snapshot() == before
        except TaskgateError:
            # a failed operation changes nothing and records nothing
            assert m.snapshot() == before and len(m.ledger) == n_ledger
    return m


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_definition_invariants(data: st.DataObject) -> None:
    plan = data.draw(dags())
    m = run(plan, data.draw(operations(len(plan.steps))))
    admitted = {e.step for e in receipts(m.ledger)}
    for s in m.steps:
        status = m.status(s)
        # CANCELLED iff cancelled
        assert (status is Status.CANCELLED) == m.graph.is_cancelled(s)
        # DONE iff an accepted booking exists and the step is not cancelled
        assert (status is Status.DONE) == (s in admitted and not m.graph.is_cancelled(s))
        # BLOCKED iff not cancelled, not done, and some prerequisite is not DONE
        blocked = any(m.status(u) is not Status.DONE for u in m.graph.prerequisites(s))
        expect_blocked = status not in (Status.CANCELLED, Status.DONE) and blocked
        assert (status is Status.BLOCKED) == expect_blocked
    # alpha holds only DONE steps, and at most the current request's step
    assert all(m.status(s) is Status.DONE for s in m.authorized)
    assert m.authorized <= ({m.request.step} if m.request else set())
    # the state rebuilt from the ledger equals the live state
    assert TaskMachine.from_ledger(m.ledger).snapshot() == m.snapshot()


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_every_prefix_of_the_ledger_rebuilds(data: st.DataObject) -> None:
    plan = data.draw(dags())
    ops = data.draw(operations(len(plan.steps)))
    full = run(plan, ops, check=False).ledger
    cut = data.draw(st.integers(1, len(full)))
    # rebuilding the prefix, then the rest, gives the full state
    m = TaskMachine.from_ledger(full[:cut])
    for entry in full[cut:]:
        m._append(entry)
    assert m.snapshot() == TaskMachine.from_ledger(full).snapshot()


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_gate_never_admits_a_state_violation(data: st.DataObject) -> None:
    plan = data.draw(dags())
    m = TaskMachine(plan, seed=1)
    for _ in range(data.draw(st.integers(1, 30))):
        step = f"s{data.draw(st.integers(1, len(plan.steps)))}"
        m.open_request(step, explicit_redo=data.draw(st.booleans()))
        target = f"s{data.draw(st.integers(1, len(plan.steps)))}"
        before, alpha = m.status(target), m.authorized
        assert m.request is not None
        policy = data.draw(st.sampled_from([Policy.STATE_BOUND, Policy.REQUEST_BOUND]))
        v = m.submit(Booking(m.graph.code(target), m.request.work_order), policy)
        if v.admitted:
            assert before is Status.TODO or target in alpha
            if policy is Policy.REQUEST_BOUND:
                assert target == step
