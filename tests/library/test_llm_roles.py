"""The LLM compiler, matcher and agent: validated JSON, one corrective re-ask, uncorrected errors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from taskgate import ChatMessage, Match, Plan, Revision
from taskgate.lab import EpisodeParams, generate_episode
from taskgate.llm.client import CallInfo, ChatClient
from taskgate.llm.endpoint import Endpoint
from taskgate.llm.fake import FakeServer, script
from taskgate.llm.prompts import GRAPH_PROMPT
from taskgate.llm.roles import LLMCompiler, LLMMatcher

EP = generate_episode(EpisodeParams(seed=100, steps=5))
T = TypeVar("T")


def run(srv: FakeServer, make: object) -> tuple[object, list[CallInfo]]:
    calls: list[CallInfo] = []

    async def go() -> object:
        c = ChatClient(Endpoint(base_url=srv.base_url, model="fake"))
        try:
            coro: Awaitable[object] = make(c, calls.append)  # type: ignore[operator]
            return await coro
        finally:
            await c.close()

    return asyncio.run(go()), calls


def test_matcher_reasks_once_on_malformed_json() -> None:
    with FakeServer(
        script(['{"step": s2', '```json\n{"step": "S2", "explicit_redo": false}\n```'])
    ) as srv:
        got, calls = run(srv, lambda c, cb: LLMMatcher(c, cb).match(EP.plan, "do it (#W1234)"))
    assert got == Match("s2", False)
    assert [c.reask for c in calls] == [False, True]
    assert "could not be used" in srv.requests[1]["messages"][-1]["content"]


def test_matcher_gives_no_step_when_both_replies_are_unusable() -> None:
    with FakeServer(script(["no idea", '{"explicit_redo": "maybe"}'])) as srv:
        got, _ = run(srv, lambda c, cb: LLMMatcher(c, cb).match(EP.plan, "hello"))
    assert got == Match(None, False)


def test_compiler_graph_and_revision() -> None:
    graph = {
        "steps": {
            s: {"deps": list(spec.deps), "code": spec.code} for s, spec in EP.plan.steps.items()
        }
    }
    rev = EP.revision
    rev_json = {
        "cancel": rev.cancel,
        "rewires": {w: list(p) for w, p in rev.rewires.items()},
        "relax": list(rev.relax or []),
    }
    with FakeServer(script([json.dumps(graph), json.dumps(rev_json)])) as srv:

        async def both(c: ChatClient, cb: object) -> tuple[Plan, Revision]:
            comp = LLMCompiler(c, cb)  # type: ignore[arg-type]
            plan = await comp.compile_plan(EP.brief)
            return plan, await comp.compile_revision(plan, "update")

        (plan, revision), calls = run(srv, both)  # type: ignore[misc]
    assert plan == EP.plan  # texts come from the brief's plan lines
    assert revision == EP.revision
    assert srv.requests[0]["messages"][0]["content"].endswith(GRAPH_PROMPT)
    assert [c.purpose for c in calls] == ["compiler", "compiler"]


def test_an_unusable_graph_flows_in_as_empty_codes() -> None:
    problems: list[str] = []
    with FakeServer(script(["sorry", "still sorry"])) as srv:
        plan, _ = run(srv, lambda c, cb: LLMCompiler(c, cb, problems.append).compile_plan(EP.brief))
    assert isinstance(plan, Plan) and list(plan.steps) == list(EP.plan.steps)
    assert all(spec.code == "" for spec in plan.steps.values())
    assert problems and "graph unusable" in problems[0]


def test_compile_errors_are_kept_not_corrected() -> None:
    wrong = {"steps": {"s1": {"deps": ["s9"], "code": "RC-1"}, "s2": {"deps": [], "code": None}}}
    with FakeServer(script([json.dumps(wrong)])) as srv:
        plan, _ = run(srv, lambda c, cb: LLMCompiler(c, cb).compile_plan(EP.brief))
    assert isinstance(plan, Plan)
    assert plan.steps["s1"].deps == ("s9",) and plan.steps["s2"].code == ""


def test_a_reply_nested_past_the_decoders_limit_is_a_format_error() -> None:
    import pytest

    from taskgate.errors import ReplyFormatError
    from taskgate.llm.jsonreply import MatchReply, parse_reply

    with pytest.raises(ReplyFormatError, match="nests too deeply"):
        parse_reply('{"step": ' + "[" * 100_000, MatchReply)


def test_the_prefix_share_is_what_the_previous_prompt_starts_with() -> None:
    from taskgate.llm.roles import prefix_share

    sys_: ChatMessage = {"role": "system", "content": "brief"}
    u1: ChatMessage = {"role": "user", "content": "ask one [checklist]"}
    kept: ChatMessage = {"role": "user", "content": "ask one"}
    a1: ChatMessage = {"role": "assistant", "content": "done"}
    u2: ChatMessage = {"role": "user", "content": "ask two"}
    assert prefix_share([], [sys_, u1]) == 0.0
    now = [sys_, kept, a1, u2]
    total = sum(len(m["role"]) + len(m["content"]) for m in now)
    # the system prompt, then the user turn up to where its checklist was left out
    assert prefix_share([sys_, u1], now) == (6 + 5 + 4 + len("ask one")) / total
    assert prefix_share(now, now) == 1.0
    changed: ChatMessage = {"role": "system", "content": "brief + directive"}
    assert prefix_share([changed, kept], now) == (6 + 5) / total


def test_a_run_logs_each_agent_calls_prefix_share(tmp_path: Path) -> None:
    import asyncio

    from taskgate import ChatClient, Endpoint, FakeServer, protocol_responder
    from taskgate.lab import LadderConfig, run_ladder
    from taskgate.lab.rundir import LOG, read_log

    config = LadderConfig(
        arms=("raw", "directive-system"), agent="llm", compiler="llm", matcher="llm", episodes=1
    )
    with FakeServer(protocol_responder) as srv:

        async def go() -> None:
            async with ChatClient(Endpoint(base_url=srv.base_url, model="m")) as client:
                await run_ladder(config, tmp_path, client=client)

        asyncio.run(go())
    share = {
        arm: [c.prefix_share for c in run.calls if c.purpose == "agent"]
        for (_, arm), run in read_log(tmp_path / LOG).items()
    }
    assert all(s is not None for s in share["raw"]) and share["raw"][0] == 0.0
    mean = {arm: sum(s or 0 for s in v) / len(v) for arm, v in share.items()}
    assert mean["raw"] > 0.9 > mean["directive-system"]  # its directive rewrites the system prompt
