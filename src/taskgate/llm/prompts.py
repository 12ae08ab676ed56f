"""The matcher and compiler prompts of Appendix B.1, byte for byte, and the re-ask wording."""

from __future__ import annotations

from collections.abc import Iterable

GRAPH_PROMPT = (
    "Extract the project plan above as JSON, one entry per step:\n"
    '{"steps": {"s1": {"deps": [], "code": "RC-1234"}, ...}}\n'
    "deps = exactly the step ids in that step's 'requires:' list (empty list if none); code = that "
    "step's completion code. Include every step. JSON only, no commentary."
)

#: the harness brief's graph prompt: the paper's, asking for each step's tool instead of its code
#: (Appendix G gives no wording of its own; taskgate's)
TOOL_GRAPH_PROMPT = (
    "Extract the project plan above as JSON, one entry per step:\n"
    '{"steps": {"s1": {"deps": [], "tool": "draft_rfq"}, ...}}\n'
    "deps = exactly the step ids in that step's 'requires:' list (empty list if none); tool = that "
    "step's tool name. Include every step. JSON only, no commentary."
)

_REVISION_TAIL = (
    "Extract the update as JSON:\n"
    '{"cancel": "sX", "rewires": {"sY": ["sA", "sB"]}, "relax": ["sZ", "sD"]}\n'
    '"cancel" = the step cancelled entirely; "rewires" = for each step whose prerequisite list '
    'changed because of the cancellation, its FULL remaining prerequisite list; "relax" = '
    "[step, dropped_prerequisite] if one step separately dropped a single prerequisite, else null. "
    "JSON only."
)

_MATCHER_TAIL = (
    "Which single step (if any) is this message asking the agent to perform or asking about? "
    "Is the user EXPLICITLY authorizing re-execution of an already-completed step (redo/again with "
    "a stated reason)?\n"
    'JSON only: {"step": "sX" or null, "explicit_redo": true or false}'
)

#: taskgate's own wording (the paper says only that the model is asked once to correct it).
REASK = (
    "Your reply could not be used: {problem}. Reply again with the JSON object only, in exactly "
    "the requested form."
)


def _steps(steps: Iterable[tuple[str, str]]) -> str:
    return "\n".join(f"- {sid}: {text}" for sid, text in steps)


def tool_bound(brief: str) -> bool:
    """A brief whose plan lines carry ``[tool: <name>]`` (the harness brief)."""
    return any(ln.rstrip().endswith("]") and "  [tool: " in ln for ln in brief.splitlines())


def graph_prompt(brief: str) -> str:
    """The compiler's graph prompt, appended to the brief (the tool variant for a tool-bound
    brief)."""
    return f"{brief}\n\n{TOOL_GRAPH_PROMPT if tool_bound(brief) else GRAPH_PROMPT}"


def revision_prompt(steps: Iterable[tuple[str, str]], message: str) -> str:
    return (
        f"Known project steps:\n{_steps(steps)}\n\nPROJECT UPDATE:\n{message}\n\n{_REVISION_TAIL}"
    )


def matcher_prompt(steps: Iterable[tuple[str, str]], message: str) -> str:
    return (
        f"You route user messages for a project agent. Steps:\n{_steps(steps)}\n\n"
        f"USER MESSAGE: {message}\n\n{_MATCHER_TAIL}"
    )
