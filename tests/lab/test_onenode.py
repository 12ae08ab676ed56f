"""The one-node case (Appendix J): the testbed, the arms, the scripted oracles, resumption, the
model-backed roles and the CLI."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from taskgate.cli import app
from taskgate.errors import UsageError
from taskgate.lab.experiments.onenode import (
    LLMTriggerCompiler,
    LLMTriggerMatcher,
    NaiveNodeAgent,
    NodeConfig,
    NodeEpisode,
    NodeRoles,
    NodeTurn,
    PerfectNodeAgent,
    ScriptedTriggerCompiler,
    ScriptedTriggerMatcher,
    generate,
    node_table,
    run_node_episode,
    run_one_node,
)
from taskgate.lab.experiments.onenode.run import LOG, SANITIZED_USER
from taskgate.lab.experiments.onenode.testbed import (
    BY_SLUG,
    Commitment,
    bookings,
    commitment_message,
)
from taskgate.llm.client import ChatClient
from taskgate.llm.endpoint import Endpoint
from taskgate.llm.fake import FakeServer, script
from taskgate.roles import ChatMessage

runner = CliRunner()


def test_an_episode_triggers_each_commitment_before_its_after_requests() -> None:
    ep = generate(100, k=5, after=3)
    assert ep == generate(100, k=5, after=3)
    assert len({c.category for c in ep.commitments}) == 5
    orders = [t.work_order for t in ep.turns if t.work_order]
    assert len(orders) == len(set(orders))
    for i, c in enumerate(ep.commitments):
        mine = [t for t in ep.turns if t.commitment == i]
        assert [t.role for t in mine] == ["commit", "trigger", "after", "after", "after"]
        assert mine[0].message == commitment_message(c)
        assert all(t.category == c.category for t in mine)
    controls = [t for t in ep.turns if t.role == "control"]
    assert controls and not {t.category for t in controls} & {c.category for c in ep.commitments}


def test_booking_lines_are_parsed_in_linear_time() -> None:
    assert bookings("Done.\nbook Willow #W1234 and book Harbor Inns #w99") == [
        ("Willow", "#W1234"),
        ("Harbor Inns", "#W99"),
    ]
    hostile = "book " + "a" * 200_000 + " book a " * 20_000
    assert bookings(hostile) == []


def _table(tmp_path: Path, agent: str) -> dict[str, list[str]]:
    def roles(ep: NodeEpisode) -> NodeRoles:
        who = PerfectNodeAgent(ep) if agent == "perfect" else NaiveNodeAgent()
        return NodeRoles(who, ScriptedTriggerCompiler(ep), ScriptedTriggerMatcher())

    asyncio.run(run_one_node(NodeConfig(episodes=6), tmp_path, roles, (agent, "s", "s")))
    return {row[0]: row[1:] for row in node_table(tmp_path).body}


def test_the_perfect_agent_re_executes_nothing_and_every_trigger_fires(tmp_path: Path) -> None:
    rows = _table(tmp_path, "perfect")
    assert set(rows) == {"transcript", "manifest", "trigger", "trigger-raw"}
    for arm, row in rows.items():
        assert row[1].startswith("0.00") and row[2].startswith("0.00"), arm
        assert row[4].startswith("1.00"), arm  # applied at its trigger
    assert rows["trigger"][3] == "1.00 [0.86,1.00] (24/24)"
    assert rows["manifest"][3] == "--"


def test_sanitization_alone_stops_the_naive_agents_re_execution(tmp_path: Path) -> None:
    rows = _table(tmp_path, "naive")
    for arm in ("transcript", "manifest", "trigger-raw"):
        assert rows[arm][1] == "1.00 [0.86,1.00] (24/24)", arm
    assert rows["trigger"][1] == "0.00 [0.00,0.14] (0/24)"


def _seen(arm: str) -> tuple[NodeEpisode, list[list[ChatMessage]]]:
    ep = generate(101)
    seen: list[list[ChatMessage]] = []

    class Recording(PerfectNodeAgent):
        async def reply(self, messages: Sequence[ChatMessage]) -> str:
            seen.append(list(messages))
            return await super().reply(messages)

    roles = NodeRoles(Recording(ep), ScriptedTriggerCompiler(ep), ScriptedTriggerMatcher())
    asyncio.run(run_node_episode(ep, arm, roles, lambda r: None))
    return ep, seen


def test_a_fired_trigger_directs_that_call_and_sanitizes_the_consumed_instruction() -> None:
    ep, seen = _seen("trigger")
    first = next(i for i, t in enumerate(ep.turns) if t.role == "trigger")
    assert "[ONE-SHOT]" in seen[first][-1]["content"]
    c = ep.commitments[ep.turns[first].commitment or 0]
    assert f"book it with {c.vendor}" in seen[first][-1]["content"]
    later = seen[first + 1]
    texts = [m["content"] for m in later]
    assert commitment_message(c) not in texts and SANITIZED_USER in texts
    assert not any("[ONE-SHOT]" in m["content"] for m in later[:-1])  # directives are per call
    _, raw = _seen("trigger-raw")
    assert commitment_message(c) in [m["content"] for m in raw[first + 1]]


def test_the_manifest_lists_every_instruction_given_so_far() -> None:
    ep, seen = _seen("manifest")
    system = seen[-1][0]["content"]
    assert all(f"- {commitment_message(c)}" in system for c in ep.commitments)
    _, bare = _seen("transcript")
    assert "Standing one-shot instructions" not in bare[-1][0]["content"]


def test_a_run_resumes_and_refuses_other_settings(tmp_path: Path) -> None:
    def roles(ep: NodeEpisode) -> NodeRoles:
        return NodeRoles(
            PerfectNodeAgent(ep), ScriptedTriggerCompiler(ep), ScriptedTriggerMatcher()
        )

    config = NodeConfig(arms=("trigger",), episodes=3)
    asyncio.run(run_one_node(config, tmp_path, roles, ("p", "s", "s")))
    lines = (tmp_path / LOG).read_text().splitlines()
    (tmp_path / LOG).write_text("\n".join(lines[:-1]) + "\n")  # the last end record is lost
    again = asyncio.run(run_one_node(config, tmp_path, roles, ("p", "s", "s")))
    assert again.skipped == 2 and again.done == 3
    assert node_table(tmp_path).body[0][1] == "3"
    with pytest.raises(UsageError, match="other settings"):
        asyncio.run(run_one_node(NodeConfig(k=2), tmp_path, roles, ("p", "s", "s")))


def test_the_model_roles_read_their_json_and_refuse_what_is_not_there() -> None:
    ep = generate(100)
    t = NodeTurn(index=0, role="trigger", message="x", category="hotel", work_order="#W1")
    replies = [
        '{"category": "hotel", "vendor": "Willow"}',
        '{"category": "spaceship", "vendor": "Willow"}',
        "not json",
        "still not json",
        '{"fires": 0}',
        '{"fires": 7}',
    ]
    with FakeServer(script(replies)) as srv:

        async def go() -> list[object]:
            async with ChatClient(Endpoint(base_url=srv.base_url, model="fake")) as c:
                comp, match = LLMTriggerCompiler(c), LLMTriggerMatcher(c)
                pending = {0: ep.commitments[0]}
                return [
                    await comp.compile("use Willow", t),
                    await comp.compile("use Willow", t),
                    await comp.compile("use Willow", t),
                    await match.fires("a room please", pending, t),
                    await match.fires("a room please", pending, t),
                    await match.fires("anything", {}, t),
                ]

        got = asyncio.run(go())
    assert got == [Commitment(category="hotel", vendor="Willow"), None, None, 0, None, None]


def test_the_one_node_commands(tmp_path: Path) -> None:
    out = tmp_path / "n"
    args = ["one-node", "--out", str(out), "--agent", "scripted:naive", "--compiler", "scripted"]
    result = runner.invoke(app, [*args, "--matcher", "scripted", "--episodes", "2"])
    assert result.exit_code == 0, result.output
    assert "| trigger | 2 | 0.00" in result.output
    report = runner.invoke(app, ["one-node-report", str(out)])
    assert report.exit_code == 0 and "| manifest | 2 | 1.00" in report.output
    bad = runner.invoke(app, [*args, "--matcher", "psychic"])
    assert bad.exit_code == 2 and "unknown trigger matcher 'psychic'" in bad.output
    missing = runner.invoke(app, ["one-node-report", str(tmp_path)])
    assert missing.exit_code != 0 and "not a one-node run directory" in missing.output


class _Late(PerfectNodeAgent):
    """Ignores each one-shot at its trigger and applies it on the next request of its kind."""

    async def reply(self, messages: Sequence[ChatMessage]) -> str:
        t = self.turn
        if t is None or t.work_order is None or t.category is None or t.commitment is None:
            return await super().reply(messages)
        vendor = self._episode.commitments[t.commitment].vendor
        if t.role == "after":
            return f"book {vendor} {t.work_order}"
        return f"book {BY_SLUG[t.category].default} {t.work_order}"


def test_a_one_shot_first_used_after_its_trigger_is_late_not_re_executed(tmp_path: Path) -> None:
    def roles(ep: NodeEpisode) -> NodeRoles:
        return NodeRoles(_Late(ep), ScriptedTriggerCompiler(ep), ScriptedTriggerMatcher())

    config = NodeConfig(arms=("transcript",), episodes=2)
    asyncio.run(run_one_node(config, tmp_path, roles, ("late", "s", "s")))
    (row,) = node_table(tmp_path).body
    assert row[2] == "--"  # nothing was consumed, so nothing can be re-executed
    assert row[5].startswith("0.00") and row[6] == "8"  # 2 episodes x 4 one-shots, all late
