"""The paper's figures from a report (the ``figures`` extra: matplotlib).

* ``hero``: strict episode success per rung, grouped by configuration and cell, with Wilson 95%
  error bars (Figures 1 and 6a);
* ``channels``: errors per episode by channel, stacked, per rung (Figure 5a);
* ``corruption``: strict success against the corruption rate, with and without receipts repair
  (Figure 5b);
* ``axes``: Figure 4's panels, those the runs can draw: strict success against graph size, the
  agent model axis at a shared cell, and the corrupted-state ablation.

Each function returns a :class:`matplotlib.figure.Figure` built without pyplot (no global state);
:func:`write_figures` saves PNG and PDF with their timestamps and tool names left out, so that the
same report gives the same bytes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskgate.errors import MissingExtraError
from taskgate.lab.arms.registry import compiled_arm
from taskgate.lab.reporting.build import Report
from taskgate.lab.scoring.report import cell_name
from taskgate.lab.scoring.scorer import CHANNELS
from taskgate.lab.scoring.summary import CellKey, Row

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CHANNEL_LABELS = {
    "re_execution": "re-execution",
    "superseded": "superseded",
    "premature": "premature",
    "omission": "omission",
    "unrequested": "unrequested",
    "refused_redo": "refused redo",
}
STYLE = {
    "font.size": 8,
    "axes.titlesize": 9,
    "axes.labelsize": 8,
    "legend.fontsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.hashsalt": "taskgate",
}


def matplotlib_module() -> Any:
    """matplotlib, or a :class:`MissingExtraError` naming the ``figures`` extra."""
    try:
        import matplotlib
        import matplotlib.figure
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise MissingExtraError("figures", "drawing figures") from exc
    return matplotlib


def _new(width: float = 6.0, height: float = 2.8, ncols: int = 1) -> tuple[Figure, list[Any]]:
    fig = matplotlib_module().figure.Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def _groups(rows: Sequence[Row]) -> list[tuple[str, tuple[int, float, float]]]:
    return list(dict.fromkeys((r.config, r.cell) for r in rows))


def _group_label(config: str, cell: tuple[int, float, float], multi: bool) -> str:
    return f"{config}\n{cell_name(cell)}" if multi else cell_name(cell)


def hero(rows: Sequence[Row], arms: Sequence[str]) -> Figure:
    """Strict success per arm (bars) in each configuration and cell, Wilson 95% error bars."""
    fig, (ax,) = _new()
    groups = _groups(rows)
    multi = len({c for c, _ in groups}) > 1
    by = {(r.config, r.cell, r.arm): r for r in rows}
    width = 0.8 / max(1, len(arms))
    for i, arm in enumerate(arms):
        xs, ys, lo, hi = [], [], [], []
        for g, (config, cell) in enumerate(groups):
            r = by.get((config, cell, arm))
            if r is None:
                continue
            xs.append(g + (i - (len(arms) - 1) / 2) * width)
            ys.append(r.rate)
            lo.append(r.rate - r.ci_low)
            hi.append(r.ci_high - r.rate)
        if xs:
            ax.bar(xs, ys, width, label=arm, yerr=[lo, hi], capsize=2, error_kw={"lw": 0.8})
            _zeros(ax, xs, ys)
    ax.set_xticks(range(len(groups)), [_group_label(c, cell, multi) for c, cell in groups])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("strict episode success")
    ax.set_title("Strict episode success per rung (Wilson 95% CI)")
    fig.legend(ncols=min(6, len(arms)), loc="outside lower center", frameon=False)
    return fig


def channels(rows: Sequence[Row], arms: Sequence[str]) -> Figure:
    """Errors per episode by channel, one stacked bar per (configuration, cell, arm)."""
    fig, (ax,) = _new()
    groups = _groups(rows)
    multi = len({c for c, _ in groups}) > 1
    ordered = [
        r for g in groups for a in arms for r in rows if (r.config, r.cell, r.arm) == (*g, a)
    ]
    xs = list(range(len(ordered)))
    bottom = [0.0] * len(ordered)
    for c in CHANNELS:
        heights = [r.channels[c] / r.n for r in ordered]
        ax.bar(xs, heights, 0.7, bottom=bottom, label=CHANNEL_LABELS[c])
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    _zeros(ax, xs, bottom)
    ax.set_xticks(xs, [r.arm for r in ordered], rotation=30, ha="right")
    if len(groups) > 1:
        for config, cell in groups:
            at = [i for i, r in enumerate(ordered) if (r.config, r.cell) == (config, cell)]
            ax.text(
                sum(at) / len(at), 1.0, _group_label(config, cell, multi),
                transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=7,
            )  # fmt: skip
    ax.set_ylabel("errors per episode")
    ax.set_title("Error channels per rung", pad=18 if len(groups) > 1 else 6)
    fig.legend(loc="outside right upper", frameon=False)
    return fig


def _zeros(ax: Any, xs: Sequence[float], ys: Sequence[float]) -> None:
    """A "0" over each bar of height zero, which would otherwise not show at all."""
    for x, y in zip(xs, ys, strict=True):
        if y == 0:
            ax.text(x, 0, "0", ha="center", va="bottom", fontsize=6, color="0.3")


def corruption(rows: Sequence[Row], arms: Sequence[str]) -> Figure | None:
    """Strict success against the corruption rate per gate arm, one line per (configuration, S,
    rho): configurations with receipts repair appear as their own (dashed) lines. ``None`` when
    the runs have a single corruption rate."""
    series: dict[tuple[str, int, float, str], list[Row]] = defaultdict(list)
    for r in rows:
        if compiled_arm(r.arm):  # corruption is injected into a gate's compiled state
            series[(r.config, r.steps, r.density, r.arm)].append(r)
    series = {k: sorted(v, key=lambda r: r.corruption) for k, v in series.items() if len(v) > 1}
    if not series:
        return None
    fig, (ax,) = _new(5.0, 3.0)
    multi = len({k[0] for k in series}) > 1
    for (config, steps, density, arm), pts in series.items():
        xs = [r.corruption for r in pts]
        ys = [r.rate for r in pts]
        err = _err(pts)
        style = "--" if config.endswith("repair") else "-"
        label = f"{arm}, S={steps}, rho={density:g}" + (f" [{config}]" if multi else "")
        ax.errorbar(xs, ys, yerr=err, ls=style, marker="o", ms=3, capsize=2, label=label)
    ax.set_xscale("symlog", linthresh=1e-3)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("corruption rate eps (per step and turn)")
    ax.set_ylabel("strict episode success")
    ax.set_title("Corrupted state: success tracks the state's correctness")
    fig.legend(loc="outside lower center", frameon=False, fontsize=6, ncols=2)
    return fig


def axes(rows: Sequence[Row], arms: Sequence[str]) -> Figure | None:
    """Figure 4's layout, the panels these runs can draw: (a) strict success against graph size
    at fixed density, one line per arm (and configuration); (b) the agent model axis: strict
    success per arm for each configuration at a cell they share; (c) the corrupted-state
    ablation: a gate arm's success against the corruption rate. ``None`` when none can be drawn
    (see :func:`not_drawn`)."""
    clean = [r for r in rows if r.corruption == 0]
    panels = [
        (name, draw)
        for name, draw, able in (
            ("graph size", _size_panel, _size_points(clean)),
            ("model", _model_panel, _model_cell(clean)),
            ("corruption", _corruption_panel, _corrupted(rows)),
        )
        if able
    ]
    if not panels:
        return None
    fig, axs = _new(3.0 * len(panels) + 0.4, 2.6, ncols=len(panels))
    colour = _Palette()  # one colour per series across the panels: the legend is the figure's
    for i, ((name, draw), ax) in enumerate(zip(panels, axs, strict=True)):
        draw(ax, rows, arms, colour)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("strict episode success")
        ax.set_title(f"({'abc'[i]}) {name}")
    fig.legend(loc="outside lower center", frameon=False, fontsize=6, ncols=2)
    return fig


def _size_points(clean: Sequence[Row]) -> bool:
    return any(len({r.steps for r in clean if (r.config, r.density) == k}) >= 2
               for k in {(r.config, r.density) for r in clean})  # fmt: skip


def _model_cell(clean: Sequence[Row]) -> CellKey | None:
    """A cell that two or more configurations share (the first, in cell order)."""
    by_cell: dict[CellKey, set[str]] = defaultdict(set)
    for r in clean:
        by_cell[r.cell].add(r.config)
    return next((c for c in sorted(by_cell) if len(by_cell[c]) >= 2), None)


def _corrupted(rows: Sequence[Row]) -> bool:
    """Whether one gate arm of one configuration and cell ran at two or more corruption rates."""
    rates: dict[tuple[str, int, float, str], set[float]] = defaultdict(set)
    for r in rows:
        if compiled_arm(r.arm):
            rates[(r.config, r.steps, r.density, r.arm)].add(r.corruption)
    return any(len(v) >= 2 for v in rates.values())


class _Palette:
    """A colour per series label, the first unused one of matplotlib's 20-colour cycle (each
    axes would restart its own cycle, so two panels' series would share colours)."""

    def __init__(self) -> None:
        self._given: dict[str, str] = {}

    def __call__(self, label: str) -> str:
        if label not in self._given:
            colours = matplotlib_module().colormaps["tab20"].colors
            rgb = colours[(2 * len(self._given)) % 20 + (len(self._given) // 10) % 2]
            self._given[label] = matplotlib_module().colors.to_hex(rgb)
        return self._given[label]


Colour = Callable[[str], str]


def _size_panel(ax: Any, rows: Sequence[Row], arms: Sequence[str], colour: Colour) -> None:
    clean = [r for r in rows if r.corruption == 0]
    configs = list(dict.fromkeys(r.config for r in clean))
    for arm in arms:
        for config in configs:
            mine = [r for r in clean if r.arm == arm and r.config == config]
            who = arm + (f" [{config}]" if len(configs) > 1 else "")
            for rho in sorted({r.density for r in mine}):
                pts = [r for r in mine if r.density == rho]
                _curve(ax, pts, lambda r: r.steps, f"{who}, rho={rho:g}", colour)
    ax.set_xlabel("graph size S (steps)")


def _model_panel(ax: Any, rows: Sequence[Row], arms: Sequence[str], colour: Colour) -> None:
    clean = [r for r in rows if r.corruption == 0]
    cell = _model_cell(clean)
    at = [r for r in clean if r.cell == cell]
    configs = list(dict.fromkeys(r.config for r in at))
    for arm in arms:
        pts = [(i, r) for i, c in enumerate(configs) for r in at if (r.config, r.arm) == (c, arm)]
        if pts:
            label = f"{arm} (model axis)"
            ax.errorbar(
                [i for i, _ in pts], [r.rate for _, r in pts], yerr=_err([r for _, r in pts]),
                marker="o", ms=3, capsize=2, label=label, color=colour(label),
            )  # fmt: skip
    ax.set_xticks(range(len(configs)), configs, rotation=20, ha="right", fontsize=5)
    ax.set_xlabel(f"agent configuration at S={cell[0]}, rho={cell[1]:g}" if cell else "")


def _corruption_panel(ax: Any, rows: Sequence[Row], arms: Sequence[str], colour: Colour) -> None:
    series: dict[tuple[str, CellKey, str], list[Row]] = defaultdict(list)
    for r in rows:
        if compiled_arm(r.arm):
            series[(r.config, (r.steps, r.density, 0.0), r.arm)].append(r)
    for (config, cell, arm), pts in series.items():
        if len(pts) >= 2:
            pts = sorted(pts, key=lambda r: r.corruption)
            label = f"{arm}, S={cell[0]} [{config}] (corruption)"
            ax.errorbar(
                [r.corruption for r in pts], [r.rate for r in pts], yerr=_err(pts),
                marker="o", ms=3, capsize=2, label=label, color=colour(label),
            )  # fmt: skip
    ax.set_xscale("symlog", linthresh=1e-3)
    ax.set_xlabel("corruption rate eps")


def _curve(ax: Any, pts: list[Row], x: Callable[[Row], float], label: str, colour: Colour) -> None:
    """One line of strict success against ``x``, with Wilson error bars (two points or more)."""
    if len(pts) < 2:
        return
    pts = sorted(pts, key=x)
    ax.errorbar(
        [x(r) for r in pts], [r.rate for r in pts], yerr=_err(pts),
        marker="o", ms=3, capsize=2, label=label, color=colour(label),
    )  # fmt: skip


def _err(rows: Sequence[Row]) -> list[list[float]]:
    """Wilson 95% intervals as matplotlib's asymmetric error bars."""
    return [[r.rate - r.ci_low for r in rows], [r.ci_high - r.rate for r in rows]]


def figures(report: Report) -> dict[str, Figure]:
    """The report's figures by name (those its runs can draw; :func:`not_drawn` says why the
    others are not), each titled with its models and episode counts."""
    made = {
        "hero": hero(report.rows, report.arms),
        "channels": channels(report.rows, report.arms),
        "corruption": corruption(report.rows, report.arms),
        "axes": axes(report.rows, report.arms),
    }
    drawn = {name: fig for name, fig in made.items() if fig is not None}
    if report.rows:
        for fig in drawn.values():
            fig.suptitle(subtitle(report), fontsize=6, color="0.35")
    return drawn


def not_drawn(report: Report) -> dict[str, str]:
    """Each figure these runs cannot draw, and why (what run would draw it)."""
    clean = [r for r in report.rows if r.corruption == 0]
    why: dict[str, str] = {}
    if not _corrupted(report.rows):
        why["corruption"] = (
            "needs a gate arm run at two or more corruption rates (--corruption 0,0.03)"
        )
    if not (_size_points(clean) or _model_cell(clean) or _corrupted(report.rows)):
        why["axes"] = (
            "Figure 4 needs one of its panels: two or more graph sizes (--steps 5,10), two agent "
            "configurations at one cell (two runs, reported together), or a gate arm at two "
            "corruption rates"
        )
    return why


def subtitle(report: Report) -> str:
    """The models and episode counts behind the figures, for their titles."""
    models = sorted({m for card in report.runs.cards for m in card.models.values() if m})
    agents = sorted({card.agent for card in report.runs.cards})
    who = ", ".join(models) if models else ", ".join(agents) or "agents not recorded"
    ns = sorted({r.n for r in report.rows})
    n = f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}-{ns[-1]}"
    return f"{who}; {n} episodes per bar"


def save(fig: Figure, path: Path) -> None:
    """Save without a timestamp or tool name, so that equal figures give equal bytes."""
    matplotlib = matplotlib_module()
    fmt = path.suffix.lstrip(".")
    meta: dict[str, str | None] = (
        {"CreationDate": None, "Producer": None, "Creator": None}
        if fmt == "pdf"
        else {"Software": None}
    )
    with matplotlib.rc_context(STYLE):
        fig.savefig(path, format=fmt, dpi=200, metadata=meta)


def write_figures(
    report: Report, out: Path, figs: Mapping[str, Figure] | None = None
) -> list[Path]:
    """Write every figure (``figs``, when already drawn) as PNG and PDF into ``out``; return the
    paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in (styled_figures(report) if figs is None else figs).items():
        for ext in ("png", "pdf"):
            path = out / f"{name}.{ext}"
            save(fig, path)
            written.append(path)
    return written


def styled_figures(report: Report) -> dict[str, Figure]:
    """:func:`figures` drawn under the report's style (small fonts, no top and right spines)."""
    with matplotlib_module().rc_context(STYLE):
        return figures(report)
