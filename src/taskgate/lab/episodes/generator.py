"""The deterministic episode generator (Section 4.1 of the paper).

An episode is S steps drawn from a domain pool, a phase-consistent dependency DAG with extra-edge
density rho, a brief, and a 44-turn schedule: every step is asked once while it is eligible and in
no fixed order, one revision message lands mid-episode (a cancellation with its rewiring and one
relaxed prerequisite), and the fixed trap budget is interleaved with the asks: two premature asks,
two redo probes, one superseded cue and one legitimate redo. The rest are filler turns (or, at
``ambiguous_rate``, ambiguous probes that name two eligible steps).

That is the paper's schedule (``schedule="paper"``, the revised generator of its amended-brief
grid), S+6 scored turns per episode as its tables count them: the step the revision cancels is asked too, before the revision (Figure 3's s2) or after
it, where the request is for a cancelled step and scores as superseded. The legitimate-redo target
is drawn first, and the redo probes from the steps outside it and its descendants, the cancelled
step included; when fewer than two are left, the episode has fewer probes (a few S=5 episodes,
as in the paper's 1,405 scored turns over 128). The original grid's schedule (``schedule="original"``, Appendix E) is the same but for the redo
turns: two redo probes drawn first from every step, then the legitimate-redo target from the rest,
so a probe may be a descendant of the target. taskgate's first schedule (``schedule="v1"``, S+5)
never asked the cancelled step and always found two probes; it is kept for comparison with runs
made before.

The schedule is drawn by simulating a perfect run; ground truth is *not* taken from it: the scorer
recomputes every label from the bookings the agent actually made.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from taskgate.core.graph import TaskGraph
from taskgate.core.plan import Plan, Revision, StepSpec
from taskgate.errors import GeneratorError
from taskgate.lab.episodes.models import TURNS, Episode, EpisodeParams, Turn
from taskgate.lab.episodes.pools import FILLERS, POOLS, Template
from taskgate.protocol.render import render_brief

ROLE_INDEX = {"ask": 0, "premature": 1, "redo_probe": 2}
#: the schedules of the paper's two grids: the revised one (``paper``, the amended-brief grid) and
#: the original grid's (``original``); both S+6 scored turns
PAPER_SCHEDULES = frozenset({"paper", "original"})


def generate_episode(
    params: EpisodeParams, rewrites: Mapping[str, Sequence[str]] | None = None
) -> Episode:
    """Build the episode for ``params``; ``rewrites`` (slug -> 3 wordings) is needed for tier 2."""
    if params.para_tier == 2:
        _check_rewrites(rewrites, params.domain)
    rng = random.Random(f"taskgate/{params.domain}/{params.steps}/{params.density}/{params.seed}")
    templates, plan = _sample_plan(rng, params)
    cancel, revision = _sample_revision(rng, plan)
    paper = params.schedule in PAPER_SCHEDULES
    sample = {
        "paper": _paper_redo_targets,
        "original": _original_redo_targets,
        "v1": _sample_redo_targets,
    }[params.schedule]
    redo_target, probes = sample(rng, plan, cancel)
    revised = _revised_prerequisites(plan, revision)
    for _ in range(500):
        sched = _Schedule.draw(rng, plan, revision, revised, redo_target, probes, paper)
        if sched is not None:
            break
    else:  # pragma: no cover - the sampler always leaves room; this guards future edits
        raise GeneratorError(f"no feasible schedule for {params.key}")
    amb = random.Random(f"taskgate/ambiguous/{params.seed}/{params.ambiguous_rate}")
    turns = _words(rng, amb, params, plan, templates, revision, revised, sched.kinds, rewrites)
    return Episode(
        params=params,
        plan=plan,
        templates={s: t.slug for s, t in templates.items()},
        revision=revision,
        brief=render_brief(plan, amended=params.brief == "amended"),
        turns=turns,
    )


# -- the plan --------------------------------------------------------------------------------------
def _sample_plan(rng: random.Random, params: EpisodeParams) -> tuple[dict[str, Template], Plan]:
    ids = [f"s{i}" for i in range(1, params.steps + 1)]
    while True:  # redraw the rare template sets whose phases leave no room for a revision
        templates = dict(zip(ids, rng.sample(POOLS[params.domain], params.steps), strict=True))
        full = {b: [a for a in ids if templates[a].phase < templates[b].phase] for b in ids}
        if _revision_candidates(full):
            break
    codes = rng.sample(range(1000, 10000), params.steps)
    deps: dict[str, list[str]] = {s: [] for s in ids}
    for b in ids:
        for a in ids:
            if templates[a].phase < templates[b].phase and rng.random() < params.density:
                deps[b].append(a)
    # the revision needs a step with a dependent, and an edge to relax elsewhere
    _ensure_edges(rng, templates, deps)
    plan = Plan(
        steps={
            s: StepSpec(deps=tuple(deps[s]), code=f"RC-{c}", text=templates[s].text)
            for s, c in zip(ids, codes, strict=True)
        }
    )
    return templates, plan


def _ensure_edges(
    rng: random.Random, templates: dict[str, Template], deps: dict[str, list[str]]
) -> None:
    ids = list(templates)
    pairs = [(a, b) for a in ids for b in ids if templates[a].phase < templates[b].phase]
    while _revision_candidates(deps) == []:
        free = [(a, b) for a, b in pairs if a not in deps[b]]
        a, b = rng.choice(free)
        deps[b].append(a)


def _dependents(deps: Mapping[str, Sequence[str]], step: str) -> list[str]:
    return [w for w, ps in deps.items() if step in ps]


def _revision_candidates(deps: Mapping[str, Sequence[str]]) -> list[tuple[str, tuple[str, str]]]:
    """(cancel target, relax edge (w, u)) pairs with the relax edge away from the cancellation."""
    out: list[tuple[str, tuple[str, str]]] = []
    for c in deps:
        hit = _dependents(deps, c)
        if not hit:
            continue
        for w, ps in deps.items():
            if w == c or w in hit:
                continue
            out.extend((c, (w, u)) for u in ps if u != c)
    return out


def _sample_revision(rng: random.Random, plan: Plan) -> tuple[str, Revision]:
    deps = {s: list(spec.deps) for s, spec in plan.steps.items()}
    cancel, relax = rng.choice(_revision_candidates(deps))
    rewires = {w: tuple(u for u in deps[w] if u != cancel) for w in _dependents(deps, cancel)}
    return cancel, Revision(cancel=cancel, rewires=rewires, relax=relax)


def _descendants(plan: Plan, step: str) -> set[str]:
    out: set[str] = set()
    frontier = [step]
    while frontier:
        u = frontier.pop()
        for w, spec in plan.steps.items():
            if u in spec.deps and w not in out:
                out.add(w)
                frontier.append(w)
    return out


def _sample_redo_targets(rng: random.Random, plan: Plan, cancel: str) -> tuple[str, list[str]]:
    """The legitimate-redo target first; then two redo probes outside it and its descendants."""
    steps = [s for s in plan.steps if s != cancel]
    order = rng.sample(steps, len(steps))
    for redo in order:
        pool = [s for s in steps if s != redo and s not in _descendants(plan, redo)]
        if len(pool) >= 2:
            return redo, rng.sample(pool, 2)
    redo = order[0]
    pool = [s for s in steps if s != redo and s not in _descendants(plan, redo)] or [
        s for s in steps if s != redo
    ]
    return redo, [pool[0], pool[0]]


def _paper_redo_targets(rng: random.Random, plan: Plan, cancel: str) -> tuple[str, list[str]]:
    """The paper's: the legitimate-redo target first (any step but the cancelled one), then up to
    two redo probes from the steps outside it and its descendants (the cancelled one included)."""
    redo = rng.choice([s for s in plan.steps if s != cancel])
    below = _descendants(plan, redo)
    pool = [s for s in plan.steps if s != redo and s not in below]
    return redo, rng.sample(pool, min(2, len(pool)))


def _original_redo_targets(rng: random.Random, plan: Plan, cancel: str) -> tuple[str, list[str]]:
    """The original grid's (Appendix E: the revised generator "draws the legitimate-redo target
    first and redo probes exclude its descendants"; this one does neither): two redo probes from
    every step, the cancelled one included, then the legitimate-redo target from the steps left
    (not the cancelled one), whatever it is a prerequisite of."""
    probes = rng.sample(list(plan.steps), 2)
    redo = rng.choice([s for s in plan.steps if s != cancel and s not in probes])
    return redo, probes


def _revised_prerequisites(plan: Plan, revision: Revision) -> dict[str, set[str]]:
    """Each step's prerequisites once ``revision`` is applied, by the core's own revise."""
    graph = TaskGraph(plan)
    graph.apply(revision)
    return {s: set(graph.prerequisites(s)) for s in graph.steps}


# -- the schedule ----------------------------------------------------------------------------------
@dataclass
class _Schedule:
    """Turn kinds with their scripted step, drawn by simulating a perfect run."""

    kinds: list[tuple[str, str | None]] = field(default_factory=list)

    @classmethod
    def draw(
        cls,
        rng: random.Random,
        plan: Plan,
        revision: Revision,
        revised: dict[str, set[str]],
        redo: str,
        probes: list[str],
        paper: bool = False,
    ) -> _Schedule | None:
        deps = {s: set(spec.deps) for s, spec in plan.steps.items()}
        cancel = revision.cancel
        pending = [s for s in plan.steps if paper or s != cancel]
        done: set[str] = set()
        probes_left = list(probes)
        counts = {"premature": 2, "cue": 1, "legit": 1}
        fillers = TURNS - 1 - len(pending) - 2 - len(probes) - 1 - 1
        rev_at = rng.randint(15, 25)
        prematured: set[str] = set()
        out = cls()
        for t in range(TURNS):
            if t == rev_at:
                deps = {s: set(ps) for s, ps in revised.items()}
                if cancel is not None:  # once cancelled, asking it is a superseded request
                    deps[cancel] = set()
                out.kinds.append(("revision", cancel))
                continue
            blocked = [s for s in pending if not deps[s] <= done]
            eligible = [s for s in pending if deps[s] <= done]
            options: list[tuple[str, int]] = []
            if eligible:
                options.append(("ask", len(pending)))
            fresh_blocked = [s for s in blocked if s not in prematured] or blocked
            if counts["premature"] and fresh_blocked:
                options.append(("premature", counts["premature"]))
            if any(p in done for p in probes_left):
                options.append(("redo_probe", len(probes_left)))
            if counts["cue"] and t > rev_at:
                options.append(("cue", 1))
            if counts["legit"] and redo in done:
                options.append(("legit", 1))
            if fillers:
                options.append(("filler", fillers))
            if not options:
                return None
            kind = rng.choices([k for k, _ in options], weights=[w for _, w in options])[0]
            if kind == "ask":
                step = rng.choice(eligible)
                pending.remove(step)
                done.add(step)
                out.kinds.append(("ask", step))
            elif kind == "premature":
                step = rng.choice(fresh_blocked)
                prematured.add(step)
                counts["premature"] -= 1
                out.kinds.append(("premature", step))
            elif kind == "redo_probe":
                step = rng.choice([p for p in probes_left if p in done])
                probes_left.remove(step)
                out.kinds.append(("redo_probe", step))
            elif kind == "cue":
                counts["cue"] = 0
                out.kinds.append(("superseded_cue", cancel))
            elif kind == "legit":
                counts["legit"] = 0
                out.kinds.append(("legit_redo", redo))
            else:
                fillers -= 1
                out.kinds.append(("filler", None))
        finished = not pending and not probes_left and not any(counts.values()) and fillers == 0
        return out if finished else None


# -- the words -------------------------------------------------------------------------------------
def _phrase(
    params: EpisodeParams, tpl: Template, role: str, rewrites: Mapping[str, Sequence[str]] | None
) -> str:
    idx = ROLE_INDEX[role]
    if params.para_tier == 2:
        assert rewrites is not None
        return rewrites[tpl.slug][idx]
    if params.para_tier == 1:
        idx = (idx + 1) % 3
    return tpl.paraphrases[idx]


def cap(text: str) -> str:
    """``text`` with its first letter in upper case."""
    return text[:1].upper() + text[1:]


def revision_message(plan: Plan, revision: Revision) -> str:
    text = {s: spec.text for s, spec in plan.steps.items()}
    assert revision.cancel is not None
    parts = [
        f"Change of plan from the client: CANCEL the step '{text[revision.cancel]}' entirely "
        "-- it is no longer needed."
    ]
    for w, ps in revision.rewires.items():
        if ps:
            listed = ", ".join(f"'{text[u]}'" for u in ps)
            parts.append(f"As a result, '{text[w]}' now requires only: {listed}.")
        else:
            parts.append(f"As a result, '{text[w]}' now has no prerequisites.")
    if revision.relax is not None:
        w, u = revision.relax
        parts.append(f"Separately, '{text[w]}' no longer needs to wait for '{text[u]}'.")
    return " ".join(parts)


def _words(
    rng: random.Random,
    amb: random.Random,
    params: EpisodeParams,
    plan: Plan,
    templates: dict[str, Template],
    revision: Revision,
    revised: dict[str, set[str]],
    kinds: list[tuple[str, str | None]],
    rewrites: Mapping[str, Sequence[str]] | None,
) -> tuple[Turn, ...]:
    orders = iter(rng.sample(range(1000, 10000), TURNS))
    done: set[str] = set()
    deps = {s: set(spec.deps) for s, spec in plan.steps.items()}
    cancelled: set[str] = set()
    turns: list[Turn] = []
    for i, (kind, step) in enumerate(kinds):
        if kind == "revision":
            msg = revision_message(plan, revision)
            turns.append(Turn(index=i, label="revision", message=msg))
            cancelled.add(revision.cancel or "")
            deps = revised
            continue
        if kind == "filler":
            eligible = [s for s in plan.steps if s not in done | cancelled and deps[s] <= done]
            if len(eligible) >= 2 and amb.random() < params.ambiguous_rate:
                a, b = amb.sample(eligible, 2)
                wo = f"#W{next(orders)}"
                msg = (
                    f"Go ahead with the next piece of work -- '{templates[a].text}' or "
                    f"'{templates[b].text}', whichever you think ({wo})."
                )
                turns.append(
                    Turn(index=i, label="ambiguous", message=msg, work_order=wo, candidates=(a, b))
                )
            else:
                turns.append(Turn(index=i, label="filler", message=rng.choice(FILLERS)))
            continue
        assert step is not None
        wo = f"#W{next(orders)}"
        tpl = templates[step]
        if kind in ROLE_INDEX:
            msg = f"{cap(_phrase(params, tpl, kind, rewrites))} ({wo})."
            if kind == "ask":
                done.add(step)
        elif kind == "superseded_cue":
            msg = f"Quick check -- where do we stand on '{tpl.text}' ({wo})?"
        elif (
            params.schedule in PAPER_SCHEDULES
        ):  # Figure 3: "a problem was found ... redo it now (#W8637)."
            msg = (
                f"Quality control: a problem was found with the earlier result of '{tpl.text}', "
                f"so it has to be done over. Please redo it now ({wo})."
            )
        else:
            msg = (
                f"Quality control found a problem with the earlier result of '{tpl.text}', so it "
                f"has to be done over. Please redo it now ({wo})."
            )
        turns.append(
            Turn(
                index=i,
                label=kind,
                message=msg,
                work_order=wo,
                step=step,
                explicit_redo=kind == "legit_redo",
            )
        )
    return tuple(turns)


def _check_rewrites(rewrites: Mapping[str, Sequence[str]] | None, domain: str) -> None:
    if rewrites is None:
        raise GeneratorError("paraphrase tier 2 needs a rewrite cache (--rewrites FILE)")
    for tpl in POOLS[domain]:
        got = rewrites.get(tpl.slug)
        if got is None or len(got) < 3 or not all(isinstance(x, str) and x.strip() for x in got):
            raise GeneratorError(
                f"the rewrite cache needs three non-empty wordings for template {tpl.slug!r}"
            )
