"""The serialized forms of a plan and of a revision (what a compiler produces).

These are data: they may be defective (an empty code, a prerequisite that names no step, a cycle).
:func:`taskgate.validate` reports such defects; :class:`taskgate.TaskGraph` refuses them unless it is
built ``lenient`` (the paper lets compile errors flow into the module's state uncorrected).
"""

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


class StepSpec(BaseModel):
    """One step of a plan: its prerequisites (``deps``), completion code or tool, and wording.

    In a code-bound plan a step is executed by a booking of its completion ``code``; in a
    tool-bound plan by a successful call of its ``tool`` (the code is then empty).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    deps: tuple[str, ...] = ()
    code: str = ""
    tool: str = ""
    text: str = ""
    #: runs again on each new request for it (a booking, a message, a payment); a one-shot
    #: step (the default) runs again only on an explicit redo
    repeatable: bool = False
    #: when the gate asks a person before a call of this step runs: when it cannot tell the
    #: user agreed to exactly this call (``auto``, the default), before every call (``always``:
    #: payments, deletions), or never (``never``: the state alone decides, for harmless steps)
    confirm: Literal["auto", "always", "never"] = "auto"

    @model_serializer(mode="wrap")
    def _code_bound_as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A code-bound step serializes exactly as before tools existed (no ``tool`` key), and a
        one-shot step as before repeatable steps existed (no ``repeatable`` key)."""
        data: dict[str, Any] = handler(self)
        if not self.tool:
            data.pop("tool", None)
        if not self.repeatable:
            data.pop("repeatable", None)
        if self.confirm == "auto":
            data.pop("confirm", None)
        return data


class Plan(BaseModel):
    """Steps by id, in brief order: ``{"steps": {"s1": {"deps": [], "code": "RC-1234"}}}``.

    ``binding`` says what identifies a step's execution: its completion code (``"code"``, the
    paper's text protocol) or its tool (``"tool"``: ``{"binding": "tool", "steps": {"s1":
    {"tool": "draft_rfq"}}}``, the real-tool harness and any agent whose steps are tool calls).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    binding: Literal["code", "tool"] = "code"
    steps: dict[str, StepSpec] = Field(min_length=1)

    @model_serializer(mode="wrap")
    def _code_bound_as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A code-bound plan serializes exactly as before tools existed (no ``binding`` key)."""
        data: dict[str, Any] = handler(self)
        if self.binding == "code":
            data.pop("binding", None)
        return data

    def key(self, step: str) -> str:
        """What identifies ``step``'s execution: its completion code or its tool."""
        spec = self.steps[step]
        return spec.tool if self.binding == "tool" else spec.code

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

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    cancel: str | None = None
    rewires: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    relax: tuple[str, str] | None = None

    @field_validator("rewires", mode="before")
    @classmethod
    def _null_rewires(cls, value: object) -> object:
        return {} if value is None else value
