"""The ground-truth-free validator: defects of a (compiled) plan and its revision.

It reads only the plan and the revision, never a reference graph, and never raises on a defective
input: every problem comes back as a typed :class:`Defect`. The hybrid arm enforces when this list
is empty and falls back to directives otherwise (Appendix D.2 of the paper).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from taskgate.core.graph import find_cycle, step_sort_key
from taskgate.core.ids import normalize_code, normalize_tool, tool_key
from taskgate.core.plan import Plan, Revision

DefectKind = Literal[
    "empty-code",
    "malformed-code",
    "duplicate-code",
    "empty-tool",
    "malformed-tool",
    "duplicate-tool",
    "unknown-prerequisite",
    "unknown-revision-step",
    "cancelled-prerequisite",
    "cycle",
]


@dataclass(frozen=True, slots=True)
class Defect:
    """One defect: its kind, the steps involved, and a sentence a person can read."""

    kind: DefectKind
    steps: tuple[str, ...]
    detail: str


def validate(plan: Plan, revision: Revision | None = None) -> list[Defect]:
    """Every defect of ``plan`` as revised by ``revision``; an empty list means it passes."""
    out: list[Defect] = []
    known = set(plan.steps)
    out.extend(_key_defects(plan))
    prereqs = {sid: set(spec.deps) for sid, spec in plan.steps.items()}
    cancelled: str | None = None
    if revision is not None:
        cancelled, bad = _apply_leniently(prereqs, revision, known)
        out.extend(bad)

    for sid in plan.steps:
        for u in sorted(prereqs[sid], key=step_sort_key):
            if u not in known:
                out.append(Defect("unknown-prerequisite", (sid, u), f"{sid} requires unknown {u}"))
            elif u == cancelled:
                out.append(
                    Defect(
                        "cancelled-prerequisite", (sid, u), f"{sid} still requires cancelled {u}"
                    )
                )
    cycle = find_cycle({s: ps & known for s, ps in prereqs.items()})
    if cycle:
        out.append(Defect("cycle", cycle, "dependency cycle " + " -> ".join(cycle)))
    return out


def _apply_leniently(
    prereqs: dict[str, set[str]], revision: Revision, known: set[str]
) -> tuple[str | None, list[Defect]]:
    bad: list[Defect] = []

    def check(step: str, role: str) -> bool:
        if step in known:
            return True
        bad.append(Defect("unknown-revision-step", (step,), f"the revision's {role} names {step}"))
        return False

    cancelled = revision.cancel if revision.cancel and check(revision.cancel, "cancel") else None
    for w, ps in revision.rewires.items():
        if check(w, "rewire"):
            prereqs[w] = set(ps)
    if revision.relax is not None:
        w, u = revision.relax
        if check(w, "relax"):
            prereqs[w].discard(u)
    return cancelled, bad


def _key_defects(plan: Plan) -> list[Defect]:
    """Empty, malformed and duplicate completion codes (or tools, in a tool-bound plan)."""
    tools = plan.binding == "tool"
    what, norm = ("tool", normalize_tool) if tools else ("completion code", normalize_code)
    kind = "tool" if tools else "code"
    out: list[Defect] = []
    owners: dict[str, list[str]] = {}
    for sid in plan.steps:
        raw = plan.key(sid)
        if not raw.strip():
            out.append(Defect(f"empty-{kind}", (sid,), f"step {sid} has an empty {what}"))  # type: ignore[arg-type]
            continue
        key = norm(raw)
        if key is None:
            detail = f"step {sid} has {what} {raw!r}"
            if not tools and any(c.isdigit() and not c.isascii() for c in raw):
                detail += " (only ASCII digits 0-9 make a completion code)"
            out.append(Defect(f"malformed-{kind}", (sid,), detail))  # type: ignore[arg-type]
            continue
        owners.setdefault(tool_key(key) if tools else key, []).append(sid)
    for key, sids in owners.items():
        if len(sids) > 1:
            names = sorted({plan.key(s).strip() for s in sids}) if tools else [key]
            given = ", ".join(sids)
            detail = (
                f"{' and '.join(names)} name one tool: {given}"
                if len(names) > 1
                else f"{names[0]} is given to {given}"
            )
            out.append(Defect(f"duplicate-{kind}", tuple(sids), detail))  # type: ignore[arg-type]
    return out
