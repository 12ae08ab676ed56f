"""What the proxy installs as a conversation's plan, compiled from its brief: never more than the
brief's budget, never a plan the gate could not enforce, never less than the brief's own plan
lines say (see :func:`installable`). Pure functions of the brief and the compiled plan."""

from __future__ import annotations

from collections.abc import Sequence

from taskgate.core.ids import normalize_code, normalize_tool
from taskgate.core.plan import Plan
from taskgate.core.validator import validate
from taskgate.errors import TaskgateError
from taskgate.protocol.briefparse import brief_steps, parse_brief
from taskgate.serving.errors import HttpError

#: one conversation's brief, at most (a tenant's brief costs the gate CPU on every request)
MAX_BRIEF_STEPS = 500
MAX_BRIEF_CHARS = 256 * 1024


def bounded(brief: str) -> None:
    """A 413 for a brief over :data:`MAX_BRIEF_CHARS` characters or :data:`MAX_BRIEF_STEPS`
    steps, before anything compiles it."""
    if len(brief) > MAX_BRIEF_CHARS:
        raise HttpError(413, f"the brief is over {MAX_BRIEF_CHARS} characters")
    steps = len(brief_steps(brief))
    if steps > MAX_BRIEF_STEPS:
        raise HttpError(
            413, f"the brief has {steps} steps; the proxy gates at most {MAX_BRIEF_STEPS}"
        )


def uncovered(plan: Plan, brief: str) -> list[str]:
    """What a compiled plan leaves out of the brief's own plan lines: a step, its tool or
    completion code, a prerequisite (each would let a call run that the brief's plan refuses:
    a tool left unbound passes, a prerequisite lost unblocks its step). Extra prerequisites
    only hold steps back, and stand."""
    try:
        stated = parse_brief(brief)
    except TaskgateError:  # plan lines of both kinds: the validator speaks for the plan
        return []
    if stated.binding != plan.binding:
        return [f"the brief binds its steps to {stated.binding}s, the compiled plan to "
                f"{plan.binding}s"]  # fmt: skip
    norm = normalize_tool if plan.binding == "tool" else normalize_code
    out = []
    for sid, spec in stated.steps.items():
        got = plan.steps.get(sid)
        if got is None:
            out.append(f"the compiled plan leaves out step {sid}")
            continue
        if stated.key(sid) and norm(plan.key(sid)) != norm(stated.key(sid)):
            out.append(f"step {sid} is bound to {plan.key(sid)!r}, the brief says "
                       f"{stated.key(sid)!r}")  # fmt: skip
        lost = sorted(set(spec.deps) - set(got.deps))
        if lost:
            out.append(f"step {sid} lost its prerequisites {', '.join(lost)}")
    return out[:5]


def installable(plan: Plan, problems: Sequence[str] = (), left_out: Sequence[str] = ()) -> Plan:
    """``plan`` when the gate can enforce it, else a 422 naming why: a compiler reply still
    unusable after its re-ask (``problems``), one that leaves out what the brief's plan lines
    say (``left_out``, :func:`uncovered`), or a plan the validator finds defects in (a step with
    no tool or no completion code, an unknown prerequisite, a cycle). Never a fallback: a plan
    whose steps bind nothing would let every call pass as one no step is bound to."""
    defects = [f"the compiler's reply was unusable after a re-ask ({p})" for p in problems]
    defects += left_out
    if not defects:
        defects = [d.detail for d in validate(plan)][:5]
    if defects:
        raise HttpError(422, f"the brief could not be compiled: {'; '.join(defects)}")
    return plan
