"""The LLM compiler, matcher and agent: the protocols of :mod:`taskgate.roles` on a model.

Each JSON reply is validated; a malformed one gets one corrective re-ask. What the model still gets
wrong flows into the module's state uncorrected (the validator reports it): an unusable graph
becomes the brief's steps with empty codes, an unusable revision an empty one, an unusable match
no step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

from pydantic import BaseModel

from taskgate.core.plan import Plan, Revision, StepSpec
from taskgate.errors import ReplyFormatError
from taskgate.llm.client import ChatClient, OnCall, Purpose
from taskgate.llm.jsonreply import GraphReply, MatchReply, RevisionReply, parse_reply
from taskgate.llm.prompts import REASK, graph_prompt, matcher_prompt, revision_prompt, tool_bound
from taskgate.protocol.briefparse import brief_steps
from taskgate.roles import ChatMessage, Match

T = TypeVar("T", bound=BaseModel)


async def ask_json(
    client: ChatClient, prompt: str, schema: type[T], purpose: Purpose, on_call: OnCall | None
) -> tuple[T | None, str | None]:
    """Ask, validate, re-ask once on a malformed reply. Returns (value or None, last problem)."""
    messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
    problem = None
    for reask in (False, True):
        sink = _tagged(on_call, reask)
        reply = await client.complete(messages, purpose, sink)
        try:
            return parse_reply(reply.text, schema), None
        except ReplyFormatError as exc:
            problem = str(exc)
        messages += [
            {"role": "assistant", "content": reply.text},
            {"role": "user", "content": REASK.format(problem=problem)},
        ]
    return None, problem


def _tagged(on_call: OnCall | None, reask: bool) -> OnCall | None:
    if on_call is None or not reask:
        return on_call
    return lambda info: on_call(info.model_copy(update={"reask": True}))


class LLMAgent:
    """The model as the agent. Each call is reported with its prompt's prefix share: how much of
    it repeats the previous prompt of this episode-arm from its start (what a prefix cache reuses)."""

    def __init__(self, client: ChatClient, on_call: OnCall | None = None) -> None:
        self._client, self._on_call = client, on_call
        self._last: list[ChatMessage] = []
        self._last_chars = 0

    async def reply(self, messages: list[ChatMessage]) -> str:
        k = len(self._last)
        if k and len(messages) >= k and messages[:k] == self._last:  # the history grew (C speed)
            total = self._last_chars + _chars(messages[k:])
            share = self._last_chars / total if total else 1.0
        else:
            share, total = prefix_share(self._last, messages), _chars(messages)
        self._last, self._last_chars = list(messages), total
        report = self._on_call
        tagged = (
            None
            if report is None
            else (lambda i: report(i.model_copy(update={"prefix_share": share})))
        )
        return (await self._client.complete(messages, "agent", tagged)).text  # type: ignore[arg-type]


def prefix_share(before: list[ChatMessage], now: list[ChatMessage]) -> float:
    """The share of ``now``'s characters (roles and contents, in order) that ``before`` starts
    with too. Whole messages compare at C speed; the first differing one by binary search."""
    total = _chars(now)
    if not total:
        return 1.0
    same = 0
    for old, new in zip(before, now, strict=False):
        if old == new:
            same += len(new["role"]) + len(new["content"])
            continue
        if old["role"] == new["role"]:
            same += len(new["role"]) + _common(old["content"], new["content"])
        break
    return same / total


def _chars(messages: list[ChatMessage]) -> int:
    return sum(len(m["role"]) + len(m["content"]) for m in messages)


def _common(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (O(n log n), in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class LLMMatcher:
    def __init__(self, client: ChatClient, on_call: OnCall | None = None) -> None:
        self._client, self._on_call = client, on_call

    async def match(self, plan: Plan, message: str) -> Match:
        prompt = matcher_prompt(((s, spec.text) for s, spec in plan.steps.items()), message)
        got, _ = await ask_json(self._client, prompt, MatchReply, "matcher", self._on_call)
        if got is None:
            return Match(None, False)
        return Match(got.step, got.explicit_redo)


class LLMCompiler:
    """Brief to graph and revision message to revision, by the agent model."""

    def __init__(
        self,
        client: ChatClient,
        on_call: OnCall | None = None,
        on_problem: Callable[[str], None] | None = None,
    ) -> None:
        self._client, self._on_call, self._on_problem = client, on_call, on_problem

    async def compile_plan(self, brief: str) -> Plan:
        texts = dict(brief_steps(brief))
        binding: Literal["code", "tool"] = "tool" if tool_bound(brief) else "code"
        got, problem = await ask_json(
            self._client, graph_prompt(brief), GraphReply, "compiler", self._on_call
        )
        steps = {
            sid.strip(): StepSpec(
                deps=tuple(d.strip() for d in spec.deps),
                code=spec.code.strip() if binding == "code" else "",
                tool=spec.tool.strip() if binding == "tool" else "",
                text=texts.get(sid.strip(), ""),
            )
            for sid, spec in (got.steps.items() if got is not None else ())
            if sid.strip() and not any(c.isspace() for c in sid.strip())
        }
        if got is None or not got.steps:
            self._note(f"graph unusable after a re-ask: {problem or 'no steps'}")
            steps = {s: StepSpec(text=t) for s, t in texts.items()}
        return Plan(binding=binding, steps=steps or {"s1": StepSpec()})

    async def compile_revision(self, plan: Plan, message: str) -> Revision:
        prompt = revision_prompt(((s, spec.text) for s, spec in plan.steps.items()), message)
        got, problem = await ask_json(
            self._client, prompt, RevisionReply, "compiler", self._on_call
        )
        if got is None:
            self._note(f"revision unusable after a re-ask: {problem}")
            return Revision()
        relax = (got.relax[0], got.relax[1]) if got.relax else None
        return Revision(
            cancel=got.cancel,
            rewires={w: tuple(ps) for w, ps in (got.rewires or {}).items()},
            relax=relax,
        )

    def _note(self, problem: str) -> None:
        if self._on_problem:
            self._on_problem(problem)
