"""The retrieval-memory baselines (Appendix F): the top-k store, the memory arms' turns, Mem0 on the
fake model server, the memory and recall tables, and the ladder's run directory."""

from __future__ import annotations

import asyncio
import builtins
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers import fake_model, memory_for, run_arm
from taskgate.errors import MissingExtraError, ModelError, UsageError
from taskgate.lab import EpisodeParams, LadderConfig, generate_episode, get_arm, run_ladder
from taskgate.lab.episodes.records import EpisodeRecord, TurnRecord
from taskgate.lab.memory import Recall, TopKMemory, build_memory, render_recall
from taskgate.lab.memory.base import RECALL_HEADER, RECALL_NONE, exchange_text
from taskgate.lab.reporting import build_report, load_runs
from taskgate.lab.rundir import LOG, read_log
from taskgate.lab.scoring.report import p_value
from taskgate.lab.scoring.stats import holm
from taskgate.lab.scoring.summary import pair_contrasts
from taskgate.llm.client import ChatClient
from taskgate.llm.endpoint import Endpoint
from taskgate.matching.embedders import HashEmbedder
from taskgate.protocol.bookings import parse_bookings

EP = generate_episode(EpisodeParams(seed=101, steps=10))


class _Axis:
    """A fake embedder whose texts name their own vector: 'x' -> e1, 'y' -> e2, 'xy' -> both."""

    name = "axis"

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = np.array([[t.count("x"), t.count("y"), 0.1] for t in texts], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _recall(memory: TopKMemory, query: str) -> Recall:
    return asyncio.run(memory.recall(query))


def test_top_k_recalls_the_most_similar_exchanges_best_first() -> None:
    memory = TopKMemory(_Axis(), k=2, threaded=False)
    assert _recall(memory, "x") == Recall((), 0)
    for user in ("xxxx", "yyyy", "xy"):
        asyncio.run(memory.remember(user, "ok"))
    got = _recall(memory, "xxx")
    assert got.store == 3
    assert got.items == (exchange_text("xxxx", "ok"), exchange_text("xy", "ok"))
    assert _recall(memory, "yyy").items[0] == exchange_text("yyyy", "ok")


def test_top_k_keeps_exchanges_verbatim_with_their_receipt_lines() -> None:
    memory = TopKMemory(HashEmbedder(), threaded=False)
    asyncio.run(memory.remember("Draft the RFQ (#W1000).", "Done.\nref RC-1111/#W1000"))
    (item,) = _recall(memory, "draft the rfq").items
    assert [b.work_order for b in parse_bookings(item)] == ["#W1000"]
    assert memory.name == "topk:hash:k5"


def test_the_recall_block() -> None:
    assert render_recall(Recall((), 0)) == RECALL_NONE
    block = render_recall(Recall(("a", "b"), 7))
    assert block.splitlines() == [RECALL_HEADER, "(1) a", "(2) b"]


def _seen(arm: str) -> tuple[list[list[dict[str, str]]], list[TurnRecord]]:
    """The messages the agent got on each turn of EP under ``arm``, and the turn records."""
    seen: list[list[dict[str, str]]] = []
    records: list[Any] = []

    class Recording:
        async def reply(self, messages: list[dict[str, str]]) -> str:
            seen.append([dict(m) for m in messages])
            return "Noted."

    async def go() -> None:
        from taskgate.lab import Players, run_episode
        from taskgate.lab.agents.base import Oracle
        from taskgate.lab.agents.scripted import ScriptedCompiler, ScriptedMatcher

        oracle = Oracle(EP)
        async with memory_for(arm) as memory:
            players = Players(
                Recording(), ScriptedCompiler(oracle), ScriptedMatcher(oracle), memory=memory
            )
            await run_episode(EP, get_arm(arm), players, records.append)

    asyncio.run(go())
    return seen, [r for r in records if isinstance(r, TurnRecord)]


def test_replace_mode_keeps_the_brief_the_last_two_exchanges_and_the_recall_block() -> None:
    seen, turns = _seen("topk-replace")
    last = seen[-1]
    assert last[0] == {"role": "system", "content": EP.brief}
    assert [m["role"] for m in last[1:]] == ["user", "assistant", "user", "assistant", "user"]
    assert last[1]["content"] == EP.turns[-3].message  # two exchanges back, as sent
    assert last[-1]["content"].startswith(EP.turns[-1].message + "\n\n" + RECALL_HEADER)
    rec = turns[-1].recall
    assert rec is not None and rec.store == len(EP.turns) - 1 and len(rec.items) == 5
    for i, item in enumerate(rec.items, 1):
        assert f"({i}) {item}" in last[-1]["content"]


def test_augment_mode_keeps_the_whole_transcript_without_earlier_recall_blocks() -> None:
    seen, turns = _seen("topk-augment")
    last = seen[-1]
    assert len(last) == 1 + 2 * (len(EP.turns) - 1) + 1
    history = [m["content"] for m in last[1:-1:2]]
    assert history == [t.message for t in EP.turns[:-1]]  # the requests as sent, no recall
    first = turns[0].recall
    assert first is not None and first.store == 0 and first.items == []


def test_memory_arms_log_their_store_and_other_arms_log_none() -> None:
    turns, score = run_arm(EP, "topk-replace")
    assert score.primary.strict and all(t.recall is not None for t in turns)
    raw, _ = run_arm(EP, "raw")
    assert all(t.recall is None for t in raw)
    assert "recall" not in raw[0].model_dump()  # earlier logs' bytes are unchanged


def test_a_memory_arm_without_a_store_is_refused() -> None:
    from taskgate.lab import build_players, run_episode

    with pytest.raises(UsageError, match="topk-replace arm needs a memory store"):
        asyncio.run(run_episode(EP, get_arm("topk-replace"), build_players(EP), print))


def test_mem0_stores_the_extracted_facts_and_recalls_them(tmp_path: Path) -> None:
    turns, score = run_arm(EP, "mem0-replace")
    assert score.primary.strict
    queried = [t.recall for t in turns if t.recall is not None and t.recall.store]
    assert queried and any(r.items for r in queried)  # Mem0's threshold may leave some empty
    assert [r.store for r in queried] == sorted(r.store for r in queried)


def test_mem0_recalls_the_extractors_prose_not_the_booking_line(tmp_path: Path) -> None:
    async def go() -> Recall:
        async with ChatClient(Endpoint(base_url=fake_model().base_url, model="fake")) as c:
            memory = build_memory("mem0", embedder="hash", client=c, store=tmp_path)
            try:
                await memory.remember("Draft the RFQ (#W1000).", "Done.\nref RC-1111/#W1000")
                return await memory.recall("Completed RC-1111 under work order #W1000")
            finally:
                await memory.close()

    got = asyncio.run(go())
    assert got.store == 2  # the request and the completion, as two facts
    assert got.items[0] == "Completed RC-1111 under work order #W1000"
    assert not any(parse_bookings(f) for f in got.items)  # no booking line survives extraction


def test_mem0_calls_are_logged_as_memory_calls_and_a_rerun_starts_empty(tmp_path: Path) -> None:
    ep = Endpoint(base_url=fake_model().base_url, model="fake")
    config = LadderConfig(
        arms=("mem0-augment",), agent="scripted:perfect", steps=(5,), episodes=1, embedder="hash"
    )

    async def go() -> None:
        async with ChatClient(ep) as client:
            await run_ladder(config, tmp_path, client=client)

    asyncio.run(go())
    (run,) = read_log(tmp_path / LOG).values()
    assert re.fullmatch(r"mem0-[0-9.]+:hash:k5", run.header.memory or "")  # the version is logged
    assert {c.purpose for c in run.calls} == {"memory"}
    assert len(run.calls) == len(run.turns)  # one extraction per exchange
    stores = list((tmp_path / "memory").iterdir())
    assert len(stores) == 1 and (stores[0] / "history.db").exists()


def test_mem0_without_a_model_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="need a model endpoint"):
        build_memory("mem0", embedder="hash", store=tmp_path)


def test_a_missing_memory_extra_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = builtins.__import__

    def no_mem0(name: str, *args: Any, **kw: Any) -> Any:
        level = args[3] if len(args) > 3 else kw.get("level", 0)
        if level == 0 and (name == "mem0" or name.startswith("mem0.")):
            raise ImportError(name)
        return real(name, *args, **kw)

    for mod in [m for m in sys.modules if m == "mem0" or m.startswith("mem0.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setattr(builtins, "__import__", no_mem0)

    async def go() -> None:
        async with ChatClient(Endpoint(base_url=fake_model().base_url, model="fake")) as c:
            memory = build_memory("mem0", embedder="hash", client=c, store=tmp_path)
            await memory.recall("anything")

    with pytest.raises(MissingExtraError, match=r"taskgate\[memory\]"):
        asyncio.run(go())


def test_unknown_memory_and_embedder_names_are_refused() -> None:
    from taskgate.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="unknown memory"):
        build_memory("zep")
    with pytest.raises(UnknownNameError, match="unknown embedder"):
        build_memory("topk", embedder="glove")
    with pytest.raises(UsageError, match="unknown embedder"):
        LadderConfig(arms=("topk-replace",), agent="scripted:perfect", embedder="glove")  # type: ignore[arg-type]


def _memory_run(tmp_path: Path) -> Path:
    arms = ("raw", "topk-replace", "topk-augment", "self-ledger", "checklist")
    config = LadderConfig(arms=arms, agent="scripted:always-book", episodes=6, embedder="hash")
    asyncio.run(run_ladder(config, tmp_path))
    return tmp_path


def test_the_memory_table_lists_the_arms_in_the_papers_order(tmp_path: Path) -> None:
    report = build_report(load_runs([_memory_run(tmp_path)]))
    table = report.table("memory")
    assert table is not None
    assert [r[1] for r in table.body] == [
        "raw", "topk-replace", "topk-augment", "self-ledger", "checklist"
    ]  # fmt: skip
    by = {r[1]: r for r in table.body}
    assert by["raw"][5] == "--" and by["checklist"][5] == "--"
    assert by["topk-replace"][5] != "--" and by["self-ledger"][5] != "--"
    # Table 18's families: the memory-vs-raw contrasts (two arms here), the self-ledger's own two
    assert "memory-vs-raw contrasts within model, per scoring (primary / " in table.footnote
    assert table.footnote.count("2 contrasts") == 2
    scored = report.runs.scored
    mem = pair_contrasts(scored, [("raw", "topk-replace"), ("raw", "topk-augment")], within="model")
    assert [c.p_holm for c in mem] == holm([c.p for c in mem])
    assert by["topk-replace"][5] == p_value(mem[0].p_holm)
    own = pair_contrasts(
        scored, [("raw", "self-ledger"), ("checklist", "self-ledger")], within="model"
    )
    assert by["self-ledger"][5] == p_value(own[0].p_holm)


def test_the_recall_diagnostics_count_from_the_log(tmp_path: Path) -> None:
    out = _memory_run(tmp_path)
    report = build_report(load_runs([out]))
    table = report.table("recall")
    assert table is not None
    runs = read_log(out / LOG)
    for row in table.body:
        arm = row[1]
        mine = [r for (_, a), r in runs.items() if a == arm]
        queried = sum(len(r.turns) - 1 for r in mine)  # every turn after the first
        hits = sum(min(5, i) for r in mine for i in range(1, len(r.turns)))
        assert row[2:5] == (str(len(mine)), str(queried), f"{hits / queried:.2f}")
        assert row[5:7] == ("0", f"{len(mine)}/{len(mine)}")
        redone = sum(
            "re_execution" in errs
            for e in report.runs.entries
            if e.scored.score.arm == arm
            for errs in e.scored.score.primary.errors.values()
        )
        assert row[7] == str(redone) and row[8].endswith(f"/{redone}")


def test_an_episode_record_without_memory_serializes_as_before() -> None:
    rec = EpisodeRecord(
        episode="e", arm="raw", source="e", agent="a", compiler="c", matcher="m",
        compiled_plan=EP.plan,
    )  # fmt: skip
    assert "memory" not in rec.model_dump(mode="json")


def test_a_recalled_receipt_is_found_however_the_memory_restates_its_work_order() -> None:
    from taskgate.lab.episodes.records import BookingRecord, RecallRecord
    from taskgate.lab.reporting.memory import _receipt_recalled

    def turn(index: int, wo: str, recalled: list[str] | None = None) -> TurnRecord:
        booking = BookingRecord(
            code="RC-1111", work_order=wo, span=(0, 1), reply_index=0, decision="admit", step="s1"
        )
        recall = None if recalled is None else RecallRecord(items=recalled, store=len(recalled))
        return TurnRecord(
            episode="e", arm="mem0-replace", index=index, label="ask", step="s1", work_order=wo,
            policy="ungated", user="u", replies=["r"], bookings=[booking], recall=recall,
        )  # fmt: skip

    first = turn(0, "#W8733")
    for said, found in [
        ("Task s1 has been completed with reference RC-1111/#W8733", True),
        ("Completed RC-1111 under work order W8733", True),
        ("finished s1 (work order 8733)", True),
        ("finished s1 with W-8733.", True),
        ("finished s1 long ago", False),
        ("completed RC-1111 with W87330", False),
    ]:
        assert _receipt_recalled([first], turn(5, "#W9000", [said])) is found, said


def test_the_memory_arms_are_refused_in_the_tool_harness(tmp_path: Path) -> None:
    from taskgate.lab.harness.runner import ToolHarness

    config = LadderConfig(arms=("topk-replace",), agent="scripted:perfect", episodes=1)
    with pytest.raises(UsageError, match="text protocol, not the harness"):
        asyncio.run(run_ladder(config, tmp_path, variant=ToolHarness(tmp_path)))
