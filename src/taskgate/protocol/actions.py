"""Reading the agent's tool calls: ``ACTION {...}`` lines (the TOOLS clause), and native calls.

A reply may carry any number of ACTION lines; each is one call. A line is an ACTION line when,
stripped of spaces and Markdown emphasis, it starts with ``ACTION`` followed by a JSON object. A
call whose JSON cannot be read, whose ``tool`` is not a string, or whose ``work_order`` is missing
is still returned, with ``problem`` saying what is wrong: the dispatcher refuses it (nothing is
executed) and tells the agent why. Parsing is one pass over the reply, linear in its length.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from taskgate.core.ids import normalize_tool, normalize_work_order

_PREFIX = "ACTION"
#: the first line of the user-role message that answers a hop's ACTION lines
RESULTS_HEADER = "[TOOL RESULTS]"
_MAX_LINE = 20_000  # an ACTION line longer than this is not read (its call is malformed)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the agent asked for: the tool, the work order it carries, its other arguments.

    ``span`` locates an ACTION line in its reply; ``call_id`` is a native call's id (its answer
    must carry it). ``problem`` is set when the call could not be read.
    """

    tool: str
    work_order: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    span: tuple[int, int] = (0, 0)
    call_id: str = ""
    problem: str = ""

    @property
    def line(self) -> str:
        """The call as the TOOLS clause writes it."""
        return f'ACTION {{"tool": "{self.tool}", "work_order": "{self.work_order}"}}'


def parse_actions(reply: str) -> list[ToolCall]:
    """Every ACTION line of ``reply``, in order."""
    calls: list[ToolCall] = []
    start = 0
    for line in reply.splitlines(keepends=True):
        end = start + len(line)
        body = _action_body(line)
        if body is not None:
            calls.append(_read(body, (start, start + len(line.rstrip("\r\n")))))
        start = end
    return calls


def _action_body(line: str) -> str | None:
    text = line.strip().strip("*_`").strip()
    if not text.startswith(_PREFIX):
        return None
    rest = text[len(_PREFIX) :].lstrip(" :\t")
    return rest if rest.startswith("{") else None


def _read(body: str, span: tuple[int, int]) -> ToolCall:
    if len(body) > _MAX_LINE:
        return ToolCall("", "", span=span, problem="the ACTION line is too long to read")
    try:
        obj, _ = json.JSONDecoder().raw_decode(body)
    except (ValueError, RecursionError):  # not JSON, or an integer past Python's digit limit
        return ToolCall("", "", span=span, problem="the ACTION line is not a JSON object")
    if not isinstance(obj, dict):
        return ToolCall("", "", span=span, problem="the ACTION line is not a JSON object")
    return from_arguments(obj.get("tool"), obj, span=span)


def from_arguments(
    name: object, arguments: object, *, span: tuple[int, int] = (0, 0), call_id: str = ""
) -> ToolCall:
    """A call from a tool name and its arguments object (an ACTION line's, or a native call's)."""
    if not isinstance(arguments, Mapping):
        return ToolCall(
            str(name or ""),
            "",
            span=span,
            call_id=call_id,
            problem="its arguments are not an object",
        )
    args = {str(k): v for k, v in arguments.items() if k not in ("tool", "work_order")}
    tool = normalize_tool(name) if isinstance(name, str) else None
    wo_raw = arguments.get("work_order")
    wo = normalize_work_order(wo_raw) if isinstance(wo_raw, str) else None
    problem = ""
    if tool is None:
        problem = "it names no tool"
    elif wo is None:
        problem = "it carries no work order (#W<digits>)"
    return ToolCall(
        tool or (name if isinstance(name, str) else ""),
        wo or (wo_raw if isinstance(wo_raw, str) else ""),
        args,
        span,
        call_id,
        problem,
    )
