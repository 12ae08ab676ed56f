"""From a run directory to per-(cell, arm) rows and paired contrasts between arms."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..episodes.models import Episode
from ..errors import LogFormatError
from ..rundir import EPISODES, LOG, OnSkip, read_episodes, read_log
from .scorer import CHANNELS, DENOMINATOR, EpisodeScore, score_episode
from .stats import holm, mcnemar_exact, wilson

CellKey = tuple[int, float, float]  # steps, density, corruption


@dataclass
class Scored:
    cell: CellKey
    seed: int
    score: EpisodeScore
    harness: str | None = None  # a real-tool harness episode-arm: its agent mode


def score_run(out: Path, on_skip: OnSkip | None = None) -> list[Scored]:
    """Score every complete episode-arm in a run directory. Lines of the log that cannot be read
    are skipped and reported to ``on_skip`` (see :func:`taskgate.rundir.read_log`)."""
    episodes = {e.id: e for e in read_episodes(out / EPISODES)}
    runs = read_log(out / LOG, on_skip)
    if not runs:
        raise LogFormatError(f"{out / LOG} holds no finished episode-arm")
    scored = []
    for _key, run in sorted(runs.items()):
        header, turns = run.header, run.turns
        ep: Episode | None = episodes.get(header.source)
        if ep is None:
            raise LogFormatError(
                f"{out / LOG}:{run.line}: names episode {header.source!r}, absent from "
                f"{out / EPISODES}"
            )
        cell = (ep.params.steps, ep.params.density, header.corruption)
        mode = header.harness.mode if header.harness is not None else None
        scored.append(Scored(cell, ep.params.seed, score_episode(ep, turns), mode))
    return scored


@dataclass
class Row:
    """One (cell, arm): strict success with its Wilson interval, and everything behind it."""

    arm: str
    steps: int
    density: float
    corruption: float
    n: int
    successes: int
    rate: float
    ci_low: float
    ci_high: float
    da_successes: int
    da_rate: float
    da_ci_low: float
    da_ci_high: float
    per_turn_accuracy: float
    channels: dict[str, int]
    channel_rates: dict[str, float | None]
    refused: int
    false_completions: int
    redisplays: int
    stale: int
    matcher_agreement: float | None
    redo_precision: float | None
    redo_recall: float | None
    directives: dict[str, int] = field(default_factory=dict)
    obeyed: dict[str, int] = field(default_factory=dict)
    matched_labels: dict[str, int] = field(default_factory=dict)  # turns the matcher saw
    ask_backs: dict[str, int] = field(default_factory=dict)  # of those, asked back

    def json_row(self) -> dict[str, object]:
        return dict(vars(self))


def summarize(scored: Sequence[Scored], arms: Sequence[str]) -> list[Row]:
    rows = []
    cells = sorted({s.cell for s in scored})
    for cell in cells:
        for arm in arms:
            group = [s.score for s in scored if s.cell == cell and s.score.arm == arm]
            if group:
                rows.append(_row(cell, arm, group))
    return rows


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def _row(cell: CellKey, arm: str, group: list[EpisodeScore]) -> Row:
    n = len(group)
    k = sum(s.primary.strict for s in group)
    kd = sum(s.decline_aware.strict for s in group)
    channels: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    directives: Counter[str] = Counter()
    obeyed: Counter[str] = Counter()
    matched: Counter[str] = Counter()
    asked: Counter[str] = Counter()
    for s in group:
        matched.update(s.matched_labels)
        asked.update(s.ask_backs)
        channels.update(s.primary.channels)
        labels.update(s.primary.labels)
        directives.update(s.directives)
        obeyed.update(s.obeyed)
    lo, hi = wilson(k, n)
    dlo, dhi = wilson(kd, n)
    tp, fp, fn = (sum(getattr(s, a) for s in group) for a in ("redo_tp", "redo_fp", "redo_fn"))
    refused = sum(s.refused for s in group)
    return Row(
        arm=arm,
        steps=cell[0],
        density=cell[1],
        corruption=cell[2],
        n=n,
        successes=k,
        rate=k / n,
        ci_low=lo,
        ci_high=hi,
        da_successes=kd,
        da_rate=kd / n,
        da_ci_low=dlo,
        da_ci_high=dhi,
        per_turn_accuracy=sum(s.primary.correct_turns for s in group)
        / max(1, sum(s.primary.scored_turns for s in group)),
        channels={c: channels[c] for c in CHANNELS},
        channel_rates={
            c: _ratio(channels[c], labels[DENOMINATOR[c]]) for c in CHANNELS if c in DENOMINATOR
        },
        refused=refused,
        false_completions=sum(s.false_completions for s in group),
        redisplays=sum(s.redisplays for s in group),
        stale=sum(s.stale for s in group),
        matcher_agreement=_ratio(
            sum(s.matcher_agree for s in group), sum(s.matcher_total for s in group)
        ),
        redo_precision=_ratio(tp, tp + fp),
        redo_recall=_ratio(tp, tp + fn),
        directives=dict(directives),
        obeyed=dict(obeyed),
        matched_labels=dict(matched),
        ask_backs={k: v for k, v in asked.items() if v},
    )


@dataclass(frozen=True)
class Contrast:
    cell: CellKey
    lower: str
    upper: str
    scoring: str
    n: int
    only_lower: int
    only_upper: int
    p: float
    p_holm: float


def adjacent_contrasts(scored: Sequence[Scored], arms: Sequence[str]) -> list[Contrast]:
    """Exact McNemar between adjacent arms on shared seeds, Holm over all of one scoring."""
    out: list[Contrast] = []
    for scoring in ("primary", "decline-aware"):
        raw = []
        for cell in sorted({s.cell for s in scored}):
            for lower, upper in itertools.pairwise(arms):
                a = _outcomes(scored, cell, lower, scoring)
                b = _outcomes(scored, cell, upper, scoring)
                seeds = sorted(set(a) & set(b))
                if not seeds:
                    continue
                t = mcnemar_exact([a[x] for x in seeds], [b[x] for x in seeds])
                raw.append((cell, lower, upper, t))
        adjusted = holm([t.p for *_, t in raw])
        out += [
            Contrast(cell, lo, up, scoring, t.n, t.b, t.c, t.p, ph)
            for (cell, lo, up, t), ph in zip(raw, adjusted, strict=True)
        ]
    return out


def _outcomes(scored: Sequence[Scored], cell: CellKey, arm: str, scoring: str) -> dict[int, bool]:
    return {
        s.seed: (s.score.primary if scoring == "primary" else s.score.decline_aware).strict
        for s in scored
        if s.cell == cell and s.score.arm == arm
    }
