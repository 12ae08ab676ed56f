"""Steps bound to tools: the machine, ledger, validator, parser and renderings on a tool-bound plan.

The receipt is the tool's admitted execution (a ``Booking.tool_call``), not a booking line; the
code-bound path is unchanged (pinned by ``test_pinned_grid.py`` and the generator's byte pins).
"""

from __future__ import annotations

import pytest

from taskgate import (
    Booking,
    BookingError,
    BriefError,
    Plan,
    Policy,
    Reason,
    Revision,
    Status,
    TaskMachine,
    parse_brief,
    render_checklist,
    render_directive,
    render_rejection,
    validate,
)
from taskgate.errors import PlanError
from taskgate.protocol.render import render_plan_line

TOOLS = Plan.model_validate(
    {
        "binding": "tool",
        "steps": {
            "s1": {"tool": "collect_requirements", "text": "collect the requirements"},
            "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"]},
            "s3": {"tool": "send_rfq", "text": "send the RFQ", "deps": ["s2"]},
        },
    }
)


def test_a_tool_call_is_the_receipt() -> None:
    m = TaskMachine(TOOLS)
    wo = m.open_request("s1").work_order
    v = m.submit(Booking.tool_call("collect_requirements", wo))
    assert v.admitted and v.step == "s1" and m.status("s1") is Status.DONE
    again = m.submit(Booking.tool_call("collect_requirements", wo))
    assert again.reason is Reason.REPEATED_RECEIPT and again.redisplay
    wo2 = m.open_request("s1").work_order
    assert m.submit(Booking.tool_call("collect_requirements", wo2)).reason is Reason.ALREADY_DONE
    m.open_request("s1", explicit_redo=True)
    assert m.request is not None
    assert m.submit(Booking.tool_call("collect_requirements", m.request.work_order)).admitted


def test_tool_calls_are_gated_like_bookings() -> None:
    m = TaskMachine(TOOLS)
    wo = m.open_request("s1").work_order
    blocked = m.submit(Booking.tool_call("send_rfq", wo))
    assert (blocked.reason, blocked.missing) == (Reason.BLOCKED, ("s2",))
    assert m.submit(Booking.tool_call("delete_everything", wo)).reason is Reason.UNKNOWN_TOOL
    assert m.submit(Booking.tool_call("send_rfq", "#W9999")).reason is Reason.UNKNOWN_WORK_ORDER
    assert m.submit(Booking("RC-1001", wo)).reason is Reason.UNKNOWN_CODE  # no codes here
    v = m.submit(Booking.tool_call("draft_rfq", wo), Policy.REQUEST_BOUND)
    assert v.reason is Reason.NOT_REQUESTED  # request-bound: another step is unrequested first
    m.submit(Booking.tool_call("collect_requirements", wo))
    assert m.submit(Booking.tool_call("draft_rfq", wo), Policy.REQUEST_BOUND).reason is (
        Reason.NOT_REQUESTED
    )
    assert m.statuses() == {"s1": Status.DONE, "s2": Status.TODO, "s3": Status.BLOCKED}


def test_the_state_is_the_fold_of_its_ledger() -> None:
    m = TaskMachine(TOOLS)
    wo = m.open_request("s1").work_order
    m.submit(Booking.tool_call("collect_requirements", wo))
    m.submit(Booking.tool_call("send_rfq", wo))
    m.revise(Revision(cancel="s3"))
    rebuilt = TaskMachine.from_ledger(m.ledger)
    assert rebuilt.snapshot() == m.snapshot()
    assert rebuilt.status("s3") is Status.CANCELLED


def test_a_tool_plan_refuses_malformed_or_duplicate_tools_unless_lenient() -> None:
    bad = {"binding": "tool", "steps": {"s1": {"tool": "a"}, "s2": {"tool": "a"}}}
    with pytest.raises(PlanError, match="tool a is given to both"):
        TaskMachine(Plan.model_validate(bad))
    TaskMachine(Plan.model_validate(bad), lenient=True)  # a compile error flows in
    kinds = {d.kind for d in validate(Plan.model_validate(bad))}
    assert kinds == {"duplicate-tool"}
    empty = Plan.model_validate(
        {"binding": "tool", "steps": {"s1": {"tool": ""}, "s2": {"tool": "x y"}}}
    )
    assert [d.kind for d in validate(empty)] == ["empty-tool", "malformed-tool"]
    with pytest.raises(BookingError):
        Booking.tool_call("rm -rf", "#W1234")


def test_the_brief_parser_reads_tool_lines() -> None:
    lines = [
        render_plan_line(s, spec.text, spec.deps, "", spec.tool) for s, spec in TOOLS.steps.items()
    ]
    assert lines[1] == "- s2: draft the RFQ  (requires: s1)  [tool: draft_rfq]"
    assert parse_brief("Known steps:\n" + "\n".join(lines)) == TOOLS
    with pytest.raises(BriefError, match="mixes"):
        parse_brief(lines[0] + "\n- s9: x  [completion code RC-1234]")


def test_renderings_on_a_tool_plan() -> None:
    m = TaskMachine(TOOLS)
    wo = m.open_request("s3").work_order
    assert render_checklist(m).splitlines()[1:] == [
        "- s1: TODO (ready)",
        "- s2: TODO (waiting on: s1)",
        "- s3: TODO (waiting on: s2)",
    ]
    directive = render_directive(m)
    assert directive is not None and directive.startswith("[TASK-STATE] step s3 is BLOCKED")
    call = Booking.tool_call("send_rfq", wo)
    notice = render_rejection(m.submit(call), call)
    assert notice.startswith(
        f'[BOOKING REJECTED] Your line \'ACTION {{"tool": "send_rfq", "work_order": "{wo}"}}\''
    )
    unknown = Booking.tool_call("teleport", wo)
    assert "teleport is not a tool of this project" in render_rejection(m.submit(unknown), unknown)


def test_code_bound_plans_serialize_as_before() -> None:
    plan = Plan.model_validate({"steps": {"s1": {"code": "RC-1"}}})
    assert plan.model_dump() == {"steps": {"s1": {"deps": (), "code": "RC-1", "text": ""}}}
    assert TOOLS.model_dump()["binding"] == "tool"
    assert Plan.model_validate_json(TOOLS.model_dump_json()) == TOOLS
