"""Every guarantee docs/guarantees.md states names a test, and every test it names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "guarantees.md"
NAMED = re.compile(r"`tests/([\w/]+\.py)::(test_\w+)`")


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_every_test_the_guarantees_page_names_exists() -> None:
    named = NAMED.findall(DOC.read_text(encoding="utf-8"))
    assert len(named) >= 20
    missing = [f"{f}::{t}" for f, t in named if t not in defined_tests(ROOT / "tests" / f)]
    assert missing == []


def test_every_guarantee_bullet_names_a_test() -> None:
    bullets = re.split(r"\n- ", DOC.read_text(encoding="utf-8"))[1:]
    unbacked = [b.split("\n")[0] for b in bullets if not NAMED.search(b) and "above" not in b]
    assert unbacked == []


FIDELITY = ROOT / "docs" / "lab" / "fidelity.md"


def test_every_faithful_row_of_the_fidelity_page_names_a_test_that_exists() -> None:
    """docs/lab/fidelity.md: a row that calls an element faithful names the test that holds it,
    and every test the page names is defined under tests/."""
    text = FIDELITY.read_text(encoding="utf-8")
    defined = set().union(*(defined_tests(p) for p in (ROOT / "tests").rglob("test_*.py")))
    rows = [ln for ln in text.splitlines() if ln.startswith("|") and "| faithful |" in ln]
    assert len(rows) >= 40
    unbacked = [r.split("|")[1].strip() for r in rows if not re.search(r"`test_\w+`", r)]
    assert unbacked == []
    missing = sorted(set(re.findall(r"`(test_\w+)`", text)) - defined)
    assert missing == []
