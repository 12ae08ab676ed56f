"""Wording control and matcher stress (Appendix A.5) and the redo-probe wording study (A.3): the
rewrite cache, the raters, Table 4's layout and the commands."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from taskgate.cli import app
from taskgate.core.plan import Plan
from taskgate.errors import LogFormatError, UsageError
from taskgate.lab import EpisodeParams, LadderConfig, generate_episode, run_ladder
from taskgate.lab.agents.base import Oracle
from taskgate.lab.agents.scripted import ScriptedMatcher
from taskgate.lab.episodes.pools import POOLS, Template
from taskgate.lab.experiments.wording import (
    RaterConfig,
    RewriteConfig,
    ScriptedRewriter,
    build_rewrites,
    check_rewrites,
    rater_table,
    read_cache,
    run_raters,
)
from taskgate.lab.experiments.wording.raters import RATERS, LLMRater, ScriptedRater, items
from taskgate.lab.experiments.wording.rewrites import LLMRewriter
from taskgate.lab.reporting import build_report, load_runs
from taskgate.lab.reporting.wording import _first_omitted_ask_names_another
from taskgate.lab.runner.roles import ROLES, Role, RoleContext
from taskgate.lab.scoring.summary import score_entries
from taskgate.llm.client import ChatClient
from taskgate.llm.endpoint import Endpoint
from taskgate.llm.fake import FakeServer, script
from taskgate.roles import Match

runner = CliRunner()
TPL = POOLS["procurement"][2]  # draft the request for quotation


def test_valid_rewrites_pass_and_each_fault_is_named() -> None:
    good = ["prepare the quotation request", "write the RFQ up", "draft a vendor quotation ask"]
    assert check_rewrites(TPL, good) is None
    cases = [
        (good[:2], "exactly three"),
        ([TPL.paraphrases[1], *good[1:]], "repeats the original"),
        ([good[0], good[0], good[2]], "given twice"),
        (["do the thing", *good[1:]], "drops the step's noun"),
        (["send 3 quotation requests", *good[1:]], "adds numbers"),
        (["draft the\nquotation", *good[1:]], "one non-empty line"),
    ]
    for rewrites, problem in cases:
        assert problem in (check_rewrites(TPL, rewrites) or ""), rewrites


class _Flaky:
    """Fails a template's first ask (drops the noun), then answers like the scripted rewriter."""

    name = "flaky"

    def __init__(self, always_bad: frozenset[str] = frozenset()) -> None:
        self.problems: list[str | None] = []
        self._bad = always_bad

    async def rewrite(self, tpl: Template, problem: str | None) -> str:
        self.problems.append(problem)
        if problem is None or tpl.slug in self._bad:
            return json.dumps({"rewrites": ["do it", "do that", "go on"]})
        return await ScriptedRewriter().rewrite(tpl, problem)


def test_a_bad_reply_is_re_asked_with_its_problem_and_the_cache_resumes(tmp_path: Path) -> None:
    path = tmp_path / "rewrites.json"
    flaky = _Flaky(frozenset({"draft_rfq"}))
    config = RewriteConfig(domains=("procurement",), attempts=2)
    result = asyncio.run(build_rewrites(path, flaky, config))
    assert result.written == 17 and set(result.failed) == {"draft_rfq"}
    assert "drops the step's noun" in result.failed["draft_rfq"]
    assert any(p and "drops the step's noun" in p for p in flaky.problems)
    again = asyncio.run(build_rewrites(path, _Flaky(), config))
    assert again.kept == 17 and again.written == 1 and not again.failed
    cache = read_cache(path)
    ep = generate_episode(EpisodeParams(seed=100, para_tier=2), cache)
    asks = [t.message for t in ep.turns if t.label == "ask"]
    assert asks and all(
        m.split(" (#W")[0].lower().startswith(("please", "could", "time")) for m in asks
    )


def test_a_broken_cache_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(LogFormatError, match="is not a rewrite cache"):
        read_cache(bad)
    bad.write_text('{"draft_rfq": "one string"}')
    with pytest.raises(LogFormatError, match="slug -> list of wordings"):
        read_cache(bad)


def test_the_model_rewriter_asks_at_its_temperature(tmp_path: Path) -> None:
    reply = json.dumps({"rewrites": ["prepare the quotation request", "write the RFQ up", "x rfq"]})
    with FakeServer(script([reply])) as srv:

        async def go() -> str:
            async with ChatClient(Endpoint(base_url=srv.base_url, model="fake")) as c:
                return await LLMRewriter(c, 0.7, None).rewrite(TPL, None)

        assert asyncio.run(go()) == reply
        (body,) = srv.requests
    assert body["temperature"] == 0.7 and TPL.text in body["messages"][0]["content"]


def test_the_study_items_are_the_papers_94() -> None:
    got = items(("procurement",), 40)
    assert len(got) == 94 and len({i.key for i in got}) == 94
    assert sum(i.kind == "template" for i in got) == 54
    turns = [i for i in got if i.kind == "turn"]
    assert all("#W" in i.request for i in turns)


@pytest.mark.parametrize(
    ("rater", "row"),
    [
        (ScriptedRater("re-mention"), ["94/94", "94/94", "0/94", "0/94", "0/94", "0/94", "0/94"]),
        (ScriptedRater("fresh order"), ["0/94", "0/94", "94/94", "0/94", "0/94", "0/94", "0/94"]),
        (ScriptedRater(split=True), ["0/94", "0/94", "0/94", "0/94", "0/94", "94/94", "0/94"]),
    ],
)
def test_rater_oracles_give_their_known_counts(
    tmp_path: Path, rater: ScriptedRater, row: list[str]
) -> None:
    asyncio.run(run_raters(tmp_path, rater, RaterConfig()))
    all_row = rater_table(tmp_path).body[-1]
    assert all_row[0] == "all" and list(all_row[3:]) == row


def test_raters_resume_and_ask_again_where_a_reply_held_no_verdict(tmp_path: Path) -> None:
    config = RaterConfig(raters=1, samples=0)

    def study(replies: list[str]) -> list[dict[str, object]]:
        with FakeServer(script(replies)) as srv:

            async def go() -> None:
                async with ChatClient(Endpoint(base_url=srv.base_url, model="fake")) as c:
                    await run_raters(tmp_path, LLMRater(c, 1.0, None), config)

            asyncio.run(go())
            return srv.requests

    first = study(['{"verdict": "re-mention"}'] * 53 + ["I think it is fine"])
    assert {b["temperature"] for b in first} == {1.0}
    templates = rater_table(tmp_path).body[0]
    assert templates[3] == "53/54" and templates[7] == "1/54"  # the unreadable reply, shown
    again = study(['{"verdict": "re-mention"}'])  # only the item without a verdict is asked
    assert len(again) == 1 and rater_table(tmp_path).body[0][3] == "54/54"
    with pytest.raises(UsageError, match="other settings"):
        asyncio.run(run_raters(tmp_path, ScriptedRater(), config))


def test_an_item_not_every_rater_judged_is_incomplete_not_unanimous(tmp_path: Path) -> None:
    asyncio.run(run_raters(tmp_path, ScriptedRater(), RaterConfig(samples=0)))
    path = tmp_path / RATERS
    lines = path.read_text().splitlines()
    kept = [ln for ln in lines if '"rater":3' not in ln or "draft_rfq/0" not in ln]
    kept = [ln for ln in kept if '"rater":2' not in ln or "draft_rfq/0" not in ln]
    path.write_text("\n".join(kept) + "\n")
    row = rater_table(tmp_path).body[0]
    assert row[3:5] == ("53/54", "53/54") and row[-1] == "1/54"


class _WrongSecondAsk:
    """The scripted matcher, except that the episode's second ask is routed to the step of its
    first ask, which is done by then: the gate says ALREADY DONE for a step still owed."""

    def __init__(self, oracle: Oracle) -> None:
        self._inner = ScriptedMatcher(oracle)
        asks = [t for t in oracle.episode.turns if t.label == "ask"]
        self.turn, self._other = asks[1], asks[0].step

    async def match(self, plan: Plan, message: str) -> Match:
        if message == self.turn.message:
            return Match(self._other, False)
        return await self._inner.match(plan, message)


def test_the_first_omitted_ask_named_another_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[_WrongSecondAsk] = []

    def build(ctx: RoleContext) -> _WrongSecondAsk:
        made.append(_WrongSecondAsk(ctx.oracle))
        return made[-1]

    monkeypatch.setitem(ROLES._kinds["matcher"]._entries, "wrong", Role("matcher", "wrong", build))
    config = LadderConfig(
        arms=("directive",), agent="scripted:obedient", matcher="wrong", episodes=1
    )
    asyncio.run(run_ladder(config, tmp_path))
    (entry,) = score_entries(tmp_path)
    assert "omission" in entry.scored.score.primary.errors[made[0].turn.index]
    assert _first_omitted_ask_names_another(entry) is True


def test_the_wording_table_compares_configurations(tmp_path: Path) -> None:
    asyncio.run(build_rewrites(tmp_path / "rw.json", ScriptedRewriter(), RewriteConfig()))
    cache = read_cache(tmp_path / "rw.json")
    arms = ("raw", "enforcement")
    for name, kw in (("canon", {}), ("amb", {"para_tier": 2, "ambiguous_rate": 0.3})):
        config = LadderConfig(
            arms=arms,
            agent="scripted:obedient",
            episodes=4,
            rewrites=cache,
            **kw,  # type: ignore[arg-type]
        )
        asyncio.run(run_ladder(config, tmp_path / name))
    report = build_report(load_runs([tmp_path / "canon", tmp_path / "amb"]))
    table = report.table("wording")
    assert table is not None and len(table.header) == 3
    rows = {(r[0]): r for r in table.body}
    assert rows["Ambiguous probes booked"][1:] == ("", "")
    at = next(i for i, r in enumerate(table.body) if r[0].startswith("Matcher agreement"))
    gate = table.body[at + 1]
    counted = sum(
        t.label in ("ask", "premature", "redo_probe")
        for e in report.runs.entries
        if e.scored.score.arm == "enforcement" and e.source.name == "canon"
        for t in e.run.turns
    )
    assert gate[0] == "enforcement" and gate[1].endswith(f"/{counted})")
    assert any(r[0].startswith("Exact McNemar against the first column") for r in table.body)
    assert table.footnote.startswith("Holm family: per column against the first, over the arms")
    probes = [
        t
        for e in report.runs.entries
        if e.scored.score.arm == "raw" and e.source.name == "amb"
        for t in e.run.turns
        if t.label == "ambiguous"
    ]
    body = table.body
    at = next(i for i, r in enumerate(body) if r[0] == "Ambiguous probes booked")
    raw_row = body[at + 1]
    assert raw_row[0] == "raw" and raw_row[1] == "--"
    assert raw_row[2].endswith(f"/{len(probes)}") and probes
    one = build_report(load_runs([tmp_path / "canon"]))
    assert one.table("wording") is None  # canonical wording alone: no such table


def test_the_wording_commands(tmp_path: Path) -> None:
    cache = tmp_path / "rw.json"
    result = runner.invoke(app, ["rewrites", "--out", str(cache), "--rewriter", "scripted"])
    assert result.exit_code == 0, result.output
    assert len(read_cache(cache)) == 36
    study = tmp_path / "study"
    args = ["raters", "--out", str(study), "--rater", "scripted:re-mention", "--samples", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and "| all | 56 | 3 | 56/56 |" in result.output
    report = runner.invoke(app, ["raters-report", str(study)])
    assert report.exit_code == 0 and "| templates | 54 |" in report.output
    bad = runner.invoke(app, [*args[:-3], "scripted:maybe"])
    assert bad.exit_code == 2 and "unknown rater" in bad.output
    (tmp_path / "broken.json").write_text("[1, 2]")
    broken = runner.invoke(
        app, ["rewrites", "--out", str(tmp_path / "broken.json"), "--rewriter", "scripted"]
    )
    assert broken.exit_code != 0 and "is not a rewrite cache" in broken.output
