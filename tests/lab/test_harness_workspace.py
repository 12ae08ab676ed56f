"""The real-tool harness's workspace and brief (Appendix G)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import paper_text, paper_verbatim_after
from taskgate import ToolGate, UsageError, WorkspaceError, parse_brief
from taskgate.lab import EpisodeParams, generate_episode
from taskgate.lab.episodes.tools import tool_plan
from taskgate.lab.harness import TOOLS, Workspace
from taskgate.protocol.tools import TOOL_ONE_SHOT_SENTENCE, TOOLS_CLAUSE, harness_brief


def test_the_tools_clause_and_one_shot_sentence_are_the_papers() -> None:
    assert paper_verbatim_after("Real-tool protocol") == TOOLS_CLAUSE
    prose = " ".join(paper_text().split())
    assert " ".join(TOOL_ONE_SHOT_SENTENCE.split()) in prose.replace("``", "").replace("''", "")


def test_the_eighteen_tools_are_the_papers() -> None:
    tex = " ".join(paper_text().split())
    section = tex[tex.index("maps each of the $18$ procurement") :][:1200]
    named = re.findall(r"\\texttt\{([a-z\\_]+)\}", section)
    assert sorted(n.replace("\\_", "_") for n in named) == sorted(TOOLS) and len(TOOLS) == 18


def test_every_execution_is_a_stamped_block(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "episode-300")
    ws.execute("draft_rfq", "#W1234", {"title": "pumps"})
    ws.execute("draft_rfq", "#W5678", {"title": "pumps, again"})
    assert ws.executions("draft_rfq") == ["#W1234", "#W5678"]  # a re-execution, observed
    assert ws.receipts() == {"draft_rfq": ["#W1234", "#W5678"]}
    text = ws.artifact("draft_rfq").read_text(encoding="utf-8")
    assert text.startswith("== EXECUTION #W1234 ==\n") and '"title": "pumps"' in text


def test_bad_calls_write_nothing_and_say_what_was_wrong(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    with pytest.raises(UsageError, match="unknown tool 'teleport'"):
        ws.execute("teleport", "#W1", {})
    with pytest.raises(UsageError, match="arguments are not JSON"):
        ws.execute("draft_rfq", "#W1", {"when": object()})
    assert ws.receipts() == {} and not any(tmp_path.iterdir())
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(WorkspaceError, match="a-file"):
        Workspace(blocker / "workspace")


def test_an_episode_becomes_a_tool_bound_plan_and_a_harness_brief() -> None:
    ep = generate_episode(EpisodeParams(seed=300, steps=10))
    plan = tool_plan(ep)
    assert {spec.tool for spec in plan.steps.values()} <= set(TOOLS)
    brief = harness_brief(plan)
    assert brief.endswith(TOOLS_CLAUSE) and "[completion code" not in brief
    assert parse_brief(brief) == plan  # the parser compiles it back exactly
    ToolGate(plan)  # and the gate accepts it
    with pytest.raises(UsageError, match="procurement"):
        tool_plan(generate_episode(EpisodeParams(seed=1, steps=5, domain="release")))
