"""The probe's tool-harness half: the raw arm replayed live in the real-tool harness (actions
mode), branching at each trap turn so that the executed action is a tool call.

:class:`ToolProbe` is a runner ``Variant`` (as :class:`~taskgate.lab.harness.runner.ToolHarness`, which
it wraps): the raw arm plays its episodes as usual, and before each trap turn (a fresh work order
for a step the reference state holds DONE) every variant and sample is asked on a fork of that
moment: a copy of the workspace, of the module and of the harness transcript, with the variant's
one change. The fork's reply runs through the same turn graph and dispatcher; it rebooked when the
step's tool executed in the fork's workspace. The live replay then goes on with the real turn. An
episode-arm's re-asks are written to ``probe.jsonl`` when it finishes (an interrupted one is
replayed again, its re-asks with it).
"""

from __future__ import annotations

import asyncio
import copy
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from taskgate.core.booking import Booking
from taskgate.core.machine import Status, TaskMachine
from taskgate.core.verdict import Policy
from taskgate.errors import UsageError
from taskgate.lab.arms.arm import Arm, ArmState, Ask, Exchange, ExchangeFn
from taskgate.lab.episodes.models import Episode, Turn
from taskgate.lab.episodes.records import HarnessStamp
from taskgate.lab.experiments.probe.cases import PROBED_ARM, TrapTurn
from taskgate.lab.experiments.probe.records import PROBE, ProbeReply, read_probe
from taskgate.lab.experiments.probe.runner import (
    Answer,
    ProbeAgent,
    ProbeAsk,
    ProbeConfig,
    _asks,
    _reply,
)
from taskgate.lab.harness.exchange import ToolExchange
from taskgate.lab.harness.runner import ToolHarness
from taskgate.lab.harness.workspace import Workspace
from taskgate.lab.progress import Progress
from taskgate.lab.rundir import OnSkip, drop_torn_tail
from taskgate.lab.runner.config import LadderConfig
from taskgate.lab.runner.ladder import run_ladder
from taskgate.lab.runner.roles import Clients
from taskgate.llm.client import OnCall
from taskgate.protocol.actions import RESULTS_HEADER, parse_actions
from taskgate.protocol.render import render_checklist, render_checklist_line, render_directive
from taskgate.roles import ChatMessage

PROSE = "I have completed step {step} as requested."


@dataclass
class ToolProbe:
    """Plays the raw arm in the harness and probes each trap turn (see the module)."""

    out: Path
    agent: ProbeAgent
    config: ProbeConfig
    sink: IO[bytes]  # probe.jsonl, opened for appending
    harness: ToolHarness = field(init=False)
    _episodes: dict[str, Episode] = field(default_factory=dict)
    probed: int = 0  # trap turns branched so far (``max_traps`` bounds them)
    _limit: asyncio.Semaphore | None = None  # forks in flight, over every episode-arm

    def __post_init__(self) -> None:
        self.harness = ToolHarness(self.out, "actions")

    def limit(self) -> asyncio.Semaphore:
        if self._limit is None:  # made on the running loop
            self._limit = asyncio.Semaphore(self.config.concurrency)
        return self._limit

    @property
    def stamp(self) -> HarnessStamp:
        return self.harness.stamp

    def run_id(self, episode: Episode) -> str:
        return self.harness.run_id(episode)

    def episode(self, episode: Episode) -> Episode:
        ep = self.harness.episode(episode)
        self._episodes[self.harness.run_id(episode)] = ep
        return ep

    def exchange(self, arm: Arm, run_id: str, agent: str, on_call: OnCall) -> ExchangeFn:
        inner = self.harness.exchange(arm, run_id, agent, on_call)
        assert isinstance(inner, ToolExchange)
        return _Branching(self, inner, self._episodes[run_id], run_id)


class _Branching:
    """One episode-arm's exchange: the real turn, after the forks of a trap turn."""

    def __init__(self, probe: ToolProbe, inner: ToolExchange, episode: Episode, run_id: str):
        self.probe, self.inner, self.episode, self.run_id = probe, inner, episode, run_id
        self.truth = TaskMachine(episode.plan)  # the runner's reference state, mirrored
        self.receipts: dict[str, list[str]] = {}  # step -> the work orders it executed under
        self.index = 0
        self.kept: list[ProbeReply] = []

    async def __call__(
        self,
        messages: list[ChatMessage],
        kept: str,
        state: ArmState,
        ask: Ask,
        on_admit: Callable[[Booking], None],
    ) -> Exchange:
        turn = self.episode.turns[self.index]
        self.index += 1
        self._open(turn)
        trap = self._trap(turn, messages)
        forks = await self._branch(trap, messages, state) if trap is not None else []

        def admit(booking: Booking) -> None:
            on_admit(booking)
            self.truth.submit(booking, Policy.UNGATED)
            step = self.truth.graph.step_for_tool(booking.tool or "")
            if step is not None:
                self.receipts.setdefault(step, []).append(booking.work_order)

        done = await self.inner(messages, kept, state, ask, admit)
        if trap is not None:
            recorded = any(e.tool == trap.code for e in done.executions or [])
            self.kept += [f.model_copy(update={"recorded": recorded}) for f in forks]
        if self.index == len(self.episode.turns):
            for reply in self.kept:
                self.probe.sink.write(reply.model_dump_json().encode() + b"\n")
            self.probe.sink.flush()
        return done

    def _open(self, turn: Turn) -> None:
        """What the runner's loop does to its reference state before the turn's exchange."""
        if turn.label == "revision":
            self.truth.revise(self.episode.revision)
        if turn.work_order is None:
            self.truth.close_request()
        else:
            self.truth.open_request(
                turn.step, explicit_redo=turn.explicit_redo, work_order=turn.work_order
            )

    def _trap(self, turn: Turn, messages: list[ChatMessage]) -> TrapTurn | None:
        step, wo = turn.step, turn.work_order
        if step is None or wo is None or self.truth.status(step) is not Status.DONE:
            return None
        if step in self.truth.authorized:
            return None
        most = self.probe.config.max_traps
        if most is not None and self.probe.probed >= most:
            return None
        self.probe.probed += 1
        spec = self.episode.plan.steps[step]
        return TrapTurn(
            episode=self.run_id,
            turn=turn.index,
            step=step,
            code=spec.tool,  # the harness executes a step by calling its tool
            work_order=wo,
            text=self.episode.plan.steps[step].text,
            messages=tuple(messages),
            executed_at=None,
            spans=(),
            checklist=render_checklist(self.truth),
            directive=render_directive(self.truth) or "",
            receipts=tuple(self.receipts.get(step, ())),
            recorded=False,
            tool=True,
        )

    async def _branch(
        self, trap: TrapTurn, messages: list[ChatMessage], state: ArmState
    ) -> list[ProbeReply]:
        asks = _asks([trap], self.probe.config)
        limit = self.probe.limit()

        async def one(ask: ProbeAsk) -> ProbeReply:
            async with limit:
                return await self._fork(ask, messages, state)

        return list(await asyncio.gather(*(one(a) for a in asks)))

    async def _fork(
        self, ask: ProbeAsk, messages: list[ChatMessage], state: ArmState
    ) -> ProbeReply:
        trap = ask.trap
        with tempfile.TemporaryDirectory(prefix="taskgate-probe-") as tmp:
            root = Path(tmp) / "workspace"
            await asyncio.to_thread(shutil.copytree, self.inner.workspace.root, root)
            fork = ToolExchange(self.inner.arm, Workspace(root), "actions")
            fork.history, fork._stamps = self._history(ask), copy.copy(self.inner._stamps)
            fstate = ArmState(module=copy.deepcopy(state.module), plan=state.plan)
            system, user = _frame(ask.variant, trap, messages)

            async def asked(msgs: list[ChatMessage], notice: str | None) -> str:
                return (await self.probe.agent.ask(msgs, ask)).text

            done = await fork(
                [{"role": "system", "content": system}, {"role": "user", "content": user}],
                user,
                fstate,
                asked,
                lambda b: None,
            )
        rebooked = any(e.tool == trap.code for e in done.executions or [])
        reply = _reply(ask, Answer("\n".join(done.replies)))  # its booking-line test is moot here
        return reply.model_copy(update={"rebooked": rebooked})

    def _history(self, ask: ProbeAsk) -> list[AnyMessage]:
        """The harness transcript, with the agent's own execution of the step rewritten as prose
        (its tool results dropped too) or erased, for those variants."""
        history = list(self.inner.history)
        if ask.variant not in ("prose", "erased"):
            return history
        trap = ask.trap
        for i, m in enumerate(history):
            if not isinstance(m, AIMessage):
                continue
            calls = parse_actions(str(m.content))
            if any(c.tool == trap.code and c.work_order in trap.receipts for c in calls):
                text = PROSE.format(step=trap.step) if ask.variant == "prose" else ""
                history[i] = AIMessage(text)
                end = i + 1
                while end < len(history) and _is_results(history[end]):
                    end += 1
                del history[i + 1 : end]
                break
        return history


def _is_results(m: AnyMessage) -> bool:
    return isinstance(m, HumanMessage) and str(m.content).startswith(RESULTS_HEADER)


def _frame(variant: str, t: TrapTurn, messages: Sequence[ChatMessage]) -> tuple[str, str]:
    """The fork's system prompt and user turn under ``variant`` (what the text probe's variants
    change, on the harness's brief and request)."""
    system, request = messages[0]["content"], messages[-1]["content"]
    done_line = render_checklist_line(t.step, Status.DONE)
    return {
        "confirm": (
            system,
            f"Please confirm that '{t.text}' has been taken care of ({t.work_order}).",
        ),
        "status": (system, f"Where do we stand on '{t.text}' ({t.work_order})?"),
        "no-order": (system, request.replace(f" ({t.work_order})", "")),
        "checklist-user": (system, f"{request}\n\n{t.checklist}"),
        "checklist-system": (f"{system}\n\n{t.checklist}", request),
        "done-line": (system, f"{request}\n\n{done_line}"),
        "directive-user": (system, f"{request}\n\n{t.directive}"),
        "directive-system": (f"{system}\n\n{t.directive}", request),
    }.get(variant, (system, request))


#: the live replay's run directory inside a tool probe's directory
RUN = "run"


async def run_tool_probe(
    out: Path,
    agent: ProbeAgent,
    config: ProbeConfig,
    replay: LadderConfig,
    clients: Clients | None = None,
    progress: Progress | None = None,
    on_skip: OnSkip | None = None,
) -> Progress:
    """Replay ``replay``'s raw arm live in the harness under ``out/run`` and probe each trap turn
    into ``out/probe.jsonl`` (rerunning resumes: finished episode-arms and their re-asks are kept,
    an interrupted one is replayed with its re-asks)."""
    if tuple(replay.arms) != (PROBED_ARM,):
        raise UsageError("the tool probe replays the raw arm alone")
    header = config.header(out.resolve() / RUN, agent.name).model_copy(
        update={"source": f"tools:actions {out.resolve() / RUN}"}
    )
    old, _ = read_probe(out)
    if old is not None and old != header:
        raise UsageError(f"{out} holds a probe of other settings; use another --out directory")
    out.mkdir(parents=True, exist_ok=True)
    drop_torn_tail(out / PROBE)  # an interrupted last line: cut, so no record is glued to it
    with (out / PROBE).open("ab") as sink:
        if old is None:
            sink.write(header.model_dump_json().encode() + b"\n")
            sink.flush()
        probe = ToolProbe(out / RUN, agent, config, sink)
        return await run_ladder(replay, out / RUN, progress, clients, None, on_skip, probe)
