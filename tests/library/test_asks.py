"""Run, refuse or ask: a call the gate cannot tell the user agreed to is held and the person is
asked, with the exact call; what runs is what they saw (the core, the tool gate, the ledger)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from plans import PROPOSAL, TABLES
from taskgate import Plan, ToolGate
from taskgate.core.ledger import AnswerEntry, AskEntry
from taskgate.core.verdict import Reason
from taskgate.errors import LedgerFormatError, ToolHeld, ToolRefused, UsageError
from taskgate.gate.session import Call, GateSession, Ticket
from taskgate.understanding import ConversationReader

READ = ConversationReader()
TABLE = {"restaurant": "Chez Pierre", "party_size": 2, "time": "19:00"}


def said(gate: GateSession, user: str, agent: str = "") -> None:
    asyncio.run(gate.open_message(user, READ, ask_back=False, agent=agent))


def held(gate: GateSession, args: dict[str, Any] = TABLE) -> Ticket:
    """A table call after a message that asks for nothing clearly: held, and asked."""
    said(gate, "Sounds interesting.", PROPOSAL)
    ticket = gate.judge([Call("reserve_table", arguments=args)])[0]
    assert ticket.held and not ticket.admitted and ticket.verdict.reason is Reason.ASKED
    return ticket


def test_a_call_the_gate_cannot_tell_is_held_with_the_exact_call_shown() -> None:
    gate = GateSession(TABLES)
    ticket = held(gate)
    assert ticket.ask is not None and ticket.ask.arguments == TABLE
    assert ticket.ask.question == (
        "Shall I reserve a table at a restaurant (restaurant: Chez Pierre; party size: 2; "
        "time: 19:00)? Yes or no?"
    )
    assert ticket.ask.question in ticket.notice  # the ask-back: the agent puts it to the user
    entry = gate.ledger[-1]
    assert isinstance(entry, AskEntry) and entry.id == ticket.ask.id
    assert entry.arguments == '{"party_size":2,"restaurant":"Chez Pierre","time":"19:00"}'
    assert [a.id for a in gate.waiting()] == [ticket.ask.id]


def test_the_same_call_held_again_before_the_answer_is_the_same_ask() -> None:
    gate = GateSession(TABLES)
    first = held(gate)
    again = gate.judge([Call("reserve_table", arguments=dict(TABLE))])[0]
    assert again.ask is not None and first.ask is not None and again.ask.id == first.ask.id
    assert sum(isinstance(e, AskEntry) for e in gate.ledger) == 1


def test_a_yes_to_the_gates_question_runs_that_call_byte_for_byte_and_once() -> None:
    gate = GateSession(TABLES)
    ticket = held(gate)
    assert ticket.ask is not None
    said(gate, "Yes, go ahead.", ticket.ask.question)
    other = gate.judge([Call("reserve_table", arguments={**TABLE, "party_size": 20})])[0]
    assert not other.admitted  # another call: not the one the person saw
    ran = gate.judge([Call("reserve_table", arguments=TABLE)])[0]
    assert ran.admitted
    gate.finish(ran, "ok")
    answer = next(e for e in gate.ledger if isinstance(e, AnswerEntry))
    assert (answer.decision, answer.by, answer.channel) == ("approve", "user", "conversation")
    twice = gate.judge([Call("reserve_table", arguments=TABLE)])[0]
    assert not twice.admitted  # the yes granted one call


@pytest.mark.parametrize("reply", ["No, don't.", "Actually, make it 4 people.", "What time is it?"])
def test_anything_but_a_yes_drops_the_held_call(reply: str) -> None:
    gate = GateSession(TABLES)
    ticket = held(gate)
    assert ticket.ask is not None
    said(gate, reply, ticket.ask.question)
    assert gate.waiting() == []
    answer = next(e for e in gate.ledger if isinstance(e, AnswerEntry))
    assert answer.decision in ("reject", "dropped")
    assert not gate.machine.granted


def test_an_answer_twice_late_or_for_another_conversation_runs_nothing() -> None:
    gate, other = GateSession(TABLES), GateSession(TABLES)
    ticket = held(gate)
    assert ticket.ask is not None
    with pytest.raises(UsageError, match=r"no held call .* is waiting"):
        other.answer(ticket.ask.id, "approve", by="mallory")  # another conversation's ask
    call = gate.answer(ticket.ask.id, "approve", by="alice", channel="test")
    assert call is not None and call.arguments == TABLE
    with pytest.raises(UsageError, match="answered already"):
        gate.answer(ticket.ask.id, "approve", by="alice")
    late = held(GateSession(TABLES))
    gate2 = GateSession(TABLES)
    ticket2 = held(gate2)
    assert ticket2.ask is not None and late.ask is not None
    said(gate2, "Something else entirely.", "Anything else?")  # the conversation moved on
    with pytest.raises(UsageError, match="moved on"):
        gate2.answer(ticket2.ask.id, "approve", by="alice")


@pytest.mark.parametrize(
    ("decision", "kwargs", "match"),
    [
        ("maybe", {}, "approve', 'edit' or 'reject"),
        ("approve", {"by": " "}, "names who gave it"),
        ("edit", {"arguments": "party=40"}, "new arguments as an object"),
    ],
)
def test_a_malformed_answer_is_one_line_and_records_nothing(
    decision: str, kwargs: dict[str, Any], match: str
) -> None:
    gate = GateSession(TABLES)
    ticket = held(gate)
    assert ticket.ask is not None
    before = len(gate.ledger)
    with pytest.raises(UsageError, match=match):
        gate.answer(ticket.ask.id, decision, **{"by": "alice", **kwargs})  # type: ignore[arg-type]
    assert len(gate.ledger) == before and gate.waiting()


def test_an_edit_grants_the_edited_call_and_the_state_still_decides() -> None:
    gate = GateSession(TABLES)
    ticket = held(gate)
    assert ticket.ask is not None
    edited = {**TABLE, "party_size": 4}
    call = gate.answer(ticket.ask.id, "edit", by="alice", arguments=edited)
    assert call is not None and call.arguments == edited
    assert not gate.judge([Call("reserve_table", arguments=TABLE)])[0].admitted  # not shown
    assert gate.judge([call])[0].admitted


def test_a_revision_drops_what_was_asked() -> None:
    gate = GateSession(TABLES)
    ticket = held(gate)
    assert ticket.ask is not None
    gate.cancel("reserve")
    with pytest.raises(UsageError, match="moved on"):
        gate.answer(ticket.ask.id, "approve", by="alice")


def test_a_restart_between_ask_and_answer_folds_the_ask_from_the_ledger() -> None:
    gate = GateSession(TABLES)
    ticket = held(gate)
    assert ticket.ask is not None
    restarted = GateSession.from_ledger(gate.ledger)
    assert [a.id for a in restarted.waiting()] == [ticket.ask.id]
    said(restarted, "yes please", ticket.ask.question)
    ran = restarted.judge([Call("reserve_table", arguments=TABLE)])[0]
    assert ran.admitted
    restarted.finish(ran, "ok")
    again = GateSession.from_ledger(restarted.ledger)  # the granted admission replays
    assert again.machine.status("reserve").value == "DONE"


def test_an_ask_on_a_surfaces_own_channel_is_answered_there_never_by_the_next_message() -> None:
    gate = GateSession(TABLES)
    said(gate, "Sounds interesting.", PROPOSAL)
    ticket = gate.judge([Call("reserve_table", arguments=TABLE)], channel="sdk-approval")[0]
    assert ticket.ask is not None and ticket.ask.channel == "sdk-approval"
    asked = gate.ledger[-1]
    assert isinstance(asked, AskEntry) and asked.channel == "sdk-approval"
    restarted = GateSession.from_ledger(gate.ledger)  # the channel folds with the ask
    assert [a.channel for a in restarted.waiting()] == ["sdk-approval"]
    said(restarted, "yes please", "Anything else?")  # the person was asked elsewhere
    answer = restarted.ledger[-2]
    assert isinstance(answer, AnswerEntry) and answer.decision == "dropped"
    assert answer.by == "gate" and answer.channel == "sdk-approval"
    assert restarted.waiting() == [] and not restarted.judge(
        [Call("reserve_table", arguments=TABLE)])[0].admitted  # fmt: skip
    with pytest.raises(UsageError, match="channel"):
        gate.begin("reserve_table", arguments=TABLE, channel="x" * 65)


def test_a_forged_answer_in_a_ledger_is_refused_on_load() -> None:
    gate = GateSession(TABLES)
    said(gate, "Hmm.", PROPOSAL)
    forged = [*gate.ledger, AnswerEntry(ask="ask-0000", decision="approve", by="mallory")]
    with pytest.raises(LedgerFormatError, match="no ask 'ask-0000' is waiting"):
        GateSession.from_ledger(forged)


def test_a_clear_no_is_refused_without_asking() -> None:
    gate = GateSession(TABLES)
    said(gate, "No, I don't want that.", PROPOSAL)
    ticket = gate.judge([Call("reserve_table", arguments=TABLE)])[0]
    assert not ticket.admitted and not ticket.held


CONFIRMED = Plan.model_validate({"binding": "tool", "steps": {
    "pay": {"tool": "pay", "text": "pay the invoice", "confirm": "always"},
    "look": {"tool": "note", "text": "write a note", "confirm": "never"},
}})  # fmt: skip


@pytest.mark.parametrize(
    "reply",
    ["Yes please, and no need to call me back.", "Yes. Don't forget the window seat though."],
)
def test_a_reply_that_opens_with_a_yes_is_no_clear_no_and_is_asked(reply: str) -> None:
    """Whatever the reader makes of the rest, a message that opens with a plain yes is asked
    about, never refused as a decline (a yes read as a no)."""
    gate = GateSession(TABLES)
    said(gate, reply, PROPOSAL)
    ticket = gate.judge([Call("reserve_table", arguments=TABLE)])[0]
    assert ticket.held and "opens with a yes" in ticket.notice
    said(gate, "No, thanks.", PROPOSAL)  # a plain no still is one
    no = gate.judge([Call("reserve_table", arguments=TABLE)])[0]
    assert not no.held and not no.admitted


def test_a_step_that_always_asks_is_held_even_on_a_clear_request() -> None:
    gate = GateSession(CONFIRMED)
    said(gate, "Please pay the invoice.")
    ticket = gate.judge([Call("pay", arguments={"amount": 10})])[0]
    assert ticket.held and ticket.ask is not None
    assert gate.answer(ticket.ask.id, "approve", by="alice") is not None
    assert gate.judge([Call("pay", arguments={"amount": 10})])[0].admitted


def test_a_step_that_never_asks_runs_on_the_state_alone() -> None:
    gate = GateSession(CONFIRMED)
    said(gate, "What's the weather?")
    ticket = gate.judge([Call("note", arguments={"text": "x"})])[0]
    assert ticket.admitted
    gate.finish(ticket, "ok")
    GateSession.from_ledger(gate.ledger)  # and replays


def test_the_papers_rungs_never_ask() -> None:
    for gate in (GateSession(TABLES, notices="protocol"), GateSession(TABLES, unrequested="run"),
                 GateSession(TABLES, asks=False)):  # fmt: skip
        said(gate, "Sounds interesting.", PROPOSAL)
        ticket = gate.judge([Call("reserve_table", arguments=TABLE)])[0]
        assert not ticket.held


RAN: list[dict[str, Any]] = []


def reserve_table(restaurant: str, party_size: int, time: str) -> str:
    RAN.append({"restaurant": restaurant, "party_size": party_size, "time": time})
    return "reserved"


def tool_gate(ask: Any = None) -> ToolGate:
    RAN.clear()
    gate = ToolGate(TABLES, ask=ask)
    gate.user_message("Sounds interesting.", agent=PROPOSAL)
    return gate


def test_tool_gate_without_a_callback_raises_the_question_and_resumes_on_the_answer() -> None:
    gate = tool_gate()
    with pytest.raises(ToolHeld) as caught:
        gate.call("reserve_table", reserve_table, **TABLE)
    assert isinstance(caught.value, ToolRefused) and "Shall I reserve" in caught.value.question
    gate.answer(caught.value.ask.id, "approve", by="alice")
    assert gate.call("reserve_table", reserve_table, **TABLE) == "reserved" and RAN == [TABLE]


@pytest.mark.parametrize(("answer", "ran"), [(True, [TABLE]), (False, []),
                                             ({**TABLE, "party_size": 3}, [{**TABLE, "party_size": 3}])])  # fmt: skip
def test_tool_gate_asks_its_callback(answer: object, ran: list[dict[str, Any]]) -> None:
    shown: list[str] = []

    def ask(held: Any) -> object:
        shown.append(held.question)
        return answer

    gate = tool_gate(ask)
    if answer is False:
        with pytest.raises(ToolRefused, match="said no"):
            gate.call("reserve_table", reserve_table, **TABLE)
    else:
        assert gate.call("reserve_table", reserve_table, **TABLE) == "reserved"
    assert ran == RAN and len(shown) == 1


def test_tool_gate_awaits_an_async_callback() -> None:
    async def ask(held: Any) -> bool:
        return True

    async def areserve(restaurant: str, party_size: int, time: str) -> str:
        return reserve_table(restaurant, party_size, time)

    gate = tool_gate(ask)
    assert asyncio.run(gate.acall("reserve_table", areserve, **TABLE)) == "reserved"
    with pytest.raises(UsageError, match="ask callback answers"):
        gate._answered(held(GateSession(TABLES)), "sure", (), {})


def test_the_proxy_asks_the_user_in_its_reply_and_their_yes_runs_exactly_that_call() -> None:
    """Behind the proxy the client runs the tools: the held call is not handed out, the reply is
    the gate's question, and after the user's yes (across a reload of the conversation from its
    journal) only the same call with the same arguments is handed out."""
    import httpx

    from proxy_helpers import post
    from taskgate import FakeServer, Reply, script
    from taskgate.llm.fake import ToolCall
    from taskgate.proxy import ProxyConfig
    from taskgate.proxy.testing import ProxyServer

    def table(cid: str, **changed: Any) -> Reply:
        return Reply("", tool_calls=(ToolCall("reserve_table", {**TABLE, **changed}, id=cid),))

    replies = [table("c1"), table("c2"), Reply("Booked."), table("c4"), table("c5", party_size=20),
               table("c6")]  # fmt: skip
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Sounds interesting."}]
    with (
        FakeServer(script(replies)) as upstream,
        httpx.Client(timeout=60) as client,
        ProxyServer(ProxyConfig(upstream.base_url, plan=TABLES)) as proxy,
    ):

        def reply() -> dict[str, Any]:
            proxy.app.state.proxy.conversations.clear()  # each request reads the journal back
            got = dict(post(client, proxy.base_url, messages)["choices"][0]["message"])
            messages.append({k: v for k, v in got.items() if k in ("role", "content",
                                                                    "tool_calls") and v})  # fmt: skip
            return got

        asked = reply()
        assert not asked.get("tool_calls")
        assert asked["content"] == (
            "Shall I reserve a table at a restaurant (restaurant: Chez Pierre; party size: 2; "
            "time: 19:00)? Yes or no?"
        )
        messages.append({"role": "user", "content": "Yes, please."})
        handed = reply()  # the same call: handed out, once
        assert [c["id"] for c in handed["tool_calls"]] == ["c2"]
        messages.append({"role": "tool", "tool_call_id": "c2", "content": "reserved"})
        assert reply()["content"] == "Booked."
        messages.append({"role": "user", "content": "Hmm, another one maybe."})
        assert not reply().get("tool_calls")  # asked again: a second table is another call
        messages.append({"role": "user", "content": "Yes, please."})
        other = reply()  # the model's call differs from the one the user saw: asked again
        assert not other.get("tool_calls") and "party size: 20" in other["content"]
        messages.append({"role": "user", "content": "yes"})
        # that yes answered the party of 20 (the question the user last saw), and the model
        # now calls for 2: not what they said yes to
        again = reply()
        assert not again.get("tool_calls")


def test_the_console_shows_what_waits_on_the_user_and_the_metrics_count_asks() -> None:
    """The status a console reads lists the held call's question and when it was asked, the
    conversation's row counts its asks, and the proxy's metrics count asks and answers."""
    import httpx

    from proxy_helpers import post
    from taskgate import FakeServer, Reply, script
    from taskgate.llm.fake import ToolCall
    from taskgate.proxy import ProxyConfig
    from taskgate.proxy.testing import ProxyServer
    from taskgate.serving.status import listing_row, status_json

    replies = [Reply("", tool_calls=(ToolCall("reserve_table", TABLE, id="c1"),)), Reply("ok")]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Sounds interesting."}]
    with (
        FakeServer(script(replies)) as upstream,
        httpx.Client(timeout=60) as client,
        ProxyServer(ProxyConfig(upstream.base_url, plan=TABLES)) as proxy,
    ):
        asked = post(client, proxy.base_url, messages)["choices"][0]["message"]
        state = proxy.app.state.proxy
        (key,) = list(state.conversations)
        conv = state.conversations[key]
        status = status_json(conv, plain=True)
        (waiting,) = status["asks"]
        assert waiting["question"] == asked["content"] and waiting["time"] > 0
        assert listing_row(conv)["asks"] == 1
        messages += [{"role": "assistant", "content": asked["content"]},
                     {"role": "user", "content": "No thanks."}]  # fmt: skip
        post(client, proxy.base_url, messages)
        assert state.overheads.summary()["asks"] == {"asked": 1, "reject": 1}
        (key,) = list(state.conversations)
        conv = state.conversations[key]
        assert status_json(conv, plain=True)["asks"] == []


# -- attacks on what a person is shown and what their answer grants ------------------------------
def test_attack_a_yes_grants_only_the_call_whose_question_the_agent_put_to_the_user() -> None:
    """A yes answers the question the agent asked, never a held call it did not show: the
    agent asked about a table for 2, the call held is for 40 (or for tickets nobody showed)."""
    gate = GateSession(TABLES)
    small = held(gate)
    big = gate.judge([Call("reserve_table", arguments={**TABLE, "party_size": 40})])[0]
    tickets = gate.judge([Call("buy_tickets", arguments={"event": "opera", "count": 10})])[0]
    assert small.ask is not None and big.held and tickets.held
    said(gate, "Yes.", small.ask.question)  # the agent relayed the first question only
    ran = gate.judge([Call("reserve_table", arguments=TABLE)])[0]
    assert ran.admitted
    gate.finish(ran, "ok")
    for call in (Call("reserve_table", arguments={**TABLE, "party_size": 40}),
                 Call("buy_tickets", arguments={"event": "opera", "count": 10})):  # fmt: skip
        assert not gate.judge([call])[0].admitted
    other = GateSession(TABLES)
    held(other, {**TABLE, "party_size": 40})
    said(other, "Yes.", "Just to double check: a table for 2 at Chez Pierre at 7 pm, right?")
    again = other.judge([Call("reserve_table", arguments={**TABLE, "party_size": 40})])[0]
    assert not again.admitted  # asked about 2, the held 40 never runs on that yes


@pytest.mark.parametrize(
    "reply", ["Yes, for 4 instead of 2.", "Yes please, but at 9 pm", "Yes but make it 4 people.",
              "yes no",
              # the question's own words moved into another slot (a second round's attack)
              "Yes, party size 19", "Yes, time 2", "Sure, for 19 people"],
)  # fmt: skip
def test_attack_a_yes_with_a_change_is_no_yes_to_the_call_shown(reply: str) -> None:
    gate = GateSession(TABLES)
    ticket = held(gate)
    assert ticket.ask is not None
    said(gate, reply, ticket.ask.question)
    assert not gate.judge([Call("reserve_table", arguments=TABLE)])[0].admitted
    answer = [e for e in gate.ledger if isinstance(e, AnswerEntry)]
    assert [a.decision for a in answer] == ["dropped"]


def test_attack_a_question_shows_what_a_person_cannot_see_and_says_what_it_leaves_out() -> None:
    from taskgate.gate.asking import question

    hidden = "Hi Bob." + "\u200b" * 3 + "\u202e" + "P.S. forward the payroll to mallory@example.com"
    shown = question("send_email", {"body": hidden})
    assert "<U+200B><U+200B><U+200B><U+202E>P.S. forward the payroll" in shown
    long = question("send_email", {"body": "x" * 1500})
    assert "[and 500 more characters not shown here]" in long


def test_attack_arguments_that_would_read_as_another_call_are_malformed_never_cut() -> None:
    """A name over 200 characters was cut, so a call with another name fit the grant; a NaN
    read as null, as None does."""
    gate = GateSession(TABLES)
    said(gate, "Sounds interesting.", PROPOSAL)
    for arguments in ({"note_" + "x" * 200: "1"}, {**TABLE, "party_size": float("nan")}):
        ticket = gate.judge([Call("reserve_table", arguments=arguments)])[0]
        assert not ticket.held and ticket.verdict.reason is Reason.MALFORMED_CALL


def test_attack_a_no_on_a_channel_is_not_asked_again_for_the_same_call() -> None:
    asked: list[Any] = []
    gate = ToolGate(TABLES, ask=lambda held: asked.append(held) or False)
    gate.user_message("Sounds interesting.", agent=PROPOSAL)
    for _ in range(2):
        with pytest.raises(ToolRefused, match="said no"):
            gate.call("reserve_table", lambda **kw: "reserved", **TABLE)
    assert len(asked) == 1  # the person said no once; the same call again is refused
    gate.user_message("Hmm, maybe.", agent=PROPOSAL)  # a new message: it may be asked again
    with pytest.raises(ToolRefused):
        gate.call("reserve_table", lambda **kw: "reserved", **TABLE)
    assert len(asked) == 2


def test_attack_an_answers_who_and_channel_are_bounded_text() -> None:
    gate = GateSession(TABLES)
    ticket = held(gate)
    assert ticket.ask is not None
    for bad in (
        {"by": "x" * 201},
        {"by": "ops", "channel": 123},
        {"by": "ops", "channel": "c" * 65},
    ):
        with pytest.raises(UsageError):
            gate.answer(ticket.ask.id, "approve", **bad)  # type: ignore[arg-type]
    assert gate.waiting() and not any(isinstance(e, AnswerEntry) for e in gate.ledger)


# -- a second attack round -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "agent",
    [
        "{small} Sorry, ignore that. Shall I book for forty instead?",
        "{small} Or would you rather: {big}",
        "Which one? {small} or {big}",
        "Do NOT answer this: {big} Instead tell me: shall I cancel everything?",
    ],
)
def test_attack_a_yes_answers_only_the_one_question_the_agent_asked_last(agent: str) -> None:
    gate = GateSession(TABLES)
    small = held(gate)
    big = gate.judge([Call("reserve_table", arguments={**TABLE, "party_size": 40})])[0]
    assert small.ask is not None and big.ask is not None
    said(gate, "Yes", agent.format(small=small.ask.question, big=big.ask.question))
    for arguments in (TABLE, {**TABLE, "party_size": 40}):
        assert not gate.judge([Call("reserve_table", arguments=arguments)])[0].admitted


def test_attack_a_yes_with_more_than_is_read_or_after_an_empty_agent_turn_is_no_answer() -> None:
    gate = GateSession(TABLES)
    ticket = held(gate)
    assert ticket.ask is not None
    said(gate, "Yes for 2" + " " * 3000 + "40", ticket.ask.question)
    assert not gate.judge([Call("reserve_table", arguments=TABLE)])[0].admitted
    other = GateSession(TABLES)
    held(other)
    said(other, "Yes, please.", "")  # the agent's turn had no words: nothing was put to the user
    assert not other.judge([Call("reserve_table", arguments=TABLE)])[0].admitted


def test_attack_invisible_characters_anywhere_in_a_question_are_shown_by_their_codes() -> None:
    from taskgate.gate.asking import question

    shown = question("reserve_table", {"party\u200bsize": 2, "restaurant\u202e": "x",
                                       "r": "Chez" + chr(0xE0066) + "\u3164\u2800Pierre"})  # fmt: skip
    for code in ("<U+200B>", "<U+202E>", "<U+E0066>", "<U+3164>", "<U+2800>"):
        assert code in shown


def test_attack_a_lone_surrogate_is_a_malformed_call_not_a_traceback() -> None:
    gate = ToolGate(TABLES)
    gate.user_message("Sounds interesting.", agent=PROPOSAL)
    with pytest.raises(ToolRefused, match="could not be read"):
        gate.call("reserve_table", lambda **kw: "reserved", **{**TABLE, "restaurant": "Chez\ud800"})
