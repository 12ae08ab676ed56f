"""Token usage per arm (Appendix B.5) and compile accuracy per cell (Table 6), from a run log."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core.plan import Plan, Revision, StepSpec
from ..episodes.models import Episode
from ..harness.brief import tool_plan
from ..rundir import Key, Run

CellKey = tuple[int, float, float]


@dataclass
class UsageRow:
    cell: CellKey
    arm: str
    episodes: int
    prompt: float  # agent tokens per episode
    completion: float
    total: float
    ratio_to_raw: float | None
    matcher_calls: float  # per episode
    compiler_tokens: float  # per episode, when this arm made the (shared) compile call
    refused: int  # refused bookings, all episodes
    failed_calls: int
    prefix_share: float | None = None  # mean share of an agent prompt its predecessor starts


def _cell(ep: Episode, run: Run) -> CellKey:
    return (ep.params.steps, ep.params.density, run.header.corruption)


def usage_rows(
    runs: Mapping[Key, Run], episodes: Mapping[str, Episode], arms: Sequence[str]
) -> list[UsageRow]:
    groups: dict[tuple[CellKey, str], list[Run]] = defaultdict(list)
    for (_, arm), run in runs.items():
        groups[(_cell(episodes[run.header.source], run), arm)].append(run)
    rows: list[UsageRow] = []
    for cell in sorted({c for c, _ in groups}):
        raw_total = None
        for arm in arms:
            group = groups.get((cell, arm))
            if not group:
                continue
            n = len(group)
            agent = [c for r in group for c in r.calls if c.purpose == "agent"]
            prompt = sum(c.prompt_tokens for c in agent) / n
            completion = sum(c.completion_tokens for c in agent) / n
            total = prompt + completion
            if arm == "raw":
                raw_total = total
            rows.append(
                UsageRow(
                    cell=cell,
                    arm=arm,
                    episodes=n,
                    prompt=prompt,
                    completion=completion,
                    total=total,
                    ratio_to_raw=(total / raw_total) if raw_total else None,
                    matcher_calls=sum(1 for r in group for c in r.calls if c.purpose == "matcher")
                    / n,
                    compiler_tokens=sum(
                        c.prompt_tokens + c.completion_tokens
                        for r in group
                        for c in r.calls
                        if c.purpose == "compiler"
                    )
                    / n,
                    refused=sum(
                        1
                        for r in group
                        for t in r.turns
                        if t.policy.value != "ungated"
                        for b in t.bookings
                        if b.decision == "refuse" and not b.redisplay
                    ),
                    failed_calls=sum(1 for r in group for c in r.calls if c.error),
                    prefix_share=_mean(
                        [c.prefix_share for c in agent if c.prefix_share is not None]
                    ),
                )
            )
    return rows


@dataclass
class CompileRow:
    cell: CellKey
    n: int
    dep: float
    code: float
    cancel: float
    rewire: float
    relax: float


def compile_accuracy(runs: Mapping[Key, Run], episodes: Mapping[str, Episode]) -> list[CompileRow]:
    """Compiled graph and revision against the generator's, per cell (gate arms' compiles)."""
    seen: dict[str, tuple[CellKey, Plan, Revision | None]] = {}
    for run in runs.values():
        if run.header.compiler in ("generator",):
            continue
        ep = episodes[run.header.source]
        revision = next((t.compiled_revision for t in run.turns if t.label == "revision"), None)
        seen.setdefault(ep.id, (_cell(ep, run), run.header.compiled_plan, revision))
    by_cell: dict[CellKey, list[tuple[Episode, Plan, Revision | None]]] = defaultdict(list)
    for eid, (cell, plan, rev) in seen.items():
        by_cell[cell].append((episodes[eid], plan, rev))
    rows = []
    for cell, items in sorted(by_cell.items()):
        dep = code = steps = cancel = rewire = relax = 0
        for ep, plan, rev in items:
            truth = tool_plan(ep) if plan.binding == "tool" else ep.plan
            for sid, spec in truth.steps.items():
                got = plan.steps.get(sid)
                steps += 1
                dep += got is not None and set(got.deps) == set(spec.deps)
                code += got is not None and _key(got, plan.binding) == truth.key(sid)
            wanted = ep.revision
            rev = rev or Revision()
            cancel += rev.cancel == wanted.cancel
            rewire += {w: set(p) for w, p in rev.rewires.items()} == {
                w: set(p) for w, p in wanted.rewires.items()
            }
            relax += rev.relax == wanted.relax
        n = len(items)
        rows.append(
            CompileRow(cell, n, dep / steps, code / steps, cancel / n, rewire / n, relax / n)
        )
    return rows


def _key(spec: StepSpec, binding: str) -> str:
    """A compiled step's code (case-insensitive, as the gate reads it) or tool name."""
    return spec.tool.strip() if binding == "tool" else spec.code.strip().upper()


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
