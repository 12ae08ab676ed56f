"""One table of a report, rendered as Markdown, LaTeX, HTML or a JSON object."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from taskgate.lab.scoring.glossary import GLOSSARY

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


@dataclass(frozen=True)
class Table:
    """A titled grid of strings; ``key`` names it in ``--json`` and in the HTML report."""

    key: str
    title: str
    header: tuple[str, ...]
    body: tuple[tuple[str, ...], ...]
    note: str = ""  # said before the table: what it counts
    footnote: str = ""  # said under it: its Holm family, the contrasts that survive

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

    def render(self, fmt: Format) -> str:
        if fmt == "md":
            lines = ["| " + " | ".join(map(_md_cell, self.header)) + " |"]
            lines.append("|" + "---|" * len(self.header))
            lines += ["| " + " | ".join(map(_md_cell, r)) + " |" for r in self.body]
            return "\n".join(lines)
        esc = [[latex_escape(c) for c in r] for r in (self.header, *self.body)]
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
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in self.body
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
        }
