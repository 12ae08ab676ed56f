"""From a run directory to per-(cell, arm) rows and paired contrasts between arms."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from taskgate.errors import LogFormatError
from taskgate.lab.episodes.models import Episode, EpisodeParams
from taskgate.lab.episodes.records import CallRecord, EpisodeRecord
from taskgate.lab.rundir import EPISODES, LOG, Key, OnSkip, Run, read_episodes, read_log
from taskgate.lab.scoring.scorer import (
    CHANNELS,
    DENOMINATOR,
    TRAP_DIRECTIVES,
    EpisodeScore,
    score_episode,
)
from taskgate.lab.scoring.stats import holm, mcnemar_exact, wilson

CellKey = tuple[int, float, float]  # steps, density, corruption


@dataclass
class Scored:
    cell: CellKey
    seed: int
    score: EpisodeScore
    harness: str | None = None  # a real-tool harness episode-arm: its agent mode
    config: str = ""  # the configuration it belongs to (see :func:`configuration`)
    key: Key = ("", "")  # (run id, arm) in its log
    regime: str | None = None  # the agent's reasoning regime (None: a scripted agent)
    model: str = ""  # the configuration without the regime: "within model" (Table 2's family)
    brief: str = "amended"
    schedule: str = "paper"
    #: the configuration without brief, schedule and regime: what Table 14 pairs across them
    base: str = ""


def configuration(
    header: EpisodeRecord,
    params: EpisodeParams,
    model: str | None = None,
    drop: Collection[str] = (),
) -> str:
    """The configuration an episode-arm belongs to, as a report's row label: the agent (with the
    model its calls went to), and whatever else differs from the defaults (brief, schedule,
    wording tier, ambiguous rate, domain, receipts repair), then the agent's reasoning regime
    (``think`` / ``no-think``), so that both regimes of one model are two configurations. Runs of
    one configuration pool; runs of two never do. Compiler and matcher are the arms' own (text
    arms use neither), so :func:`taskgate.lab.reporting.load_runs` checks that pooled runs agree
    on them. ``drop`` leaves out some of ``brief``, ``schedule`` and ``regime`` (what a table
    pairs, such as Table 14's briefs)."""
    parts = [f"{header.agent}:{model}" if model else header.agent]
    if params.brief != "amended" and "brief" not in drop:
        parts.append(f"brief={params.brief}")
    if params.schedule != "paper" and "schedule" not in drop:
        parts.append(f"schedule={params.schedule}")
    if params.para_tier:
        parts.append(f"tier={params.para_tier}")
    if params.ambiguous_rate:
        parts.append(f"ambiguous={params.ambiguous_rate:g}")
    if params.domain != "procurement":
        parts.append(f"domain={params.domain}")
    if header.repair:
        parts.append("repair")
    if header.regime and "regime" not in drop:
        parts.append(header.regime)
    return ", ".join(parts)


@dataclass
class Entry:
    """One finished episode-arm of a run directory: its score, its log and its episode."""

    scored: Scored
    run: Run
    episode: Episode
    source: Path  # the run directory


def check_run_dir(out: Path) -> None:
    """Raise a one-line error unless ``out`` is a run directory."""
    if not out.is_dir():
        raise LogFormatError(f"{out} is not a directory (give the --out directory of a run)")
    if not (out / EPISODES).exists() or not (out / LOG).exists():
        missing = EPISODES if not (out / EPISODES).exists() else LOG
        raise LogFormatError(
            f"{out} is not a run directory: it has no {missing} (give the --out directory of a "
            "ladder, run or tools command)"
        )


def score_entries(out: Path, on_skip: OnSkip | None = None) -> list[Entry]:
    """Score every complete episode-arm in a run directory, keeping its log and episode. Lines
    of the log that cannot be read are skipped and reported to ``on_skip`` (see
    :func:`taskgate.lab.rundir.read_log`)."""
    check_run_dir(out)
    episodes = {e.id: e for e in read_episodes(out / EPISODES)}
    runs = read_log(out / LOG, on_skip)
    if not runs:
        raise LogFormatError(f"{out / LOG} holds no finished episode-arm")
    entries = []
    for key, run in sorted(runs.items()):
        header = run.header
        ep: Episode | None = episodes.get(header.source)
        if ep is None:
            raise LogFormatError(
                f"{out / LOG}:{run.line}: names episode {header.source!r}, absent from "
                f"{out / EPISODES}"
            )
        score = score_episode(ep, run.turns)
        scored = scored_of(header, ep, score, key, agent_model(run.calls))
        entries.append(Entry(scored, run, ep, out))
    return entries


def scored_of(
    header: EpisodeRecord, ep: Episode, score: EpisodeScore, key: Key, model: str | None
) -> Scored:
    """An episode-arm's score with what the report groups it by (cell, seed, configuration);
    ``model``: the model of its first agent call, if any."""
    p = ep.params
    mode = header.harness.mode if header.harness is not None else None
    cell = (p.steps, p.density, header.corruption)
    return Scored(
        cell,
        p.seed,
        score,
        mode,
        configuration(header, p, model),
        key,
        header.regime,
        configuration(header, p, model, drop=("regime",)),
        p.brief,
        p.schedule,
        configuration(header, p, model, drop=("regime", "brief", "schedule")),
    )


def agent_model(calls: Sequence[CallRecord]) -> str | None:
    """The model an episode-arm's agent called (``None`` for a scripted agent)."""
    return next((c.model for c in calls if c.purpose == "agent"), None)


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
    config: str = ""
    #: each channel's denominator: the turns the schedule gave its label (the paper's fixed
    #: denominator, App D.2: 2 redo probes per episode, and so on)
    label_turns: dict[str, int] = field(default_factory=dict)
    #: each channel's numerator: the turns of its label on which it fired, each turn once
    channel_on_label: dict[str, int] = field(default_factory=dict)
    #: per channel, the turns on which it fired, whatever their label (Table 19's turn counts)
    channel_turns: dict[str, int] = field(default_factory=dict)
    #: episodes in which the agent obeyed every trap directive (BLOCKED, DONE, CANCELLED)
    traps_obeyed: int = 0
    regime: str | None = None  # the agent's reasoning regime (None: a scripted agent)
    model: str = ""  # the configuration without the regime (see :class:`Scored`)
    brief: str = "amended"
    schedule: str = "paper"
    base: str = ""  # the configuration without brief, schedule and regime
    scored_turns: int = 0  # the per-turn accuracy's denominator

    @property
    def cell(self) -> CellKey:
        return (self.steps, self.density, self.corruption)

    def json_row(self) -> dict[str, object]:
        return dict(vars(self))


def summarize(scored: Sequence[Scored], arms: Sequence[str]) -> list[Row]:
    """One row per (configuration, cell, arm), in that order (configurations as first seen)."""
    groups: dict[tuple[str, CellKey, str], list[EpisodeScore]] = {}
    for s in scored:
        groups.setdefault((s.config, s.cell, s.score.arm), []).append(s.score)
    configs = list(dict.fromkeys(s.config for s in scored))
    like = {s.config: s for s in scored}
    rows = []
    for config in configs:
        f = like[config]
        for cell in sorted({c for g, c, _ in groups if g == config}):
            for arm in arms:
                group = groups.get((config, cell, arm))
                if group:
                    row = _row(cell, arm, group, config)
                    rows.append(
                        replace(
                            row,
                            regime=f.regime,
                            model=f.model or config,
                            brief=f.brief,
                            schedule=f.schedule,
                            base=f.base or config,
                        )
                    )
    return rows


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def _row(cell: CellKey, arm: str, group: list[EpisodeScore], config: str = "") -> Row:
    n = len(group)
    k = sum(s.primary.strict for s in group)
    kd = sum(s.decline_aware.strict for s in group)
    channels: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    on_label: Counter[str] = Counter()
    turns: Counter[str] = Counter()
    directives: Counter[str] = Counter()
    obeyed: Counter[str] = Counter()
    matched: Counter[str] = Counter()
    asked: Counter[str] = Counter()
    for s in group:
        matched.update(s.matched_labels)
        asked.update(s.ask_backs)
        channels.update(s.primary.channels)
        labels.update(s.primary.scheduled)
        on_label.update(s.primary.on_label)
        turns.update(c for errors in s.primary.errors.values() for c in set(errors))
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
            c: _ratio(on_label[c], labels[DENOMINATOR[c]]) for c in CHANNELS if c in DENOMINATOR
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
        config=config,
        scored_turns=sum(s.primary.scored_turns for s in group),
        label_turns={c: labels[DENOMINATOR[c]] for c in CHANNELS if c in DENOMINATOR},
        channel_on_label={c: on_label[c] for c in CHANNELS if c in DENOMINATOR},
        channel_turns={c: turns[c] for c in CHANNELS},
        traps_obeyed=sum(
            all(s.obeyed[t] == s.directives[t] for t in TRAP_DIRECTIVES) for s in group
        ),
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
    config: str = ""
    family: str = ""  # the Holm family's key ("" for every contrast of the scoring)
    family_size: int = 0  # how many contrasts it holds


#: a Holm family as a table's caption declares it, within a scoring: every contrast (the
#: inventory, Table 8); each model's, both regimes together (Table 2); each configuration's (one
#: regime of a model: Table 15's); or each base configuration's, across briefs and schedules too
#: (Table 14's, over the contrasts it prints)
Within = Literal["scoring", "model", "config", "base"]


def adjacent_contrasts(
    scored: Sequence[Scored], arms: Sequence[str], within: Within = "scoring"
) -> list[Contrast]:
    """Exact McNemar between adjacent arms on shared seeds, per configuration and cell; Holm over
    the family ``within`` names."""
    pairs = list(itertools.pairwise(arms))
    return [c for scoring in SCORINGS for c in pair_contrasts(scored, pairs, scoring, within)]


SCORINGS = ("primary", "decline-aware")


def pair_contrasts(
    scored: Sequence[Scored],
    pairs: Sequence[tuple[str, str]],
    scoring: str = "primary",
    within: Within = "scoring",
) -> list[Contrast]:
    """Exact McNemar for each (lower, upper) pair of arms on shared seeds, per configuration and
    cell, under one scoring; Holm over the family ``within`` names (all of them, or each model's:
    its configurations' contrasts, both reasoning regimes together)."""
    outcomes: dict[tuple[str, CellKey, str], dict[int, bool]] = {}
    for s in scored:
        sc = s.score.primary if scoring == "primary" else s.score.decline_aware
        outcomes.setdefault((s.config, s.cell, s.score.arm), {})[s.seed] = sc.strict
    configs = list(dict.fromkeys(s.config for s in scored))
    key_of = {
        s.config: {"scoring": "", "model": s.model or s.config, "config": s.config}.get(
            within, s.base or s.config
        )
        for s in scored
    }
    raw = []
    for config in configs:
        for cell in sorted({s.cell for s in scored if s.config == config}):
            for lower, upper in pairs:
                a = outcomes.get((config, cell, lower), {})
                b = outcomes.get((config, cell, upper), {})
                seeds = sorted(set(a) & set(b))
                if not seeds:
                    continue
                t = mcnemar_exact([a[x] for x in seeds], [b[x] for x in seeds])
                raw.append((config, cell, lower, upper, t))
    family = [key_of[config] for config, *_ in raw]
    adjusted: list[float] = [0.0] * len(raw)
    sizes: list[int] = [0] * len(raw)
    for key in dict.fromkeys(family):
        members = [i for i, f in enumerate(family) if f == key]
        for i, ph in zip(members, holm([raw[i][4].p for i in members]), strict=True):
            adjusted[i], sizes[i] = ph, len(members)
    return [
        Contrast(cell, lo, up, scoring, t.n, t.b, t.c, t.p, ph, config, fam, size)
        for (config, cell, lo, up, t), ph, fam, size in zip(
            raw, adjusted, family, sizes, strict=True
        )
    ]
