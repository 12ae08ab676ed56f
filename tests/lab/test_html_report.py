"""The HTML report, rendered in a real headless Chromium: what is on the page, not the string.

Chromium is the Debian package (``make browser`` installs it); playwright drives it. Without
either, the test skips and says which is missing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import headless_chromium
from taskgate.lab.reporting import build_report, load_runs
from taskgate.lab.reporting.build import Report
from taskgate.lab.reporting.html import render_html, write_html
from taskgate.lab.runcard import RunCard
from taskgate.lab.rundir import LOG
from taskgate.lab.runner.config import LadderConfig
from taskgate.lab.runner.ladder import run_ladder

HOSTILE = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path, str]:
    out = tmp_path_factory.mktemp("html") / "run"
    config = LadderConfig(arms=("raw", "enforcement"), agent="scripted:always-book",
                          steps=(5,), episodes=3, corruption=(0.0, 0.03))  # fmt: skip
    card = RunCard(command="ladder", agent="scripted:always-book", compiler="scripted",
                   matcher="scripted", models={"agent": "", "compiler": "", "matcher": ""},
                   endpoints={"agent": [], "compiler": [], "matcher": []},
                   arms=["raw", "enforcement"], steps=[5], densities=[0.15], episodes=3,
                   first_seed=100, corruption=[0.0, 0.03])  # fmt: skip
    asyncio.run(run_ladder(config, out, card=card))
    lines = (out / LOG).read_text().splitlines()
    for i, line in enumerate(lines):  # a model reply that tries to break out of the page
        rec = json.loads(line)
        if rec["kind"] == "turn" and rec["arm"] == "raw" and rec["index"] == 2:
            rec["replies"] = [HOSTILE]
            lines[i] = json.dumps(rec)
            victim = f"{rec['episode']} / raw"
            break
    (out / LOG).write_text("\n".join(lines) + "\n")
    built = build_report(load_runs([out]))
    page = out.parent / "report.html"
    write_html(built, page)
    return built, page, victim


@pytest.fixture(scope="module")
def browser(report: Any) -> Iterator[Any]:  # after the run: playwright holds a loop
    with headless_chromium() as b:
        yield b


def test_the_page_shows_every_table_and_figure(report: Any, browser: Any) -> None:
    built, path, _ = report
    page = browser.new_page()
    page.goto(path.as_uri())
    assert page.title() == "taskgate report"
    titles = page.locator("section.table h3").all_text_contents()
    assert titles == [t.title for t in built.tables]
    ladder = built.table("ladder")
    cells = page.locator("#table-ladder tbody tr").first.locator("td").all_text_contents()
    assert cells == list(ladder.body[0])
    widths = page.evaluate("Array.from(document.images).map(i => i.complete && i.naturalWidth)")
    # hero, channels, corruption, and Figure 4 (its corruption panel)
    assert len(widths) == 4 and all(w > 0 for w in widths)
    assert page.locator("figure figcaption").first.text_content().startswith("Strict episode")


def test_the_page_says_what_ran_and_what_each_column_counts(report: Any, browser: Any) -> None:
    """The header names each run's configuration (its card) and cites the paper; each column
    the glossary knows has its meaning as a tooltip."""
    _, path, _ = report
    page = browser.new_page()
    page.goto(path.as_uri())
    configuration = page.locator("ul.dirs li").first.text_content() or ""
    assert "taskgate ladder" in configuration and "arms raw,enforcement" in configuration
    assert "card written" in configuration
    cite = page.locator("#cite").text_content() or ""
    assert "How Strongly Should Task State Influence an LLM Agent?" in cite and "Zhang" in cite
    tip = page.locator("#table-channels th").filter(has_text="Premature").first
    assert "while it was blocked" in (tip.get_attribute("title") or "")
    assert page.locator(".not-drawn").all_text_contents() == []  # every figure drawn
    missing = page.locator(".not-built").all_text_contents()
    assert [m.split(":")[1].strip() for m in missing] == ["Table 14", "Table 15", "Table 16"]
    assert "--brief original --schedule original" in missing[0]


def test_each_figure_names_its_agent_and_n(report: Any) -> None:
    from taskgate.lab.reporting.figures import styled_figures

    built, _, _ = report
    for fig in styled_figures(built).values():
        assert fig._suptitle.get_text() == "scripted:always-book; n = 3 episodes per bar"


def test_the_drill_down_filters_and_opens_episodes(report: Any, browser: Any) -> None:
    built, path, victim = report
    page = browser.new_page()
    page.goto(path.as_uri())
    total = len(built.runs.entries)
    failed = sum(not e.scored.score.primary.strict for e in built.runs.entries)
    assert page.locator("#shown").text_content() == f"{total} of {total} episode-arms shown"
    page.check("#filter-failed")
    assert page.locator("#shown").text_content() == f"{failed} of {total} episode-arms shown"
    assert page.locator("#episode-list details:visible").count() == failed
    page.uncheck("#filter-failed")
    page.select_option("#filter-arm", "raw")
    raws = sum(e.scored.score.arm == "raw" for e in built.runs.entries)
    assert page.locator("#episode-list details:visible").count() == raws
    item = page.locator("#episode-list details", has_text=victim).first
    item.locator("summary").click()
    rows = item.locator("table.turns tr")
    rows.nth(1).wait_for()
    entry = next(e for e in built.runs.entries if f"{e.scored.key[0]} / raw" == victim)
    assert rows.count() == len(entry.run.turns) + 1
    turn = item.locator("table.turns tr[data-turn='2']")
    assert HOSTILE in turn.text_content()  # shown as text
    errors = entry.scored.score.primary.errors.get(2, [])
    assert turn.locator("td").last.text_content().startswith(", ".join(errors))
    assert page.evaluate("window.__pwned") is None  # and never run


def test_an_episode_opens_on_its_first_error(report: Any, browser: Any) -> None:
    built, path, _ = report
    entry = next(e for e in built.runs.entries if e.scored.score.primary.errors)
    first = min(entry.scored.score.primary.errors)
    page = browser.new_page(viewport={"width": 1200, "height": 500})
    page.goto(path.as_uri())
    name = f"{entry.scored.key[0]} / {entry.scored.key[1]}"
    item = page.locator("#episode-list details", has_text=name).first
    assert f"first error: turn {first}" in (item.locator("summary").text_content() or "")
    item.locator("summary").click()
    row = item.locator("tr.first-error")
    row.wait_for()
    assert row.get_attribute("data-turn") == str(first)
    assert item.locator("tr.error").count() == len(entry.scored.score.primary.errors)
    assert row.is_visible() and page.evaluate(
        "(() => { const r = document.querySelector('tr.first-error').getBoundingClientRect();"
        " return r.top >= 0 && r.bottom <= window.innerHeight; })()"
    )


def test_no_transcript_text_can_close_the_data_block(report: Any) -> None:
    built, _, _ = report
    html = render_html(built)
    data = html.split('<script id="episodes-data" type="application/json">')[1]
    assert "</script>" in data and data.index("</script>") < data.index("<script>")
    assert "window.__pwned" in data and "<img" not in data.split("</script>")[0]
