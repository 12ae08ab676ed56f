"""The tool gate around a dispatcher: judge, run, receipt; concurrency; revisions; save/restore."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from taskgate import (
    Plan,
    PlanError,
    Policy,
    Reason,
    Revision,
    Status,
    ToolGate,
    ToolRefused,
    dump_ledger,
    load_ledger,
)

PLAN = Plan.model_validate(
    {
        "binding": "tool",
        "steps": {
            "s1": {"tool": "collect", "text": "collect the requirements"},
            "s2": {"tool": "draft", "text": "draft the RFQ", "deps": ["s1"]},
            "s3": {"tool": "send", "text": "send the RFQ", "deps": ["s2"]},
        },
    }
)


def test_an_admitted_call_runs_and_its_success_is_the_receipt() -> None:
    gate, ran = ToolGate(PLAN), []
    gate.open_request("s1")
    assert gate.call("collect", lambda: ran.append("collect") or "ok") == "ok"
    assert ran == ["collect"] and gate.machine.status("s1") is Status.DONE
    gate.open_request("s1")  # asked again, no redo: refused, the tool does not run
    with pytest.raises(ToolRefused, match="'collect the requirements' is already done") as refused:
        gate.call("collect", lambda: ran.append("again"))
    assert ran == ["collect"] and refused.value.ticket.verdict.reason is Reason.ALREADY_DONE


def test_a_failed_call_books_nothing_and_can_be_retried() -> None:
    gate = ToolGate(PLAN)
    gate.open_request("s1")

    def broken() -> None:
        raise OSError("disk full")

    with pytest.raises(OSError):
        gate.call("collect", broken)
    assert gate.machine.status("s1") is Status.TODO
    assert gate.call("collect", lambda: 1) == 1 and gate.machine.status("s1") is Status.DONE


def test_blocked_cancelled_unknown_and_stale_calls_are_refused() -> None:
    gate = ToolGate(PLAN, Policy.REQUEST_BOUND)
    old = gate.open_request("s3").work_order
    assert gate.begin("send").verdict.reason is Reason.BLOCKED
    assert gate.begin("collect").verdict.reason is Reason.NOT_REQUESTED
    assert gate.begin("rm -rf /").verdict.reason is Reason.MALFORMED_CALL  # garbled: refused
    assert not gate.begin("search_web").gated  # a tool no step is bound to passes by default
    strict = ToolGate(PLAN, Policy.REQUEST_BOUND, unbound="refuse")
    strict.open_request("s3")
    assert strict.begin("search_web").verdict.reason is Reason.UNKNOWN_TOOL
    gate.open_request("s1")
    assert gate.begin("collect", work_order=old).verdict.reason is Reason.STALE_WORK_ORDER
    gate.revise(Revision(cancel="s1", rewires={"s2": ()}))
    assert gate.begin("collect").verdict.reason is Reason.CANCELLED
    ungated = ToolGate(PLAN, Policy.UNGATED)
    stale = ungated.open_request("s1").work_order
    ungated.open_request("s2")
    assert ungated.begin("collect", work_order=stale).verdict.reason is Reason.STALE_WORK_ORDER


def test_concurrent_calls_of_one_step_execute_once_in_threads() -> None:
    gate, ran, barrier = ToolGate(PLAN), [], threading.Barrier(4)
    gate.open_request("s1")

    def tool() -> str:
        ran.append(1)
        time.sleep(0.05)  # still running while the others are judged
        return "ok"

    def attempt() -> str:
        barrier.wait()
        try:
            return gate.call("collect", tool)
        except ToolRefused as exc:
            return exc.ticket.verdict.reason or ""

    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(lambda _: attempt(), range(4)))
    assert len(ran) == 1 and sorted(outcomes) == ["in-progress"] * 3 + ["ok"]


def test_concurrent_calls_under_asyncio_execute_once_then_a_redo_once() -> None:
    gate, ran = ToolGate(PLAN), []

    async def tool(tag: str) -> str:
        ran.append(tag)
        await asyncio.sleep(0.02)
        return tag

    async def turn() -> list[str]:
        results = await asyncio.gather(
            gate.acall("collect", tool, "a"), gate.acall("collect", tool, "b"),
            return_exceptions=True,
        )  # fmt: skip
        return [r if isinstance(r, str) else type(r).__name__ for r in results]

    gate.open_request("s1")
    assert asyncio.run(turn()) == ["a", "ToolRefused"]
    gate.open_request("s1")  # the step is DONE: both refused
    assert asyncio.run(turn()) == ["ToolRefused", "ToolRefused"]
    gate.open_request("s1", explicit_redo=True)  # an authorized redo: exactly one runs
    assert sorted(asyncio.run(turn())) == ["ToolRefused", "a"]
    assert ran == ["a", "a"]


def test_the_ledger_saves_and_restores_the_gate() -> None:
    gate = ToolGate(PLAN)
    gate.open_request("s1")
    gate.call("collect", lambda: None)
    gate.open_request("s3")
    gate.begin("send")  # refused (blocked), recorded
    saved = dump_ledger(gate.ledger)
    restored = ToolGate.from_ledger(load_ledger(saved))
    assert restored.machine.snapshot() == gate.machine.snapshot()
    assert restored.directive() == gate.directive()
    assert restored.checklist() == gate.checklist()


def test_a_tool_gate_needs_a_tool_bound_plan() -> None:
    with pytest.raises(PlanError, match="tool-bound plan"):
        ToolGate(Plan.model_validate({"steps": {"s1": {"code": "RC-1"}}}))


def test_a_ticket_finishes_once_and_tool_keywords_pass_through() -> None:
    gate = ToolGate(PLAN)
    gate.open_request("s1")
    ticket = gate.begin("collect")
    assert gate.finish(ticket, True) is not None
    assert gate.finish(ticket, True) is None  # a second finish records nothing
    assert sum(1 for e in gate.ledger if getattr(e, "decision", "") == "admit") == 1
    gate.open_request("s2")
    assert gate.call("draft", lambda *, tool, fn: (tool, fn), tool="t", fn="f") == ("t", "f")


def test_a_call_repeated_under_its_request_is_already_done_even_after_a_redo() -> None:
    gate, ran = ToolGate(PLAN), []
    gate.open_request("s1")
    gate.call("collect", ran.append, 1)
    gate.open_request("s1", explicit_redo=True)
    gate.call("collect", ran.append, 2)  # the authorized redo runs once
    with pytest.raises(ToolRefused) as refused:
        gate.call("collect", ran.append, 3)  # a second run under the same request
    assert refused.value.ticket.verdict.reason is Reason.ALREADY_DONE
    assert not refused.value.ticket.verdict.redisplay and ran == [1, 2]


def test_the_plain_checklist_names_steps_as_refusals_do_and_says_what_was_cancelled() -> None:
    from taskgate import Plan, TaskMachine
    from taskgate.core.plan import Revision
    from taskgate.gate.notices import plain_checklist

    machine = TaskMachine(Plan.model_validate({"binding": "tool", "steps": {
        "S1": {"tool": "collect_reqs"},
        "S2": {"tool": "send_quote", "text": "send the quote", "deps": ["S1"]},
    }}))  # fmt: skip
    shown = plain_checklist(machine)
    assert "- S1 ('collect reqs'): ready" in shown
    assert "- S2 ('send the quote'): waiting for 'collect reqs'" in shown
    machine.revise(Revision(cancel="S1"))
    shown = plain_checklist(machine)
    assert "S2 ('send the quote'): blocked: 'collect reqs' was cancelled" in shown
    assert "work order" not in shown and "#W" not in shown and "book" not in shown
