"""The real-tool harness's workspace (Appendix G): the 18 procurement tools, with side effects.

Each tool of the procurement domain (the pool's template slugs: ``collect_requirements``,
``draft_rfq``, ...) writes to its own artifact in a per-episode folder. Every execution appends one
block stamped ``== EXECUTION #W1234 ==``, so the artifact is the receipt: scoring reads the
workspace, and a second stamped block is an observed re-execution. A block is written whole, in one
append, after its arguments are checked, so no tool executes half-way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from taskgate.errors import UsageError, WorkspaceError
from taskgate.lab.episodes.pools import POOLS

#: the harness's tools, one per procurement step template (the paper's 18 names)
TOOLS: tuple[str, ...] = tuple(t.slug for t in POOLS["procurement"])
STAMP = "== EXECUTION {work_order} =="
_STAMP_LINE = re.compile(r"^== EXECUTION (#W[0-9]+) ==$", re.MULTILINE)


class Workspace:
    """A folder of artifacts, one per tool; created on first use, and checked writable."""

    def __init__(self, root: Path) -> None:
        self.root = root
        try:
            root.mkdir(parents=True, exist_ok=True)
            probe = root / ".taskgate-write-check"
            probe.write_text("ok", encoding="utf-8")
            probe.unlink()
        except OSError as exc:
            raise WorkspaceError(
                f"the workspace {root} is not writable: {exc.strerror or exc}"
            ) from None

    def artifact(self, tool: str) -> Path:
        if tool not in TOOLS:
            raise UsageError(f"unknown tool {tool!r}; the harness has: {', '.join(TOOLS)}")
        return self.root / f"{tool}.md"

    def execute(self, tool: str, work_order: str, arguments: Mapping[str, Any]) -> str:
        """Carry out ``tool`` under ``work_order``: append its stamped block; the tool's result."""
        path = self.artifact(tool)
        try:
            body = json.dumps(dict(arguments), sort_keys=True)  # ASCII: any string is writable
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{tool}: arguments are not JSON ({exc})") from None
        block = f"{STAMP.format(work_order=work_order)}\n{body}\n\n"
        try:
            with path.open("a", encoding="utf-8") as f:
                f.write(block)
        except OSError as exc:
            raise WorkspaceError(f"{tool}: cannot write {path}: {exc.strerror or exc}") from None
        return f"{tool}: done under {work_order} ({path.name} updated)"

    def executions(self, tool: str) -> list[str]:
        """The work orders stamped in ``tool``'s artifact, in order (empty: never executed)."""
        path = self.artifact(tool)
        if not path.exists():
            return []
        return _STAMP_LINE.findall(path.read_text(encoding="utf-8"))

    def receipts(self) -> dict[str, list[str]]:
        """Every executed tool's stamped work orders."""
        return {t: wos for t in TOOLS if (wos := self.executions(t))}
