"""Episodes as data: the parameters, the plan, the revision and the 44 labelled turns."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from taskgate.core.plan import Plan, Revision

Label = Literal[
    "ask",
    "premature",
    "redo_probe",
    "superseded_cue",
    "legit_redo",
    "ambiguous",
    "filler",
    "revision",
]
#: Labels of turns that carry a request for one scripted step (the matcher's scored turns).
STEP_LABELS: frozenset[str] = frozenset(
    {"ask", "premature", "redo_probe", "superseded_cue", "legit_redo"}
)
TURNS = 44


class EpisodeParams(BaseModel):
    """Everything an episode is generated from; equal parameters give byte-identical episodes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int
    steps: int = Field(10, ge=5, le=18)
    density: float = Field(0.15, ge=0.0, le=1.0)
    domain: Literal["procurement", "release"] = "procurement"
    brief: Literal["amended", "original"] = "amended"
    para_tier: Literal[0, 1, 2] = 0
    ambiguous_rate: float = Field(0.0, ge=0.0, le=1.0)
    #: ``paper``: the paper's schedule, S+6 scored turns (every step asked, the cancelled one
    #: included); ``original``: the paper's original grid's (its redo probes drawn before the
    #: redo target, descendants not excluded); ``v1``: taskgate's first schedule, S+5 (the cancelled step never asked). The
    #: field's default is ``v1`` so that episodes written before it existed read back as they
    #: were; :class:`taskgate.lab.LadderConfig` and the CLI default to ``paper``.
    schedule: Literal["v1", "paper", "original"] = "v1"

    @model_serializer(mode="wrap")
    def _as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``v1`` episodes serialize as they did before the field existed (pinned bytes)."""
        data: dict[str, Any] = handler(self)
        if data.get("schedule") == "v1":
            data.pop("schedule")
        return data

    @field_validator("density", "ambiguous_rate")
    @classmethod
    def _round(cls, v: float) -> float:
        return round(v, 6)

    @property
    def key(self) -> str:
        """A short id, unique per parameter set: used for file names and caches."""
        return (
            f"{self.domain}-S{self.steps}-d{self.density:g}-{self.brief}-p{self.para_tier}"
            f"-a{self.ambiguous_rate:g}{'' if self.schedule == 'v1' else '-' + self.schedule}"
            f"-seed{self.seed}"
        )


class Turn(BaseModel):
    """One user turn. ``step`` is the scripted step; ``label`` the scripted label."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    label: Label
    message: str
    work_order: str | None = None
    step: str | None = None
    explicit_redo: bool = False
    candidates: tuple[str, ...] = ()  # the two steps an ambiguous probe names


class Episode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    params: EpisodeParams
    plan: Plan
    templates: dict[str, str]  # step id -> template slug
    revision: Revision
    brief: str
    turns: tuple[Turn, ...]

    @property
    def id(self) -> str:
        return self.params.key
