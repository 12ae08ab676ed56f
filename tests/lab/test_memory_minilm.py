"""The memory arms on the real all-MiniLM-L6-v2 (the ``memory`` extra): semantic recall, a ladder
run of the top-k arms, and Mem0 on MiniLM with its extraction played by the fake model."""

from __future__ import annotations

import asyncio
import importlib.util
import re
from pathlib import Path

import pytest

from helpers import fake_model
from taskgate.lab import LadderConfig, run_ladder
from taskgate.lab.memory import build_memory
from taskgate.lab.rundir import LOG, read_log
from taskgate.llm.client import ChatClient
from taskgate.llm.endpoint import Endpoint

# find_spec, not importorskip: collecting this module must not import torch when slow tests skip
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("sentence_transformers") is None
        or importlib.util.find_spec("mem0") is None,
        reason="needs the memory extra (pip install 'taskgate[memory]')",
    ),
]


def test_minilm_top_k_recalls_by_meaning_not_by_shared_words() -> None:
    memory = build_memory("topk")
    exchanges = [
        ("Put together the quotation request draft (#W1000).", "ref RC-1111/#W1000"),
        ("FYI: the steering committee moved its meeting to Thursday.", "Noted."),
        ("Book the delivery window with the carrier (#W1001).", "ref RC-2222/#W1001"),
    ]

    async def go() -> tuple[str, ...]:
        for user, reply in exchanges:
            await memory.remember(user, reply)
        return (await memory.recall("Schedule the shipment slot with the trucking company.")).items

    items = asyncio.run(go())
    assert memory.name == "topk:minilm:k5"
    assert items[0].startswith("User: Book the delivery window with the carrier")


def test_a_ladder_run_of_the_memory_arms_on_minilm(tmp_path: Path) -> None:
    config = LadderConfig(
        arms=("topk-replace", "topk-augment", "mem0-replace"),
        agent="scripted:always-book",
        steps=(5,),
        episodes=2,
    )

    async def go() -> None:
        ep = Endpoint(base_url=fake_model().base_url, model="fake")
        async with ChatClient(ep) as client:
            await run_ladder(config, tmp_path, client=client)

    asyncio.run(go())
    runs = read_log(tmp_path / LOG)
    names = {r.header.memory or "" for r in runs.values()}
    assert "topk:minilm:k5" in names and len(names) == 2
    assert any(re.fullmatch(r"mem0-[0-9.]+:minilm:k5", n) for n in names)
    for run in runs.values():
        stores = [t.recall.store for t in run.turns if t.recall is not None]
        assert stores[0] == 0 and max(stores) > 0
