"""What a ladder run is asked for: its cells, arms, roles and scale, and each episode-arm's key."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from taskgate.errors import UsageError
from taskgate.lab.arms.arm import Arm, ExchangeFn
from taskgate.lab.arms.registry import get_arm, memory_kind
from taskgate.lab.episodes.models import Episode, EpisodeParams
from taskgate.lab.episodes.records import HarnessStamp
from taskgate.lab.memory.factory import EMBEDDERS
from taskgate.lab.runner.roles import ROLES
from taskgate.llm.client import OnCall

#: episodes per cell (the paper's cells have 128): every episode of a cell is held in memory
MAX_EPISODES = 10_000


@dataclass(frozen=True)
class Cell:
    steps: int
    density: float
    corruption: float = 0.0

    @property
    def key(self) -> str:
        return f"S={self.steps} rho={self.density:g}" + (
            f" eps={self.corruption:g}" if self.corruption else ""
        )


@dataclass(frozen=True)
class LadderConfig:
    arms: Sequence[str]
    agent: str
    steps: Sequence[int] = (10,)
    densities: Sequence[float] = (0.15,)
    episodes: int = 16
    first_seed: int = 100
    compiler: str = "scripted"
    matcher: str = "scripted"
    domain: Literal["procurement", "release"] = "procurement"
    brief: Literal["amended", "original"] = "amended"
    para_tier: Literal[0, 1, 2] = 0
    ambiguous_rate: float = 0.0
    schedule: Literal["v1", "paper", "original"] = (
        "paper"  # the episodes' schedule (see the generator)
    )
    rewrites: Mapping[str, Sequence[str]] | None = None
    corruption: Sequence[float] = (0.0,)
    repair: bool = False
    bypass: bool = True
    concurrency: int = 8
    embedder: Literal["minilm", "hash"] = "minilm"  # the memory arms' (top-k and Mem0's)
    #: the thinking regime asked for: a model's budgets; a scripted agent's run is named by it
    #: too, so that both regimes of one grid stay two configurations
    think: bool = False

    def __post_init__(self) -> None:
        for name in self.arms:
            get_arm(name)  # fail before any work, naming the bad arm
        if self.embedder not in EMBEDDERS:
            raise UsageError(f"unknown embedder {self.embedder!r}; choose from: minilm, hash")
        ROLES.get("agent", self.agent)
        ROLES.get("compiler", self.compiler)
        ROLES.get("matcher", self.matcher)
        if not 1 <= self.episodes <= MAX_EPISODES:
            raise UsageError(f"episodes must be 1-{MAX_EPISODES} per cell, got {self.episodes}")
        if self.concurrency < 1:
            raise UsageError(f"concurrency must be at least 1, got {self.concurrency}")

    @property
    def needs_model(self) -> bool:
        """Whether a role calls a model, or an arm does (Mem0 extracts with the agent's model)."""
        mem0 = any(memory_kind(a) == "mem0" for a in self.arms)
        return mem0 or ROLES.any_needs_model(self.agent, self.compiler, self.matcher)

    def cells(self) -> list[Cell]:
        return [Cell(s, d, e) for s in self.steps for d in self.densities for e in self.corruption]

    def episode_params(self, cell: Cell) -> list[EpisodeParams]:
        return [
            EpisodeParams(
                seed=seed,
                steps=cell.steps,
                density=cell.density,
                domain=self.domain,
                brief=self.brief,
                para_tier=self.para_tier,
                ambiguous_rate=self.ambiguous_rate,
                schedule=self.schedule,
            )
            for seed in range(self.first_seed, self.first_seed + self.episodes)
        ]


class Variant(Protocol):
    """Another way to play an episode-arm than the testbed's text protocol: the real-tool harness
    (:class:`taskgate.lab.harness.runner.ToolHarness`) is one."""

    @property
    def stamp(self) -> HarnessStamp: ...

    def run_id(self, episode: Episode) -> str: ...

    def episode(self, episode: Episode) -> Episode: ...

    def exchange(self, arm: Arm, run_id: str, agent: str, on_call: OnCall) -> ExchangeFn: ...


def run_key(episode: Episode, arm: str, cell: Cell, variant: Variant | None = None) -> str:
    """The log's episode id of one episode under one cell (corruption makes distinct runs)."""
    base = variant.run_id(episode) if variant is not None else episode.id
    return base + (f"-eps{cell.corruption:g}" if cell.corruption else "")
