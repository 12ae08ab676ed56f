"""A deterministic compiler for briefs (and revision messages) in the structured format.

The brief's plan lines read ``- s2: text  (requires: s4)  [completion code RC-8053]``; the
generator's revision messages name steps by their quoted text. No model is involved: on a brief in
this format the parser is exact, which makes it the reference a compiled graph is measured against
when no generator graph exists.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from taskgate.core.plan import Plan, Revision, StepSpec
from taskgate.errors import BriefError

_CODE_SEP = "  [completion code "
_TOOL_SEP = "  [tool: "
_REQUIRES = "  (requires: "

_CANCEL = re.compile(r"CANCEL the step '(?P<text>[^']+)'")
_REWIRE = re.compile(
    r"'(?P<text>[^']+)' (?:now requires only: (?P<deps>(?:'[^']+'(?:, )?)+)|now has no prerequisites)"
)
_RELAX = re.compile(r"'(?P<w>[^']+)' no longer needs to wait for '(?P<u>[^']+)'")


class _PlanLine(NamedTuple):
    sid: str
    text: str
    deps: tuple[str, ...]
    code: str
    tool: str | None  # set on a tool-bound plan's line, ``[tool: <name>]``


def _plan_line(line: str) -> _PlanLine | None:
    """One plan line, read from both ends with no backtracking (linear in its length)."""
    line = line.rstrip()
    if not line.startswith("- ") or not line.endswith("]"):
        return None
    tool: str | None = None
    head, sep, code = line[:-1].rpartition(_CODE_SEP)
    if not sep:
        head, sep, tool = line[:-1].rpartition(_TOOL_SEP)
        code, tool = "", tool.strip()
    sid, colon, text = head[2:].partition(": ")
    if not sep or not colon or not sid or any(c.isspace() for c in sid):
        return None
    deps: tuple[str, ...] = ()
    if text.endswith(")") and _REQUIRES in text:
        text, _, listed = text[:-1].rpartition(_REQUIRES)
        deps = tuple(d.strip() for d in listed.split(",") if d.strip())
    return _PlanLine(sid, text, deps, code.strip(), tool)


def _plan_lines(brief: str) -> list[_PlanLine]:
    return [pl for pl in map(_plan_line, brief.splitlines()) if pl is not None]


def brief_steps(brief: str) -> list[tuple[str, str]]:
    """(step id, text) for each plan line of the brief, in order."""
    return [(pl.sid, pl.text) for pl in _plan_lines(brief)]


def parse_brief(brief: str) -> Plan:
    """The plan of a structured brief; raise :class:`BriefError` if it has no plan lines.

    Lines ending ``[tool: <name>]`` make a tool-bound plan; a brief may not mix the two kinds.
    """
    lines = _plan_lines(brief)
    if not lines:
        raise BriefError(
            "the brief has no plan lines of the form '- s1: ...  [completion code RC-1234]' "
            "or '- s1: ...  [tool: name]'"
        )
    kinds = {pl.tool is not None for pl in lines}
    if len(kinds) > 1:
        raise BriefError("the brief mixes completion codes and tools; a plan binds steps to one")
    steps = {
        pl.sid: StepSpec(deps=pl.deps, code=pl.code, tool=pl.tool or "", text=pl.text)
        for pl in lines
    }
    return Plan(binding="tool" if True in kinds else "code", steps=steps)


def parse_revision(plan: Plan, message: str) -> Revision:
    """The revision a structured revision message states (steps named by their brief text)."""
    by_text = {spec.text: sid for sid, spec in plan.steps.items()}

    def sid(text: str) -> str:
        return by_text.get(text, text)

    cancel = _CANCEL.search(message)
    rewires = {
        sid(m.group("text")): tuple(sid(t) for t in re.findall(r"'([^']+)'", m.group("deps") or ""))
        for m in _REWIRE.finditer(message)
    }
    relax = _RELAX.search(message)
    return Revision(
        cancel=sid(cancel.group("text")) if cancel else None,
        rewires=rewires,
        relax=(sid(relax.group("w")), sid(relax.group("u"))) if relax else None,
    )


class ParserCompiler:
    """The deterministic parser as a :class:`~taskgate.roles.Compiler`."""

    async def compile_plan(self, brief: str) -> Plan:
        return parse_brief(brief)

    async def compile_revision(self, plan: Plan, message: str) -> Revision:
        return parse_revision(plan, message)
