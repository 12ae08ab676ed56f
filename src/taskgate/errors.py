"""The exceptions taskgate raises.

Every error taskgate raises on purpose derives from one root, so a caller can catch them all::

    TaskgateError
    ├── PlanError            a plan or revision that cannot be applied (graph left unchanged)
    │   ├── UnknownStepError     names a step the plan does not have
    │   ├── CycleError           would close a prerequisite cycle
    │   └── BriefError           a brief or revision message the parser cannot read
    ├── BookingError         a completion code or work order that is malformed
    │   └── WorkOrderError       a work order that is malformed or already issued
    ├── LedgerFormatError    a serialized ledger line that is not a valid entry
    ├── UnknownNameError     a component name (arm, agent, compiler, matcher) nobody registered
    ├── UsageError           a value or call the API cannot accept (a run setting out of range,
    │                        paired outcomes of unequal length, a scripted role outside a run)
    ├── GeneratorError       episode parameters or a rewrite cache the generator cannot use
    ├── LogFormatError       an input file (run log, episodes, tasks, database) unreadable
    │                        or malformed
    ├── RulesetError         a tau2 ruleset that is malformed or names unknown tools or facts
    ├── MissingExtraError    an optional extra that is not installed (the message names it)
    ├── ToolRefused          a tool call the tool gate refused; the tool did not run
    ├── WorkspaceError       a tool harness workspace that cannot be written
    └── ModelError           a model endpoint that failed after its retries, or replied unusably

    ReplyFormatError (a ValueError) is a model reply that is not the JSON asked for; the model
    roles catch it and re-ask once, so it only reaches callers of ``parse_reply`` itself.
    Integrations add leaves of their own: tau2's ``MalformedArgumentsError`` (a WRITE call whose
    arguments do not fit its tool; the gate refuses such a call rather than raise it), the HTTP
    surfaces' ``HttpError`` (an OpenAI-style error answer, ``taskgate.serving``), the proxy's
    ``Conflict`` (a request that does not continue its conversation), the journal's
    ``StaleJournal`` (another replica wrote first) and the MCP gate's ``SessionMoved``.

The input errors also derive from ``ValueError``: they mean "this input was wrong", and the
message names the bad value and what was expected. ``MissingExtraError`` is an ``ImportError``,
``ModelError`` a ``RuntimeError``; ``ToolRefused`` is the gate's answer, not a fault. The command
line prints any of them as one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class TaskgateError(Exception):
    """Root of every exception taskgate raises on purpose."""


class PlanError(TaskgateError, ValueError):
    """A plan or revision is malformed or cannot be applied; nothing was changed."""


class UnknownStepError(PlanError):
    """A plan, revision or request names a step that is not in the plan."""

    def __init__(self, step: str, where: str, known: Sequence[str]) -> None:
        self.step = step
        self.where = where
        self.known = tuple(known)
        shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
        super().__init__(f"{where} names unknown step {step!r}; the plan has: {shown or '(none)'}")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable: worker processes send errors back
        return (type(self), (self.step, self.where, self.known))


class CycleError(PlanError):
    """Applying a plan or revision would close a prerequisite cycle."""

    def __init__(self, cycle: Sequence[str], where: str) -> None:
        self.cycle, self.where = tuple(cycle), where
        super().__init__(f"{where} would close a prerequisite cycle: {' -> '.join(self.cycle)}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.cycle, self.where))


class BriefError(PlanError):
    """A brief or revision message has no plan (or revision) the parser can read."""


class BookingError(TaskgateError, ValueError):
    """A completion code or work order is malformed."""


class WorkOrderError(BookingError):
    """A work order is malformed or was already issued."""


class LedgerFormatError(TaskgateError, ValueError):
    """A serialized ledger line is not a valid entry."""


class UnknownNameError(TaskgateError, ValueError):
    """A component name (arm, agent, compiler, matcher) that is not registered."""


class UsageError(TaskgateError, ValueError):
    """A value or call the API cannot accept; the message names it and what was expected."""


class GeneratorError(TaskgateError, ValueError):
    """The generator cannot build an episode from these parameters or this rewrite cache."""


class LogFormatError(TaskgateError, ValueError):
    """An input file (a run log, episodes, tasks or results file, a database) cannot be read or is
    not in the expected format; the message names the file."""


class RulesetError(TaskgateError, ValueError):
    """A tau2 ruleset is malformed, or names an unknown tool or fact."""


class MissingExtraError(TaskgateError, ImportError):
    """An optional extra is not installed; the message names the extra to install."""

    def __init__(self, extra: str, what: str, missing: str | None = None) -> None:
        self.extra, self.what, self.missing = extra, what, missing
        why = f" (no module named {missing!r})" if missing else ""
        super().__init__(
            f"{what}: the {extra!r} extra is not installed{why}: pip install 'taskgate[{extra}]'"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.extra, self.what, self.missing))


class ReplyFormatError(TaskgateError, ValueError):
    """A model's reply is not the JSON object that was asked for (the roles re-ask once)."""


class ToolRefused(TaskgateError):
    """The tool gate refused a call; the tool did not run. ``notice`` is what the agent reads,
    ``ticket`` the judged call (:class:`taskgate.Ticket`)."""

    def __init__(self, ticket: Any) -> None:
        self.ticket = ticket
        self.notice: str = ticket.notice
        super().__init__(self.notice)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.ticket,))


class ToolHeld(ToolRefused):
    """The tool gate holds a call until a person answers: it could not tell the user agreed to
    exactly this call. ``ask`` is the held call (:class:`taskgate.gate.asking.Ask`: its id, the
    exact call, and ``question``, the words to put to the person); answer it with
    ``gate.answer(held.ask.id, "approve", by=...)`` and make the call again to run it."""

    def __init__(self, ticket: Any) -> None:
        super().__init__(ticket)
        self.ask: Any = ticket.ask
        self.question: str = ticket.ask.question


class WorkspaceError(TaskgateError, ValueError):
    """A tool harness workspace that cannot be created or written; the message names it."""


class ModelError(TaskgateError, RuntimeError):
    """A model call failed after its retries, or its reply could not be used."""
