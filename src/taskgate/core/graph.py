"""The structural half of the task-state machine: steps V, prerequisites E, cancellations.

Completion (which steps are DONE) is not kept here: it is derived from the receipts ledger by
:class:`taskgate.TaskMachine`. This object only answers "what requires what" and "what was
cancelled", and applies revisions atomically: a revision that names an unknown step or would close
a cycle raises and leaves the graph exactly as it was.
"""

from __future__ import annotations

import graphlib
from collections.abc import Iterable, Mapping

from taskgate.core.ids import normalize_code, normalize_tool, tool_key
from taskgate.core.plan import Plan, Revision, StepSpec
from taskgate.errors import CycleError, PlanError, UnknownStepError


class TaskGraph:
    """Steps, prerequisites and cancellations of one plan, revised in place.

    ``lenient=True`` accepts what a compiler may get wrong (an empty or duplicate completion code,
    a prerequisite that names no step, a cycle) so that it flows into the state uncorrected, as in
    the paper; a step behind such a defect simply stays BLOCKED or unbookable.
    """

    __slots__ = (
        "_by_code",
        "_by_tool",
        "_cancelled",
        "_code",
        "_confirm",
        "_order",
        "_prereqs",
        "_repeatable",
        "_text",
        "_tool",
        "binding",
        "lenient",
    )

    def __init__(self, plan: Plan, *, lenient: bool = False) -> None:
        self.lenient = lenient
        self.binding = plan.binding
        self._order: tuple[str, ...] = tuple(plan.steps)
        self._text = {sid: spec.text for sid, spec in plan.steps.items()}
        self._code = {sid: spec.code.strip() for sid, spec in plan.steps.items()}
        self._tool = {sid: spec.tool.strip() for sid, spec in plan.steps.items()}
        self._repeatable = frozenset(sid for sid, spec in plan.steps.items() if spec.repeatable)
        self._confirm = {sid: spec.confirm for sid, spec in plan.steps.items()
                         if spec.confirm != "auto"}  # fmt: skip
        self._by_code: dict[str, str] = {}
        self._by_tool: dict[str, str] = {}
        keys, by_key, norm = (
            (self._tool, self._by_tool, normalize_tool)
            if plan.binding == "tool"
            else (self._code, self._by_code, normalize_code)
        )
        what = "tool" if plan.binding == "tool" else "completion code"
        for sid in self._order:
            raw = keys[sid]
            key = norm(raw)
            if key is None:
                if not lenient:
                    expected = "a tool name" if plan.binding == "tool" else "RC-<digits>"
                    raise PlanError(f"step {sid!r} has {what} {raw!r}; expected {expected}")
                continue
            keys[sid] = key
            if plan.binding == "tool":
                key = tool_key(key)
            if key in by_key and not lenient:
                raise PlanError(f"{what} {keys[sid]} is given to both {by_key[key]!r} and {sid!r}")
            by_key.setdefault(key, sid)
        self._prereqs: dict[str, frozenset[str]] = {}
        new = {sid: frozenset(spec.deps) for sid, spec in plan.steps.items()}
        self._check(new, "the plan")
        self._prereqs = new
        self._cancelled: set[str] = set()

    def copy(self) -> TaskGraph:
        """An independent copy (revising either leaves the other as it is)."""
        new = TaskGraph.__new__(TaskGraph)
        new.lenient, new.binding, new._order = self.lenient, self.binding, self._order
        new._text, new._code, new._tool = self._text, dict(self._code), dict(self._tool)
        new._repeatable, new._confirm = self._repeatable, self._confirm
        new._by_code, new._by_tool = dict(self._by_code), dict(self._by_tool)
        new._prereqs, new._cancelled = dict(self._prereqs), set(self._cancelled)
        return new

    # -- reading ---------------------------------------------------------------------------------
    @property
    def steps(self) -> tuple[str, ...]:
        """Step ids in brief order."""
        return self._order

    def __contains__(self, step: object) -> bool:
        return step in self._text

    def prerequisites(self, step: str) -> frozenset[str]:
        """The steps ``step`` requires (may name unknown steps in a lenient graph)."""
        return self._prereqs[self._known(step, "prerequisites()")]

    def code(self, step: str) -> str:
        return self._code[self._known(step, "code()")]

    def text(self, step: str) -> str:
        return self._text[self._known(step, "text()")]

    def tool(self, step: str) -> str:
        """The tool ``step`` is bound to (empty in a code-bound plan)."""
        return self._tool[self._known(step, "tool()")]

    def step_for_code(self, code: str) -> str | None:
        """The step whose completion code is ``code`` (normalized), or ``None``."""
        return self._by_code.get(code)

    def step_for_tool(self, tool: str) -> str | None:
        """The step of a tool-bound plan whose tool is ``tool`` (matched by
        :func:`~taskgate.core.ids.tool_key`: case, ``-`` and a namespace prefix do not count), or
        ``None``."""
        return self._by_tool.get(tool_key(tool))

    def repeatable(self, step: str) -> bool:
        """Whether ``step`` runs again on each new request for it (a booking, a message, a
        payment); a one-shot step runs again only on an explicit redo."""
        return step in self._repeatable

    def confirm(self, step: str) -> str:
        """When the gate asks a person before a call of ``step``: ``auto``, ``always``, ``never``
        (see :class:`~taskgate.core.plan.StepSpec`)."""
        return self._confirm.get(step, "auto")

    def is_cancelled(self, step: str) -> bool:
        return step in self._cancelled

    @property
    def cancelled(self) -> frozenset[str]:
        return frozenset(self._cancelled)

    def edges(self) -> frozenset[tuple[str, str]]:
        """E as ``(u, v)`` pairs, meaning ``v`` requires ``u``."""
        return frozenset((u, v) for v, ps in self._prereqs.items() for u in ps)

    def to_plan(self) -> Plan:
        """The current structure (after revisions) as a plan; cancellations are not part of it."""
        return Plan(
            binding=self.binding,
            steps={
                sid: StepSpec(
                    deps=tuple(sorted(self._prereqs[sid], key=step_sort_key)),
                    code=self._code[sid],
                    tool=self._tool[sid],
                    text=self._text[sid],
                    repeatable=sid in self._repeatable,
                    confirm=self._confirm.get(sid, "auto"),
                )
                for sid in self._order
            },
        )

    # -- revising --------------------------------------------------------------------------------
    def apply(self, revision: Revision) -> None:
        """Apply cancel, rewires and relax together, or raise and change nothing."""
        if revision.cancel is not None:
            self._known(revision.cancel, "the revision's cancel")
        new = dict(self._prereqs)
        for w, ps in revision.rewires.items():
            self._known(w, "the revision's rewires")
            if not self.lenient:
                for u in ps:
                    self._known(u, f"the rewire of {w!r}")
            new[w] = frozenset(ps)
        if revision.relax is not None:
            w, u = revision.relax
            self._known(w, "the revision's relax")
            if u not in new[w]:
                if not self.lenient:
                    raise PlanError(
                        f"the revision relaxes ({w!r}, {u!r}) but {w!r} does not require {u!r}"
                    )
            else:
                new[w] = new[w] - {u}
        self._check(new, "the revision")
        self._prereqs = new
        if revision.cancel is not None:
            self._cancelled.add(revision.cancel)

    def cancel(self, step: str) -> None:
        self.apply(Revision(cancel=step))

    def rewire(self, step: str, prerequisites: Iterable[str]) -> None:
        self.apply(Revision(rewires={step: tuple(prerequisites)}))

    def relax(self, step: str, prerequisite: str) -> None:
        self.apply(Revision(relax=(step, prerequisite)))

    # -- helpers ---------------------------------------------------------------------------------
    def _known(self, step: str, where: str) -> str:
        if step not in self._text:
            raise UnknownStepError(step, where, self._order)
        return step

    def _check(self, prereqs: Mapping[str, frozenset[str]], where: str) -> None:
        if self.lenient:
            return
        for v, ps in prereqs.items():
            for u in ps:
                if u not in self._text:
                    raise UnknownStepError(u, f"{where} (prerequisite of {v!r})", self._order)
        cycle = find_cycle(prereqs)
        if cycle:
            raise CycleError(cycle, where)


def find_cycle(prereqs: Mapping[str, Iterable[str]]) -> tuple[str, ...]:
    """A prerequisite cycle, each step a prerequisite of the next (the first repeated last)."""
    try:
        graphlib.TopologicalSorter(prereqs).prepare()
    except graphlib.CycleError as exc:
        return tuple(exc.args[1])
    return ()


def step_sort_key(step: str) -> tuple[str, int, str, str]:
    """Natural order for step ids: s2 before s10 (digits compared as numbers, of any length)."""
    head = step.rstrip("0123456789")
    tail = step[len(head) :]
    number = tail.lstrip("0") or ("0" if tail else "")
    return (head, len(number) if tail else -1, number, step)
