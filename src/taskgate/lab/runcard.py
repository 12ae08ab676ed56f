"""A run directory's card (``run.json``): the configuration its runs were made with.

``taskgate ladder`` and ``taskgate run`` check the card before anything starts and write it as
the first episode-arm starts: resuming under another configuration (another model, schedule,
brief, decoding, seeds, taskgate version...) would pool two experiments in one table, so a rerun
whose card differs is refused with one line naming each difference. The endpoints are recorded
but not compared (the same model may move host), and a directory whose run logged nothing is
not held. The
grid may grow on purpose: with ``--extend``, more arms, step counts, densities or episodes (the
old ones kept) are added and the card becomes their union; anything else still refuses. The
report prints the card above its tables (:func:`describe`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from taskgate._version import __version__
from taskgate.errors import LogFormatError, UsageError
from taskgate.files import read_text

CARD = "run.json"
#: the fields ``--extend`` may grow (lists by adding values, ``episodes`` upward)
GRID = ("arms", "steps", "densities", "episodes")
#: recorded and shown, not compared: a model served from another host or port, or by more or
#: fewer replicas, is the same model
SHOWN = ("endpoints",)
#: how each field is named to the user (its flag, where it has one)
FLAGS = {
    "command": "the command", "agent": "--agent", "compiler": "--compiler",
    "matcher": "--matcher", "models": "the models", "endpoints": "the endpoints",
    "arms": "--arms", "steps": "--steps", "densities": "--density", "episodes": "--episodes",
    "first_seed": "--seed", "episodes_file": "--episodes", "domain": "--domain",
    "brief": "--brief", "schedule": "--schedule", "para_tier": "--para-tier",
    "ambiguous_rate": "--ambiguous-rate", "rewrites": "--rewrites",
    "corruption": "--corruption", "repair": "--repair",
    "bypass": "--bypass", "embedder": "--embedder", "think": "--think",
    "enable_thinking": "--enable-thinking", "deepseek_thinking": "--deepseek-thinking",
    "max_tokens": "--max-tokens",
    "version": "the taskgate version",
}  # fmt: skip


class RunCard(BaseModel):
    """What a run directory's runs were made with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    agent: str
    compiler: str
    matcher: str
    #: each role's model ("" for a role that is scripted) and endpoints ("embedded": SmolLM2)
    models: dict[str, str]
    endpoints: dict[str, list[str]]
    arms: list[str]
    steps: list[int] = []
    densities: list[float] = []
    episodes: int = 0
    first_seed: int = 0
    episodes_file: str = ""  # ``taskgate run``: the episodes file's SHA-256
    domain: str = ""
    brief: str = ""
    schedule: str = ""
    para_tier: int = 0
    ambiguous_rate: float = 0.0
    rewrites: str = ""  # the tier-2 rewrite cache's SHA-256 (``--rewrites``)
    corruption: list[float] = [0.0]
    repair: bool = False
    bypass: bool = True
    embedder: str = "minilm"
    think: bool = False
    enable_thinking: bool | None = None
    deepseek_thinking: bool | None = None
    max_tokens: int | None = None
    version: str = __version__


def load(out: Path) -> RunCard | None:
    """The card of run directory ``out`` (``None`` when it has none)."""
    path = out / CARD
    if not path.exists():
        return None
    try:
        return RunCard.model_validate_json(read_text(path, "run card"))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the card"
        raise LogFormatError(f"{path}: {where}: {first['msg']}") from None


def settle(out: Path, card: RunCard, extend: bool = False, started: bool = False) -> RunCard:
    """What run directory ``out`` will hold once this run starts: ``card``, or with ``extend``
    the union of the grids. A :class:`UsageError` naming every difference when ``out`` holds
    another card (grown grids aside, with ``extend``). ``started``: ``out`` already holds runs
    (then a missing card is refused too: their configuration is unknown). Nothing is written:
    :func:`write` it as the run starts."""
    held = load(out)
    if held is not None and not started:  # a run that never logged anything: nothing to pool
        return card
    if held is None:
        if started:
            raise UsageError(
                f"{out} holds runs but no {CARD} (made before run cards, or not by taskgate): "
                "their configuration is unknown; use another --out directory"
            )
        return card
    old, new = _effective(held), _effective(card)
    differ = [
        f
        for f in RunCard.model_fields
        if f not in SHOWN and _same(getattr(old, f)) != _same(getattr(new, f))
    ]
    if not differ:
        return held.model_copy(update={f: getattr(card, f) for f in SHOWN})
    grown = [f for f in differ if f in GRID and _grows(getattr(held, f), getattr(card, f))]
    if extend and len(grown) == len(differ):
        # the new card's settings (those that could not act before may act now: the embedder
        # once memory arms join), the grid the union of both
        return card.model_copy(
            update={f: _union(getattr(held, f), getattr(card, f)) for f in grown}
            | {f: getattr(card, f) for f in SHOWN}
        )
    shown = "; ".join(
        f"{FLAGS[f]} {_show(getattr(held, f))} (this run: {_show(getattr(card, f))})"
        for f in differ
    )
    hint = (
        "add --extend to grow the grid (more --arms, --steps, --density or --episodes), "
        if any(f in GRID for f in differ) and not extend
        else ""
    )
    raise UsageError(
        f"{out} was run with another configuration: {shown}; rerun with the same settings, "
        f"{hint}or use another --out directory"
    )


def started(out: Path) -> bool:
    """Whether run directory ``out`` already holds runs (a log with something in it)."""
    log = out / "log.jsonl"
    return log.exists() and log.stat().st_size > 0


def describe(card: RunCard) -> str:
    """The card in one line, for the top of a report."""
    roles = ", ".join(
        f"{role} {name}" + (f" ({card.models[role]} at {', '.join(card.endpoints[role])})"
                            if card.models.get(role) else "")
        for role, name in (("agent", card.agent), ("compiler", card.compiler),
                           ("matcher", card.matcher), ("memory", "mem0"))
        if role != "memory" or card.models.get(role)
    )  # fmt: skip
    grid = (
        f"steps {_show(card.steps)}, density {_show(card.densities)}, "
        f"{card.episodes} episode(s) from seed {card.first_seed}"
        if card.steps
        else f"episodes file sha256 {card.episodes_file[:12]}"
    )
    think = "think" if card.think else "no-think"
    if card.enable_thinking is not None:
        think += f", enable_thinking={str(card.enable_thinking).lower()}"
    if card.deepseek_thinking is not None:
        think += f", deepseek thinking={'enabled' if card.deepseek_thinking else 'disabled'}"
    return (
        f"taskgate {card.command} (taskgate {card.version}): {roles}; arms {_show(card.arms)}; "
        f"{grid}; schedule {card.schedule or '-'}, brief {card.brief or '-'}, "
        f"domain {card.domain or '-'}; {think}, max tokens {card.max_tokens or 'default'}"
    )


#: the settings that act only through a model, and the one that acts only on the memory arms
_MODEL_SETTINGS = {"think": False, "enable_thinking": None, "deepseek_thinking": None,
                   "max_tokens": None}  # fmt: skip
_MEMORY_ARMS = ("topk-", "mem0-")


def _effective(card: RunCard) -> RunCard:
    """``card`` with the settings that could not act on its run at their defaults: the decoding
    of a run where no role calls a model, the embedder of a run without memory arms. A rerun that
    differs only in those is the same run."""
    update: dict[str, Any] = {}
    if not any(card.models.values()):
        update |= _MODEL_SETTINGS
    if not any(a.startswith(_MEMORY_ARMS) for a in card.arms):
        update["embedder"] = "minilm"
    return card.model_copy(update=update)


def _same(value: Any) -> Any:
    """``value`` as compared: a list (arms, sizes, densities, rates) as a set, since its order
    means nothing (a report orders arms by the ladder and cells by size)."""
    return frozenset(value) if isinstance(value, list) else value


def _grows(old: Any, new: Any) -> bool:
    if isinstance(old, list):
        return set(old) <= set(new)
    return bool(isinstance(old, int) and new >= old)


def _union(old: Any, new: Any) -> Any:
    if isinstance(old, list):
        return [*old, *(v for v in new if v not in old)]
    return max(old, new)


def _show(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_show(v)}" for k, v in value.items()) or "-"
    return (value or "-") if isinstance(value, str) else str(value)


def write(out: Path, card: RunCard) -> None:
    """Write ``card`` into ``out`` (atomically)."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{CARD}.tmp"
    tmp.write_text(card.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(out / CARD)


def sha256_of(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()
