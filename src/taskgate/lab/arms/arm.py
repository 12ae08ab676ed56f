"""One arm (rung) of the ladder: how task state reaches the agent, as data plus behaviour.

The episode loop (:func:`taskgate.lab.run_episode`) calls the same hooks on every arm, in order:

* ``start``: build the arm's state: the compiled module (gate arms) or the exact one (text arms);
* ``perturb``: the corrupted-state ablation and receipts repair, on a compiled module;
* ``revise``: apply a revision turn (compiled from its message, or exact);
* ``match``: resolve the request to a step, for arms that use a matcher;
* ``open``: issue the request's work order in the module;
* ``recall``: search the arm's retrieval memory with the request (memory arms only);
* ``directive`` and ``present``: the messages the agent sees (brief, history, and whatever the arm
  adds: checklist, matched-step line, directive, rejection notices, the agent's own marks);
* ``exchange``: ask the agent, judge its bookings under the arm's policy, and route rejection
  notices (to the next turn, or a same-turn re-prompt).

A new rung is a new :class:`Arm` value (or a subclass overriding these hooks) registered in
:mod:`taskgate.lab.arms.registry`; the episode loop does not change.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from taskgate.core.booking import Booking
from taskgate.core.graph import TaskGraph
from taskgate.core.machine import TaskMachine
from taskgate.core.plan import Plan, Revision
from taskgate.core.validator import Defect, validate
from taskgate.core.verdict import Policy, Reason, Verdict
from taskgate.errors import TaskgateError
from taskgate.lab.arms.corruption import Corruptor
from taskgate.lab.arms.marks import SELF_LEDGER_CLAUSE, read_marks, render_marks
from taskgate.lab.episodes.models import Episode
from taskgate.lab.episodes.records import Execution
from taskgate.lab.memory.base import Memory, Recall
from taskgate.matching.askback import ask_back_question
from taskgate.protocol.bookings import parse_bookings
from taskgate.protocol.render import (
    render_checklist,
    render_directive,
    render_rejection,
    render_same_turn_notice,
)
from taskgate.roles import ChatMessage, Compiler, Match, Matcher
from taskgate.rungs import Rung

#: ask the agent: (messages, the same-turn notice or None) -> reply text
Ask = Callable[[list[ChatMessage], str | None], Awaitable[str]]


@dataclass
class ArmState:
    """One episode's mutable state under one arm."""

    module: TaskMachine
    plan: Plan  # the plan the module was built from (compiled, or the generator's)
    defects: list[Defect] = field(default_factory=list)
    history: list[ChatMessage] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    marks: dict[str, str] = field(default_factory=dict)  # the self-ledger arm's: code -> status
    corruptor: Corruptor | None = None
    repair: bool = False
    memory: Memory | None = None  # the memory arms' store (see :mod:`taskgate.lab.arms.memory`)
    recalled: Recall | None = None  # what the memory recalled for the current turn
    #: the episode's own graph: the execution channel of an arm that does not enforce is the
    #: episode's, whatever the compiled module knows
    channel: TaskGraph | None = None


@dataclass(frozen=True, slots=True)
class Judged:
    booking: Booking
    verdict: Verdict
    reply_index: int


@dataclass(frozen=True, slots=True)
class Exchange:
    """One turn's replies (a second one after a same-turn re-prompt), verdicts and notices."""

    replies: list[str]
    judged: list[Judged]
    notices: list[str]
    executions: list[Execution] | None = None  # the real-tool harness: what the workspace got


#: an arm's exchange, or one that takes its place (the real-tool harness's)
ExchangeFn = Callable[
    [list[ChatMessage], str, ArmState, Ask, Callable[[Booking], None]], Awaitable[Exchange]
]


@dataclass(frozen=True)
class Arm(Rung):
    """An arm: a rung (what it adds to the turn and how it gates bookings) with the episode
    loop's hooks."""

    @property
    def needs_memory(self) -> bool:
        """Whether the arm recalls from a retrieval memory (the memory baselines)."""
        return False

    def logged_compiler(self, name: str) -> str:
        """The compiler as the log names it: gate arms compile; text arms use the generator's."""
        return name if self.compiled else "generator"

    def logged_matcher(self, name: str) -> str:
        return name if self.uses_matcher else "none"

    def policy_now(self, state: ArmState) -> Policy:
        if self.hybrid:
            return Policy.UNGATED if state.defects else Policy.STATE_BOUND
        return self.policy

    # -- the module ------------------------------------------------------------------------------
    async def start(
        self, episode: Episode, compiler: Compiler, corruption: float = 0.0, repair: bool = False
    ) -> ArmState:
        if not self.compiled:
            return ArmState(module=TaskMachine(episode.plan), plan=episode.plan)
        plan = await compiler.compile_plan(episode.brief)
        return ArmState(
            module=TaskMachine(plan, lenient=True),
            plan=plan,
            defects=validate(plan),
            corruptor=Corruptor(corruption, episode.params.seed),
            repair=repair,
            channel=TaskGraph(episode.plan),
        )

    def perturb(self, state: ArmState) -> tuple[list[str], int]:
        """Corrupt the module (the ablation), then repair it from receipts if asked."""
        corruptions = state.corruptor.inject(state.module) if state.corruptor else []
        repaired = state.module.repair_completions() if state.repair else 0
        return corruptions, repaired

    async def revise(
        self, state: ArmState, revision: Revision, message: str, compiler: Compiler
    ) -> tuple[Revision | None, list[str]]:
        """Apply a revision turn: the compiled one and its defects (gate arms), or the exact one."""
        if not self.compiled:
            state.module.revise(revision)
            return None, []
        compiled = await compiler.compile_revision(state.module.graph.to_plan(), message)
        defects = validate(state.module.graph.to_plan(), compiled)  # the plan's and the revision's
        texts = [d.detail for d in defects]
        try:
            state.module.revise(compiled)
        except TaskgateError as exc:  # e.g. it cancels a step the plan lacks: nothing is applied
            texts.append(f"not applied: {exc}")
        state.defects = defects
        return compiled, texts

    async def recall(self, state: ArmState, message: str) -> Recall | None:
        """Search the arm's memory with the request (memory arms; the others recall nothing)."""
        return None

    async def match(self, state: ArmState, message: str, matcher: Matcher) -> Match | None:
        if not self.uses_matcher:
            return None
        match = await matcher.match(state.module.graph.to_plan(), message)
        if match.step is not None and match.step not in state.module.graph:
            return Match(None, match.explicit_redo)
        known = tuple(c for c in match.candidates if c in state.module.graph)
        return match if known == match.candidates else match._replace(candidates=known)

    def ask_back(self, state: ArmState, match: Match | None, kept: str) -> Exchange | None:
        """The clarifying question instead of the agent's turn, when a gate arm's matcher could not
        tell which step a request is about (no step, some candidates); nothing is executed. Text
        arms (the matched-line checklist included) never ask back."""
        if not self.compiled or match is None or match.step is not None or not match.candidates:
            return None
        question = ask_back_question(state.module.graph.to_plan(), match.candidates)
        state.notices = []
        state.history += [
            {"role": "user", "content": kept},
            {"role": "assistant", "content": question},
        ]
        return Exchange([question], [], [])

    def open(self, state: ArmState, work_order: str | None, match: Match | None) -> None:
        """Issue the request's work order; gate arms bind it to the matched step."""
        if work_order is None:
            state.module.close_request()
        elif self.compiled and match is not None:
            state.module.open_request(
                match.step, explicit_redo=match.explicit_redo, work_order=work_order
            )
        else:
            state.module.open_request(None, work_order=work_order)

    # -- what the agent sees ---------------------------------------------------------------------
    def directive(self, state: ArmState) -> str | None:
        return render_directive(state.module) if self.compiled else None

    def system_prompt(self, brief: str) -> str:
        return f"{brief}\n\n{SELF_LEDGER_CLAUSE}" if self.self_ledger else brief

    def present(
        self, brief: str, message: str, state: ArmState, directive: str | None, match: Match | None
    ) -> tuple[list[ChatMessage], str]:
        """The messages for this call, and the user content to keep in the history."""
        parts = [*state.notices, message]
        kept = list(parts)
        if self.checklist is not None:
            parts.append(render_checklist(state.module))
            if self.checklist == "append":
                kept.append(parts[-1])
        if self.matched_line and match is not None:
            parts.append(_matched_line(match))
        if self.self_ledger:
            parts.append(render_marks(state.marks))
            kept.append(parts[-1])
        if directive is not None and self.directive_role == "user":
            parts.append(directive)
            kept.append(directive)
        system = self.system_prompt(brief)
        if directive is not None and self.directive_role == "system":
            system = f"{system}\n\n{directive}"
        user = "\n\n".join(parts)
        messages: list[ChatMessage] = [{"role": "system", "content": system}, *state.history]
        messages.append({"role": "user", "content": user})
        return messages, "\n\n".join(kept)

    # -- what the reply does ---------------------------------------------------------------------
    async def exchange(
        self,
        messages: list[ChatMessage],
        kept: str,
        state: ArmState,
        ask: Ask,
        on_admit: Callable[[Booking], None],
    ) -> Exchange:
        """Ask, judge, and route notices; a same-turn arm re-prompts once after a refusal."""
        state.notices = []
        replies = [await ask(messages, None)]
        judged = self._judge(replies[0], state, 0, on_admit)
        notices = self.notices_for(judged, state)
        if notices and self.surface == "same-turn":
            notice = "\n\n".join(notices)
            retry: list[ChatMessage] = [
                *messages,
                {"role": "assistant", "content": replies[0]},
                {"role": "user", "content": notice},
            ]
            replies.append(await ask(retry, notice))
            judged += self._judge(replies[1], state, 1, on_admit)
        else:
            state.notices = notices
        state.history += [
            {"role": "user", "content": kept},
            {"role": "assistant", "content": replies[-1]},
        ]
        return Exchange(replies, judged, notices)

    def receive(self, reply: str, state: ArmState, reply_index: int = 0) -> list[Judged]:
        """The reply's bookings, each judged by the module under the arm's policy now."""
        if self.self_ledger:
            state.marks.update(read_marks(reply))
        policy = self.policy_now(state)
        return [
            Judged(b, _executed(state, b, state.module.submit(b, policy), policy), reply_index)
            for b in parse_bookings(reply)
        ]

    def notices_for(self, judged: list[Judged], state: ArmState) -> list[str]:
        """Rejection notices for refused bookings, on gating arms (re-displays get none)."""
        if self.policy_now(state) is Policy.UNGATED:
            return []
        render = render_same_turn_notice if self.surface == "same-turn" else render_rejection
        return [render(j.verdict, j.booking) for j in judged if _noticed(j)]

    def _judge(
        self, reply: str, state: ArmState, index: int, on_admit: Callable[[Booking], None]
    ) -> list[Judged]:
        judged = self.receive(reply, state, index)
        for j in judged:
            if j.verdict.admitted:
                on_admit(j.booking)
        return judged


def _executed(state: ArmState, booking: Booking, verdict: Verdict, policy: Policy) -> Verdict:
    """The verdict the execution channel gives: a gate's own, or, where nothing is enforced (the
    directive gate, the hybrid where its validator flags), an execution of the episode's step
    whenever the booking carries the current work order (Section 3.3: the directive gate "is free to
    disobey"; Appendix D.3: the hybrid "refuses no correct booking"). A code the compiled module
    lacks (an empty compiled code, say) is still the episode's step; the module only chooses the
    directive, and its state does not move."""
    if policy is not Policy.UNGATED or verdict.reason is not Reason.UNKNOWN_CODE:
        return verdict
    step = state.channel.step_for_code(booking.code) if state.channel is not None else None
    return Verdict("admit", step) if step is not None else verdict


def _noticed(j: Judged) -> bool:
    return not j.verdict.admitted and not j.verdict.redisplay


def _matched_line(match: Match) -> str:
    if match.step is None:
        return "[MATCHED STEP] this message is about no step of the plan."
    return f"[MATCHED STEP] this message is about step {match.step}."
