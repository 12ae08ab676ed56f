"""The report's figures, tested for what they draw: axes, labels, bars, points and error bars."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from matplotlib.collections import LineCollection
from matplotlib.container import BarContainer
from matplotlib.patches import Rectangle

from taskgate.lab.reporting import build_report, load_runs
from taskgate.lab.reporting.build import Report
from taskgate.lab.reporting.figures import (
    axes,
    channels,
    corruption,
    hero,
    not_drawn,
    write_figures,
)
from taskgate.lab.runner.config import LadderConfig
from taskgate.lab.runner.ladder import run_ladder
from taskgate.lab.scoring.scorer import CHANNELS

ARMS = ("raw", "directive", "enforcement")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    out = tmp_path_factory.mktemp("figures") / "run"
    config = LadderConfig(arms=ARMS, agent="scripted:always-book", steps=(5, 10), episodes=3,
                          corruption=(0.0, 0.03))  # fmt: skip
    asyncio.run(run_ladder(config, out))
    return build_report(load_runs([out]))


def test_hero_draws_one_bar_per_arm_and_cell_with_wilson_error_bars(report: Report) -> None:
    fig = hero(report.rows, report.arms)
    (ax,) = fig.axes
    assert ax.get_ylabel() == "strict episode success" and "Wilson" in ax.get_title()
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "S=5, rho=0.15", "S=5, rho=0.15, eps=0.03", "S=10, rho=0.15", "S=10, rho=0.15, eps=0.03"
    ]  # fmt: skip
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert [b.get_label() for b in bars] == list(ARMS)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(ARMS)
    for arm, bar in zip(ARMS, bars, strict=True):
        rows = [r for r in report.rows if r.arm == arm]
        assert [p.get_height() for p in bar.patches] == pytest.approx([r.rate for r in rows])
        assert bar.errorbar is not None
        (segments,) = [c for c in bar.errorbar.lines[2] if isinstance(c, LineCollection)]
        extents = [y for seg in segments.get_segments() for y in (seg[0][1], seg[1][1])]
        assert extents == pytest.approx([y for r in rows for y in (r.ci_low, r.ci_high)])


def test_channels_stack_each_channel_per_episode(report: Report) -> None:
    fig = channels(report.rows, report.arms)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "errors per episode"
    rects = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(rects) == len(CHANNELS) * len(report.rows)
    n = len(report.rows)
    totals = [sum(rects[c * n + i].get_height() for c in range(len(CHANNELS))) for i in range(n)]
    assert totals == pytest.approx([sum(r.channels.values()) / r.n for r in report.rows])
    assert [t.get_text() for t in ax.get_xticklabels()] == [r.arm for r in report.rows]


def test_the_corruption_curve_has_a_line_per_gate_arm_and_size(report: Report) -> None:
    fig = corruption(report.rows, report.arms)
    assert fig is not None
    (ax,) = fig.axes
    assert ax.get_xscale() == "symlog" and ax.get_xlabel().startswith("corruption rate")
    lines = [ln for ln in ax.lines if ln.get_marker() == "o"]
    # raw has no compiled state to corrupt: only the gate arms, at S=5 and S=10
    assert len(lines) == 4
    for ln in lines:
        assert list(ln.get_xdata()) == [0.0, 0.03]
    clean = [r for r in report.rows if r.corruption == 0]
    assert corruption(clean, report.arms) is None


def test_the_axes_figure_draws_figure_4s_panels_that_the_runs_hold(report: Report) -> None:
    """Figure 4: graph size, model axis, corruption; one configuration here, so no model panel."""
    fig = axes(report.rows, report.arms)
    assert fig is not None
    by_size, by_corruption = fig.axes
    assert by_size.get_title() == "(a) graph size" and by_corruption.get_title() == "(b) corruption"
    assert by_size.get_xlabel() == "graph size S (steps)"
    assert len([ln for ln in by_size.lines if ln.get_marker() == "o"]) == len(ARMS)
    for ln in by_size.lines:
        if ln.get_marker() == "o":
            assert list(ln.get_xdata()) == [5, 10]
    gates = [ln for ln in by_corruption.lines if ln.get_marker() == "o"]
    assert gates and all(list(ln.get_xdata()) == [0.0, 0.03] for ln in gates)


def test_the_axes_figures_legend_gives_each_series_its_own_colour(report: Report) -> None:
    """Figure 4's legend is the figure's: a series of one panel never shares a colour with a
    series of another (each panel alone would restart matplotlib's colour cycle)."""
    fig = axes(report.rows, report.arms)
    assert fig is not None
    colours = {c.get_label(): c.lines[0].get_color() for ax in fig.axes for c in ax.containers}
    assert len(fig.axes) == 2 and len(colours) > len(report.arms)
    assert len(set(colours.values())) == len(colours)


def test_the_model_panel_needs_two_configurations_at_one_cell(tmp_path: Path) -> None:
    runs = []
    for agent in ("scripted:always-book", "scripted:perfect"):
        out = tmp_path / agent.split(":")[1]
        config = LadderConfig(arms=ARMS, agent=agent, steps=(5,), episodes=2)
        asyncio.run(run_ladder(config, out))
        runs.append(out)
    one = build_report(load_runs(runs[:1]))
    assert axes(one.rows, one.arms) is None and "axes" in not_drawn(one)
    both = build_report(load_runs(runs))
    fig = axes(both.rows, both.arms)
    assert fig is not None
    (model,) = fig.axes
    assert model.get_title() == "(a) model"
    assert [t.get_text() for t in model.get_xticklabels()] == both.runs.configs


@pytest.mark.slow  # a whole grid: CI runs it, make quick does not
def test_figures_are_the_same_bytes_every_time(report: Report, tmp_path: Path) -> None:
    first = write_figures(report, tmp_path / "a")
    second = write_figures(report, tmp_path / "b")
    assert sorted(p.name for p in first) == sorted(
        f"{n}.{e}" for n in ("hero", "channels", "corruption", "axes") for e in ("png", "pdf")
    )
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_rates_that_differ_only_across_arms_draw_no_corruption_curve(tmp_path: Path) -> None:
    """One gate at eps=0, another at eps=0.03: no arm has a curve, and the report says so."""
    runs = []
    for arm, rate in (("enforcement", 0.0), ("hybrid", 0.03)):
        out = tmp_path / arm
        config = LadderConfig(arms=(arm,), agent="scripted:obedient", steps=(5,), episodes=2,
                              corruption=(rate,))  # fmt: skip
        asyncio.run(run_ladder(config, out))
        runs.append(out)
    report = build_report(load_runs(runs))
    assert corruption(report.rows, report.arms) is None
    assert "corruption" in not_drawn(report)


def test_figure_6_draws_both_regimes_side_by_side(tmp_path: Path) -> None:
    """Figure 6: the hero and channel figures over one agent's two reasoning regimes, one labelled
    group per configuration and cell, and one bar per arm in each."""
    runs = []
    for think in (False, True):
        out = tmp_path / ("think" if think else "no-think")
        config = LadderConfig(arms=ARMS, agent="scripted:always-book", steps=(5,), episodes=2,
                              think=think)  # fmt: skip
        asyncio.run(run_ladder(config, out))
        runs.append(out)
    both = build_report(load_runs(runs))
    assert both.runs.configs == ["scripted:always-book", "scripted:always-book, think"]
    (ax,) = hero(both.rows, both.arms).axes
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(labels) == 2 and all("scripted:always-book" in label for label in labels)
    assert "think" in labels[1] and "think" not in labels[0]
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert [len(b.patches) for b in bars] == [2] * len(ARMS)
    (ch,) = channels(both.rows, both.arms).axes
    assert len([t for t in ch.texts if "scripted:always-book" in t.get_text()]) == 2
