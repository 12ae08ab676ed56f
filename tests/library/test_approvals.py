"""A refusal has an escalation path: a person approves one call, and the approval is an entry of
the receipts ledger (who and why), never silent."""

from __future__ import annotations

import pytest

from plans import tool_chain
from taskgate import (
    ApprovalEntry,
    Booking,
    LedgerFormatError,
    PlanError,
    Policy,
    Status,
    TaskgateError,
    TaskMachine,
    ToolGate,
    ToolRefused,
    dump_ledger,
    load_ledger,
)


def test_an_approved_call_runs_once_whatever_the_state_and_the_ledger_says_who() -> None:
    gate = ToolGate(tool_chain(2))
    gate.open_request("s2")
    with pytest.raises(ToolRefused):
        gate.call("draft_rfq", lambda: "draft")  # s1 has no receipt
    entry = gate.approve("draft_rfq", by="alice", reason="the requirements are in the email")
    assert isinstance(entry, ApprovalEntry) and (entry.step, entry.by) == ("s2", "alice")
    assert gate.call("draft_rfq", lambda: "draft") == "draft"
    assert gate.machine.status("s2") is Status.DONE and gate.machine.approved is None
    with pytest.raises(ToolRefused):  # the approval was for one call
        gate.call("draft_rfq", lambda: "again")


def test_an_approval_lapses_with_its_request() -> None:
    gate = ToolGate(tool_chain(2))
    gate.open_request("s2")
    gate.approve("s2", by="alice")
    gate.open_request("s2")
    with pytest.raises(ToolRefused):
        gate.call("draft_rfq", lambda: "draft")


def test_an_approval_runs_a_call_on_a_message_that_asked_for_nothing() -> None:
    gate = ToolGate(tool_chain(2))
    gate.open_request(None)
    gate.approve("collect_requirements", by="ops", reason="asked on the phone")
    assert gate.call("collect_requirements", lambda: "ok") == "ok"
    rebuilt = ToolGate.from_ledger(gate.ledger, plan=tool_chain(2))
    assert rebuilt.machine.snapshot() == gate.machine.snapshot()


def test_an_approval_of_nothing_or_by_nobody_is_one_line_and_changes_nothing() -> None:
    gate = ToolGate(tool_chain(2))
    with pytest.raises(TaskgateError, match="none is open"):
        gate.approve("s1", by="alice")
    gate.open_request("s1")
    before = len(gate.ledger)
    with pytest.raises(PlanError, match="nothing to approve: 'search_web'"):
        gate.approve("search_web", by="alice")
    with pytest.raises(TaskgateError, match="names who gave it"):
        gate.approve("s1", by="  ")
    assert len(gate.ledger) == before


def test_a_replay_needs_the_approval_and_keeps_it_sealed() -> None:
    gate = ToolGate(tool_chain(2))
    gate.open_request("s2")
    gate.approve("s2", by="alice", reason="urgent")
    gate.call("draft_rfq", lambda: "draft")
    text = dump_ledger(gate.ledger)
    assert '"kind":"approval"' in text.replace(" ", "") and "alice" in text
    rebuilt = ToolGate.from_ledger(load_ledger(text), plan=tool_chain(2))
    assert rebuilt.machine.status("s2") is Status.DONE
    without = [e for e in gate.ledger if not isinstance(e, ApprovalEntry)]
    with pytest.raises(LedgerFormatError, match="which the plan refuses there"):
        ToolGate.from_ledger(without, plan=tool_chain(2))
    moved = [e.model_copy(update={"step": "s1"}) if isinstance(e, ApprovalEntry) else e
             for e in gate.ledger]  # fmt: skip
    with pytest.raises(LedgerFormatError, match="which the plan refuses there"):
        ToolGate.from_ledger(moved, plan=tool_chain(2))  # an approval of another step
    edited = text.replace('"by":"alice"', '"by":"mallory"')
    assert edited != text
    with pytest.raises(LedgerFormatError):
        load_ledger(edited)  # the seals name the edit


def test_a_retracted_receipt_gives_its_approval_back() -> None:
    machine = TaskMachine(tool_chain(2))
    request = machine.open_request("s2")
    machine.approve("s2", by="alice")
    booking = Booking("", request.work_order, tool="draft_rfq")
    verdict = machine.judge(booking, Policy.STATE_BOUND)
    machine.record(booking, verdict, Policy.STATE_BOUND)
    assert verdict.admitted and machine.approved is None
    machine.retract(1)
    assert machine.approved == "s2" and machine.status("s2") is Status.BLOCKED


def test_a_step_whose_call_is_running_cannot_be_approved_yet() -> None:
    gate = ToolGate(tool_chain(2))
    gate.open_request("s1")
    ticket = gate.begin("collect_requirements")
    with pytest.raises(TaskgateError, match="s1 is running now"):
        gate.approve("s1", by="alice")
    gate.finish(ticket, "ok")
    assert gate.machine.approved is None


def test_one_approval_at_a_time() -> None:
    from plans import tool_chain
    from taskgate import ToolGate
    from taskgate.errors import UsageError

    gate = ToolGate(tool_chain(3))
    gate.open_request("s3")
    gate.approve("send_rfq", by="ops")
    with pytest.raises(UsageError, match="approved already in this request"):
        gate.approve("draft_rfq", by="ops")
    assert gate.machine.approved == "s3"


def test_a_guarded_async_callable_object_runs_before_its_receipt() -> None:
    import asyncio

    from plans import tool_chain
    from taskgate import ToolGate
    from taskgate.errors import UsageError

    ran: list[str] = []

    class Collect:
        __name__ = "collect_requirements"

        async def __call__(self) -> str:
            ran.append("collect")
            return "collected"

    gate = ToolGate(tool_chain(2))
    gate.open_request("s1")
    assert asyncio.run(gate.guard(Collect())()) == "collected" and ran == ["collect"]
    assert gate.machine.status("s1").name == "DONE"
    fresh = ToolGate(tool_chain(2))
    fresh.open_request("s1")
    with pytest.raises(UsageError, match="asynchronous"):
        fresh.call("collect_requirements", Collect())  # never booked before it ran
    assert fresh.machine.status("s1").name != "DONE"


def test_the_machine_keeps_one_approval_at_a_time_live_and_on_replay() -> None:
    from plans import tool_chain
    from taskgate import ApprovalEntry, TaskMachine
    from taskgate.errors import LedgerFormatError, UsageError

    machine = TaskMachine(tool_chain(3))
    machine.open_request("s3")
    machine.approve("s3", by="ops")
    with pytest.raises(UsageError, match="approved already"):
        machine.approve("s2", by="ops")
    forged = [*machine.ledger, ApprovalEntry(step="s2", by="mallory")]
    with pytest.raises(LedgerFormatError, match="approved already"):
        TaskMachine.from_ledger(forged)
