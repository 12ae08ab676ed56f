"""The real-tool harness (Appendix G): its agent loop, its five arms, its scoring, its oracles."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from taskgate.lab import EpisodeParams, generate_episode
from taskgate.lab.agents.base import Oracle
from taskgate.lab.arms.registry import TOOL_LADDER, get_arm
from taskgate.lab.episodes.records import EndRecord, EpisodeRecord, TurnRecord
from taskgate.lab.episodes.tools import harness_episode
from taskgate.lab.harness.exchange import ToolExchange
from taskgate.lab.harness.graph import MAX_HOPS, RESULTS_HEADER
from taskgate.lab.harness.runner import WORKSPACES, ToolHarness, langgraph_version
from taskgate.lab.harness.workspace import TOOLS, Workspace
from taskgate.lab.rundir import LOG, read_log
from taskgate.lab.runner.config import LadderConfig
from taskgate.lab.runner.episode import Players, run_episode
from taskgate.lab.runner.ladder import run_ladder
from taskgate.lab.runner.roles import build_players
from taskgate.lab.scoring.index import score_run
from taskgate.lab.scoring.scorer import score_episode
from taskgate.lab.scoring.summary import summarize
from taskgate.roles import ChatMessage

Record = EpisodeRecord | TurnRecord | EndRecord


def ladder(
    tmp: Path, agent: str, mode: str = "actions", compiler: str = "scripted", episodes: int = 6
) -> dict[str, tuple[int, int, dict[str, int], int]]:
    """Run the five arms; per arm (successes, n, channels, refused)."""
    config = LadderConfig(
        arms=TOOL_LADDER, agent=agent, compiler=compiler, steps=(10,), episodes=episodes,
        first_seed=300,
    )  # fmt: skip
    progress = asyncio.run(run_ladder(config, tmp, variant=ToolHarness(tmp, mode)))  # type: ignore[arg-type]
    assert not progress.failures
    rows = summarize(score_run(tmp), list(TOOL_LADDER))
    return {r.arm: (r.successes, r.n, dict(r.channels), r.refused) for r in rows}


@pytest.mark.slow  # a whole grid: CI runs it, make quick does not
@pytest.mark.parametrize("mode", ["actions", "native"])
def test_the_perfect_agent_scores_one_on_all_five_arms(tmp_path: Path, mode: str) -> None:
    got = ladder(tmp_path, "scripted:perfect", mode)
    assert {arm: (s, n) for arm, (s, n, _, _) in got.items()} == {a: (6, 6) for a in TOOL_LADDER}


@pytest.mark.slow  # a whole grid: CI runs it, make quick does not
@pytest.mark.parametrize("mode", ["actions", "native"])
def test_always_book_passes_only_behind_enforcement(tmp_path: Path, mode: str) -> None:
    got = ladder(tmp_path, "scripted:always-book", mode)
    for arm in ("raw", "checklist", "directive"):
        successes, _, channels, _ = got[arm]
        assert successes == 0 and channels["re_execution"] > 0 and channels["premature"] > 0
    for arm in ("enforcement", "enforcement-request"):
        successes, n, channels, refused = got[arm]
        assert successes == n and sum(channels.values()) == 0 and refused > 0


def test_a_corrupted_compile_fails_the_gate_arms(tmp_path: Path) -> None:
    got = ladder(tmp_path, "scripted:obedient", compiler="scripted:corrupt")
    for arm in ("directive", "enforcement", "enforcement-request"):
        assert got[arm][0] == 0, arm


@pytest.mark.slow
def test_the_papers_oracle_grid_seeds_300_to_349(tmp_path: Path) -> None:
    perfect = ladder(tmp_path / "p", "scripted:perfect", episodes=50)
    assert all(perfect[a][:2] == (50, 50) for a in TOOL_LADDER)
    always = ladder(tmp_path / "a", "scripted:always-book", episodes=50)
    assert always["raw"][0] == 0
    assert always["enforcement"][:2] == always["enforcement-request"][:2] == (50, 50)


def test_every_episode_record_is_stamped_and_the_workspace_is_the_receipt(tmp_path: Path) -> None:
    ladder(tmp_path, "scripted:always-book", episodes=2)
    runs = read_log(tmp_path / LOG)
    assert len(runs) == 10
    for (run_id, arm), run in runs.items():
        stamp = run.header.harness
        assert stamp is not None and stamp.name == "taskgate-tools"
        assert stamp.langgraph == langgraph_version() and stamp.mode == "actions"
        # the turn records' executions are exactly the workspace's stamped blocks
        ws = Workspace(tmp_path / WORKSPACES / run_id / arm)
        logged = sorted((e.tool, e.work_order) for t in run.turns for e in t.executions or [])
        stamped = sorted((t, wo) for t, wos in ws.receipts().items() for wo in wos)
        assert logged == stamped and stamped


# -- one episode, by hand --------------------------------------------------------------------------
def episode():  # type: ignore[no-untyped-def]
    return harness_episode(generate_episode(EpisodeParams(seed=300, steps=10)))


async def play(
    agent: object, arm: str, tmp: Path, mode: str = "actions", native: object = None
) -> list[Record]:
    ep = episode()
    base = build_players(ep, "scripted:perfect")
    assert base.oracle is not None
    players = Players(agent=agent, compiler=base.compiler, matcher=base.matcher)  # type: ignore[arg-type]
    if hasattr(agent, "oracle"):
        agent.oracle = base.oracle  # type: ignore[attr-defined]
        players = Players(agent, base.compiler, base.matcher, oracle=base.oracle)  # type: ignore[arg-type]
    records: list[Record] = []
    the_arm = get_arm(arm)
    exchange = ToolExchange(the_arm, Workspace(tmp / arm), mode, native)  # type: ignore[arg-type]
    await run_episode(ep, the_arm, players, records.append, exchange=exchange)
    return records


@dataclass
class StaleAgent:
    """Replays the previous request's work order with the requested step's tool."""

    oracle: Oracle | None = None
    last: str | None = None

    async def reply(self, messages: list[ChatMessage]) -> str:
        assert self.oracle is not None
        view = self.oracle.current()
        if view.notice is not None:
            return "ok"
        turn, out = view.turn, "Nothing to do."
        if turn.step is not None and self.last is not None:
            tool = self.oracle.episode.plan.steps[turn.step].tool
            out = f'ACTION {{"tool": "{tool}", "work_order": "{self.last}"}}'
        self.last = turn.work_order or self.last
        return out


@pytest.mark.parametrize("arm", TOOL_LADDER)
def test_a_stale_work_order_is_refused_in_every_arm(tmp_path: Path, arm: str) -> None:
    records = asyncio.run(play(StaleAgent(), arm, tmp_path))
    calls = [b for r in records if isinstance(r, TurnRecord) for b in r.bookings]
    assert calls and all(b.decision == "refuse" and b.reason == "stale-work-order" for b in calls)
    assert not Workspace(tmp_path / arm).receipts()  # nothing executed


@pytest.mark.parametrize("arm", ["enforcement", "enforcement-request"])
def test_a_tool_no_step_is_bound_to_is_refused_by_the_enforcement_arms(
    tmp_path: Path, arm: str
) -> None:
    """The paper's gate refuses a call of a tool the episode binds to no step (unknown-tool), as
    before the library's gate let such tools through by default: the lab keeps its own rule."""
    bound = {s.tool for s in episode().plan.steps.values()}
    off = sorted(t for t in TOOLS if t not in bound)[0]
    records = asyncio.run(play(Relentless(off), arm, tmp_path))  # a call of it on every hop
    calls = [b for r in records if isinstance(r, TurnRecord) for b in r.bookings]
    assert calls and all(b.decision == "refuse" and b.reason == "unknown-tool" for b in calls)
    assert not Workspace(tmp_path / arm).receipts()


@dataclass
class Relentless:
    """Calls a tool on every hop, forever (under the newest work order it has seen)."""

    tool: str = "draft_rfq"

    async def reply(self, messages: list[ChatMessage]) -> str:
        said = [m["content"] for m in messages if m["role"] == "user" and "(#W" in m["content"]]
        if not said:
            return "ok"
        wo = said[-1].rsplit("(#W", 1)[1].split(")")[0]
        return f'ACTION {{"tool": "{self.tool}", "work_order": "#W{wo}"}}'


def test_a_turn_stops_after_three_hops(tmp_path: Path) -> None:
    records = asyncio.run(play(Relentless(), "raw", tmp_path))
    first = next(r for r in records if isinstance(r, TurnRecord) and r.work_order is not None)
    assert len(first.replies) == MAX_HOPS and len(first.bookings) == MAX_HOPS
    assert [b.reply_index for b in first.bookings] == list(range(MAX_HOPS))


def test_the_hop_limit_carries_the_last_results_into_the_next_user_turn(tmp_path: Path) -> None:
    records = asyncio.run(play(Relentless(), "raw", tmp_path))
    turns = [r for r in records if isinstance(r, TurnRecord)]
    asked = [t for t in turns if t.work_order is not None]
    later = turns[turns.index(asked[0]) + 1]
    assert later.user.startswith(RESULTS_HEADER)


# -- native calls ----------------------------------------------------------------------------------
@dataclass
class NativeScript:
    """A native agent: a malformed call, an unknown tool and a valid one on its first turn."""

    seen: list[list[AnyMessage]]
    acted: bool = False

    async def __call__(self, messages: list[AnyMessage]) -> AIMessage:
        self.seen.append(list(messages))
        last = str(messages[-1].content)
        if isinstance(messages[-1], ToolMessage) or "(#W" not in last or self.acted:
            return AIMessage("done")
        self.acted = True
        wo = "#W" + last.rsplit("(#W", 1)[1].split(")")[0]
        bad = {"name": "draft_rfq", "args": "{not json", "id": "c", "error": "bad"}
        return AIMessage(
            "",
            tool_calls=[
                {"name": "teleport", "args": {"work_order": wo}, "id": "a"},
                {"name": "collect_requirements", "args": {"work_order": wo}, "id": "b"},
            ],
            invalid_tool_calls=[{**bad, "type": "invalid_tool_call"}],
        )


def test_native_calls_are_each_answered_and_bad_ones_execute_nothing(tmp_path: Path) -> None:
    seen: list[list[AnyMessage]] = []
    records = asyncio.run(play(object(), "enforcement", tmp_path, "native", NativeScript(seen)))
    after = next(i for i, msgs in enumerate(seen) if isinstance(msgs[-1], ToolMessage))
    answers = [m for m in seen[after] if isinstance(m, ToolMessage)]
    assert {m.tool_call_id for m in answers} == {"a", "b", "c"}
    status = {m.tool_call_id: m.status for m in answers}
    assert status == {"a": "error", "b": "error" if _blocked(records) else "success", "c": "error"}
    first = next(r for r in records if isinstance(r, TurnRecord) and r.bookings)
    reasons = {b.tool: b.reason for b in first.bookings}
    assert reasons["teleport"] == "unknown-tool" and reasons["draft_rfq"] == "malformed-call"
    ws = Workspace(tmp_path / "enforcement").receipts()
    assert "teleport" not in ws and "draft_rfq" not in ws


def _blocked(records: Sequence[Record]) -> bool:
    first = next(r for r in records if isinstance(r, TurnRecord) and r.bookings)
    return any(b.tool == "collect_requirements" and b.decision == "refuse" for b in first.bookings)


def test_the_scorer_reads_a_second_block_in_one_turn_as_a_re_execution(tmp_path: Path) -> None:
    ep = episode()
    ready = next(spec.tool for spec in ep.plan.steps.values() if not spec.deps)
    records = asyncio.run(play(Relentless(ready), "raw", tmp_path))
    turns = [r for r in records if isinstance(r, TurnRecord)]
    first = next(t for t in turns if t.executions)
    assert len(first.executions or []) == MAX_HOPS  # three blocks of one tool in one turn
    score = score_episode(ep, turns)
    assert score.primary.channels["re_execution"] >= MAX_HOPS - 1
    # a tool no step of the plan is bound to is an unrequested execution
    stray = next(t for t in TOOLS if t not in {s.tool for s in ep.plan.steps.values()})
    records = asyncio.run(play(Relentless(stray), "raw", tmp_path / "stray"))
    turns = [r for r in records if isinstance(r, TurnRecord)]
    assert score_episode(ep, turns).primary.channels["unrequested"] > 0


# -- the grammar-constrained agent (the embedded model's) -----------------------------------------
def test_the_constrained_agent_asks_for_one_call_of_a_listed_tool() -> None:
    from taskgate import ChatClient, Endpoint, FakeServer
    from taskgate.lab.agents.tools import ACKNOWLEDGEMENT, ConstrainedToolAgent
    from taskgate.llm.fake import script

    ep = episode()
    tools = [spec.tool for spec in ep.plan.steps.values()]
    system: ChatMessage = {"role": "system", "content": ep.brief}
    ask: ChatMessage = {"role": "user", "content": "Please draft the RFQ (#W1234)."}
    call = json.dumps({"tool": tools[0], "work_order": "#W1234"})
    replies = [call, "I would rather chat."]
    with FakeServer(script(replies)) as srv:

        async def go() -> list[str]:
            async with ChatClient(Endpoint(base_url=srv.base_url, model="m")) as client:
                agent = ConstrainedToolAgent(client)
                results: ChatMessage = {"role": "user", "content": "[TOOL RESULTS]\nx: done"}
                chat: ChatMessage = {"role": "user", "content": "Thanks for the updates."}
                return [
                    await agent.reply([system, ask]),
                    await agent.reply(
                        [system, ask, {"role": "assistant", "content": "."}, results]
                    ),
                    await agent.reply([system, chat]),  # no work order: nothing to do
                    await agent.reply([system, ask]),  # a server that ignores the grammar
                ]

        got = asyncio.run(go())
    assert got == [
        f'ACTION {{"tool": "{tools[0]}", "work_order": "#W1234"}}',
        ACKNOWLEDGEMENT,
        ACKNOWLEDGEMENT,
        "I would rather chat.",
    ]
    assert len(srv.requests) == 2  # an acknowledgement costs no call
    schema = srv.requests[0]["response_format"]["schema"]
    assert srv.requests[0]["response_format"]["type"] == "json_object"
    assert schema["properties"]["tool"]["enum"] == tools
    assert schema["properties"]["work_order"]["enum"] == ["#W1234"]


# -- hostile model output ---------------------------------------------------------------------------
def test_hostile_action_lines_are_refused_or_written_safely(tmp_path: Path) -> None:
    from taskgate.protocol.actions import parse_actions

    huge = "ACTION " + '{"tool": "draft_rfq", "work_order": "#W1", "n": ' + "9" * 5000 + "}"
    (call,) = parse_actions(huge)
    assert call.problem  # Python refuses to read the integer: a malformed call, not a crash
    ws = Workspace(tmp_path)
    ws.execute("draft_rfq", "#W1", {"note": "\ud800 lone surrogate"})
    assert ws.executions("draft_rfq") == ["#W1"]  # written as ASCII JSON escapes
    many = "\n".join(["ACTION {" * 3, "**ACTION** " + "{" * 50_000, "x" * 100_000])
    assert all(c.problem for c in parse_actions(many))


def test_a_native_reply_langchain_cannot_read_is_a_model_error() -> None:
    from langchain_core.messages import HumanMessage

    from taskgate import Endpoint, FakeServer, ModelError
    from taskgate.lab.harness.native import chat_model
    from taskgate.llm.fake import Reply, ToolCall, script

    bad = Reply("", tool_calls=(ToolCall("draft_rfq", [1], "c1"),))  # type: ignore[arg-type]
    with FakeServer(script([bad])) as srv:
        model = chat_model(Endpoint(base_url=srv.base_url, model="m", attempts=1))
        with pytest.raises(ModelError, match="agent call failed"):
            asyncio.run(model([HumanMessage("go (#W1)")]))


@dataclass
class DoubleRedo:
    """The perfect agent, except that it performs an authorized redo twice."""

    oracle: Oracle | None = None

    async def reply(self, messages: list[ChatMessage]) -> str:
        from taskgate.lab.agents.scripted import PerfectAgent

        assert self.oracle is not None
        text = await PerfectAgent(self.oracle).reply(messages)
        if self.oracle.current().turn.label == "legit_redo" and "ACTION" in text:
            text += "\n" + text.splitlines()[-1]
        return text


def test_an_authorized_redo_executed_twice_is_one_re_execution(tmp_path: Path) -> None:
    records = asyncio.run(play(DoubleRedo(), "raw", tmp_path))
    turns = [r for r in records if isinstance(r, TurnRecord)]
    redo = next(t for t in turns if t.label == "legit_redo")
    assert len(redo.executions or []) == 2
    score = score_episode(episode(), turns)
    assert dict(score.primary.channels) == {"re_execution": 1}
