from __future__ import annotations

import pytest

from taskgate import (
    Booking,
    Plan,
    Policy,
    Reason,
    Revision,
    Status,
    TaskMachine,
    UnknownStepError,
    WorkOrderError,
    dump_ledger,
    load_ledger,
    receipts,
)

SB, RB, UG = Policy.STATE_BOUND, Policy.REQUEST_BOUND, Policy.UNGATED


def book(m: TaskMachine, step: str, policy: Policy = SB) -> Reason | None:
    req = m.request
    assert req is not None
    return m.submit(Booking(m.graph.code(step), req.work_order), policy).reason


def test_status_is_derived(chain: Plan) -> None:
    m = TaskMachine(chain, seed=1)
    assert m.statuses() == {
        "s1": Status.TODO,
        "s2": Status.BLOCKED,
        "s3": Status.BLOCKED,
        "s4": Status.TODO,
    }
    m.open_request("s1")
    assert book(m, "s1") is None
    assert m.status("s1") is Status.DONE
    assert m.status("s2") is Status.TODO
    m.revise(Revision(cancel="s1"))
    assert m.status("s1") is Status.CANCELLED
    assert m.status("s2") is Status.BLOCKED  # a cancelled prerequisite is not DONE
    assert m.missing("s2") == ("s1",)


def test_only_the_current_work_order_books(chain: Plan) -> None:
    m = TaskMachine(chain, seed=1)
    first = m.open_request("s1", work_order="#W1111")
    m.open_request("s4", work_order="#W2222")
    v = m.submit(Booking("RC-1001", first.work_order))
    assert (v.decision, v.reason, v.redisplay) == ("refuse", Reason.STALE_WORK_ORDER, True)
    assert m.status("s1") is Status.TODO  # a re-display is never an execution
    v = m.submit(Booking("RC-1004", "#W9999"))
    assert v.reason is Reason.UNKNOWN_WORK_ORDER and not v.redisplay


def test_no_request_open_refuses(chain: Plan) -> None:
    m = TaskMachine(chain)
    assert m.submit(Booking("RC-1001", "#W1234")).reason is Reason.NO_REQUEST
    assert m.done == frozenset()


def test_repeating_a_receipt_is_a_redisplay(chain: Plan) -> None:
    m = TaskMachine(chain)
    m.open_request("s1")
    assert book(m, "s1", UG) is None
    assert book(m, "s1", UG) is Reason.REPEATED_RECEIPT
    assert len(receipts(m.ledger)) == 1


@pytest.mark.parametrize("policy", list(Policy))
def test_unknown_code_is_refused_under_every_policy(chain: Plan, policy: Policy) -> None:
    m = TaskMachine(chain)
    req = m.open_request("s1")
    assert m.submit(Booking("RC-7777", req.work_order), policy).reason is Reason.UNKNOWN_CODE


def test_state_bound_policy(chain: Plan) -> None:
    m = TaskMachine(chain, seed=3)
    m.open_request("s2")
    v = m.submit(Booking("RC-1002", m.request.work_order if m.request else ""))
    assert (v.reason, v.missing) == (Reason.BLOCKED, ("s1",))
    m.open_request("s1")
    assert book(m, "s1") is None
    m.open_request("s1")
    assert book(m, "s1") is Reason.ALREADY_DONE
    assert book(m, "s4") is None  # unrequested but eligible: state-bound admits it
    m.revise(Revision(cancel="s2", rewires={"s3": ("s1",)}))
    m.open_request("s2")
    assert book(m, "s2") is Reason.CANCELLED


def test_request_bound_policy(chain: Plan) -> None:
    m = TaskMachine(chain, seed=3)
    m.open_request("s1")
    assert book(m, "s4", RB) is Reason.NOT_REQUESTED
    assert book(m, "s1", RB) is None
    m.open_request(None)
    assert book(m, "s4", RB) is Reason.NO_RESOLVED_STEP
    assert book(m, "s4", SB) is None


def test_ungated_admits_any_real_execution(chain: Plan) -> None:
    m = TaskMachine(chain)
    m.open_request("s1")
    assert book(m, "s3", UG) is None  # premature, but it happened
    assert m.status("s3") is Status.DONE


def test_authorization_is_scoped_to_its_request(chain: Plan) -> None:
    m = TaskMachine(chain)
    m.open_request("s1")
    book(m, "s1")
    m.open_request("s1", explicit_redo=True)
    assert m.authorized == {"s1"}
    assert book(m, "s1") is None
    assert book(m, "s1") is Reason.REPEATED_RECEIPT
    m.open_request("s1")
    assert m.authorized == frozenset()
    assert book(m, "s1") is Reason.ALREADY_DONE


def test_redo_flag_on_a_step_that_is_not_done_authorizes_nothing(chain: Plan) -> None:
    m = TaskMachine(chain)
    m.open_request("s2", explicit_redo=True)
    assert m.authorized == frozenset()
    assert book(m, "s2") is Reason.BLOCKED


def test_authorization_covers_only_the_resolved_step(chain: Plan) -> None:
    m = TaskMachine(chain)
    m.open_request("s1")
    book(m, "s1")
    m.open_request("s4")
    book(m, "s4")
    m.open_request("s4", explicit_redo=True)
    assert book(m, "s1") is Reason.ALREADY_DONE


def test_work_orders(chain: Plan) -> None:
    m = TaskMachine(chain, seed=5)
    issued = {m.open_request().work_order for _ in range(200)}
    assert len(issued) == 200
    assert all(w.startswith("#W") and w[2:].isdigit() for w in issued)
    with pytest.raises(WorkOrderError, match="already issued"):
        m.open_request(work_order=next(iter(issued)))
    with pytest.raises(WorkOrderError, match="'W-'"):
        m.open_request(work_order="W-")
    with pytest.raises(UnknownStepError, match="s99"):
        m.open_request("s99")
    assert m.request is not None and m.request.work_order in issued  # failures changed nothing


def test_a_look_alike_work_order_is_no_work_order(chain: Plan) -> None:
    m = TaskMachine(chain)
    m.open_request("s1", work_order="#W1234")
    look_alike = "#W\uff11\uff12\uff13\uff14"  # #W1234 in fullwidth digits
    with pytest.raises(WorkOrderError, match="is not a work order"):
        m.open_request("s4", work_order=look_alike)
    with pytest.raises(WorkOrderError, match="is not a work order"):
        m.open_request("s4", work_order="#W\u0661\u0662\u0663\u0664")  # Arabic-Indic
    v = m.submit(Booking("RC-1001", look_alike))  # made by hand: it still books nothing
    assert v.reason is Reason.UNKNOWN_WORK_ORDER and m.done == frozenset()
    assert m.submit(Booking("RC-\uff11001", "#W1234")).reason is Reason.UNKNOWN_CODE


def test_same_seed_same_work_orders(chain: Plan) -> None:
    a, b = TaskMachine(chain, seed=9), TaskMachine(chain, seed=9)
    assert [a.open_request().work_order for _ in range(5)] == [
        b.open_request().work_order for _ in range(5)
    ]


def test_failed_revision_is_not_recorded(chain: Plan) -> None:
    m = TaskMachine(chain)
    n = len(m.ledger)
    with pytest.raises(UnknownStepError):
        m.revise(Revision(cancel="s8"))
    assert len(m.ledger) == n


def test_ledger_rebuilds_state_at_every_point(chain: Plan) -> None:
    m = TaskMachine(chain, seed=2)
    m.open_request("s1")
    book(m, "s1")
    m.open_request("s3")
    book(m, "s3")
    m.revise(Revision(cancel="s2", rewires={"s3": ("s1",)}))
    m.open_request("s3")
    book(m, "s3")
    entries = load_ledger(dump_ledger(m.ledger))
    assert entries == list(m.ledger)
    assert TaskMachine.from_ledger(entries).snapshot() == m.snapshot()
    prefix = TaskMachine.from_ledger(entries[:5])
    assert prefix.status("s1") is Status.DONE and prefix.status("s3") is Status.BLOCKED


def test_bad_ledger_line_is_named() -> None:
    with pytest.raises(ValueError, match="ledger line 2"):
        load_ledger('{"kind": "request", "work_order": "#W1"}\n{"kind": "nope"}\n')


def test_corruption_and_receipts_repair(chain: Plan) -> None:
    m = TaskMachine(chain)
    m.open_request("s1")
    book(m, "s1")
    m.corrupt_completion("s1", False)
    m.corrupt_completion("s4", True)
    assert m.status("s1") is Status.TODO and m.status("s4") is Status.DONE
    assert m.repair_completions() == 2
    assert m.status("s1") is Status.DONE and m.status("s4") is Status.TODO


def test_closing_a_request_makes_its_work_order_stale(chain: Plan) -> None:
    m = TaskMachine(chain)
    req = m.open_request("s1")
    m.close_request()
    assert m.request is None and m.authorized == frozenset()
    assert m.submit(Booking("RC-1001", req.work_order)).reason is Reason.STALE_WORK_ORDER
    assert m.submit(Booking("RC-1001", "#W1")).reason is Reason.NO_REQUEST
    assert TaskMachine.from_ledger(m.ledger).snapshot() == m.snapshot()
