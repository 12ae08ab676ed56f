"""Ask-back: the clarifying question put to the user instead of a guess.

A matcher that cannot tell which step a request is about returns no step and the candidate steps
it could not tell apart (``Match.candidates``). The runtime (a testbed arm, the tool gate, the
proxy) then answers with :func:`ask_back_question`, naming the candidates by their brief wording,
and executes nothing. The wording is taskgate's own (the paper has no ask-back).
"""

from __future__ import annotations

from collections.abc import Sequence

from taskgate.core.plan import Plan


def step_wording(plan: Plan, sid: str) -> str:
    """How a step is named to the user and to the embedder: its brief text, else its tool's
    name in words, else its id."""
    spec = plan.steps[sid]
    return spec.text or spec.tool.replace("_", " ") or sid


def _listed(texts: Sequence[str]) -> str:
    quoted = [f"'{t}'" for t in texts]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def ask_back_question(plan: Plan, candidates: Sequence[str]) -> str:
    """One short question naming each candidate step, in the plan's order of ``candidates``."""
    texts = [step_wording(plan, c) for c in candidates if c in plan.steps]
    if not texts:
        return "Before I act on this: which step of the plan do you mean? Please name it."
    if len(texts) == 1:
        return (
            f"Before I act on this: do you mean {_listed(texts)}? Please confirm, and I will do "
            "that step."
        )
    return (
        f"Before I act on this: do you mean {_listed(texts)}? Please say which one, and I will do "
        "only that step."
    )
