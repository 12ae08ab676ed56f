"""The run tables: the ladder, the paired contrasts, the error channels, directive obedience, the
matcher and the tool harness's Table 19. Each builder returns a :class:`Table`; the ``*_table``
functions render one in Markdown or LaTeX.

When the rows come from several configurations (run directories of different agents, briefs or
schedules, merged by ``taskgate report``), every row and column names its configuration.
"""

from __future__ import annotations

from collections.abc import Sequence

from taskgate.core.verdict import Policy
from taskgate.lab.arms.registry import ARMS
from taskgate.lab.episodes.models import STEP_LABELS
from taskgate.lab.scoring.agreement import Agreement, probe_order
from taskgate.lab.scoring.scorer import CHANNELS, DENOMINATOR, DIRECTIVE_TYPES, TRAP_DIRECTIVES
from taskgate.lab.scoring.stats import wilson
from taskgate.lab.scoring.summary import CellKey, Contrast, Row
from taskgate.lab.scoring.table import Format, Table

CHANNEL_TITLES = {
    "re_execution": "Re-exec",
    "superseded": "Superseded",
    "premature": "Premature",
    "omission": "Omission",
    "refused_redo": "Refused redo",
    "unrequested": "Unreq. (count)",
}


def cell_name(cell: CellKey) -> str:
    name = f"S={cell[0]}, rho={cell[1]:g}"
    return name + (f", eps={cell[2]:g}" if cell[2] else "")


def where(config: str, cell: CellKey, multi: bool) -> str:
    """A cell's label, with its configuration when the rows come from several."""
    return f"{config}: {cell_name(cell)}" if multi else cell_name(cell)


def _multi(rows: Sequence[Row] | Sequence[Contrast]) -> bool:
    return len({r.config for r in rows}) > 1


def rate_ci(k: int, n: int, lo: float, hi: float) -> str:
    """``0.84 [0.76, 0.89] (107/128)``: a rate, its Wilson interval and its counts."""
    return f"{k / n:.2f} [{lo:.2f}, {hi:.2f}] ({k}/{n})"


def ladder(rows: Sequence[Row], arms: Sequence[str], da: bool = False) -> Table:
    """Strict (or decline-aware) episode success per arm and cell, with Wilson 95% intervals."""
    multi = _multi(rows)
    columns = list(dict.fromkeys((r.config, r.cell) for r in rows))
    by = {(r.arm, r.config, r.cell): r for r in rows}
    body = []
    for arm in arms:
        line = [arm]
        for config, cell in columns:
            r = by.get((arm, config, cell))
            if r is None:
                line.append("--")
            elif da:
                line.append(rate_ci(r.da_successes, r.n, r.da_ci_low, r.da_ci_high))
            else:
                line.append(rate_ci(r.successes, r.n, r.ci_low, r.ci_high))
        body.append(line)
    header = ["arm", *(where(c, cell, multi) for c, cell in columns)]
    per_column = [[(i, j) for i in range(len(body))] for j in range(1, len(header))]
    zero = bool(rows) and all((r.da_successes if da else r.successes) == 0 for r in rows)
    foot = NO_SUCCESS if zero else ""
    if da:
        title = "Decline-aware episode success (Wilson 95% CI; best rung per column in bold)"
        return Table.of("ladder_da", title, header, body, footnote=foot).with_best(per_column)
    title = "Strict episode success (Wilson 95% CI; best rung per column in bold; Tables 2 and 13)"
    return Table.of("ladder", title, header, body, footnote=foot).with_best(per_column)


#: under a success table where no episode of any rung succeeded
NO_SUCCESS = (
    "No episode of any rung succeeded, so no rung is best here: the error channels below "
    "(re-execution, premature, superseded) show where the rungs differ."
)


def contrasts(cs: Sequence[Contrast]) -> Table:
    """Table 2's contrasts: adjacent rungs on shared seeds, Holm within model (each model's
    contrasts of one scoring, both reasoning regimes together), the family named under it."""
    multi = _multi(cs)
    body = [
        [
            where(c.config, c.cell, multi),
            f"{c.lower} -> {c.upper}",
            c.scoring,
            f"({c.only_lower}, {c.only_upper})",
            f"{c.p:.3g}",
            f"{c.p_holm:.3g}",
        ]
        for c in cs
    ]
    header = ["cell", "contrast", "scoring", "discordant", "exact McNemar p", "Holm p"]
    title = "Adjacent rungs, exact McNemar on shared seeds, Holm-corrected within model (Table 2)"
    table = Table.of("contrasts", title, header, body, footnote=family_note(cs, "within model"))
    return table.with_contrasts(cs)


def family_note(cs: Sequence[Contrast], declared: str) -> str:
    """The Holm families of ``cs`` as one line: what the table declares, and each family's size."""
    if not cs:
        return ""
    sizes = dict.fromkeys((c.scoring, c.family, c.family_size) for c in cs)
    parts = [
        f"{scoring}{f' / {family}' if family else ''}: {size} contrast{'s' * (size != 1)}"
        for scoring, family, size in sizes
    ]
    return f"Holm family: {declared}, per scoring ({'; '.join(parts)})."


def channels(rows: Sequence[Row]) -> Table:
    """Each error channel as the paper's rate (Table 9, App D.2): the turns its label was
    scheduled on where it fired, over its fixed denominator, the turns the schedule gave that
    label (k/n); unrequested as a count and per 128 episodes; then, as an extra, each channel's
    errors wherever they fell (executions; omissions and refused redos are turns); refused
    bookings and the share of false completions."""
    multi = _multi(rows)
    body = []
    for r in rows:
        line = [where(r.config, r.cell, multi), r.arm, f"{r.rate:.2f}"]
        for c in CHANNELS:
            if c == "unrequested":
                line.append(str(r.channels[c]))
                line.append(f"{r.channels[c] * 128 / r.n:.1f}")
            else:
                line.append(_channel_rate(r, c))
        line.append(" / ".join(str(r.channels[c]) for c in CHANNELS if c in DENOMINATOR))
        line.append(f"{r.refused}")
        line.append("--" if not r.refused else f"{r.false_completions / r.refused:.2f}")
        body.append(line)
    titles = [CHANNEL_TITLES[c] for c in CHANNELS]
    at = CHANNELS.index("unrequested") + 1
    titles[at:at] = ["Unreq./128 ep"]
    header = ["cell", "arm", "strict", *titles, ALL_ERRORS, "refused", "false compl."]
    title = (
        "Error channels (errors on the label's turns over its scheduled turns, k/n; unrequested "
        "as a count) (Table 9)"
    )
    return Table.of("channels", title, header, body)


#: the extra column: every channel's errors wherever they fell, in the rate columns' order
ALL_ERRORS = "all errors (re-exec / superseded / premature / omission / refused redo)"


def _channel_rate(r: Row, c: str) -> str:
    """``rate (k/n)``: the scheduled turns of the channel's label on which it fired, over the
    turns the schedule gave that label (never above 1)."""
    n, k = r.label_turns.get(c, 0), r.channel_on_label.get(c, 0)
    return "--" if not n else f"{k / n:.2f} ({k}/{n})"


def matcher(rows: Sequence[Row]) -> Table:
    """The matcher on the arms that use one: agreement with the scripted step, explicit-redo
    precision and recall, and ask-backs on ambiguous probes (right) and on step turns (omissions)."""
    multi = _multi(rows)
    body = []
    for r in rows:
        if r.matcher_agreement is None:
            continue
        steps = sum(n for lab, n in r.matched_labels.items() if lab in STEP_LABELS)
        asked_steps = sum(n for lab, n in r.ask_backs.items() if lab in STEP_LABELS)
        amb = r.matched_labels.get("ambiguous", 0)
        body.append(
            [
                where(r.config, r.cell, multi),
                r.arm,
                f"{r.matcher_agreement:.3f}",
                _opt(r.redo_precision),
                _opt(r.redo_recall),
                f"{r.ask_backs.get('ambiguous', 0)}/{amb}" if amb else "--",
                f"{asked_steps}/{steps}",
            ]
        )
    header = ["cell", "arm", "agreement", "redo P", "redo R", "ask-back: ambiguous", "on steps"]
    return Table.of("matcher", "Matcher (arms that use one; Table 11's bottom)", header, body)


def obedience(rows: Sequence[Row]) -> Table:
    """Directive obedience per directive type (Table 11): the share of directives the
    agent followed (attempted an ELIGIBLE or REDO step, left a BLOCKED, DONE or CANCELLED one),
    k/n with a Wilson 95% interval, per cell and arm that issues directives, with all trap
    directives together and the episodes that obeyed every trap directive."""
    multi = _multi(rows)
    body = []
    for r in rows:
        if not r.directives:
            continue
        line = [where(r.config, r.cell, multi), r.arm]
        for kind in DIRECTIVE_TYPES:
            line.append(_obeyed(r.obeyed.get(kind, 0), r.directives.get(kind, 0)))
        traps_n = sum(r.directives.get(k, 0) for k in TRAP_DIRECTIVES)
        traps_k = sum(r.obeyed.get(k, 0) for k in TRAP_DIRECTIVES)
        line += [_obeyed(traps_k, traps_n), f"{r.traps_obeyed}/{r.n}"]
        body.append(line)
    header = ["cell", "arm", *DIRECTIVE_TYPES, "all traps", "episodes obeying every trap"]
    title = "Directive obedience per directive type (Wilson 95% CI; Table 11)"
    return Table.of("obedience", title, header, body)


def _obeyed(k: int, n: int) -> str:
    if not n:
        return "--"
    lo, hi = wilson(k, n)
    return rate_ci(k, n, lo, hi)


def _opt(x: float | None) -> str:
    return "--" if x is None else f"{x:.2f}"


def tools(rows: Sequence[Row], cs: Sequence[Contrast]) -> Table:
    """Table 19 of the paper (the real-tool harness): per cell and arm, strict success with its
    Wilson interval, the exact McNemar p against the previous rung (unadjusted, shared seeds),
    the enforcement refusals, and the error totals: premature / unrequested / re-execution /
    omission, with superseded executions and refused redos added when there are any, each as the
    caption says, turn counts (a turn with three premature calls counts once)."""
    multi = _multi(rows)
    p_prev = {(c.config, c.cell, c.upper): c.p for c in cs if c.scoring == "primary"}
    body = []
    for r in rows:
        ch = r.channel_turns
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
        p = p_prev.get((r.config, r.cell, r.arm))
        arm = ARMS.get(r.arm)
        gated = arm is not None and arm.policy is not Policy.UNGATED
        body.append(
            [
                where(r.config, r.cell, multi),
                r.arm,
                f"{r.rate:.2f}",
                f"[{r.ci_low:.2f}, {r.ci_high:.2f}]",
                "--" if p is None else p_value(p),
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
        "errors (prem. / unreq. / redo / omit.)",  # turns
    ]
    title = (
        "Tool-dispatch harness (Table 19): strict success, Wilson 95% CI, exact McNemar p "
        "against the previous rung, refusals, error totals"
    )
    return Table.of("tools", title, header, body)


def p_value(p: float) -> str:
    """A p value as the paper prints it: 0.61, 1.0, 0.0066, 7.6e-05."""
    text = f"{p:.2g}"
    return text if "." in text or "e" in text else f"{text}.0"


def agreement_table(results: Sequence[Agreement], fmt: Format = "md") -> str:
    """Matcher agreement with the scripted step per wording tier and label (Table 4's third block):
    k/n and rate, and the ask-backs among them; an ``overall`` row per tier over ask, premature
    and redo-probe turns (the paper's figure)."""
    body = []
    for res in results:
        for (tier, label), c in sorted(res.cells.items(), key=lambda kv: probe_order(kv[0])):
            body.append([res.matcher, tier, label, share(c.agree, c.n), str(c.ask_back)])
        for tier in sorted({t for t, _ in res.cells}):
            k, n = res.overall(tier)
            body.append([res.matcher, tier, "overall (ask, premature, redo)", share(k, n), ""])
    header = ["matcher", "tier", "label", "agreement", "asked back"]
    return Table.of("agreement", "Matcher agreement", header, body).render(fmt)


def share(k: int, n: int) -> str:
    """``k/n`` as a rate with its counts, or ``--`` when there is nothing to count."""
    return f"{k / n:.3f} ({k}/{n})" if n else "--"


# -- rendered: the tables as text (the ladder's and the tool harness's end-of-run output) ---------
def ladder_table(
    rows: Sequence[Row], arms: Sequence[str], fmt: Format = "md", da: bool = False
) -> str:
    return ladder(rows, arms, da).render(fmt)


def contrast_table(cs: Sequence[Contrast], fmt: Format = "md") -> str:
    return contrasts(cs).render(fmt)


def channel_table(rows: Sequence[Row], fmt: Format = "md") -> str:
    return channels(rows).render(fmt)


def matcher_table(rows: Sequence[Row], fmt: Format = "md") -> str:
    table = matcher(rows)
    return table.render(fmt) if table else ""


def obedience_table(rows: Sequence[Row], fmt: Format = "md") -> str:
    table = obedience(rows)
    return table.render(fmt) if table else ""


def tools_table(rows: Sequence[Row], cs: Sequence[Contrast], fmt: Format = "md") -> str:
    return tools(rows, cs).render(fmt)
