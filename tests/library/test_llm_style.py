"""The LLM-style fixture (tests/data/llm_style.jsonl) is well formed, and its bench replays every
case to one of the three outcomes, a yes to a held call running it (bench/bench_llm_style.py
measures it; no figure is asserted here: the fixture is for reporting, not for fitting)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
ACTS = {"yes", "no", "pick", "change", "question", "request", "closing", "redo", "held", "another"}


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_llm_style",
                                                  ROOT / "bench" / "bench_llm_style.py")  # fmt: skip
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_llm_style"] = module
    spec.loader.exec_module(module)
    return module


def test_every_case_is_well_formed() -> None:
    cases = _bench().load()
    assert len(cases) == 120 and len({c["id"] for c in cases}) == 120
    for case in cases:
        tools = {s["tool"] for s in case["steps"].values()}
        assert case["call"]["tool"] in tools, case["id"]
        assert set(case["done"]) <= set(case["steps"]), case["id"]
        assert case["turns"][0]["role"] == "user" == case["turns"][-1]["role"], case["id"]
        assert case["act"] in ACTS and case["label"] in ("authorized", "unauthorized")


@pytest.mark.parametrize("grounding", ["off", "ask"])
def test_every_case_replays_to_one_of_the_three_outcomes(grounding: str) -> None:
    from taskgate.understanding import ConversationReader

    bench = _bench()
    reader = ConversationReader()
    for case in bench.load():
        outcome, cost = asyncio.run(bench.replay(case, reader, grounding))
        assert outcome in ("run", "asked", "refused") and cost >= 0, case["id"]
