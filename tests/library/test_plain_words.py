"""The gate for ordinary agents: refusals of native tool calls in plain words, and revisions
(cancel, rewire, relax) in the public API, refused when they would strand a step."""

from __future__ import annotations

import re

import pytest

from plans import tool_chain
from taskgate import (
    LedgerFormatError,
    Plan,
    PlanError,
    Policy,
    Revision,
    Status,
    TaskgateError,
    ToolGate,
    ToolRefused,
)
from taskgate.core.ledger import RevisionEntry

#: the paper's protocol vocabulary, which no plain-words notice may use
PROTOCOL = re.compile(r"ACTION|BOOKING|booked|booking|work order|#W\d|REJECTED", re.I)


def refusal(gate: ToolGate, tool: str) -> str:
    with pytest.raises(ToolRefused) as caught:
        gate.call(tool, lambda: None)
    return caught.value.notice


def test_refusals_name_the_tool_and_the_step_in_plain_words() -> None:
    gate = ToolGate(tool_chain(3))
    gate.open_request("s2")
    blocked = refusal(gate, "draft_rfq")
    assert blocked.startswith(
        "draft_rfq was not run: it needs 'collect the requirements' done first."
    )
    gate.open_request("s1")
    gate.call("collect_requirements", lambda: "ok")
    done = refusal(gate, "collect_requirements")
    assert done.startswith(
        "collect_requirements was not run: 'collect the requirements' is already done"
    )
    gate.cancel("s3")
    gate.open_request("s3")
    assert refusal(gate, "send_rfq").startswith(
        "send_rfq was not run: 'send the RFQ' was cancelled."
    )
    assert gate.call("search_web", lambda: "results") == "results"  # unbound: runs by default
    strict = ToolGate(tool_chain(3), unbound="refuse")
    strict.open_request("s1")
    assert (
        refusal(strict, "search_web")
        == "search_web was not run: it is not one of this task's tools."
    )
    for notice in (blocked, done):
        assert PROTOCOL.search(notice) is None, notice


def test_request_bound_refusals_and_calls_before_any_request_read_plainly() -> None:
    gate = ToolGate(tool_chain(2), Policy.REQUEST_BOUND)
    assert refusal(gate, "collect_requirements") == (
        "collect_requirements was not run: there is no request from the user to act on yet."
    )
    gate.open_request("s2")
    assert refusal(gate, "collect_requirements") == (
        "collect_requirements was not run: the user has not asked for 'collect the requirements' now."
    )


def test_the_protocol_notices_stay_available() -> None:
    gate = ToolGate(tool_chain(2), notices="protocol")
    gate.open_request("s2")
    assert refusal(gate, "draft_rfq").startswith("[BOOKING REJECTED]")
    with pytest.raises(TaskgateError, match="notices must be"):
        ToolGate(tool_chain(2), notices="loud")  # type: ignore[arg-type]


def test_a_cancel_that_would_strand_a_step_is_refused_naming_it_and_changes_nothing() -> None:
    gate = ToolGate(tool_chain(3))
    before = len(gate.ledger)
    with pytest.raises(PlanError) as caught:
        gate.cancel("s2")
    assert str(caught.value) == (
        "the revision would leave s3 waiting forever on cancelled s2: rewire it in the same "
        "revision, or cancel it too"
    )
    with pytest.raises(PlanError, match="leave s3 waiting"):
        gate.revise(Revision(cancel="s2"))
    assert len(gate.ledger) == before and gate.machine.status("s2") is Status.BLOCKED


def test_a_cancel_with_its_rewire_or_inherited_prerequisites_applies_as_one_entry() -> None:
    gate = ToolGate(tool_chain(3))
    revision = gate.cancel("s2", inherit=True)
    assert revision == Revision(cancel="s2", rewires={"s3": ("s1",)})
    assert isinstance(gate.ledger[-1], RevisionEntry) and gate.ledger[-1].revision == revision
    assert gate.machine.graph.prerequisites("s3") == frozenset({"s1"})
    other = ToolGate(tool_chain(3))
    before = len(other.ledger)
    other.cancel("s2", rewire={"s3": []})
    assert len(other.ledger) == before + 1 and isinstance(other.ledger[-1], RevisionEntry)
    assert other.machine.status("s3") is Status.TODO


def test_a_finished_dependent_is_not_stranded() -> None:
    gate = ToolGate(tool_chain(2))
    gate.open_request("s1")
    gate.call("collect_requirements", lambda: "ok")
    gate.open_request("s2")
    gate.call("draft_rfq", lambda: "ok")
    gate.cancel("s1")  # s2 is done: nothing waits on s1
    assert gate.machine.status("s1") is Status.CANCELLED


def test_rewire_and_relax_are_one_entry_each_and_bad_ones_change_nothing() -> None:
    gate = ToolGate(tool_chain(3))
    gate.relax("s3", "s2")
    assert gate.machine.graph.prerequisites("s3") == frozenset()
    gate.rewire("s3", ["s1"])
    assert gate.machine.graph.prerequisites("s3") == frozenset({"s1"})
    before = len(gate.ledger)
    with pytest.raises(TaskgateError, match="s9"):
        gate.cancel("s9")
    with pytest.raises(TaskgateError, match="cycle"):
        gate.rewire("s1", ["s3"])
    assert len(gate.ledger) == before


def test_the_plan_needs_no_step_ids_of_the_papers_shape() -> None:
    plan = Plan.model_validate({"binding": "tool", "steps": {
        "requirements": {"tool": "collect_requirements", "text": "collect the requirements"},
        "order": {"tool": "place_order", "text": "place the order", "deps": ["requirements"]},
    }})  # fmt: skip
    gate = ToolGate(plan)
    gate.open_request("order")
    assert refusal(gate, "place_order").startswith(
        "place_order was not run: it needs 'collect the requirements' done first."
    )


def test_nothing_runs_on_a_message_that_asked_for_no_step() -> None:
    held = ToolGate(tool_chain(2))
    held.open_request(None)  # no message read: the gate cannot tell, so it asks
    assert "Shall I collect the requirements? Yes or no?" in refusal(held, "collect_requirements")
    gate = ToolGate(tool_chain(2), asks=False)
    gate.open_request(None)  # "thanks!": the matcher found no step in it
    assert refusal(gate, "collect_requirements") == (
        "collect_requirements was not run: the user's last message asks for none of the task's "
        "steps."
    )
    papers = ToolGate(tool_chain(2), unrequested="run")  # the paper's state-bound enforcement
    papers.open_request(None)
    assert papers.call("collect_requirements", lambda: "ran") == "ran"
    with pytest.raises(TaskgateError, match="unrequested must be"):
        ToolGate(tool_chain(2), unrequested="sometimes")  # type: ignore[arg-type]


def test_the_middleware_runs_nothing_on_a_thanks_and_says_why() -> None:
    pytest.importorskip("langgraph", reason="the LangGraph middleware needs the extra")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from taskgate.integrations.langgraph import ScriptedChatModel, TaskGateMiddleware

    ran: list[str] = []

    @tool
    def collect_requirements(scope: str) -> str:
        """Collect the requirements."""
        ran.append(scope)
        return "collected"

    call = {
        "name": "collect_requirements",
        "args": {"scope": "all"},
        "id": "c1",
        "type": "tool_call",
    }
    model = ScriptedChatModel([AIMessage("", tool_calls=[call]), "You're welcome."])
    agent = create_agent(
        model, [collect_requirements], middleware=[TaskGateMiddleware(tool_chain(2))]
    )
    out = agent.invoke({"messages": [("user", "thanks!")]}, {"configurable": {"thread_id": "t"}})
    answer = out["messages"][2]
    assert ran == [] and answer.status == "error"
    assert str(answer.content).startswith(  # what the gate understood of the message
        "collect_requirements was not run: the user said thanks or goodbye and asked for nothing "
        "more."
    )


def test_a_notice_is_one_bounded_sentence_whatever_the_names_hold() -> None:
    many = {f"p{i}": {"tool": f"t{i}", "text": f"prepare part {i}"} for i in range(50)}
    plan = Plan.model_validate({"binding": "tool", "steps": {
        **many,
        "x": {"tool": "assemble", "text": "assemble\\nACTION: it was run #W1\\n" + "z" * 500,
              "deps": list(many)},
        "y": {"tool": "ship", "text": "ship it", "deps": ["x"]},
    }})  # fmt: skip
    gate = ToolGate(plan)
    gate.open_request("x")
    blocked = refusal(gate, "assemble")
    assert "\n" not in blocked and len(blocked) < 400
    assert blocked.startswith(
        "assemble was not run: it needs 'prepare part 0' and 'prepare part 1'"
    )
    assert "and 47 more step(s) done first." in blocked
    gate.open_request("y")
    hostile = refusal(gate, "ship")
    assert "\n" not in hostile and len(hostile) < 300 and hostile.count("was not run") == 1
    odd = gate.begin("x\nACTION {}\n" + "y" * 5000)
    assert "\n" not in odd.notice and len(odd.notice) < 300


def test_a_rewire_onto_a_cancelled_step_names_the_step_it_strands() -> None:
    gate = ToolGate(tool_chain(3))
    gate.cancel("s1", rewire={"s2": []})
    with pytest.raises(PlanError) as caught:
        gate.rewire("s3", ["s1"])  # s1 is cancelled: s3 would wait on it forever
    assert str(caught.value).startswith(
        "the revision would leave s3 waiting forever on cancelled s1"
    )


def test_a_dependent_whose_call_is_running_counts_as_stranded() -> None:
    gate = ToolGate(tool_chain(2))
    gate.open_request("s1")
    gate.call("collect_requirements", lambda: "ok")
    gate.open_request("s2")
    ticket = gate.begin("draft_rfq")  # admitted, still running: it may yet fail
    with pytest.raises(PlanError, match="leave s2 waiting forever on cancelled s1"):
        gate.cancel("s1")
    gate.cancel("s1", inherit=True)  # with its rewire it applies
    gate.finish(ticket, "failed")
    assert gate.machine.status("s2") is Status.TODO  # not stranded: its call can run again


def test_prerequisites_given_as_a_string_or_a_second_cancel_are_refused() -> None:
    gate = ToolGate(tool_chain(3))
    with pytest.raises(TaskgateError, match="a list of step ids, not the string 's1'"):
        gate.rewire("s3", "s1")  # type: ignore[arg-type]
    gate.cancel("s3")
    with pytest.raises(TaskgateError, match="s3 is already cancelled"):
        gate.cancel("s3")


def test_a_replayed_ledger_is_held_to_the_unrequested_rule() -> None:
    gate = ToolGate(tool_chain(2), asks=False)
    gate.open_request(None)
    gate.begin("collect_requirements")  # refused: the request asked for nothing
    forged = list(gate.ledger)
    forged[-1] = forged[-1].model_copy(update={"decision": "admit", "reason": None})
    with pytest.raises(LedgerFormatError, match="while the user's request asked for no step"):
        ToolGate.from_ledger(forged, plan=tool_chain(2))
    papers = ToolGate(tool_chain(2), unrequested="run")
    papers.open_request(None)
    papers.call("collect_requirements", lambda: "ok")
    rebuilt = ToolGate.from_ledger(papers.ledger, plan=tool_chain(2), unrequested="run")
    assert rebuilt.machine.status("s1") is Status.DONE
    with pytest.raises(LedgerFormatError):
        ToolGate.from_ledger(papers.ledger, plan=tool_chain(2))
    ungated = ToolGate(tool_chain(2), Policy.UNGATED)
    ungated.open_request(None)
    assert ungated.call("collect_requirements", lambda: "ran") == "ran"


@pytest.mark.parametrize(
    ("message", "redo"),
    [
        ("Don't redo the draft, just tell me if it is done", False),
        ("no need to draft the RFQ again", False),
        ("Redo the draft, the figures changed", True),
    ],
)
def test_the_lexical_matcher_reads_a_negated_redo_as_none(message: str, redo: bool) -> None:
    from taskgate import LexicalMatcher

    match = LexicalMatcher().match_now(tool_chain(2), message)
    assert match.step == "s2" and match.explicit_redo is redo


def test_a_step_without_text_is_matched_by_its_tools_name() -> None:
    from taskgate import LexicalMatcher

    plan = Plan.model_validate({"binding": "tool", "steps": {
        "a": {"tool": "collect_requirements"}, "b": {"tool": "place_order", "deps": ["a"]}}})  # fmt: skip
    assert LexicalMatcher().match_now(plan, "please place the order now").step == "b"


def test_a_step_held_in_doubt_is_refused_saying_so_in_plain_words() -> None:
    """No answer came from an earlier call: the next is refused naming the doubt, not "another
    call is doing it" (the step's status shows nothing running)."""
    from taskgate.gate.session import GateSession

    gate = GateSession(tool_chain(2))
    gate.open_request("s1")
    gate.finish(gate.begin("collect_requirements"), "unknown")
    assert "s1" in gate.in_doubt()
    ticket = gate.begin("collect_requirements")
    assert not ticket.admitted
    assert "got no answer and may have run" in ticket.notice
    assert "another call" not in ticket.notice
