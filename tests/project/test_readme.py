"""The README's quick example runs and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_quick_example_runs() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## Quick example\n\n```python\n(.*?)```", text, re.S)
    assert block is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.group(1), "README", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[TASK-STATE] step s2 is BLOCKED -- missing prerequisites: s1.")
    assert lines[1].startswith("[BOOKING REJECTED]") and "s2 is BLOCKED" in lines[1]
    assert "BLOCKED" in lines[2]


def test_readme_opens_with_the_two_commands() -> None:
    head = README.read_text(encoding="utf-8").split("## ")[0]
    assert "make run" in head and "make test" in head
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.strip().splitlines()[-1] == "make test"


def test_tau2_gate_example_runs() -> None:
    pytest.importorskip("tau2")
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## tau2-bench airline") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.group(1), "README", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("True Refused by the policy gate -- rule cancel-eligibility:")
    assert lines[1] == "('cancel-eligibility',)"


def _section_blocks(title: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(title) :].split("\n## ")[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_tool_gate_and_langgraph_examples_run() -> None:
    gate_block, langgraph_block = _section_blocks("## Gate your own agent's tools")
    scope: dict[str, object] = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(gate_block, "README", "exec"), scope)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[BOOKING REJECTED]") and "step s2 is BLOCKED" in lines[0]
    assert lines[1] == "collecting"  # the admitted call ran; the refused one printed nothing
    pytest.importorskip("langgraph")
    assert len(langgraph_block.strip().splitlines()) <= 25
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(langgraph_block, "README", "exec"), scope)
    assert out.getvalue().splitlines() == ["error"]
