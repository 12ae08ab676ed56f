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
