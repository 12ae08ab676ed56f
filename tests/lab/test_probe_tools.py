"""The trap-turn probe's tool-harness half: the raw arm replayed live in the harness, each trap
turn branched on a copy of the workspace, so that booking again is a tool call."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from taskgate.cli import app
from taskgate.lab import LadderConfig, run_ladder
from taskgate.lab.experiments.probe import (
    VARIANTS,
    ProbeConfig,
    ScriptedProbeAgent,
    probe_table,
    read_probe,
)
from taskgate.lab.experiments.probe.runner import Answer, ProbeAsk
from taskgate.lab.experiments.probe.tools import RUN, run_tool_probe
from taskgate.lab.rundir import LOG, read_log
from taskgate.roles import ChatMessage

pytest.importorskip("langgraph")
runner = CliRunner()
REPLAY = LadderConfig(arms=("raw",), agent="scripted:always-book", episodes=2, steps=(5,))


def _probe(out: Path, agent: ScriptedProbeAgent, config: ProbeConfig) -> None:
    asyncio.run(run_tool_probe(out, agent, config, REPLAY))


@pytest.mark.parametrize("variant", ["recorded", "confirm", "no-order", "prose", "erased"])
def test_a_tool_probe_oracle_rebooks_by_tool_call_under_its_variant_only(
    tmp_path: Path, variant: str
) -> None:
    _probe(tmp_path, ScriptedProbeAgent([variant]), ProbeConfig(samples=1, greedy=False))
    shares = {row[0]: row[1].split()[0] for row in probe_table([tmp_path]).body}
    for name, v in VARIANTS.items():
        assert shares[v.label] == ("1.00" if name == variant else "0.00"), name


def test_the_forks_leave_the_live_replay_as_a_plain_harness_run(tmp_path: Path) -> None:
    from taskgate.lab.harness.runner import ToolHarness

    _probe(tmp_path / "probe", ScriptedProbeAgent(["confirm"]), ProbeConfig(samples=1))
    plain = tmp_path / "plain"
    asyncio.run(run_ladder(REPLAY, plain, variant=ToolHarness(plain)))
    probed = read_log(tmp_path / "probe" / RUN / LOG)
    alone = read_log(plain / LOG)
    assert probed.keys() == alone.keys()
    for key in probed:
        assert probed[key].turns == alone[key].turns


class _Seeing(ScriptedProbeAgent):
    def __init__(self) -> None:
        super().__init__([])
        self.seen: dict[str, list[ChatMessage]] = {}

    async def ask(self, messages: list[ChatMessage], ask: ProbeAsk) -> Answer:
        self.seen.setdefault(ask.variant, list(messages))
        return await super().ask(messages, ask)


def test_prose_and_erased_rewrite_the_agents_own_tool_call_and_drop_its_result(
    tmp_path: Path,
) -> None:
    agent = _Seeing()
    config = ProbeConfig(samples=1, greedy=False, variants=("recorded", "prose", "erased"))
    _probe(tmp_path, agent, config)
    header, replies = read_probe(tmp_path)
    assert header is not None and header.source.startswith("tools:actions ")
    assert replies
    recorded = "\n".join(m["content"] for m in agent.seen["recorded"])
    for variant, gone in (("prose", "I have completed step"), ("erased", None)):
        text = "\n".join(m["content"] for m in agent.seen[variant])
        assert text.count("ACTION") < recorded.count("ACTION"), variant
        assert text.count("[TOOL RESULTS]") < recorded.count("[TOOL RESULTS]"), variant
        if gone is not None:
            assert gone in text


def test_a_tool_probe_resumes_without_asking_again(tmp_path: Path) -> None:
    config = ProbeConfig(samples=1, variants=("recorded", "confirm"))
    _probe(tmp_path, ScriptedProbeAgent(["confirm"]), config)
    lines = (tmp_path / "probe.jsonl").read_text().splitlines()
    _probe(tmp_path, ScriptedProbeAgent(["confirm"]), config)
    assert (tmp_path / "probe.jsonl").read_text().splitlines() == lines
    from taskgate.errors import UsageError

    with pytest.raises(UsageError, match="other settings"):
        _probe(tmp_path, ScriptedProbeAgent(["status"]), config)


def test_the_probe_tools_command(tmp_path: Path) -> None:
    out = tmp_path / "p"
    args = ["probe-tools", "--out", str(out), "--agent", "scripted:rebook=directive-user"]
    result = runner.invoke(app, [*args, "--episodes", "2", "--steps", "5", "--samples", "1"])
    assert result.exit_code == 0, result.output
    assert '| request + directive "already DONE, do not redo", user turn | 1.00' in result.output
    report = runner.invoke(app, ["probe-report", str(out)])
    assert report.exit_code == 0 and "| trap turns |" in report.output
