"""The model-free matchers: embedding (on the fake embedder here), cascade, redo intent, ask-back."""

from __future__ import annotations

import asyncio
import sys

import numpy as np
import pytest

from helpers import run_arm
from taskgate import (
    CascadeMatcher,
    EmbeddingMatcher,
    HashEmbedder,
    Match,
    MiniLMEmbedder,
    MissingExtraError,
    Plan,
    Thresholds,
    ask_back_question,
    explicit_redo,
)
from taskgate.lab import EpisodeParams, generate_episode
from taskgate.lab.episodes.records import TurnRecord
from taskgate.lab.scoring.agreement import Agreement, evaluate, heldout, probes
from taskgate.lab.scoring.report import matcher_table
from taskgate.lab.scoring.summary import Scored, summarize
from taskgate.matching.embedding import HASH_THRESHOLDS, segments

PLAN = Plan.model_validate(
    {
        "steps": {
            "s1": {"code": "RC-1001", "text": "draft the request for quotation"},
            "s2": {"deps": ["s1"], "code": "RC-1002", "text": "send the RFQ to the vendors"},
            "s3": {"code": "RC-1003", "text": "book the venue for the offsite"},
        }
    }
)
FAKE = EmbeddingMatcher(HashEmbedder(), HASH_THRESHOLDS)


def test_hash_embedder_is_deterministic_unit_and_lexically_graded() -> None:
    e = HashEmbedder()
    a, b, c = e.embed(["send the RFQ", "send the RFQ to vendors", "book the venue"])
    assert np.allclose(e.embed(["send the RFQ"])[0], a)
    assert np.isclose(np.linalg.norm(a), 1.0)
    assert a @ b > a @ c
    assert e.embed([]).shape == (0, e.dim)


def test_segments_drop_work_orders_and_cut_alternatives() -> None:
    got = segments("Go ahead -- 'draft the RFQ' or 'book the venue', whichever (#W1234).")
    assert got[0] == "Go ahead -- 'draft the RFQ' or 'book the venue', whichever ."
    assert "draft the RFQ" in got and "book the venue" in got
    assert all("#W" not in s for s in got)
    assert segments("  ") == []


def test_a_hostile_request_is_read_in_bounded_pieces() -> None:
    huge = "send the RFQ to the vendors -- " * 40_000 + "'a b' or 'c d'; " * 40_000
    got = segments(huge)
    assert len(got) <= 12 and all(len(s) <= 2000 for s in got)
    assert FAKE.match_now(PLAN, huge).step == "s2"


def test_embedding_matcher_resolves_a_step_by_its_wording() -> None:
    got = FAKE.match_now(PLAN, "Please send the RFQ to the vendors (#W1111).")
    assert got == Match("s2", False)


def test_two_named_steps_are_ambiguous_with_both_candidates() -> None:
    msg = "Go ahead with 'draft the request for quotation' or 'book the venue for the offsite'."
    got = FAKE.match_now(PLAN, msg)
    assert got.step is None and set(got.candidates) == {"s1", "s3"}


def test_small_talk_is_near_no_step_and_asks_nothing() -> None:
    assert FAKE.match_now(PLAN, "Coffee break, back in ten minutes.") == Match(None, False, ())


def test_an_unsure_request_asks_back_about_the_nearest_steps() -> None:
    matcher = EmbeddingMatcher(HashEmbedder(), Thresholds(accept=1.01, near=0.0))
    got = matcher.resolve(PLAN, "send the RFQ to the vendors")
    assert got.step is None and not got.confident and got.candidates[0] == "s2"


def test_explicit_redo_is_raised_only_with_a_step() -> None:
    redo = "The RFQ to the vendors had errors: send the RFQ to the vendors again, please."
    assert FAKE.match_now(PLAN, redo) == Match("s2", True)
    assert FAKE.match_now(PLAN, "Thanks again!").explicit_redo is False


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Quality control found a problem, so it has to be done over. Please redo it now.", True),
        ("the numbers were stale, please build the sheet from scratch", True),
        ("run the security review one more time, legal asked", True),
        ("send the RFQ to the vendors", False),
        ("don't redo the RFQ, it is fine", False),
        ("there is no need to run it again", False),
        ("it is fine; do not repeat it. Thanks", False),
        ("no need to check. But please redo the table", True),
        ("no redo please", False),
        ("a redo is unnecessary", False),
        ("we can skip the redo", False),
        ("cancel the redo of the RFQ", False),
        ("Did the RFQ go out again yesterday?", False),
        ("the figures were wrong, so send the RFQ again. Thanks!", True),
    ],
)
def test_explicit_redo_reads_the_words_and_their_negation(text: str, want: bool) -> None:
    assert explicit_redo(text) is want


def test_explicit_redo_is_linear_on_hostile_text() -> None:
    assert explicit_redo("not " * 200_000 + "again") is False
    assert explicit_redo("x" * 1_000_000) is False


def test_ask_back_names_each_candidate_by_its_wording() -> None:
    two = ask_back_question(PLAN, ("s1", "s3"))
    assert "'draft the request for quotation' or 'book the venue for the offsite'" in two
    assert "'send the RFQ to the vendors'" in ask_back_question(PLAN, ("s2",))
    assert "which step" in ask_back_question(PLAN, ("s9",))


class _Counting:
    def __init__(self) -> None:
        self.calls = 0

    async def match(self, plan: Plan, message: str) -> Match:
        self.calls += 1
        return Match("s3", False)


def test_cascade_asks_the_fallback_only_when_the_embedding_is_unsure() -> None:
    fallback = _Counting()
    cascade = CascadeMatcher(fallback, EmbeddingMatcher(HashEmbedder(), Thresholds(sure=0.9)))
    sure = asyncio.run(cascade.match(PLAN, "draft the request for quotation"))
    unsure = asyncio.run(cascade.match(PLAN, "the RFQ please"))
    assert sure == Match("s1", False) and unsure == Match("s3", False)
    assert (cascade.kept, cascade.asked, fallback.calls) == (1, 1, 1)


EP = generate_episode(EpisodeParams(seed=104, steps=15, ambiguous_rate=0.3))
AMBIGUOUS = [t for t in EP.turns if t.label == "ambiguous"]


def test_gate_arms_ask_back_on_ambiguous_probes_and_execute_nothing() -> None:
    assert AMBIGUOUS
    turns, score = run_arm(EP, "enforcement", "scripted:always-book", matcher="embedding:hash")
    for t in AMBIGUOUS:
        rec = turns[t.index]
        assert rec.ask_back is not None and rec.replies == [rec.ask_back]
        assert rec.bookings == [] and rec.matched is not None
        assert set(rec.matched.candidates or ()) == set(t.candidates)
    assert score.ask_backs["ambiguous"] == len(AMBIGUOUS)
    raw, _ = run_arm(EP, "raw", "scripted:always-book", matcher="embedding:hash")
    assert all(raw[t.index].bookings for t in AMBIGUOUS)  # the same agent, not asked back


def test_text_arms_never_ask_back() -> None:
    # the matched-line checklist calls the matcher too, and still never asks back
    turns, score = run_arm(EP, "checklist-matched", "scripted:always-book", "scripted",
                           matcher="embedding:hash")  # fmt: skip
    assert any(r.matched is not None and r.matched.candidates for r in turns)
    assert all(r.ask_back is None for r in turns) and not score.ask_backs


def test_a_record_without_ask_back_serializes_as_before() -> None:
    turns, _ = run_arm(EP, "directive", matcher="embedding:hash")
    plain = next(r for r in turns if r.ask_back is None and r.matched is not None)
    dumped = plain.model_dump(mode="json")
    assert "ask_back" not in dumped and "candidates" not in dumped["matched"]
    asked = next(r for r in turns if r.ask_back is not None)
    assert TurnRecord.model_validate_json(asked.model_dump_json()) == asked


def test_the_matcher_table_reports_agreement_and_ask_backs() -> None:
    _, score = run_arm(EP, "directive", "scripted:obedient", matcher="embedding:hash")
    rows = summarize([Scored((15, 0.15, 0.0), 104, score)], ["directive"])
    table = matcher_table(rows)
    n = len(AMBIGUOUS)
    assert f"| {n}/{n} |" in table and "directive" in table


def test_heldout_wordings_cover_every_template() -> None:
    words = heldout()
    assert len(words["rewrites"]) == 36
    assert all(len(set(v)) == 3 for v in words["rewrites"].values())
    assert all(f.count("{a}") == f.count("{b}") == 1 for f in words["ambiguous"])
    assert all(f.count("{x}") == 1 for f in words["legit_redo"])


def test_heldout_probes_keep_the_scripted_answers() -> None:
    got = list(probes(["heldout"], ["release"], [104], ambiguous_rate=0.3))
    by_label = {p.label for p in got}
    assert {"ask", "premature", "redo_probe", "legit_redo", "ambiguous", "filler"} <= by_label
    assert "superseded_cue" not in by_label
    ask = next(p for p in got if p.label == "ask")
    assert ask.step is not None and ask.message.endswith(").")


def test_agreement_counts_ambiguous_probes_as_right_only_when_asked_back() -> None:
    items = [p for p in probes(["0"], ["procurement"], [104], ambiguous_rate=0.3)]
    tally = asyncio.run(evaluate("embedding:hash", FAKE, items))
    amb = tally.cells[("0", "ambiguous")]
    assert amb.n == amb.agree == amb.ask_back > 0
    asks = tally.cells[("0", "ask")]
    assert asks.agree == asks.n  # tier 0 asks are the brief's own wording
    empty = Agreement("x")
    empty.add(items[0], Match(None, False, ("s1", "s2")))
    assert empty.overall("0", [items[0].label]) == (0, 1)


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingExtraError, match=r"taskgate\[embedding\]"):
        MiniLMEmbedder().embed(["hello"])
