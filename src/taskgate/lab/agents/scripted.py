"""Scripted agents, matcher and compilers: the fakes that validate the metric, shipped in the library.

* ``scripted:perfect`` replays ground truth: it books the requested step exactly when the
  reference state says it is owed, and otherwise explains why not.
* ``scripted:always-book`` is memoryless: it books every request's step with its work order.
* ``scripted:obedient`` follows every directive it is given; with none, it behaves as always-book.

On a tool-bound plan (the real-tool harness) they execute a step with the TOOLS clause's
``ACTION`` line instead of a booking line, and answer the tool results of a turn's later hops
without calling anything.

The scripted matcher returns each turn's scripted step; the scripted compiler returns the
generator's own graph and revision; the corrupt compiler returns that graph with its edges reversed,
to show that the metric responds to module state.
"""

from __future__ import annotations

from taskgate.core.booking import Booking
from taskgate.core.machine import Status
from taskgate.core.plan import Plan, Revision, StepSpec
from taskgate.lab.agents.base import Oracle
from taskgate.lab.episodes.models import Episode
from taskgate.roles import ChatMessage, Match


class _ScriptedAgent:
    """An agent that reads the oracle instead of the messages."""

    def __init__(self, oracle: Oracle) -> None:
        self.oracle = oracle

    def _book(self, step: str) -> str:
        plan, wo = self.oracle.episode.plan, self.oracle.current().turn.work_order
        if plan.binding == "tool":
            assert wo is not None
            return f"Carrying out {step} now.\n{Booking.tool_call(plan.steps[step].tool, wo).line}"
        return f"Carrying out {step} now.\nref {plan.steps[step].code}/{wo}"

    def _follow_up(self) -> str | None:
        """A harness hop after tool results: acknowledge them, call nothing."""
        view = self.oracle.current()
        if self.oracle.episode.plan.binding == "tool" and view.notice is not None:
            return "Noted; the results are above."
        return None


class PerfectAgent(_ScriptedAgent):
    """Books exactly what the reference state says is owed this turn."""

    async def reply(self, messages: list[ChatMessage]) -> str:
        if (ack := self._follow_up()) is not None:
            return ack
        view = self.oracle.current()
        turn, truth = view.turn, view.truth
        if turn.label == "ambiguous":
            a, b = turn.candidates
            return f"Which one do you mean: {a} or {b}? I will not book anything until you say."
        step = turn.step
        if step is None or turn.work_order is None:
            return "Noted."
        status = truth.status(step)
        if status is Status.TODO or step in truth.authorized:
            return self._book(step)
        if status is Status.DONE:
            return f"Step {step} is already done; no new work order booked."
        if status is Status.CANCELLED:
            return f"Step {step} was cancelled, so I decline it."
        return f"Step {step} is blocked: waiting on {', '.join(truth.missing(step))}."


class AlwaysBookAgent(_ScriptedAgent):
    """Books every request's step (an ambiguous probe: the first step it names)."""

    async def reply(self, messages: list[ChatMessage]) -> str:
        if (ack := self._follow_up()) is not None:
            return ack
        turn = self.oracle.current().turn
        step = turn.step or (turn.candidates[0] if turn.candidates else None)
        if step is None or turn.work_order is None:
            return "Noted."
        return self._book(step)


_DECLINE_PREFIXES = (
    "[TASK-STATE] step {} was CANCELLED",
    "[TASK-STATE] step {} is already DONE",
    "[TASK-STATE] step {} is BLOCKED",
)


class ObedientAgent(AlwaysBookAgent):
    """Obeys the directive; books like always-book when there is none."""

    async def reply(self, messages: list[ChatMessage]) -> str:
        if (ack := self._follow_up()) is not None:
            return ack
        view = self.oracle.current()
        directive, turn = view.directive, view.turn
        if directive and turn.work_order is not None:
            step = directive.split()[2]
            if any(directive.startswith(p.format(step)) for p in _DECLINE_PREFIXES):
                return f"Following the task state: I will not perform {step} now."
            return self._book(step)
        return await super().reply(messages)


class ScriptedMatcher:
    """Resolves each turn's message to its scripted step and redo flag."""

    def __init__(self, oracle: Oracle) -> None:
        self._by_message = {t.message: Match(t.step, t.explicit_redo) for t in oracle.episode.turns}

    async def match(self, plan: Plan, message: str) -> Match:
        return self._by_message.get(message, Match(None, False))


class ScriptedCompiler:
    """Returns the generator's graph and revision: the gate's state is exact."""

    def __init__(self, oracle: Oracle) -> None:
        self._episode: Episode = oracle.episode

    async def compile_plan(self, brief: str) -> Plan:
        return self._episode.plan

    async def compile_revision(self, plan: Plan, message: str) -> Revision:
        return self._episode.revision


class CorruptCompiler(ScriptedCompiler):
    """A deliberately wrong module: every edge reversed and the codes (or tools) rotated by one
    step."""

    async def compile_plan(self, brief: str) -> Plan:
        plan = self._episode.plan
        ids = list(plan.steps)
        reversed_deps: dict[str, list[str]] = {s: [] for s in ids}
        for v, spec in plan.steps.items():
            for u in spec.deps:
                reversed_deps[u].append(v)
        rotated = [plan.steps[s] for s in ids[1:] + ids[:1]]
        return Plan(
            binding=plan.binding,
            steps={
                s: StepSpec(
                    deps=tuple(reversed_deps[s]), code=r.code, tool=r.tool, text=plan.steps[s].text
                )
                for s, r in zip(ids, rotated, strict=True)
            },
        )

    async def compile_revision(self, plan: Plan, message: str) -> Revision:
        return Revision(cancel=self._episode.revision.cancel)


class _DefectCompiler(ScriptedCompiler):
    """The generator's graph and revision with one compile defect of the kind the paper's
    over-block attribution names (Appendix D.3, the omission-split table): the defect flows into
    the module's state uncorrected, so the enforcement gate over-blocks where it bites."""

    def _first_dependent(self, step: str, plan: Plan) -> str | None:
        cancelled = self._episode.revision.cancel
        return next((w for w, s in plan.steps.items() if step in s.deps and w != cancelled), None)


class EmptyCodeCompiler(_DefectCompiler):
    """An empty compiled completion code (the paper's "Empty"): the first step with a dependent
    can never be booked in the module, so its dependents stay BLOCKED there."""

    async def compile_plan(self, brief: str) -> Plan:
        plan = self._episode.plan
        target = next(
            (s for s in plan.steps if self._first_dependent(s, plan) is not None),
            next(iter(plan.steps)),
        )
        steps = dict(plan.steps)
        steps[target] = steps[target].model_copy(update={"code": ""})
        return Plan(binding=plan.binding, steps=steps)


class CancelLeftCompiler(_DefectCompiler):
    """The cancelled step left in its dependents' lists after the compiled revision (the paper's
    "Canc."): the revision cancels the step but rewires nothing, so its dependents stay BLOCKED."""

    async def compile_revision(self, plan: Plan, message: str) -> Revision:
        revision = self._episode.revision
        return Revision(cancel=revision.cancel, relax=revision.relax)


class RewireCycleCompiler(_DefectCompiler):
    """A compiled rewire absent from the generator's graph that closes a cycle (the paper's
    "Rewire"): the first step asked after the revision that has a dependent is rewired to require
    that dependent as well, so the module never lets it run."""

    async def compile_revision(self, plan: Plan, message: str) -> Revision:
        revision = self._episode.revision
        deps = {w: set(revision.rewires.get(w, spec.deps)) for w, spec in plan.steps.items()}
        if revision.relax is not None:
            deps[revision.relax[0]].discard(revision.relax[1])
        turns = self._episode.turns
        start = next(i for i, t in enumerate(turns) if t.label == "revision")
        for turn in turns[start:]:
            w = turn.step
            if turn.label != "ask" or w is None:
                continue
            d = next((x for x, ps in deps.items() if w in ps and x != revision.cancel), None)
            if d is not None:
                return revision.model_copy(
                    update={"rewires": {**revision.rewires, w: (*sorted(deps[w]), d)}}
                )
        return revision
