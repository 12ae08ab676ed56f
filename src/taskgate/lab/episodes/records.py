"""The run log: one JSON line per record, from which every reported number is regenerated.

Per episode-arm: an ``episode`` record when it starts (compiled state, validator defects), one
``turn`` record per turn and one ``call`` record per model call as they happen, and an ``end``
record when it finishes. A run without its
``end`` record was interrupted and is rerun from its start.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from taskgate.core.plan import Plan, Revision
from taskgate.core.verdict import Policy, Reason
from taskgate.lab.episodes.models import Label
from taskgate.llm.calls import CallInfo


def _drop_unset(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Leave out later fields (the tool harness's, ask-back's) when unset, so that testbed records
    serialize exactly as they did before those existed (the pinned grid hashes them)."""
    for key in keys:
        if data.get(key) is None:
            data.pop(key, None)
    return data


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    episode: str
    arm: str


class BookingRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    work_order: str
    span: tuple[int, int]
    reply_index: int
    decision: Literal["admit", "refuse"]
    reason: Reason | None = None
    step: str | None = None  # the step the module's code map names
    redisplay: bool = False
    tool: str | None = None  # a tool call of the real-tool harness (``code`` is then empty)

    @model_serializer(mode="wrap")
    def _as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _drop_unset(handler(self), ("tool",))


class Execution(BaseModel):
    """One execution observed in the harness's workspace: a stamped block of a tool's artifact."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str
    work_order: str


class HarnessStamp(BaseModel):
    """What ran a real-tool harness episode: the harness, its agent mode and library versions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    mode: Literal["actions", "native"]
    langgraph: str
    taskgate: str


class MatchRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    step: str | None
    explicit_redo: bool
    candidates: tuple[str, ...] | None = None  # the steps an ask-back named (no step matched)

    @model_serializer(mode="wrap")
    def _as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _drop_unset(handler(self), ("candidates",))


class RecallRecord(BaseModel):
    """A memory arm's search at one turn: the items recalled and the store's size then."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    items: list[str]
    store: int


class EpisodeRecord(_Record):
    kind: Literal["episode"] = "episode"
    source: str  # the id of the episode in episodes.jsonl
    agent: str
    compiler: str
    matcher: str
    corruption: float = 0.0
    repair: bool = False
    compiled_plan: Plan
    plan_defects: list[str] = Field(default_factory=list)
    harness: HarnessStamp | None = None  # set on the real-tool harness's episodes
    memory: str | None = None  # a memory arm's store, e.g. ``topk:minilm:k5``
    #: the agent's reasoning regime (``think`` / ``no-think`` and the switch sent, see
    #: :attr:`taskgate.llm.endpoint.Endpoint.regime`); unset for a scripted agent
    regime: str | None = None

    @model_serializer(mode="wrap")
    def _as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _drop_unset(handler(self), ("harness", "memory", "regime"))


class TurnRecord(_Record):
    kind: Literal["turn"] = "turn"
    index: int
    label: Label
    step: str | None
    work_order: str | None
    explicit_redo: bool = False
    matched: MatchRecord | None = None
    directive: str | None = None
    policy: Policy
    user: str
    replies: list[str]
    bookings: list[BookingRecord] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list)
    corruptions: list[str] = Field(default_factory=list)
    repaired: int = 0
    compiled_revision: Revision | None = None
    revision_defects: list[str] = Field(default_factory=list)
    #: the real-tool harness: the executions the workspace received during this turn, in order
    executions: list[Execution] | None = None
    #: the clarifying question the runtime asked instead of calling the agent (see ask-back)
    ask_back: str | None = None
    #: a memory arm's search for this turn (see :mod:`taskgate.lab.arms.memory`)
    recall: RecallRecord | None = None
    #: the agent's reasoning regime, as on the episode record (unset for a scripted agent)
    regime: str | None = None

    @model_serializer(mode="wrap")
    def _as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _drop_unset(handler(self), ("executions", "ask_back", "recall", "regime"))

    @property
    def visible_reply(self) -> str:
        return self.replies[-1]


class CallRecord(CallInfo, _Record):
    """One model call made for this episode-arm (its compile calls included)."""

    kind: Literal["call"] = "call"
    #: a copy of a compile call that another episode-arm (or an earlier run) made for the compile
    #: this one used: so every arm that used a compile shows its cost, whichever arm made it and
    #: whether or not the run was resumed; it is no call of its own (no latency, no failure)
    shared: bool | None = None

    @model_serializer(mode="wrap")
    def _as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _drop_unset(handler(self), ("shared",))


class EndRecord(_Record):
    kind: Literal["end"] = "end"
    turns: int
    #: wall-clock seconds from the episode-arm's start to its end (absent in older logs)
    seconds: float | None = None

    @model_serializer(mode="wrap")
    def _as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _drop_unset(handler(self), ("seconds",))


Record = Annotated[EpisodeRecord | TurnRecord | CallRecord | EndRecord, Field(discriminator="kind")]
