"""What an ordinary agent (and its user) reads when the gate refuses a native tool call: plain
words naming the tool and the step, with nothing of the paper's protocol (no booking, ACTION or
work-order vocabulary). The text protocol keeps the paper's notices
(:func:`taskgate.render_rejection`), byte for byte.

    draft_rfq was not run: it needs 'collect the requirements' done first.
"""

from __future__ import annotations

from taskgate.core.booking import Booking
from taskgate.core.graph import TaskGraph
from taskgate.core.machine import Status, TaskMachine
from taskgate.core.verdict import Reason, Verdict
from taskgate.errors import UsageError

#: what the agent should do instead, after a refusal the state explains
_INSTEAD = " Tell the user why instead of calling it again."
#: the longest tool name or step wording quoted (a notice is a sentence, whatever it quotes)
_QUOTED = 80
#: the most missing prerequisites named (the rest are counted)
_NAMED = 3


def quoted(text: str) -> str:
    """``text`` as a notice quotes it: on one line, at most :data:`_QUOTED` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _QUOTED else flat[: _QUOTED - 3] + "..."


def why_refused(notice: str) -> str:
    """A plain notice without its advice to the agent (what a person is shown)."""
    return notice.removesuffix(_INSTEAD)


def plain_refusal(verdict: Verdict, call: Booking, graph: TaskGraph) -> str:
    """The plain-words notice for one refused tool call of a tool-bound plan: one sentence (and
    what to do instead), whatever the tool name and the steps' wording hold."""
    tool = quoted(call.tool or "") or "The call"

    def step(sid: str | None) -> str:
        """A step as the user knows it: its text, else its tool's name in words, else its id."""
        if sid is None or sid not in graph:
            return f"step {quoted(sid or '?')}"
        return f"'{quoted(graph.text(sid) or graph.tool(sid).replace('_', ' ') or sid)}'"

    match verdict.reason:
        case Reason.BLOCKED:
            named = [step(m) for m in verdict.missing[:_NAMED]]
            more = len(verdict.missing) - len(named)
            needs = " and ".join(named + ([f"{more} more step(s)"] if more > 0 else []))
            return (
                f"{tool} was not run: it needs {needs or 'an earlier step'} done first.{_INSTEAD}"
            )
        case Reason.CANCELLED:
            return f"{tool} was not run: {step(verdict.step)} was cancelled.{_INSTEAD}"
        case Reason.ALREADY_DONE:
            return (
                f"{tool} was not run: {step(verdict.step)} is already done; it is done again only "
                f"when the user asks for that.{_INSTEAD}"
            )
        case Reason.NOT_REQUESTED:
            return f"{tool} was not run: the user has not asked for {step(verdict.step)} now."
        case Reason.NO_RESOLVED_STEP:
            return f"{tool} was not run: the user's last message asks for none of the task's steps."
        case Reason.IN_PROGRESS:
            return (
                f"{tool} was not run: {step(verdict.step)} is already being done by another call."
            )
        case Reason.UNKNOWN_TOOL | Reason.UNKNOWN_CODE:
            return f"{tool} was not run: it is not one of this task's tools."
        case Reason.MALFORMED_CALL:
            return "The call was not run: its tool name or arguments could not be read."
        case Reason.STALE_WORK_ORDER | Reason.REPEATED_RECEIPT:
            return f"{tool} was not run: it belongs to an earlier request, which is finished."
        case Reason.UNKNOWN_WORK_ORDER:
            return f"{tool} was not run: it does not belong to the user's current request."
        case Reason.NO_REQUEST:
            return f"{tool} was not run: there is no request from the user to act on yet."
        case Reason.UNCONFIRMED | Reason.ASKED:
            return f"{tool} was not run: it needs the user's yes to exactly this call first."
        case None:
            raise UsageError("an admitted call has no refusal notice")


#: the plain checklist's first line (the paper's is :data:`taskgate.protocol.render.CHECKLIST_HEADER`)
PLAIN_HEADER = "Task steps, as the gate recorded them from the tools' results:"


#: a step's status in plain words (a blocked one says what it waits for)
_PLAIN_STATUS = {Status.TODO: "ready", Status.DONE: "done", Status.CANCELLED: "cancelled"}


def plain_checklist(machine: TaskMachine) -> str:
    """The task's state in plain words, for an engineer's surfaces and their operators (the
    paper's checklist, with its booking vocabulary, is the lab's: ``render_checklist``). Steps
    are named as refusals name them (their text, else their tool's name in words)."""
    graph = machine.graph

    def called(step: str) -> str:
        tool = graph.tool(step) if graph.binding == "tool" else None
        return quoted(graph.text(step) or (tool or step).replace("_", " "))

    lines = [PLAIN_HEADER]
    for step in machine.steps:
        status = machine.status(step)
        if status is Status.BLOCKED:
            missing = machine.missing(step)
            gone = [m for m in missing if machine.status(m) is Status.CANCELLED]
            waits = ", ".join(f"'{called(m)}'" for m in missing)
            state = (f"blocked: '{called(gone[0])}' was cancelled" if gone
                     else f"waiting for {waits}")  # fmt: skip
        else:
            state = _PLAIN_STATUS[status]
        lines.append(f"- {step} ('{called(step)}'): {state}")
    return "\n".join(lines)
