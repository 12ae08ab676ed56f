"""Re-ask every trap turn of a raw-transcript run under each variant, into a probe directory."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from taskgate.core.booking import Booking
from taskgate.errors import LogFormatError, ModelError, UsageError
from taskgate.lab.experiments.probe.cases import PROBED_ARM, TrapTurn, rebooks, trap_turns
from taskgate.lab.experiments.probe.records import (
    GREEDY,
    PROBE_FILE,
    ProbeHeader,
    ProbeReply,
    read_probe,
)
from taskgate.lab.experiments.probe.variants import VARIANTS
from taskgate.lab.progress import Progress
from taskgate.lab.rundir import OnSkip
from taskgate.lab.scoring.summary import score_entries
from taskgate.llm.client import ChatClient, OnCall
from taskgate.protocol.actions import RESULTS_HEADER
from taskgate.roles import ChatMessage


@dataclass(frozen=True)
class ProbeConfig:
    """N samples per variant at the given sampling settings, and the greedy re-ask."""

    samples: int = 8
    temperature: float = 0.7
    top_p: float | None = 0.8
    top_k: int | None = None  # sent only when set (vLLM, llama.cpp and SGLang read it)
    seed: int = 0  # sample i is asked with seed + i, where the server honours seeds
    variants: tuple[str, ...] = tuple(VARIANTS)
    greedy: bool = True
    max_traps: int | None = None  # the first N trap turns only (a smoke run)
    cell: tuple[int, float] | None = None  # (S, density): the run's cell to probe
    concurrency: int = 8

    def __post_init__(self) -> None:
        unknown = [v for v in self.variants if v not in VARIANTS]
        if unknown:
            raise UsageError(f"unknown variant(s) {unknown}; choose from: {', '.join(VARIANTS)}")
        if self.samples < 0 or self.concurrency < 1:
            raise UsageError("samples must be 0 or more, and concurrency at least 1")
        if not 0.0 <= self.temperature <= 2.0:
            raise UsageError(f"temperature must be in [0, 2], got {self.temperature}")

    def header(self, source: Path, agent: str) -> ProbeHeader:
        return ProbeHeader(
            source=str(source),
            agent=agent,
            samples=self.samples,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            seed=self.seed,
            variants=self.variants,
            greedy=self.greedy,
            cell=self.cell,
        )


@dataclass(frozen=True)
class ProbeAsk:
    """One question of the probe: the trap turn, the variant and the sample (-1: greedy)."""

    trap: TrapTurn
    variant: str
    sample: int
    sampling: dict[str, float | int] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int, str, int]:
        return (self.trap.episode, self.trap.turn, self.variant, self.sample)


@dataclass(frozen=True)
class Answer:
    text: str
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ProbeAgent(Protocol):
    name: str

    async def ask(self, messages: list[ChatMessage], ask: ProbeAsk) -> Answer: ...


class LLMProbeAgent:
    """The agent model behind a client, asked at the probe's sampling settings."""

    kind = "llm"

    def __init__(self, client: ChatClient, on_call: OnCall | None = None) -> None:
        self._client, self._on_call = client, on_call
        self.name = f"{self.kind}:{client.model}"  # a resumed probe must ask the same model

    async def ask(self, messages: list[ChatMessage], ask: ProbeAsk) -> Answer:
        if ask.trap.tool and self.kind == CONSTRAINED:
            from taskgate.lab.agents.tools import ConstrainedToolAgent

            agent = ConstrainedToolAgent(self._client, self._on_call)
            return Answer(await agent.reply(messages, ask.sampling), self._client.model)
        sampling = ask.sampling
        done = await self._client.complete(messages, "agent", self._on_call, extra=sampling)  # type: ignore[arg-type]
        info = done.info
        return Answer(done.text, info.model, info.prompt_tokens, info.completion_tokens)


#: the harness's grammar-constrained model agent (the embedded model's, see agents/tools.py)
CONSTRAINED = "llm:constrained"


class ConstrainedProbeAgent(LLMProbeAgent):
    """The model constrained to answer a harness request with one tool call (the embedded
    model's smoke run of the tool probe)."""

    kind = CONSTRAINED


class ScriptedProbeAgent:
    """A scripted oracle: books the finished step again under the variants in ``rebook_on``
    (on the request's work order) and refers to the earlier completion under the others."""

    def __init__(self, rebook_on: Sequence[str] = ()) -> None:
        self.rebook_on = frozenset(rebook_on)
        self.name = "scripted:rebook=" + "+".join(sorted(self.rebook_on))

    async def ask(self, messages: list[ChatMessage], ask: ProbeAsk) -> Answer:
        t = ask.trap
        if t.tool and messages[-1]["content"].startswith(RESULTS_HEADER):
            return Answer("Noted; the results are above.")  # a harness hop after tool results
        if ask.variant in self.rebook_on:
            line = Booking.tool_call(t.code, t.work_order).line if t.tool else None
            return Answer(f"Done again.\n{line or f'ref {t.code}/{t.work_order}'}")
        return Answer(f"Step {t.step} is already done; no new work order booked.")


def probe_traps(
    source: Path, max_traps: int | None = None, cell: tuple[int, float] | None = None
) -> list[TrapTurn]:
    """The trap turns of the raw-transcript episode-arms of a testbed run directory, in one cell
    (S, density): ``cell``, or the run's only one."""
    entries = score_entries(source)
    raw = [e for e in entries if e.scored.score.arm == PROBED_ARM and e.scored.harness is None]
    cells = sorted({e.scored.cell[:2] for e in raw})
    if cell is None and len(cells) > 1:
        named = ", ".join(f"S={s} rho={d:g}" for s, d in cells)
        raise UsageError(
            f"{source} holds several cells ({named}); name one with --steps, --density"
        )
    if cell is not None:
        if cell not in cells:
            raise UsageError(
                f"{source} has no raw-transcript episodes at S={cell[0]} rho={cell[1]:g}"
            )
        raw = [e for e in raw if e.scored.cell[:2] == cell]
    if not raw:
        kinds = sorted({e.scored.score.arm for e in entries})
        harness = any(e.scored.harness for e in entries)
        what = "a real-tool harness run" if harness else f"a run of the arms {', '.join(kinds)}"
        raise LogFormatError(
            f"{source} is {what}: the probe re-asks the trap turns of the testbed's raw-transcript "
            "arm (run `taskgate ladder --arms raw ...` first)"
        )
    traps = [t for e in raw for t in trap_turns(e)]
    return traps[:max_traps] if max_traps is not None else traps


@dataclass(frozen=True)
class ProbePlan:
    """What a probe run will ask: checked against the source and the probe directory."""

    header: ProbeHeader
    fresh: bool  # the directory holds no probe yet
    done: int  # replies already there
    asks: list[ProbeAsk]


def plan_probe(
    source: Path,
    out: Path,
    agent: str,
    config: ProbeConfig,
    on_skip: OnSkip | None = None,
) -> ProbePlan:
    """The questions still to ask; an error, before any work, when ``source`` holds no
    raw-transcript run or ``out`` holds a probe of other settings."""
    traps = probe_traps(source, config.max_traps, config.cell)
    header = config.header(source.resolve(), agent)
    old, replies = read_probe(out, on_skip)
    PROBE_FILE.check(out, old, header)
    done = {r.key for r in replies}
    asks = [a for a in _asks(traps, config) if a.key not in done]
    return ProbePlan(header, old is None, len(done), asks)


async def run_probe(
    source: Path,
    out: Path,
    agent: ProbeAgent,
    config: ProbeConfig,
    progress: Progress | None = None,
    on_skip: OnSkip | None = None,
    plan: ProbePlan | None = None,
) -> Progress:
    """Probe every trap turn of ``source`` into ``out/probe.jsonl``; replies already there are
    kept (rerunning resumes). A question whose model call fails is left for a rerun. ``plan``:
    from :func:`plan_probe`, when the caller checked first."""
    plan = plan or plan_probe(source, out, agent.name, config, on_skip)
    asks = plan.asks
    out.mkdir(parents=True, exist_ok=True)
    progress = progress or Progress()
    progress.total = len(asks) + plan.done
    progress.skipped = plan.done
    for _ in range(plan.done):
        progress.advance()
    with PROBE_FILE.appending(out, plan.header, plan.fresh) as sink:
        pending = iter(asks)

        async def worker() -> None:
            for ask in pending:
                try:
                    answer = await agent.ask(VARIANTS[ask.variant].build(ask.trap), ask)
                except ModelError as exc:
                    progress.fail(f"{ask.trap.key} {ask.variant}#{ask.sample}: {exc}")
                    continue
                sink(_reply(ask, answer))
                progress.advance()

        await asyncio.gather(*(worker() for _ in range(min(config.concurrency, len(asks) or 1))))
    return progress


def _asks(traps: Sequence[TrapTurn], config: ProbeConfig) -> list[ProbeAsk]:
    out = []
    for t in traps:
        for v in config.variants if config.greedy else ():
            out.append(ProbeAsk(t, v, GREEDY, {"temperature": 0}))
        for v in config.variants:
            for i in range(config.samples):
                sampling: dict[str, float | int] = {
                    "temperature": config.temperature,
                    "seed": config.seed + i,
                }
                if config.top_p is not None:
                    sampling["top_p"] = config.top_p
                if config.top_k is not None:
                    sampling["top_k"] = config.top_k
                out.append(ProbeAsk(t, v, i, sampling))
    return out


def _reply(ask: ProbeAsk, answer: Answer) -> ProbeReply:
    t = ask.trap
    return ProbeReply(
        episode=t.episode,
        turn=t.turn,
        step=t.step,
        variant=ask.variant,
        sample=ask.sample,
        reply=answer.text,
        rebooked=rebooks(answer.text, t.code, t.work_order),
        recorded=t.recorded,
        model=answer.model,
        prompt_tokens=answer.prompt_tokens,
        completion_tokens=answer.completion_tokens,
    )
