"""The serialized forms of a plan and of a revision (what a compiler produces).

These are data: they may be defective (an empty code, a prerequisite that names no step, a cycle).
:func:`taskgate.validate` reports such defects; :class:`taskgate.TaskGraph` refuses them unless it is
built ``lenient`` (the paper lets compile errors flow into the module's state uncorrected).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class StepSpec(BaseModel):
    """One step of a plan: its prerequisites (``deps``), completion code and wording."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    deps: tuple[str, ...] = ()
    code: str
    text: str = ""


class Plan(BaseModel):
    """Steps by id, in brief order: ``{"steps": {"s1": {"deps": [], "code": "RC-1234"}}}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    steps: dict[str, StepSpec] = Field(min_length=1)

    @field_validator("steps")
    @classmethod
    def _ids_are_words(cls, steps: dict[str, StepSpec]) -> dict[str, StepSpec]:
        for sid in steps:
            if not sid or sid != sid.strip() or any(c.isspace() for c in sid):
                raise ValueError(f"step id {sid!r} must be non-empty and contain no whitespace")
        return steps


class Revision(BaseModel):
    """A mid-project revision: ``cancel(v)``, ``rewire(w, P)`` for each rewire, ``relax(w, u)``.

    ``relax`` is ``[w, u]``: step ``w`` no longer requires ``u`` (the paper's JSON order).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    cancel: str | None = None
    rewires: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    relax: tuple[str, str] | None = None

    @field_validator("rewires", mode="before")
    @classmethod
    def _null_rewires(cls, value: object) -> object:
        return {} if value is None else value
