"""One self-contained HTML page per report: tables, figures and a per-episode drill-down.

The page needs no server and no network: figures are inlined PNGs, the style and the script are
inlined, and each episode-arm's turns travel as JSON in a ``<script type="application/json">``
block, escaped so that no text of a transcript can close it. The script builds the drill-down
with ``textContent`` only, so a hostile model reply shows as text and never runs.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from taskgate._version import __version__
from taskgate.errors import MissingExtraError
from taskgate.lab.reporting.appendix import not_built
from taskgate.lab.reporting.build import Report
from taskgate.lab.runcard import CARD, describe
from taskgate.lab.runcard import load as load_card
from taskgate.lab.scoring.report import cell_name
from taskgate.lab.scoring.summary import Entry

_ASSETS = resources.files("taskgate.lab.reporting") / "assets"


def episode_data(e: Entry) -> dict[str, Any]:
    """One episode-arm for the drill-down: its outcome and every turn as logged and scored."""
    score = e.scored.score
    turns = []
    for t in e.run.turns:
        turns.append(
            {
                "i": t.index,
                "label": t.label,
                "step": t.step,
                "wo": t.work_order,
                "redo": t.explicit_redo,
                "user": t.user,
                "matched": None if t.matched is None else t.matched.step,
                "directive": t.directive,
                "askBack": t.ask_back,
                "replies": t.replies,
                "bookings": [
                    {
                        "ref": b.tool if b.tool is not None else b.code,
                        "wo": b.work_order,
                        "decision": b.decision,
                        "reason": None if b.reason is None else str(b.reason),
                        "step": b.step,
                        "redisplay": b.redisplay,
                    }
                    for b in t.bookings
                ],
                "executions": None
                if t.executions is None
                else [f"{x.tool} {x.work_order}" for x in t.executions],
                "notices": t.notices,
                "corruptions": t.corruptions,
                "errors": score.primary.errors.get(t.index, []),
                "daErrors": score.decline_aware.errors.get(t.index, []),
            }
        )
    return {
        "id": f"{e.scored.key[0]} / {e.scored.key[1]}",
        "config": e.scored.config,
        "cell": cell_name(e.scored.cell),
        "seed": e.scored.seed,
        "arm": score.arm,
        "strict": score.primary.strict,
        "da": score.decline_aware.strict,
        "channels": dict(+score.primary.channels),
        "turns": turns,
    }


def _script_json(data: object) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` appear raw."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _figures_html(report: Report, figs: Mapping[str, Any] | None) -> str:
    try:
        from taskgate.lab.reporting.figures import (
            STYLE,
            matplotlib_module,
            not_drawn,
            styled_figures,
        )

        figs = styled_figures(report) if figs is None else figs
    except MissingExtraError as exc:
        return f'<p class="note">{html.escape(str(exc))}</p>'
    parts = []
    for name, fig in figs.items():
        buf = io.BytesIO()
        with matplotlib_module().rc_context(STYLE):
            fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
        src = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
        title = fig.axes[0].get_title() if fig.axes else name
        parts.append(
            f'<figure id="figure-{name}"><img alt="{html.escape(name)}: {html.escape(title)}" '
            f'src="{src}"><figcaption>{html.escape(title)}</figcaption></figure>'
        )
    for name, why in not_drawn(report).items():
        parts.append(
            f'<p class="note not-drawn">Not drawn: {html.escape(name)}: {html.escape(why)}.</p>'
        )
    return "".join(parts)


_CITE = (
    "The state-coupling ladder of Chenyu Zhang, Wonbin Kweon and Jiawei Han, <cite>How Strongly "
    "Should Task State Influence an LLM Agent?</cite>."
)


def _configuration(run_dir: Path) -> str:
    """A run directory's configuration from its card, and when it was made."""
    card = load_card(run_dir)
    if card is None:
        return "no run card: its configuration was not recorded"
    made = datetime.fromtimestamp((run_dir / CARD).stat().st_mtime, tz=UTC)
    return f"{describe(card)}; card written {made:%Y-%m-%d %H:%M} UTC"


def render_html(report: Report, figs: Mapping[str, Any] | None = None) -> str:
    """The whole page as a string (``figs``: the report's figures, when already drawn)."""
    runs = report.runs
    n_fail = sum(not e.scored.score.primary.strict for e in runs.entries)
    summary = (
        f"{len(runs.entries)} episode-arms ({n_fail} not strictly successful) from "
        f"{len(runs.dirs)} run director{'y' if len(runs.dirs) == 1 else 'ies'}; "
        f"configurations: {'; '.join(runs.configs)}; arms: {', '.join(report.arms)}"
    )
    dirs = "".join(
        f"<li><code>{html.escape(str(d))}</code>: {html.escape(_configuration(d))}</li>"
        for d in runs.dirs
    )
    tables = "".join(t.html() for t in report.tables) + "".join(
        f'<p class="note not-built">Not built: {html.escape(name)}: {html.escape(why)}.</p>'
        for name, why in not_built(report.rows).items()
    )
    nav = "".join(
        f'<a href="#table-{html.escape(t.key)}">{html.escape(t.key)}</a> ' for t in report.tables
    )
    data = _script_json([episode_data(e) for e in runs.entries])
    style = (_ASSETS / "report.css").read_text(encoding="utf-8")
    script = (_ASSETS / "report.js").read_text(encoding="utf-8")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>taskgate report</title>
<style>{style}</style>
</head>
<body>
<header>
<h1>taskgate report</h1>
<p id="summary">{html.escape(summary)}</p>
<p id="cite">{_CITE} Run and scored by taskgate {html.escape(__version__)}. Hover over a column's name for what it counts.</p>
<ul class="dirs">{dirs}</ul>
<nav>Tables: {nav}<a href="#figures">figures</a> <a href="#episodes">episodes</a></nav>
</header>
<main>
<section id="tables"><h2>Tables</h2>{tables}</section>
<section id="figures"><h2>Figures</h2>{_figures_html(report, figs)}</section>
<section id="episodes">
<h2>Episodes</h2>
<p class="note">Each episode-arm as logged: open one to read its turns, with each turn's label,
directive, bookings and verdicts, and the errors the scorer found (primary scoring; decline-aware
in brackets where it differs).</p>
<div class="filters">
<label>arm <select id="filter-arm"><option value="">all</option></select></label>
<label><input type="checkbox" id="filter-failed"> not strictly successful only</label>
<label>search <input type="search" id="filter-text" placeholder="episode id or text"></label>
<span id="shown"></span>
</div>
<div id="episode-list"></div>
</section>
</main>
<footer>taskgate {html.escape(__version__)}</footer>
<script id="episodes-data" type="application/json">{data}</script>
<script>{script}</script>
</body>
</html>
"""


def write_html(report: Report, path: Path, figs: Mapping[str, Any] | None = None) -> None:
    path.write_text(render_html(report, figs), encoding="utf-8")
