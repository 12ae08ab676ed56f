"""The ground-truth-free validator: defects of a (compiled) plan and its revision.

It reads only the plan and the revision, never a reference graph, and never raises on a defective
input: every problem comes back as a typed :class:`Defect`. The hybrid arm enforces when this list
is empty and falls back to directives otherwise (Appendix D.2 of the paper).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .graph import find_cycle, step_sort_key
from .ids import normalize_code
from .plan import Plan, Revision

DefectKind = Literal[
    "empty-code",
    "malformed-code",
    "duplicate-code",
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
    codes: dict[str, list[str]] = {}
    for sid, spec in plan.steps.items():
        if not spec.code.strip():
            out.append(Defect("empty-code", (sid,), f"step {sid} has an empty completion code"))
            continue
        code = normalize_code(spec.code)
        if code is None:
            detail = f"step {sid} has code {spec.code!r}"
            if any(c.isdigit() and not c.isascii() for c in spec.code):
                detail += " (only ASCII digits 0-9 make a completion code)"
            out.append(Defect("malformed-code", (sid,), detail))
            continue
        codes.setdefault(code, []).append(sid)
    for code, sids in codes.items():
        if len(sids) > 1:
            out.append(
                Defect("duplicate-code", tuple(sids), f"{code} is given to {', '.join(sids)}")
            )

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
