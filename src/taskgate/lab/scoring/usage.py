"""Overhead per episode (Table 7 / 11: tokens, matcher and compile calls, model and wall-clock
time) and compile accuracy per cell (Table 5), from the run log alone."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from taskgate.core.plan import Plan, Revision, StepSpec
from taskgate.lab.episodes.models import Episode
from taskgate.lab.episodes.tools import tool_plan
from taskgate.lab.rundir import Run
from taskgate.lab.scoring.report import where
from taskgate.lab.scoring.summary import CellKey, Entry
from taskgate.lab.scoring.table import Table


@dataclass
class UsageRow:
    config: str
    cell: CellKey
    arm: str
    episodes: int
    agent_calls: float  # per episode
    prompt: float  # agent tokens per episode
    completion: float
    total: float
    ratio_to_raw: float | None
    matcher_calls: float  # per episode
    compiler_tokens: float  # per episode: the compile this arm used, whichever arm made it
    refused: int  # refused bookings, all episodes
    failed_calls: int
    model_seconds: float  # per episode: the latency of every model call, summed
    wall_seconds: float | None  # per episode, from the end records (None in older logs)
    prefix_share: float | None = None  # mean share of an agent prompt its predecessor starts


def _groups(entries: Sequence[Entry]) -> dict[tuple[str, CellKey, str], list[Run]]:
    groups: dict[tuple[str, CellKey, str], list[Run]] = defaultdict(list)
    for e in entries:
        groups[(e.scored.config, e.scored.cell, e.scored.score.arm)].append(e.run)
    return groups


def usage_rows(entries: Sequence[Entry], arms: Sequence[str]) -> list[UsageRow]:
    groups = _groups(entries)
    rows: list[UsageRow] = []
    configs = list(dict.fromkeys(c for c, _, _ in groups))
    for config, cell in sorted(
        {(c, cell) for c, cell, _ in groups}, key=lambda k: (configs.index(k[0]), k[1])
    ):
        raw_total = None
        for arm in arms:
            group = groups.get((config, cell, arm))
            if not group:
                continue
            row = _usage(config, cell, arm, group)
            if arm == "raw":
                raw_total = row.total
            row.ratio_to_raw = (row.total / raw_total) if raw_total else None
            rows.append(row)
    return rows


def _usage(config: str, cell: CellKey, arm: str, group: list[Run]) -> UsageRow:
    n = len(group)
    compile_calls = [c for r in group for c in r.calls if c.purpose == "compiler"]
    calls = [c for r in group for c in r.calls if not c.shared]  # the calls this arm made
    agent = [c for c in calls if c.purpose == "agent"]
    prompt = sum(c.prompt_tokens for c in agent) / n
    completion = sum(c.completion_tokens for c in agent) / n
    walls = [r.seconds for r in group if r.seconds is not None]
    return UsageRow(
        config=config,
        cell=cell,
        arm=arm,
        episodes=n,
        agent_calls=len(agent) / n,
        prompt=prompt,
        completion=completion,
        total=prompt + completion,
        ratio_to_raw=None,
        matcher_calls=sum(1 for c in calls if c.purpose == "matcher") / n,
        compiler_tokens=sum(c.prompt_tokens + c.completion_tokens for c in compile_calls) / n,
        refused=sum(
            1
            for r in group
            for t in r.turns
            if t.policy.value != "ungated"
            for b in t.bookings
            if b.decision == "refuse" and not b.redisplay
        ),
        failed_calls=sum(1 for c in calls if c.error),
        model_seconds=sum(c.latency_s for c in calls) / n,
        wall_seconds=sum(walls) / len(walls) if walls else None,
        prefix_share=_mean([c.prefix_share for c in agent if c.prefix_share is not None]),
    )


def overhead(entries: Sequence[Entry], arms: Sequence[str]) -> Table:
    """Per episode: agent calls and tokens, the total against the raw arm, matcher calls,
    compile tokens, refused bookings, failed calls, summed model latency and wall-clock time."""
    rows = usage_rows(entries, arms)
    multi = len({r.config for r in rows}) > 1
    body = [
        [
            where(r.config, r.cell, multi),
            r.arm,
            f"{r.agent_calls:.1f}",
            f"{r.prompt / 1000:.1f}",
            f"{r.completion / 1000:.1f}",
            f"{r.total / 1000:.1f}",
            "--" if r.ratio_to_raw is None else f"{r.ratio_to_raw:.2f}",
            f"{r.matcher_calls:.1f}",
            f"{r.compiler_tokens:.0f}",
            f"{r.refused * 128 / r.episodes:.1f}",
            str(r.failed_calls),
            "--" if r.prefix_share is None else f"{r.prefix_share:.3f}",
            f"{r.model_seconds:.2f}",
            "--" if r.wall_seconds is None else f"{r.wall_seconds:.3f}",
        ]
        for r in rows
    ]
    header = [
        "cell",
        "arm",
        "agent calls",
        "prompt (k)",
        "completion (k)",
        "total (k)",
        "x raw",
        "matcher calls",
        "compile tokens",
        "rejected /128 ep.",
        "failed calls",
        "prefix share",
        "model s",
        "wall s",
    ]
    title = "Overhead per episode (agent tokens, matcher and compile calls, time; Table 7)"
    note = (
        "Per episode means, agent tokens in thousands (the paper's units); rejected bookings per "
        "128 episodes (the paper's grid), failed calls a total. model s: the latency of every "
        "model call of the episode-arm, summed; wall s: from its start to its end record."
    )
    return Table.of("overhead", title, header, body, note)


@dataclass
class CompileRow:
    config: str
    cell: CellKey
    n: int
    dep: float
    code: float
    cancel: float
    rewire: float
    relax: float


def compiled_revision(run: Run) -> Revision | None:
    """The revision the episode-arm compiled (``None`` before its revision turn ran)."""
    return next((t.compiled_revision for t in run.turns if t.label == "revision"), None)


def compile_accuracy(entries: Sequence[Entry]) -> list[CompileRow]:
    """Compiled graph and revision against the generator's, per configuration and (S, rho) (gate
    arms' compiles; each episode counted once, whatever corruption rates it ran under)."""
    seen: dict[tuple[str, str], tuple[CellKey, Episode, Plan, Revision | None]] = {}
    for e in entries:
        run = e.run
        if run.header.compiler == "generator":
            continue
        seen.setdefault(
            (e.scored.config, e.episode.id),
            (
                (*e.scored.cell[:2], 0.0),
                e.episode,
                run.header.compiled_plan,
                compiled_revision(run),
            ),
        )
    by_cell: dict[tuple[str, CellKey], list[tuple[Episode, Plan, Revision | None]]]
    by_cell = defaultdict(list)
    for (config, _), (cell, ep, plan, rev) in seen.items():
        by_cell[(config, cell)].append((ep, plan, rev))
    rows = []
    configs = list(dict.fromkeys(c for c, _ in by_cell))
    for (config, cell), items in sorted(
        by_cell.items(), key=lambda kv: (configs.index(kv[0][0]), kv[0][1])
    ):
        dep = code = steps = cancel = rewire = relax = 0
        for ep, plan, rev in items:
            truth = tool_plan(ep) if plan.binding == "tool" else ep.plan
            for sid, spec in truth.steps.items():
                got = plan.steps.get(sid)
                steps += 1
                dep += got is not None and set(got.deps) == set(spec.deps)
                code += got is not None and compiled_key(got, plan.binding) == truth.key(sid)
            c, w, x = revision_matches(rev, ep.revision)
            cancel, rewire, relax = cancel + c, rewire + w, relax + x
        n = len(items)
        rows.append(
            CompileRow(
                config, cell, n, dep / steps, code / steps, cancel / n, rewire / n, relax / n
            )
        )
    return rows


def revision_matches(got: Revision | None, wanted: Revision) -> tuple[bool, bool, bool]:
    """(cancel, rewires, relax) of a compiled revision, each as the generator's or not."""
    rev = got or Revision()
    return (
        rev.cancel == wanted.cancel,
        {w: set(p) for w, p in rev.rewires.items()}
        == {w: set(p) for w, p in wanted.rewires.items()},
        rev.relax == wanted.relax,
    )


def compile_table(entries: Sequence[Entry]) -> Table:
    rows = compile_accuracy(entries)
    multi = len({r.config for r in rows}) > 1
    body = [
        [
            where(r.config, r.cell, multi),
            str(r.n),
            f"{r.dep:.3f}",
            f"{r.code:.3f}",
            f"{r.cancel:.3f}",
            f"{r.rewire:.3f}",
            f"{r.relax:.3f}",
        ]
        for r in rows
    ]
    header = ["cell", "n", "Dep", "Code (tool)", "Cancel", "Rewire", "Relax"]
    title = "Compile accuracy against the generator (Table 5)"
    return Table.of("compile", title, header, body)


def compiled_key(spec: StepSpec, binding: str) -> str:
    """A compiled step's code (case-insensitive, as the gate reads it) or tool name."""
    return spec.tool.strip() if binding == "tool" else spec.code.strip().upper()


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
