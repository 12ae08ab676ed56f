"""A deterministic compiler for briefs (and revision messages) in the structured format.

The brief's plan lines read ``- s2: text  (requires: s4)  [completion code RC-8053]``; the
generator's revision messages name steps by their quoted text. No model is involved: on a brief in
this format the parser is exact, which makes it the reference a compiled graph is measured against
when no generator graph exists.
"""

from __future__ import annotations

import re

from ..core.plan import Plan, Revision, StepSpec

_LINE = re.compile(
    r"^- (?P<id>\S+): (?P<text>.*?)(?:  \(requires: (?P<deps>[^)]*)\))?"
    r"  \[completion code (?P<code>[^\]]*)\]\s*$",
    re.MULTILINE,
)
_CANCEL = re.compile(r"CANCEL the step '(?P<text>[^']+)'")
_REWIRE = re.compile(
    r"'(?P<text>[^']+)' (?:now requires only: (?P<deps>(?:'[^']+'(?:, )?)+)|now has no prerequisites)"
)
_RELAX = re.compile(r"'(?P<w>[^']+)' no longer needs to wait for '(?P<u>[^']+)'")


def brief_steps(brief: str) -> list[tuple[str, str]]:
    """(step id, text) for each plan line of the brief, in order."""
    return [(m.group("id"), m.group("text")) for m in _LINE.finditer(brief)]


def parse_brief(brief: str) -> Plan:
    """The plan of a structured brief; raise ``ValueError`` if it has no plan lines."""
    steps = {}
    for m in _LINE.finditer(brief):
        deps = tuple(d.strip() for d in (m.group("deps") or "").split(",") if d.strip())
        steps[m.group("id")] = StepSpec(
            deps=deps, code=m.group("code").strip(), text=m.group("text")
        )
    if not steps:
        raise ValueError(
            "the brief has no plan lines of the form '- s1: ...  [completion code RC-1234]'"
        )
    return Plan(steps=steps)


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
    """The deterministic parser as a :class:`~taskgate.agents.base.Compiler`."""

    async def compile_plan(self, brief: str) -> Plan:
        return parse_brief(brief)

    async def compile_revision(self, plan: Plan, message: str) -> Revision:
        return parse_revision(plan, message)
