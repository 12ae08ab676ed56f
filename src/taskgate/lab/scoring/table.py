"""One table of a report, rendered as Markdown, LaTeX, HTML or a JSON object."""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from taskgate.lab.scoring.glossary import GLOSSARY

if TYPE_CHECKING:
    from taskgate.lab.scoring.summary import Contrast

Format = Literal["md", "latex"]

_LATEX_SPECIAL = re.compile(r"[\\&%$#_{}~^]")
_RHO = re.compile(r"\brho\b")
_EPS = re.compile(r"\beps\b")
_LATEX_REPLACE = {
    "\\": r"\textbackslash{}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (``<``, ``>``, ``|`` and ``->`` too,
    which the default font encoding prints wrong); the words rho and eps become their
    symbols."""
    out = _LATEX_SPECIAL.sub(lambda m: _LATEX_REPLACE.get(m.group(), "\\" + m.group()), text)
    out = out.replace("->", r"$\to$").replace("<", r"\textless{}").replace(">", r"\textgreater{}")
    out = out.replace("|", r"\textbar{}")
    out = _RHO.sub(r"$\\rho$", out)
    return _EPS.sub(r"$\\varepsilon$", out)


def _md_cell(text: str) -> str:
    return text.replace("|", r"\|").replace("\n", " ")


Cell = tuple[int, int]  # (row of the body, column)
_LEAD = re.compile(r"\d+(?:\.\d+)?")


def _lead(text: str) -> tuple[str, str]:
    """A cell's leading number and the rest (``("", text)`` when it starts with none)."""
    m = _LEAD.match(text)
    return (m.group(), text[m.end() :]) if m else ("", text)


def best_cells(body: Sequence[Sequence[str]], groups: Iterable[Iterable[Cell]]) -> frozenset[Cell]:
    """In each group of cells, those whose leading number is the group's largest as printed
    (ties at the printed precision are all best, as the paper bolds them). A group whose largest
    is 0 has no best: nothing succeeded, and no rung is bolded for it."""
    out: set[Cell] = set()
    for group in groups:
        printed = {c: _lead(body[c[0]][c[1]])[0] for c in group}
        values = {c: float(v) for c, v in printed.items() if v}
        if values and (top := max(values.values())) > 0:
            out.update(c for c, v in values.items() if v == top)
    return frozenset(out)


@dataclass(frozen=True)
class Table:
    """A titled grid of strings; ``key`` names it in ``--json`` and in the HTML report."""

    key: str
    title: str
    header: tuple[str, ...]
    body: tuple[tuple[str, ...], ...]
    note: str = ""  # said before the table: what it counts
    footnote: str = ""  # said under it: its Holm family, the contrasts that survive
    bold: frozenset[Cell] = frozenset()  # the best cells, as the caption says ("best rung ...")
    #: the paired tests it prints, each with the Holm p of this table's own family (JSON objects)
    contrasts: tuple[dict[str, object], ...] = ()

    @classmethod
    def of(
        cls,
        key: str,
        title: str,
        header: Sequence[str],
        body: Sequence[Sequence[str]],
        note: str = "",
        footnote: str = "",
    ) -> Table:
        return cls(key, title, tuple(header), tuple(tuple(r) for r in body), note, footnote)

    def __bool__(self) -> bool:
        return bool(self.body)

    def with_contrasts(self, contrasts: Iterable[Contrast]) -> Table:
        """This table with the paired tests it prints, each with its own family's Holm p."""
        rows = tuple(dataclasses.asdict(c) for c in contrasts)
        return dataclasses.replace(self, contrasts=self.contrasts + rows)

    def with_best(self, groups: Iterable[Iterable[Cell]]) -> Table:
        """This table with the best cell of each group in bold (see :func:`best_cells`)."""
        return dataclasses.replace(self, bold=self.bold | best_cells(self.body, groups))

    def _marked(self, wrap: str, escape: Callable[[str], str]) -> list[list[str]]:
        """The body's cells escaped, the leading number of each bold one wrapped (``{}`` in
        ``wrap`` stands for it)."""
        out = []
        for i, row in enumerate(self.body):
            line = []
            for j, cell in enumerate(row):
                lead, rest = _lead(cell)
                bold = (i, j) in self.bold and lead
                line.append(wrap.format(escape(lead)) + escape(rest) if bold else escape(cell))
            out.append(line)
        return out

    def render(self, fmt: Format) -> str:
        if fmt == "md":
            lines = ["| " + " | ".join(map(_md_cell, self.header)) + " |"]
            lines.append("|" + "---|" * len(self.header))
            lines += ["| " + " | ".join(r) + " |" for r in self._marked("**{}**", _md_cell)]
            return "\n".join(lines)
        esc = [
            [latex_escape(c) for c in self.header],
            *self._marked(r"\textbf{{{}}}", latex_escape),
        ]
        cols = "l" + "c" * (len(self.header) - 1)
        lines = [rf"\begin{{tabular}}{{{cols}}}", r"\toprule", " & ".join(esc[0]) + r" \\"]
        lines.append(r"\midrule")
        lines += [" & ".join(r) + r" \\" for r in esc[1:]]
        lines += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(lines)

    def html(self) -> str:
        head = "".join(
            f'<th title="{html.escape(GLOSSARY[h])}">{html.escape(h)}</th>'
            if h in GLOSSARY
            else f"<th>{html.escape(h)}</th>"
            for h in self.header
        )
        rows = "".join(
            "<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
            for r in self._marked("<strong>{}</strong>", html.escape)
        )
        note = f'<p class="note">{html.escape(self.note)}</p>' if self.note else ""
        foot = f'<p class="note footnote">{html.escape(self.footnote)}</p>' if self.footnote else ""
        return (
            f'<section class="table" id="table-{html.escape(self.key)}">'
            f"<h3>{html.escape(self.title)}</h3>{note}"
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{foot}</section>"
        )

    def as_json(self) -> dict[str, object]:
        return {
            "title": self.title,
            "note": self.note,
            "footnote": self.footnote,
            "header": list(self.header),
            "rows": [dict(zip(self.header, r, strict=True)) for r in self.body],
            "bold": [{"row": i, "column": self.header[j]} for i, j in sorted(self.bold)],
        }
