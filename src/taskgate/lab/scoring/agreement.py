"""Matcher agreement with the scripted step, per label and wording tier (Table 4's third block).

A probe is one user turn of a generated episode with the episode's exact plan: the matcher sees the
plan and the message, and is scored against the scripted step. Tiers ``0`` and ``1`` are the
generator's own paraphrases (the calibration set), ``2`` a rewrite cache (``--rewrites``), and
``heldout`` the wordings in ``heldout.json`` beside this module, written for evaluation only and
never used to tune a threshold. Fillers (and the held-out set's chatter) are probes too: the right
answer is no step and no ask-back.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from taskgate.core.plan import Plan
from taskgate.errors import GeneratorError
from taskgate.lab.episodes.generator import ROLE_INDEX, cap, generate_episode
from taskgate.lab.episodes.models import Episode, EpisodeParams
from taskgate.roles import Match, Matcher

LABELS = ("ask", "premature", "redo_probe", "superseded_cue", "legit_redo", "ambiguous", "filler")
#: the paper's agreement figure (0.976) is over these
CORE_LABELS = frozenset({"ask", "premature", "redo_probe"})


@dataclass(frozen=True, slots=True)
class Probe:
    episode: Episode
    tier: str
    label: str
    message: str
    step: str | None
    explicit_redo: bool = False
    candidates: tuple[str, ...] = ()

    @property
    def plan(self) -> Plan:
        return self.episode.plan


@dataclass
class Tally:
    """Counts for one (tier, label) cell."""

    n: int = 0
    agree: int = 0  # step equal to the scripted one (ambiguous: asked back naming both steps)
    ask_back: int = 0  # no step, with candidates to ask about
    redo_flag: int = 0


@dataclass
class Agreement:
    matcher: str
    cells: dict[tuple[str, str], Tally] = field(default_factory=lambda: defaultdict(Tally))
    redo: Counter[str] = field(default_factory=Counter)  # tp, fp, fn over step probes

    def add(self, probe: Probe, got: Match) -> None:
        cell = self.cells[(probe.tier, probe.label)]
        cell.n += 1
        asked = got.step is None and bool(got.candidates)
        cell.ask_back += asked
        cell.redo_flag += got.explicit_redo
        if probe.label == "ambiguous":
            cell.agree += asked and set(got.candidates[:2]) == set(probe.candidates)
        else:
            cell.agree += got.step == probe.step and not (probe.step is None and asked)
        if probe.step is not None:
            self.redo["tp"] += got.explicit_redo and probe.explicit_redo
            self.redo["fp"] += got.explicit_redo and not probe.explicit_redo
            self.redo["fn"] += probe.explicit_redo and not got.explicit_redo

    def overall(self, tier: str, labels: Iterable[str] = CORE_LABELS) -> tuple[int, int]:
        want = set(labels)
        got = [c for (t, lab), c in self.cells.items() if t == tier and lab in want]
        return sum(c.agree for c in got), sum(c.n for c in got)

    def as_json(self) -> dict[str, Any]:
        tiers = sorted({t for t, _ in self.cells})
        return {
            "matcher": self.matcher,
            "cells": [
                {"tier": t, "label": lab, **vars(c)}
                for (t, lab), c in sorted(self.cells.items(), key=lambda kv: probe_order(kv[0]))
            ],
            "overall": {t: dict(zip(("agree", "n"), self.overall(t), strict=True)) for t in tiers},
            "redo": dict(self.redo),
        }


def probe_order(key: tuple[str, str]) -> tuple[str, int]:
    """(tier, label) cells in table order: by tier, then by label as :data:`LABELS` lists them."""
    return key[0], LABELS.index(key[1]) if key[1] in LABELS else len(LABELS)


def heldout() -> dict[str, Any]:
    """The held-out wordings: rewrites (3 per template), ambiguous, legit_redo and chatter."""
    text = resources.files(__package__).joinpath("heldout.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def _probe(ep: Episode, tier: str, label: str, message: str, **kw: Any) -> Probe:
    return Probe(ep, tier, label, message, **kw)


def episode_probes(ep: Episode, tier: str) -> Iterator[Probe]:
    """The episode's own turns as probes (revision turns are not requests)."""
    for t in ep.turns:
        if t.label != "revision":
            yield _probe(
                ep,
                tier,
                t.label,
                t.message,
                step=t.step,
                explicit_redo=t.explicit_redo,
                candidates=t.candidates,
            )


def heldout_probes(ep: Episode, words: Mapping[str, Any]) -> Iterator[Probe]:
    """The episode's turns reworded from the held-out set (superseded cues have no held-out
    wording and are left out)."""
    said = words["rewrites"]
    for i, t in enumerate(ep.turns):
        wo = f" ({t.work_order})" if t.work_order else ""
        if t.label in ROLE_INDEX:
            assert t.step is not None
            text = said[ep.templates[t.step]][ROLE_INDEX[t.label]]
            yield _probe(ep, "heldout", t.label, f"{cap(text)}{wo}.", step=t.step)
        elif t.label == "legit_redo":
            assert t.step is not None
            form = _pick(words["legit_redo"], i, ep)
            text = form.format(x=said[ep.templates[t.step]][0])
            yield _probe(
                ep, "heldout", t.label, f"{cap(text)}{wo}.", step=t.step, explicit_redo=True
            )
        elif t.label == "ambiguous":
            a, b = t.candidates
            form = _pick(words["ambiguous"], i, ep)
            text = form.format(a=said[ep.templates[a]][0], b=said[ep.templates[b]][0])
            yield _probe(
                ep, "heldout", t.label, f"{cap(text)}{wo}.", step=None, candidates=t.candidates
            )
        elif t.label == "filler":
            yield _probe(ep, "heldout", t.label, _pick(words["chatter"], i, ep), step=None)


def _pick(options: Sequence[str], i: int, ep: Episode) -> str:
    return options[(i + ep.params.seed) % len(options)]


def probes(
    tiers: Sequence[str],
    domains: Sequence[str],
    seeds: Sequence[int],
    steps: int = 15,
    ambiguous_rate: float = 0.15,
    rewrites: Mapping[str, Sequence[str]] | None = None,
) -> Iterator[Probe]:
    """Every probe of the episodes at ``seeds`` in each domain, per tier."""
    words = heldout() if "heldout" in tiers else {}
    for tier in tiers:
        if tier not in ("0", "1", "2", "heldout"):
            raise GeneratorError(f"unknown wording tier {tier!r}; choose from 0, 1, 2, heldout")
        para = 0 if tier == "heldout" else int(tier)
        for domain in domains:
            for seed in seeds:
                params = EpisodeParams(
                    seed=seed,
                    steps=steps,
                    domain=domain,
                    para_tier=para,
                    ambiguous_rate=ambiguous_rate,
                    schedule="paper",
                )
                ep = generate_episode(params, rewrites)
                yield from (
                    heldout_probes(ep, words) if tier == "heldout" else episode_probes(ep, tier)
                )


async def evaluate(
    name: str, matcher: Matcher | Callable[[Episode], Matcher], items: Iterable[Probe]
) -> Agreement:
    """Run ``matcher`` (or the one ``matcher(episode)`` builds for each episode) over every probe
    and tally its answers."""
    out = Agreement(name)
    built: dict[str, Matcher] = {}
    for probe in items:
        if callable(matcher):
            key = probe.episode.id
            if key not in built:
                built = {key: matcher(probe.episode)}
            got = await built[key].match(probe.plan, probe.message)
        else:
            got = await matcher.match(probe.plan, probe.message)
        out.add(probe, got)
    return out
