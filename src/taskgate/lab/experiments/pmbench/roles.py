"""The PM-Bench rungs' model roles: the record's compiler and the matcher, on a model.

The compiler turns text the agent sees (the daily header, a morning plan, a vignette the keyword
selector picked) into record operations. The matcher reads the pending intentions, the step's
vignette, the state responses the agent obtained and the action menu, and names the menu handles
whose trigger is visible now; it also resolves each menu handle to the intention it carries out
(what receipts and the state-bound gate use). Both are JSON prompts with one corrective re-ask;
what the model still gets wrong flows into the record uncorrected. Scripted versions (the
benchmark's truth) live in :mod:`.scripted`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from taskgate.lab.experiments.pmbench.record import CompileReply, IntentionRecord, Op, describe
from taskgate.llm.client import ChatClient, OnCall
from taskgate.llm.roles import ask_json


@dataclass(frozen=True)
class Truth:
    """What only scripted roles may read: the benchmark's own state at this point."""

    due: frozenset[str] = frozenset()  # handles due now
    task_of: Mapping[str, str] = field(default_factory=dict)  # handle -> task or lure id
    label_of: Mapping[str, str] = field(default_factory=dict)  # task id -> its label
    needs: Mapping[str, str] = field(default_factory=dict)  # due handle -> the channel showing it


@dataclass(frozen=True)
class StepView:
    """What the agent sees at one step: the vignette, the menu, the state responses so far."""

    day: str
    step_id: str
    text: str
    menu: Mapping[str, str]  # handle -> action text, in menu order
    responses: Sequence[str] = ()  # "State [ch]: ..." lines obtained this step
    truth: Truth = field(default_factory=Truth)


def read_channels(responses: Sequence[str]) -> set[str]:
    """The channels the ``State [channel]: ...`` lines of a step come from."""
    return {r.split("]", 1)[0].removeprefix("State [") for r in responses}


@dataclass(frozen=True)
class Judgement:
    due: frozenset[str]  # the handles the matcher resolved as triggered now
    resolved: Mapping[str, tuple[str, ...]]  # handle -> the intentions it carries out (or none)
    problem: str | None = None  # the matcher's reply was unusable: nothing announced


class IntentionCompiler(Protocol):
    def wants(self, text: str, truth: CompileTruth) -> bool:
        """Whether a vignette goes to the compiler (the plans always do)."""
        ...

    async def compile(
        self, text: str, record: IntentionRecord, day: str, where: str, truth: CompileTruth
    ) -> tuple[list[Op], list[str]]:
        """The operations, and a problem line for each part of the reply that was unusable."""
        ...


class DueJudge(Protocol):
    async def judge(self, record: IntentionRecord, view: StepView) -> Judgement: ...


@dataclass(frozen=True)
class CompileTruth:
    """The benchmark's own record changes at this point (scripted compiler only)."""

    ops: tuple[Op, ...] = ()


_COMPILE = """You keep an intention record for a person living through a simulated week. \
From the TEXT below, write the operations that change the record.

Operations (JSON objects):
- {{"op": "add", "text": "<what to do>", "trigger": "cue" | "time" | "channel", \
"when": "<cue phrase>" | "HH:MM" | "<channel>", "day": "<weekday or every day>"}}
- {{"op": "cancel", "id": "<id>"}}
- {{"op": "retime", "id": "<id>", "when": "HH:MM", "day": "<weekday>"}}
- {{"op": "recue", "id": "<id>", "trigger": "cue" | "channel", "when": "<cue phrase or channel>"}}
A cue is something that happens in the story (breakfast, a friend arriving). A time is a clock \
time. A channel is hidden state the person must look up: {channels}.

Today is {day}. The record now:
{record}

TEXT ({where}):
{text}

Reply with JSON only: {{"ops": [...]}}, or {{"ops": []}} if the text changes nothing."""


def _record_lines(record: IntentionRecord) -> str:
    lines = [f"- {i.id} [{i.status}] {i.day}: {i.text} ({describe(i)})" for i in record.items]
    return "\n".join(lines) or "(empty)"


class LLMIntentionCompiler:
    def __init__(self, client: ChatClient, on_call: OnCall | None = None) -> None:
        self._client, self._on_call = client, on_call

    def wants(self, text: str, truth: CompileTruth) -> bool:
        return selects(text)

    async def compile(
        self, text: str, record: IntentionRecord, day: str, where: str, truth: CompileTruth
    ) -> tuple[list[Op], list[str]]:
        prompt = _COMPILE.format(
            channels=", ".join(record.channels) or "(none)",
            day=day,
            record=_record_lines(record),
            where=where,
            text=text,
        )
        got, problem = await ask_json(self._client, prompt, CompileReply, "compiler", self._on_call)
        if got is None:
            return [], [f"{where}: the compiler's reply was unusable: {problem}"]
        ops, problems = got.valid()
        return ops, [f"{where}: {p}" for p in problems]


class _Due(BaseModel):
    model_config = ConfigDict(extra="ignore")

    handle: str = Field(max_length=40)
    intention: str | None = Field(default=None, max_length=40)


class _JudgeReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    resolve: dict[str, str | None] = Field(default_factory=dict, max_length=60)
    due: list[_Due] = Field(default_factory=list, max_length=60)


_JUDGE = """Pending intentions:
{pending}

What the person sees now ({day}):
{text}
{responses}
Action menu:
{menu}

1. For each menu handle, which pending intention does it carry out (null if none)?
2. Which handles carry out an intention whose trigger is visible now: its cue is in the text, \
its time is what a clock reading above shows (or up to 60 minutes past it), or its channel's \
response above shows it? A time or channel you cannot see is not visible.
Reply with JSON only: {{"resolve": {{"<handle>": "<intention id>" | null, ...}}, \
"due": [{{"handle": "<handle>", "intention": "<intention id>"}}, ...]}}"""


class LLMDueJudge:
    def __init__(self, client: ChatClient, on_call: OnCall | None = None) -> None:
        self._client, self._on_call = client, on_call

    async def judge(self, record: IntentionRecord, view: StepView) -> Judgement:
        pending = record.pending(view.day)
        if not pending:
            return Judgement(frozenset(), {})
        prompt = _JUDGE.format(
            pending="\n".join(f"- {i.id}: {i.text} ({describe(i)})" for i in pending),
            day=view.day,
            text=view.text,
            responses="\n".join(view.responses) + ("\n" if view.responses else ""),
            menu="\n".join(f"- {h}: {t}" for h, t in view.menu.items()),
        )
        got, problem = await ask_json(self._client, prompt, _JudgeReply, "matcher", self._on_call)
        if got is None:
            return Judgement(frozenset(), {}, problem or "unusable reply")
        known = {i.id for i in pending}
        resolved = {  # an explicit null, or an unknown id: the handle carries out no intention
            h: ((i,) if i in known else ()) for h, i in got.resolve.items() if h in view.menu
        }
        due = {d.handle for d in got.due if d.handle in view.menu}
        for d in got.due:
            if d.handle in view.menu and d.intention in known and not resolved.get(d.handle):
                resolved[d.handle] = (str(d.intention),)
        return Judgement(frozenset(due), resolved)


#: the keyword selector: a vignette that may change the record (a note for later, a correction,
#: a cancellation, a reschedule) goes to the compiler; the others do not
_SELECT = re.compile(
    r"\b(?:cancel\w*|call(?:ed)? off|instead|no longer|not needed|(?:don't|do not|won't) need"
    r"|skip|resched\w*|postpon\w*|push(?:ed)? (?:back|to)|moved?|chang\w*|switch\w*|replac\w*"
    r"|delay\w*|earlier|later|actually|update\w*|remind\w*|note|tomorrow|next week"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    re.IGNORECASE,
)


def selects(text: str) -> bool:
    """Whether the keyword selector sends a vignette to the compiler."""
    return _SELECT.search(text) is not None


_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "at",
        "of",
        "for",
        "on",
        "in",
        "and",
        "or",
        "my",
        "your",
        "you",
        "with",
        "from",
        "is",
        "it",
        "this",
        "that",
        "be",
        "do",
        "up",
        "out",
        "off",
        "by",
        "as",
    ]
)


def _words(text: str) -> set[str]:
    return {w.rstrip("s") for w in _WORD.findall(text.lower()) if w not in _STOP}


def lexical(action: str, record: IntentionRecord, day: str) -> tuple[str, ...]:
    """The intentions of ``day`` whose text shares the most content words with a menu action
    (at least half of the action's), all of them on a tie: the resolution a rung without a
    matcher call uses for receipts."""
    want = _words(action)
    if not want:
        return ()
    scores = {i.id: len(want & _words(i.text)) / len(want) for i in record.today(day)}
    top = max(scores.values(), default=0.0)
    return tuple(i for i, s in scores.items() if s == top) if top >= 0.5 else ()
