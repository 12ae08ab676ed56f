"""The ladder table and the per-channel table, in Markdown and LaTeX."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..arms.registry import get_arm
from ..core.verdict import Policy
from ..episodes.models import STEP_LABELS
from ..matching.evaluation import Agreement, probe_order
from .scorer import CHANNELS, DIRECTIVE_TYPES
from .stats import wilson
from .summary import CellKey, Contrast, Row

Format = Literal["md", "latex"]
CHANNEL_TITLES = {
    "re_execution": "Re-exec",
    "superseded": "Superseded",
    "premature": "Premature",
    "omission": "Omission",
    "refused_redo": "Refused redo",
    "unrequested": "Unreq. (count)",
}


def _cell_name(cell: CellKey) -> str:
    name = f"S={cell[0]}, rho={cell[1]:g}"
    return name + (f", eps={cell[2]:g}" if cell[2] else "")


def _table(header: Sequence[str], body: Sequence[Sequence[str]], fmt: Format) -> str:
    if fmt == "md":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines)
    esc = [
        [
            c.replace("_", r"\_").replace("rho", r"$\rho$").replace("eps", r"$\varepsilon$")
            for c in r
        ]
        for r in [header, *body]
    ]
    cols = "l" + "c" * (len(header) - 1)
    lines = [rf"\begin{{tabular}}{{{cols}}}", r"\toprule", " & ".join(esc[0]) + r" \\", r"\midrule"]
    lines += [" & ".join(r) + r" \\" for r in esc[1:]]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


def ladder_table(
    rows: Sequence[Row], arms: Sequence[str], fmt: Format = "md", da: bool = False
) -> str:
    """Strict (or decline-aware) episode success per arm and cell, with Wilson 95% intervals."""
    cells = sorted({(r.steps, r.density, r.corruption) for r in rows})
    by = {(r.arm, (r.steps, r.density, r.corruption)): r for r in rows}
    body = []
    for arm in arms:
        line = [arm]
        for cell in cells:
            r = by.get((arm, cell))
            if r is None:
                line.append("--")
            elif da:
                line.append(
                    f"{r.da_rate:.2f} [{r.da_ci_low:.2f}, {r.da_ci_high:.2f}] ({r.da_successes}/{r.n})"
                )
            else:
                line.append(f"{r.rate:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}] ({r.successes}/{r.n})")
        body.append(line)
    return _table(["arm", *map(_cell_name, cells)], body, fmt)


def contrast_table(contrasts: Sequence[Contrast], fmt: Format = "md") -> str:
    body = [
        [
            _cell_name(c.cell),
            f"{c.lower} -> {c.upper}",
            c.scoring,
            f"({c.only_lower}, {c.only_upper})",
            f"{c.p:.3g}",
            f"{c.p_holm:.3g}",
        ]
        for c in contrasts
    ]
    header = ["cell", "contrast", "scoring", "discordant", "exact McNemar p", "Holm p"]
    return _table(header, body, fmt)


def channel_table(rows: Sequence[Row], fmt: Format = "md") -> str:
    """Each error channel over its label denominator (unrequested as a count), per cell and arm."""
    body = []
    for r in rows:
        line = [_cell_name((r.steps, r.density, r.corruption)), r.arm, f"{r.rate:.2f}"]
        for c in CHANNELS:
            if c == "unrequested":
                line.append(str(r.channels[c]))
            else:
                rate = r.channel_rates[c]
                line.append("--" if rate is None else f"{rate:.2f}")
        line.append(f"{r.refused}")
        line.append("--" if not r.refused else f"{r.false_completions / r.refused:.2f}")
        body.append(line)
    header = [
        "cell",
        "arm",
        "strict",
        *(CHANNEL_TITLES[c] for c in CHANNELS),
        "refused",
        "false compl.",
    ]
    return _table(header, body, fmt)


def matcher_table(rows: Sequence[Row], fmt: Format = "md") -> str:
    """The matcher on the arms that use one: agreement with the scripted step, explicit-redo
    precision and recall, and ask-backs on ambiguous probes (right) and on step turns (omissions)."""
    body = []
    for r in rows:
        if r.matcher_agreement is None:
            continue
        steps = sum(n for lab, n in r.matched_labels.items() if lab in STEP_LABELS)
        asked_steps = sum(n for lab, n in r.ask_backs.items() if lab in STEP_LABELS)
        amb = r.matched_labels.get("ambiguous", 0)
        body.append(
            [
                _cell_name((r.steps, r.density, r.corruption)),
                r.arm,
                f"{r.matcher_agreement:.3f}",
                _opt(r.redo_precision),
                _opt(r.redo_recall),
                f"{r.ask_backs.get('ambiguous', 0)}/{amb}" if amb else "--",
                f"{asked_steps}/{steps}",
            ]
        )
    header = ["cell", "arm", "agreement", "redo P", "redo R", "ask-back: ambiguous", "on steps"]
    return _table(header, body, fmt) if body else ""


def obedience_table(rows: Sequence[Row], fmt: Format = "md") -> str:
    """Directive obedience per directive type (Table obedience): the share of directives the
    agent followed (attempted an ELIGIBLE or REDO step, left a BLOCKED, DONE or CANCELLED one),
    k/n with a Wilson 95% interval, per cell and arm that issues directives."""
    body = []
    for r in rows:
        if not r.directives:
            continue
        line = [_cell_name((r.steps, r.density, r.corruption)), r.arm]
        for kind in DIRECTIVE_TYPES:
            n, k = r.directives.get(kind, 0), r.obeyed.get(kind, 0)
            lo, hi = wilson(k, n)
            line.append(f"{k / n:.2f} [{lo:.2f}, {hi:.2f}] ({k}/{n})" if n else "--")
        body.append(line)
    header = ["cell", "arm", *DIRECTIVE_TYPES]
    return _table(header, body, fmt) if body else ""


def _opt(x: float | None) -> str:
    return "--" if x is None else f"{x:.2f}"


def tools_table(rows: Sequence[Row], contrasts: Sequence[Contrast], fmt: Format = "md") -> str:
    """Table rw of the paper (the real-tool harness): per cell and arm, strict success with its
    Wilson interval, the exact McNemar p against the previous rung (unadjusted, shared seeds),
    the enforcement refusals, and the error totals: premature / unrequested / re-execution /
    omission, with superseded executions and refused redos added when there are any. The first
    three count executions (a batch of three premature calls in one turn is three), omissions and
    refused redos count turns."""
    p_prev = {(c.cell, c.upper): c.p for c in contrasts if c.scoring == "primary"}
    body = []
    for r in rows:
        cell = (r.steps, r.density, r.corruption)
        ch = r.channels
        errors = (
            f"{ch['premature']} / {ch['unrequested']} / {ch['re_execution']} / {ch['omission']}"
        )
        extra = [
            f"+{n} {what}"
            for n, what in ((ch["superseded"], "superseded"), (ch["refused_redo"], "refused redos"))
            if n
        ]
        if extra:
            errors += f" ({', '.join(extra)})"
        p = p_prev.get((cell, r.arm))
        gated = get_arm(r.arm).policy is not Policy.UNGATED
        body.append(
            [
                _cell_name(cell),
                r.arm,
                f"{r.rate:.2f}",
                f"[{r.ci_low:.2f}, {r.ci_high:.2f}]",
                "--" if p is None else _p(p),
                str(r.refused) if gated else "--",
                errors,
            ]
        )
    header = [
        "cell",
        "arm",
        "strict",
        "95% CI",
        "p vs prev",
        "refused",
        "errors (prem. / unreq. / redo / omit.)",  # executions; omissions are turns
    ]
    return _table(header, body, fmt)


def _p(p: float) -> str:
    """A p value as the paper prints it: 0.61, 1.0, 0.0066, 7.6e-05."""
    text = f"{p:.2g}"
    return text if "." in text or "e" in text else f"{text}.0"


def agreement_table(results: Sequence[Agreement], fmt: Format = "md") -> str:
    """Matcher agreement with the scripted step per wording tier and label (Table 10's layout):
    k/n and rate, and the ask-backs among them; an ``overall`` row per tier over ask, premature
    and redo-probe turns (the paper's figure)."""
    body = []
    for res in results:
        for (tier, label), c in sorted(res.cells.items(), key=lambda kv: probe_order(kv[0])):
            body.append([res.matcher, tier, label, share(c.agree, c.n), str(c.ask_back)])
        for tier in sorted({t for t, _ in res.cells}):
            k, n = res.overall(tier)
            body.append([res.matcher, tier, "overall (ask, premature, redo)", share(k, n), ""])
    return _table(["matcher", "tier", "label", "agreement", "asked back"], body, fmt)


def share(k: int, n: int) -> str:
    """``k/n`` as a rate with its counts, or ``--`` when there is nothing to count."""
    return f"{k / n:.3f} ({k}/{n})" if n else "--"
