"""Every argument of a call grounded in what the conversation said (taskgate.understanding.grounding),
and the gate asking, never running, a call with a value nobody said."""

from __future__ import annotations

import asyncio
import datetime

import pytest

from taskgate import ConversationReader, GateSession
from taskgate.core.plan import Plan
from taskgate.errors import UsageError
from taskgate.gate.session import Call
from taskgate.understanding.grounding import KINDS, Ground, kind_of
from timing import assert_linear

EXAMPLES = [(k.name, v, t) for k in KINDS for v, t in k.examples]
COUNTER = [(k.name, v, t) for k in KINDS for v, t in k.counterexamples]


@pytest.mark.parametrize(
    ("kind", "value", "said", "grounds"),
    [(*case, True) for case in EXAMPLES] + [(*case, False) for case in COUNTER],
)
def test_each_kinds_examples_are_grounded_by_their_texts_and_its_counterexamples_are_not(
    kind: str, value: str, said: str, grounds: bool
) -> None:
    ground = Ground(today=lambda: datetime.date(2019, 3, 1))
    ground.hear(said)
    assert kind_of(value)[0].name == kind
    assert ground.ungrounded({"value": value}) == (() if grounds else ("value",))


def test_every_kind_has_examples_and_all_but_nothing_counterexamples() -> None:
    for kind in KINDS:
        assert kind.examples, kind.name
        assert kind.counterexamples or kind.name == "nothing", kind.name


def test_lists_and_nested_objects_are_read_leaf_by_leaf_whatever_their_keys() -> None:
    ground = Ground()
    ground.hear("Two lattes with oat milk, and a mocha for Jean.")
    assert ground.ungrounded({"items": [{"name": "latte", "qty": 2, "milk": "Oat Milk"},
                                        {"name": "mocha", "for": "Jean"}]}) == ()  # fmt: skip
    got = ground.ungrounded({"items": [{"name": "latte", "qty": 20}, {"name": "espresso"}]})
    assert got == ("items[0].qty", "items[1].name")


def test_an_add_is_said_by_the_user_naming_the_thing_it_adds() -> None:
    """ "An Americano that has vanilla": the vanilla addon's ``"ADD"`` is said, since the user
    typed a word of the thing it adds; not where they said "no vanilla", nor where only a tool's
    result named it, and a ``"REMOVE"`` is never said this way."""

    def said(user: str, option: str, tool: str = "") -> bool:
        ground = Ground()
        ground.hear(user, typed=True)
        ground.hear(tool)
        call = {"addons": [{"addon_id": "vanilla-sweetener-245", "option": option}]}
        return ground.ungrounded(call) == ()

    assert said("I would like an Americano that has Vanilla.", "ADD")
    assert not said("An Americano, no vanilla.", "ADD")
    assert not said("An Americano.", "ADD", tool="vanilla sweetener, caramel sauce")
    assert not said("I would like an Americano that has Vanilla.", "REMOVE")


def test_a_call_of_more_values_than_are_read_one_by_one_is_grounded_nowhere() -> None:
    ground = Ground()
    ground.hear("one")
    assert len(ground.ungrounded({"v": [1] * 100})) == 65


def test_the_oldest_texts_drop_out_past_the_bound() -> None:
    ground = Ground(chars=100)
    ground.hear("Sino " * 10)
    ground.hear("x" * 99)
    assert ground.ungrounded({"r": "Sino"}) == ("r",)


def test_hearing_a_long_text_is_linear_in_its_length() -> None:
    def hear(text: str) -> None:
        Ground(chars=10**7).hear(text)

    for run in ("1:", "12 ", "half past ", "a@b.", "3/", "the 1st of ", "at 7 "):
        assert_linear(hear, lambda n, run=run: run * (n // len(run)))


PLAN = Plan.model_validate(
    {"binding": "tool", "steps": {"book": {"tool": "reserve_table", "text": "Reserve a table"}}}
)
PROPOSAL = "Shall I reserve a table for 2 at Sino in San Jose on March 4th at 7 pm?"
AGREED = {"restaurant": "Sino", "city": "San Jose", "party": 2, "date": "2019-03-04",
          "time": "19:00"}  # fmt: skip


def _grounding(gate: GateSession) -> GateSession:
    gate.grounding = "ask"
    return gate


def _confirmed(call: dict[str, object], *, before: str = "", tool: str = "") -> str:
    gate = _grounding(GateSession(PLAN))
    if tool:
        gate.hear(tool)
    earlier = [(before, "Which has a table?")] if before else None
    asyncio.run(gate.open_message("Yes, please.", ConversationReader(), agent=PROPOSAL,
                                  earlier=earlier))  # fmt: skip
    ticket = gate.judge([Call("reserve_table", arguments=call)])[0]
    return "run" if ticket.admitted else "asked" if ticket.ask is not None else "refused"


def test_the_confirmed_call_runs() -> None:
    assert _confirmed(AGREED) == "run"


@pytest.mark.parametrize(
    "changed",
    [{"restaurant": "Nizza"}, {"city": "Oakland"}, {"restaurant": "Sino Downtown"}],
)
def test_a_confirmed_call_with_a_name_nobody_said_is_asked_never_run(
    changed: dict[str, object],
) -> None:
    assert _confirmed({**AGREED, **changed}) == "asked"


def test_an_argument_nobody_said_under_any_key_is_asked() -> None:
    assert _confirmed({**AGREED, "notes": "and a bottle of champagne"}) == "asked"
    assert _confirmed({**AGREED, "extras": ["champagne"]}) == "asked"


def test_a_value_an_agent_said_in_another_message_does_not_ground_a_confirmed_proposal() -> None:
    before = "Nizza and Sino both have tables tonight."
    assert _confirmed({**AGREED, "restaurant": "Nizza"}, before=before) == "asked"


def _proposed(proposal: str, call: dict[str, object], *, yes: str = "Yes, please.") -> str:
    gate = _grounding(GateSession(PLAN))
    gate.hear("Saturday could work too, or the 15th, at 9 pm.", by="user")  # said, not agreed
    asyncio.run(gate.open_message(yes, ConversationReader(), agent=proposal))
    ticket = gate.judge([Call("reserve_table", arguments=call)])[0]
    if ticket.ask is not None:
        assert "not what was proposed" in ticket.ask.why
    return "run" if ticket.admitted else "asked" if ticket.ask is not None else "refused"


def test_a_day_or_time_said_elsewhere_but_not_the_one_proposed_is_asked() -> None:
    """A yes to "Friday at 7 pm" agrees to that day and time: a Saturday or a 15th the user
    mentioned earlier grounds the value, not the agreement, so the call is asked; what the
    proposal states runs, and a day the proposal does not state is left to the ground."""
    friday = "Shall I reserve a table at Sino for Friday at 7 pm?"
    assert _proposed(friday, {"restaurant": "Sino", "day": "Friday", "time": "19:00"}) == "run"
    assert _proposed(friday, {"restaurant": "Sino", "day": "Saturday", "time": "19:00"}) == "asked"
    stay = "Shall I reserve it at Sino from the 9th to the 20th?"
    assert _proposed(stay, {"restaurant": "Sino", "start": "9th", "end": "20th"}) == "run"
    assert _proposed(stay, {"restaurant": "Sino", "start": "15th", "end": "20th"}) == "asked"
    assert (
        _proposed("Shall I reserve a table at Sino?", {"restaurant": "Sino", "day": "Saturday"})
        == "run"
    )


def test_a_value_a_tools_result_gave_grounds_the_call() -> None:
    found = '{"restaurants": [{"id": "rst-8841", "name": "Sino"}]}'
    assert _confirmed({**AGREED, "restaurant_id": "rst-8841"}, tool=found) == "run"
    assert _confirmed({**AGREED, "restaurant_id": "rst-8842"}, tool=found) == "asked"
    assert _confirmed({**AGREED, "booked_by": "rst-8841"}, tool="[]") == "asked"


def test_an_identifier_is_left_to_the_other_rules_where_no_tools_result_was_heard() -> None:
    assert _confirmed({**AGREED, "restaurant_id": "rst-8842"}) == "run"


def test_a_request_runs_with_the_values_the_user_said_across_messages() -> None:
    gate = _grounding(GateSession(PLAN))
    reader = ConversationReader()
    asyncio.run(gate.open_message("I'd like a table at Sino in San Jose.", reader, agent=""))
    asyncio.run(gate.open_message("Reserve a table for 2 on March 4th at 7 pm, please.", reader,
                                  agent="For how many, and when?"))  # fmt: skip
    assert gate.judge([Call("reserve_table", arguments=AGREED)])[0].admitted


def _requested(call: dict[str, object], *, confirm: str = "auto") -> str:
    plan = {"binding": "tool", "steps": {"book": {"tool": "reserve_table",
            "text": "Reserve a table", "confirm": confirm}}}  # fmt: skip
    gate = _grounding(GateSession(Plan.model_validate(plan)))
    said = "Reserve a table at Sino in San Jose, please."
    asyncio.run(gate.open_message(said, ConversationReader(), agent=""))
    ticket = gate.judge([Call("reserve_table", arguments=call)])[0]
    return "run" if ticket.admitted else "asked" if ticket.ask is not None else "refused"


def test_a_request_with_a_value_the_agent_chose_is_asked() -> None:
    """A request in the user's own words: what they left open (a party size, a time) is asked
    with the call shown, never chosen for them; what they said runs; a step marked
    ``confirm="never"`` leaves the values to the state rules."""
    said = {"restaurant": "Sino", "city": "San Jose"}
    assert _requested(said) == "run"
    assert _requested({**said, "party": 2}) == "asked"
    assert _requested({**said, "time": "19:00"}) == "asked"
    assert _requested({**said, "restaurant": "Nizza"}) == "asked"
    assert _requested({**said, "party": 2}, confirm="never") == "run"


def test_grounding_is_on_by_default_and_can_be_turned_off() -> None:
    assert GateSession(PLAN).grounding == "ask"
    gate = GateSession(PLAN)
    gate.grounding = "off"
    asyncio.run(gate.open_message("Yes, please.", ConversationReader(), agent=PROPOSAL))
    assert gate.judge([Call("reserve_table", arguments={**AGREED, "restaurant": "Nizza"})])[
        0
    ].admitted


def test_without_asks_a_value_nobody_said_is_refused_naming_it() -> None:
    gate = _grounding(GateSession(PLAN, asks=False))
    asyncio.run(gate.open_message("Yes, please.", ConversationReader(), agent=PROPOSAL))
    ticket = gate.judge([Call("reserve_table", arguments={**AGREED, "restaurant": "Nizza"})])[0]
    assert not ticket.admitted and ticket.ask is None
    assert "not what the user agreed to" in ticket.refusal


def test_a_request_opened_by_hand_checks_no_values() -> None:
    gate = _grounding(GateSession(PLAN))
    gate.open_request("book")
    assert gate.judge([Call("reserve_table", arguments={"restaurant": "Nizza"})])[0].admitted


def test_what_the_gate_hears_is_text_said_by_a_tool_the_user_or_the_agent() -> None:
    gate = GateSession(PLAN)
    with pytest.raises(UsageError):
        gate.hear(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        gate.hear("x", by="agent")  # type: ignore[arg-type]


def test_an_invisible_character_in_a_value_is_not_what_was_said() -> None:
    assert _confirmed({**AGREED, "restaurant": "Si\u200bno"}) == "asked"


def test_a_day_that_cannot_be_read_grounds_no_date_by_today() -> None:
    ground = Ground(today=lambda: "2019-03-01")  # type: ignore[arg-type,return-value]
    ground.hear("tomorrow at 7 pm")
    assert ground.ungrounded({"date": "2019-03-02"}) == ("date",)

    def broken() -> datetime.date:
        raise RuntimeError("no clock")

    ground = Ground(today=broken)
    ground.hear("tomorrow at 7 pm")
    assert ground.ungrounded({"date": "2019-03-02"}) == ("date",)
    ground = Ground(today=lambda: datetime.date(2019, 3, 1))
    ground.hear("tomorrow at 7 pm")
    assert ground.ungrounded({"date": "2019-03-02", "time": "19:00"}) == ()
    assert ground.ungrounded({"date": "2019-03-03"}) == ("date",)


def test_an_earlier_offer_the_user_took_up_grounds_its_values_and_one_they_turned_down_not() -> (
    None
):
    offer = ("Nizza has a table at 7 pm.", "Great, I'd like that.")
    refused = ("Nizza has a table at 7 pm.", "No, not Nizza.")
    later = "Shall I reserve it for 2 in San Jose on March 4th?"
    call = {**AGREED, "restaurant": "Nizza"}
    for earlier, want in ((offer, True), (refused, False)):
        gate = _grounding(GateSession(PLAN))
        asyncio.run(gate.open_message("Yes, please.", ConversationReader(), agent=later,
                                      earlier=[earlier]))  # fmt: skip
        ticket = gate.judge([Call("reserve_table", arguments=call)])[0]
        assert ticket.admitted is want, earlier
        assert want or ticket.ask is not None


def test_the_proxy_reads_a_requests_messages_as_turns_and_tools_results() -> None:
    from taskgate.proxy.gating import said_in

    messages = [
        {"role": "system", "content": "You book tables."},
        {"role": "user", "content": "A table, please."},
        {"role": "assistant", "content": "Nizza has one at 7 pm."},
        {"role": "tool", "content": '{"id": "rst-1"}'},
        {"role": "user", "content": [{"type": "text", "text": "Great, I'd like that."}]},
        "garbage",
    ]
    assert said_in(messages) == [
        (None, "You book tables."),
        ("", "A table, please."),
        (None, '{"id": "rst-1"}'),
        ("Nizza has one at 7 pm.", "Great, I'd like that."),
    ]
    assert said_in("not a list") == []
    gate = GateSession(PLAN)
    with pytest.raises(UsageError):
        gate.hear_turn(None, "hi")  # type: ignore[arg-type]


def test_a_surface_that_gives_the_tools_results_has_identifiers_checked_even_before_one() -> None:
    gate = _grounding(GateSession(PLAN))
    gate.tools_heard = True  # as the middleware and the proxy say (a restart lost the results)
    asyncio.run(gate.open_message("Yes, please.", ConversationReader(), agent=PROPOSAL))
    held = gate.judge([Call("reserve_table", arguments={**AGREED, "restaurant_id": "rst-1"})])[0]
    assert held.ask is not None and gate.tools_heard


@pytest.mark.parametrize(
    "changed",
    [
        {"restaurant": "Нацца"},  # a word in another script is a word, never nothing
        {"restaurant": "Sino北京"},
        {"restaurant": "Nizza a a a a a a a a a a a a a"},  # a long text: every word, no facts only
        {"notes": "Please also order a bottle of champagne for the table and charge my card"},
        {"restaurant": "Sinoo"},  # the proposal spelled it: no misspelling forgiven
        {"card": "4111111111111112"},  # a word with a digit is exact
        {"charge_deposit": True},  # a switch nobody named
        {"prepay": "true"},
        {"restaurant_ref": "Nizza"},  # an identifier's name, but no identifier
        {"slot": {"party": 7}},  # the 7 of "7 pm" is no count
        {"slot": {"party": 4}},  # nor the 4 of "March 4th"
    ],
)
def test_attack_a_value_nobody_said_in_any_disguise_is_asked(changed: dict[str, object]) -> None:
    assert _confirmed({**AGREED, **changed}) == "asked"


def test_attack_a_name_said_the_other_way_grounds_nothing() -> None:
    gate = _grounding(GateSession(PLAN))
    asyncio.run(gate.open_message("Yes please, not Nizza.", ConversationReader(), agent=PROPOSAL))
    ticket = gate.judge([Call("reserve_table", arguments={**AGREED, "restaurant": "Nizza"})])[0]
    assert ticket.ask is not None


def test_attack_a_call_of_more_characters_than_are_heard_is_asked_whole() -> None:
    ground = Ground(chars=1_000)
    ground.hear("x " * 100)
    assert ground.ungrounded({"a": "x " * 400, "b": "x " * 400}) == ("a", "b")


def test_a_misspelling_the_user_typed_and_a_switch_they_named_still_run() -> None:
    gate = _grounding(GateSession(PLAN))
    gate.hear("I'd like the Pizzeria Delfinna, outdoor seating please.", by="user")
    proposal = "Shall I reserve a table for 2 at Pizzeria Delfina on March 4th at 7 pm?"
    asyncio.run(gate.open_message("Yes.", ConversationReader(), agent=proposal))
    call = {"restaurant": "Pizzeria Delfina", "party": 2, "date": "2019-03-04", "time": "19:00",
            "outdoor_seating": True}  # fmt: skip
    assert gate.judge([Call("reserve_table", arguments=call)])[0].admitted


def test_a_day_of_the_month_written_as_an_ordinal_is_said_by_that_day_only() -> None:
    ground = Ground()
    ground.hear("From the 12th to March 20th, please, for 3 nights")
    assert ground.ungrounded({"start": "12th", "end": "20th", "other": "13th"}) == ("other",)
