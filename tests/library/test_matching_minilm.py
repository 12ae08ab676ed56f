"""The embedding matcher on the real all-MiniLM-L6-v2 (the ``embedding`` extra): agreement with
the scripted step, the CLI, a ladder run that asks back, and the proxy."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from taskgate.cli import app
from taskgate.lab.scoring.agreement import evaluate, probes
from taskgate.matching import shared_matcher

# find_spec, not importorskip: collecting this module must not import torch (seconds) when the
# run skips slow tests anyway
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("sentence_transformers") is None,
        reason="needs the embedding extra",
    ),
]


def test_minilm_loads_offline_from_the_wheel() -> None:
    rows = shared_matcher().embedder.embed(["send the RFQ to the vendors", "book the venue"])
    assert rows.shape == (2, 384) and np.allclose(np.linalg.norm(rows, axis=1), 1.0)


def test_agreement_on_the_generators_wordings_and_the_heldout_set() -> None:
    items = list(probes(["0", "heldout"], ["procurement", "release"], range(100, 108)))
    got = asyncio.run(evaluate("embedding", shared_matcher(), items))
    k, n = got.overall("0")
    assert k / n >= 0.95
    amb = got.cells[("0", "ambiguous")]
    assert amb.agree / amb.n >= 0.9
    k, n = got.overall("heldout")
    assert k / n >= 0.8


def test_the_matchers_command_prints_the_table(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    result = CliRunner().invoke(
        app, ["matchers", "--episodes", "2", "--tiers", "0", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "| embedding | 0 | ambiguous |" in result.output
    assert "overall (ask, premature, redo)" in result.output and out.exists()


def test_a_ladder_with_the_embedding_matcher_asks_back_on_ambiguous_probes(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(
        app,
        ["ladder", "--agent", "scripted:always-book", "--compiler", "scripted", "--matcher",
         "embedding", "--arms", "raw,enforcement", "--steps", "10", "--episodes", "4",
         "--ambiguous-rate", "0.3", "--out", str(tmp_path / "run")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    table = result.output.split("Matcher (arms that use one")[1]
    row = next(ln for ln in table.splitlines() if ln.startswith("| S=10, rho=0.15 | enf"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    asked, total = cells[5].split("/")
    assert int(total) > 0 and int(asked) >= 0.9 * int(total)


def test_the_docs_matching_example_runs_and_prints_what_it_says() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "guide" / "matching.md"
    block = re.search(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert block is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.group(1), "README", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "s1"
    assert "'draft the RFQ' or 'collect the requirements'" in lines[1]
    assert lines[2].startswith("Before I act on this: do you mean 'collect the requirements'?")
