"""Unmodified agents through the proxy: the openai SDK (whole and streamed replies) and a
LangGraph ``create_agent`` on ``ChatOpenAI``, whose base URL is all that changes."""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any

import pytest

from plans import tool_chain

pytest.importorskip("starlette", reason="needs the proxy extra")

import openai

from proxy_helpers import episodes
from taskgate import FakeServer, Reply, careless_responder, script
from taskgate.llm.fake import ToolCall
from taskgate.protocol.tools import harness_brief
from taskgate.proxy import ProxyConfig
from taskgate.proxy.testing import ProxyServer


def sdk(proxy: ProxyServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.base_url, api_key="sk-test", max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
def test_the_openai_sdk_gets_only_admitted_bookings(stream: bool) -> None:
    ep = episodes(1)[0]
    first = ep.turns[0]
    assert first.work_order is not None and first.step is not None
    blocked = next(s for s, spec in ep.plan.steps.items() if spec.deps)
    code, other = ep.plan.steps[first.step].code, ep.plan.steps[blocked].code
    text = f"On it.\nref {code}/{first.work_order}\nAlso ref {other}/{first.work_order} done.\nBye."
    with FakeServer(script([text])) as upstream:
        config = ProxyConfig(upstream.base_url, compiler="parser", matcher="lexical")
        with ProxyServer(config) as proxy:
            messages: Any = [
                {"role": "system", "content": ep.brief},
                {"role": "user", "content": first.message},
            ]
            client = sdk(proxy)
            if stream:
                chunks = list(
                    client.chat.completions.create(
                        model="fake", messages=messages, stream=True,
                        stream_options={"include_usage": True},
                    )
                )  # fmt: skip
                got = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
                assert chunks[-1].usage is not None and not chunks[-1].choices
            else:
                got = client.chat.completions.create(model="fake", messages=messages)
                got = got.choices[0].message.content or ""
    assert got == f"On it.\nref {code}/{first.work_order}\nAlso  done.\nBye."
    assert upstream.headers[0]["authorization"] == "Bearer sk-test"


def test_the_sdk_at_every_turn_of_an_episode_sees_the_proxys_rung() -> None:
    ep = episodes(1)[0]
    with (
        FakeServer(careless_responder(0.5)) as upstream,
        ProxyServer(ProxyConfig(upstream.base_url, rung="directive")) as proxy,
    ):
        client = sdk(proxy)
        messages: Any = [{"role": "system", "content": ep.brief}]
        for turn in ep.turns[:10]:
            messages.append({"role": "user", "content": turn.message})
            reply = client.chat.completions.create(model="fake", messages=messages)
            messages.append({"role": "assistant", "content": reply.choices[0].message.content})
    agent_calls = [r for r in upstream.requests if r["messages"][0]["role"] == "system"]
    last_user = agent_calls[-1]["messages"][-1]["content"]
    assert ep.turns[9].message in last_user
    users = [c["messages"][-1]["content"] for c in agent_calls]
    for turn, user in zip(ep.turns[:10], users, strict=True):
        assert user.split("\n\n[TASK-STATE]")[0].endswith(turn.message)
        if turn.work_order is None:  # a filler or revision: no request, no directive
            assert "[TASK-STATE]" not in user
    assert sum("\n\n[TASK-STATE] step " in u for u in users) >= 2


# -- LangGraph ------------------------------------------------------------------------------------
PLAN = tool_chain(2)
_WO = re.compile(r"\(#W(\d+)\)")


def tool_user(body: dict[str, Any]) -> Reply:
    """An eager model: asked to collect, it also drafts; after tool results it just reports."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return Reply("Done.")
    text = messages[-1]["content"]
    wo = f"#W{_WO.findall(text)[-1]}"
    names = ["draft_rfq", "collect_requirements"] if "collect" in text.lower() else ["draft_rfq"]
    calls = tuple(ToolCall(n, {"work_order": wo}, id=f"call_{n}_{wo[2:]}") for n in names)
    return Reply("Working.", tool_calls=calls)


@pytest.mark.parametrize("streaming", [False, True])
def test_a_langgraph_agent_behind_the_proxy_runs_only_admitted_calls(streaming: bool) -> None:
    pytest.importorskip("langchain", reason="needs the langgraph extra")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    ran: list[str] = []

    @tool
    def collect_requirements(work_order: str) -> str:
        """Collect the requirements."""
        ran.append("collect_requirements")
        return "collected"

    @tool
    def draft_rfq(work_order: str) -> str:
        """Draft the RFQ."""
        ran.append("draft_rfq")
        return "drafted"

    with FakeServer(tool_user) as upstream:
        config = ProxyConfig(upstream.base_url, compiler="parser", matcher="lexical")
        with ProxyServer(config) as proxy:
            model = ChatOpenAI(
                base_url=proxy.base_url, api_key="sk-test", model="fake",  # type: ignore[arg-type]
                streaming=streaming, max_retries=0,
            )  # fmt: skip
            agent = create_agent(
                model,
                [collect_requirements, draft_rfq],
                system_prompt=harness_brief(PLAN, "native"),
            )
            state = agent.invoke({"messages": [HumanMessage("Collect the requirements (#W101).")]})
            assert ran == ["collect_requirements"]  # draft_rfq was blocked: never ran
            refusal = state["messages"][1].content
            assert (
                "draft_rfq was not run: it needs 'collect the requirements' done first" in refusal
            )
            state = agent.invoke(
                {"messages": [*state["messages"], HumanMessage("Now draft the RFQ (#W102).")]}
            )
    assert ran == ["collect_requirements", "draft_rfq"]
    assert state["messages"][-1].content == "Done."


@pytest.mark.parametrize("with_status", [True, False])
def test_a_failed_prerequisite_keeps_its_dependent_refused_with_the_status_model(
    with_status: bool,
) -> None:
    """A LangGraph tool that raises is a failed call through the proxy when the agent's model is
    ``ToolStatusChatOpenAI``: the step that needs it stays refused. Plain ``ChatOpenAI`` sends
    no status, so the proxy books the failed call and the dependent runs (the limitation the
    class exists for)."""
    pytest.importorskip("langchain", reason="needs the langgraph extra")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import ToolException, tool
    from langchain_openai import ChatOpenAI

    from taskgate.integrations.langgraph import ToolStatusChatOpenAI

    ran: list[str] = []

    @tool
    def collect_requirements(work_order: str) -> str:
        """Collect the requirements."""
        ran.append("collect_requirements")
        raise ToolException("the requirements system is down")

    collect_requirements.handle_tool_error = True

    @tool
    def draft_rfq(work_order: str) -> str:
        """Draft the RFQ."""
        ran.append("draft_rfq")
        return "drafted"

    kind = ToolStatusChatOpenAI if with_status else ChatOpenAI
    with FakeServer(tool_user) as upstream:
        config = ProxyConfig(upstream.base_url, compiler="parser", matcher="lexical")
        with ProxyServer(config) as proxy:
            model = kind(base_url=proxy.base_url, api_key="sk-test", model="fake",  # type: ignore[arg-type]
                         max_retries=0)  # fmt: skip
            agent = create_agent(
                model, [collect_requirements, draft_rfq],
                system_prompt=harness_brief(PLAN, "native"),
            )  # fmt: skip
            state = agent.invoke({"messages": [HumanMessage("Collect the requirements (#W101).")]})
            failed = [m for m in state["messages"] if getattr(m, "status", None) == "error"]
            assert ran == ["collect_requirements"] and len(failed) == 1
            agent.invoke(
                {"messages": [*state["messages"], HumanMessage("Now draft the RFQ (#W102).")]}
            )
    assert ran == (
        ["collect_requirements"] if with_status else ["collect_requirements", "draft_rfq"]
    )
    sent = [m for r in upstream.requests for m in r["messages"] if m["role"] == "tool"]
    assert sent and all("status" not in m for m in sent)  # taskgate's field stays at the proxy


def test_the_docs_proxy_examples_run() -> None:
    pytest.importorskip("langchain", reason="needs the langgraph extra")
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "guide" / "proxy.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 2
    replies = [
        Reply("Drafting.\nref RC-1002/#W2001"),
        Reply("", tool_calls=(ToolCall("draft_rfq", {"work_order": "#W3001"}, id="c1"),)),
    ]
    with FakeServer(script(replies)) as upstream:
        config = ProxyConfig(upstream.base_url, compiler="parser", matcher="lexical")
        with ProxyServer(config) as proxy:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                for block in blocks:  # each on its own, as a reader copies it
                    scope: dict[str, Any] = {}
                    code = block.replace('"http://127.0.0.1:8100/v1"', repr(proxy.base_url))
                    exec(compile(code, "README", "exec"), scope)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Drafting." and "ref" not in out.getvalue()
    assert lines[-1] == "[]" and scope["ran"] == []
