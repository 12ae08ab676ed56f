"""What each arm shows the agent, and where."""

from __future__ import annotations

from helpers import run_arm, run_patched
from taskgate.lab import ARMS, EpisodeParams, generate_episode
from taskgate.lab.arms.marks import MARKS_HEADER, SELF_LEDGER_CLAUSE
from taskgate.protocol.render import CHECKLIST_HEADER

EP = generate_episode(EpisodeParams(seed=152, steps=10, density=0.15))
ASK = next(t for t in EP.turns if t.label == "ask")
PREMATURE = next(t for t in EP.turns if t.label == "premature")


def test_arm_names_are_the_cli_names() -> None:
    assert list(ARMS) == [
        "raw", "checklist", "checklist-replace", "checklist-matched", "self-ledger", "directive",
        "directive-system", "enforcement", "enforcement-request", "enforcement-same-turn",
        "enforcement-system", "hybrid", "topk-replace", "topk-augment", "mem0-replace",
        "mem0-augment",
    ]  # fmt: skip


def test_raw_shows_only_the_message() -> None:
    turns, _ = run_arm(EP, "raw")
    assert turns[ASK.index].user == ASK.message
    assert turns[ASK.index].directive is None and turns[ASK.index].matched is None


def test_checklist_append_and_replace() -> None:
    append, _ = run_arm(EP, "checklist")
    replace, _ = run_arm(EP, "checklist-replace")
    for turns in (append, replace):
        user = turns[ASK.index].user
        assert user.startswith(ASK.message + "\n\n" + CHECKLIST_HEADER)
    # the checklist is an exact reference state: the asked step is ready
    assert f"- {ASK.step}: TODO (ready)" in append[ASK.index].user


def test_checklist_history_differs_between_modes() -> None:
    from helpers import PatchedAgent

    kept = {}
    for arm in ("checklist", "checklist-replace"):
        agent = PatchedAgent({})
        run_patched(EP, arm, {}, agent)
        last_prompt = agent.seen[-1]
        history_users = [m["content"] for m in last_prompt[1:-1] if m["role"] == "user"]
        kept[arm] = sum(CHECKLIST_HEADER in u for u in history_users)
        assert CHECKLIST_HEADER in last_prompt[-1]["content"]
    assert kept["checklist"] == 43 and kept["checklist-replace"] == 0


def test_checklist_matched_adds_the_matched_step() -> None:
    turns, _ = run_arm(EP, "checklist-matched")
    assert turns[ASK.index].user.endswith(f"[MATCHED STEP] this message is about step {ASK.step}.")


def test_directive_in_user_turn_and_system_role() -> None:
    user, _ = run_arm(EP, "directive")
    system, _ = run_arm(EP, "directive-system")
    directive = f"[TASK-STATE] step {PREMATURE.step} is BLOCKED -- missing prerequisites:"
    assert directive in user[PREMATURE.index].user
    assert system[PREMATURE.index].directive and system[PREMATURE.index].directive.startswith(
        directive
    )
    assert directive not in system[PREMATURE.index].user


def test_enforcement_notice_next_turn_versus_same_turn() -> None:
    assert PREMATURE.step
    line = f"ref {EP.plan.steps[PREMATURE.step].code}/{PREMATURE.work_order}"
    nxt, s1 = run_patched(EP, "enforcement", {PREMATURE.index: line})
    same, s2 = run_patched(EP, "enforcement-same-turn", {PREMATURE.index: line})
    assert nxt[PREMATURE.index + 1].user.startswith("[BOOKING REJECTED] Your line '" + line)
    assert len(nxt[PREMATURE.index].replies) == 1
    assert len(same[PREMATURE.index].replies) == 2  # re-prompted within the turn
    assert not same[PREMATURE.index + 1].user.startswith("[BOOKING REJECTED]")
    assert s1.primary.strict and s2.primary.strict
    assert s1.false_completions == 1 and s2.false_completions == 0


def test_request_bound_refuses_an_unrequested_eligible_step() -> None:
    assert ASK.step
    other = next(
        u.step for u in EP.turns
        if u.label == "ask" and u.step != ASK.step and not EP.plan.steps[u.step or ""].deps
    )  # fmt: skip
    assert other
    reply = f"ref {EP.plan.steps[ASK.step].code}/{ASK.work_order}\nref {EP.plan.steps[other].code}/{ASK.work_order}"
    _, state_bound = run_patched(EP, "enforcement", {ASK.index: reply})
    _, request_bound = run_patched(EP, "enforcement-request", {ASK.index: reply})
    assert state_bound.primary.channels["unrequested"] == 1
    assert request_bound.primary.strict and request_bound.refused == 1


def test_self_ledger_renders_the_agents_own_marks() -> None:
    assert ASK.step
    code = EP.plan.steps[ASK.step].code
    turns, _ = run_patched(
        EP,
        "self-ledger",
        {ASK.index: f"Done.\nref {code}/{ASK.work_order}\n**LEDGER {code} DONE**"},
    )
    assert f"{MARKS_HEADER}\n(no entries yet)" in turns[ASK.index].user
    assert f"{MARKS_HEADER}\n- {code}: DONE" in turns[ASK.index + 1].user
    assert SELF_LEDGER_CLAUSE not in turns[0].user  # the clause lives in the brief


def test_hybrid_falls_back_to_directives_on_a_defective_compile() -> None:
    import asyncio
    from dataclasses import replace

    from taskgate.core.plan import Plan, StepSpec
    from taskgate.lab import Oracle, ScriptedCompiler, build_players, get_arm, run_episode
    from taskgate.lab.episodes.records import TurnRecord

    class EmptyCodeCompiler(ScriptedCompiler):
        async def compile_plan(self, brief: str) -> Plan:
            steps = dict(EP.plan.steps)
            first = next(iter(steps))
            steps[first] = StepSpec(deps=steps[first].deps, code="", text=steps[first].text)
            return Plan(steps=steps)

    records: list[object] = []
    players = build_players(EP, "scripted:always-book")
    players = replace(players, compiler=EmptyCodeCompiler(Oracle(EP)))
    asyncio.run(run_episode(EP, get_arm("hybrid"), players, records.append))
    turns = [r for r in records if isinstance(r, TurnRecord)]
    assert {t.policy.value for t in turns} == {
        "ungated"
    }  # the validator flagged it: directives only
    assert records[0].plan_defects  # type: ignore[attr-defined]


def test_enforcement_system_moves_the_directive_and_keeps_the_notice_in_the_user_turn() -> None:
    assert PREMATURE.step
    line = f"ref {EP.plan.steps[PREMATURE.step].code}/{PREMATURE.work_order}"
    turns, score = run_patched(EP, "enforcement-system", {PREMATURE.index: line})
    rec = turns[PREMATURE.index]
    assert rec.directive and rec.directive.startswith(f"[TASK-STATE] step {PREMATURE.step} is")
    assert "[TASK-STATE]" not in rec.user  # the directive went to the system prompt
    assert rec.bookings[0].decision == "refuse"  # and the gate refused the blocked step
    assert turns[PREMATURE.index + 1].user.startswith("[BOOKING REJECTED] Your line '" + line)
    assert score.primary.strict
