"""A mkdocs hook: the docstrings' cross-references (``:func:`~taskgate.dump_ledger```, the
Sphinx roles the code's docstrings use) become links in the API reference, resolved by
mkdocs-autorefs like any other; one it cannot resolve is shown as the name, never as the role."""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(
    r":(?:func|class|meth|mod|data|attr|exc|obj|const|py:\w+):<code>(~?)([\w.]+)(\(\))?</code>"
)


def _link(match: re.Match[str]) -> str:
    short, identifier = match.group(1), match.group(2).lstrip(".")
    title = identifier.rsplit(".", 1)[-1] if short else identifier
    return f'<autoref identifier="{identifier}" optional><code>{title}</code></autoref>'


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(_link, html)
