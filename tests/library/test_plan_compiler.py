"""The plan compiler: a tool-bound plan from an ordinary agent's instructions and tools, checked
and re-asked with its defects one line each; never a half-made plan."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from taskgate import PlanCompiler, PlanError, ToolInfo
from taskgate.llm.client import ChatClient
from taskgate.llm.endpoint import Endpoint
from taskgate.llm.fake import FakeServer, script
from taskgate.llm.plan_compiler import tool_infos

TASK = "You are a procurement assistant for ACME Corp. Buy what the user asks for."
TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "collect_requirements",
                                      "description": "Collect the buyer's requirements."}},
    {"type": "function", "function": {"name": "draft_rfq", "description": "Draft an RFQ."}},
    {"type": "function", "function": {"name": "search_catalog", "description": "Look up items."}},
]  # fmt: skip
GOOD = {"steps": {
    "s1": {"tool": "collect_requirements", "text": "collect the requirements", "deps": []},
    "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"]},
}, "lookups": ["search_catalog"]}  # fmt: skip


def compile_with(replies: list[str], attempts: int = 2) -> tuple[Any, list[dict[str, Any]]]:
    with FakeServer(script(replies)) as srv:

        async def go() -> Any:
            client = ChatClient(Endpoint(base_url=srv.base_url, model="fake"))
            try:
                return await PlanCompiler(client, attempts).compile(TASK, TOOLS)
            finally:
                await client.close()

        try:
            return asyncio.run(go()), srv.requests
        except PlanError as exc:
            return exc, srv.requests


def test_a_good_reply_is_the_plan_and_the_prompt_lists_the_tools() -> None:
    plan, sent = compile_with([json.dumps(GOOD)])
    assert plan.binding == "tool" and list(plan.steps) == ["s1", "s2"]
    assert plan.steps["s2"].deps == ("s1",) and plan.steps["s2"].text == "draft the RFQ"
    prompt = sent[0]["messages"][-1]["content"]
    assert TASK in prompt and "- search_catalog: Look up items." in prompt


def test_a_defective_reply_is_asked_again_with_its_defects_one_line_each() -> None:
    bad = {"steps": {"s1": {"tool": "buy_now", "deps": ["s9"]},
                     "s2": {"tool": "draft_rfq", "deps": ["s2"]}}}  # fmt: skip
    plan, sent = compile_with([json.dumps(bad), json.dumps(GOOD)])
    assert list(plan.steps) == ["s1", "s2"] and len(sent) == 2
    retry = sent[1]["messages"][-1]["content"]
    assert "step s1 names tool 'buy_now', which the assistant lacks" in retry
    assert "s1 requires unknown s9" in retry


def test_attack_a_tool_left_out_of_the_plan_is_asked_about_not_left_ungated() -> None:
    """The model left a tool that does work out of the plan: it ran ungated, as a tool no step
    is bound to. Every tool must be a step's or a named lookup, or the model is asked again."""
    left_out = {"steps": {"s1": {"tool": "collect_requirements", "deps": []}}}
    plan, sent = compile_with([json.dumps(left_out), json.dumps(GOOD)])
    assert list(plan.steps) == ["s1", "s2"] and len(sent) == 2
    retry = sent[1]["messages"][-1]["content"]
    assert "tool 'draft_rfq' is in no step and not listed under lookups" in retry
    assert "tool 'search_catalog' is in no step" in retry
    error, _ = compile_with([json.dumps(left_out)] * 2)
    assert isinstance(error, PlanError) and "draft_rfq" in str(error)
    both = {**GOOD, "lookups": ["search_catalog", "draft_rfq", "wire_money"]}
    error, _ = compile_with([json.dumps(both)] * 2)
    assert "both a step's and a lookup" in str(error) and "'wire_money'" in str(error)


def test_a_step_id_given_twice_is_asked_again_not_lost() -> None:
    twice = (
        '{"steps": {"s1": {"tool": "collect_requirements"}, "s2": {"tool": "draft_rfq", '
        '"deps": ["s1"]}, "s2": {"tool": "search_catalog", "deps": ["s1"]}}}'
    )
    plan, sent = compile_with([twice, json.dumps(GOOD)])
    assert list(plan.steps) == ["s1", "s2"] and len(sent) == 2
    assert "the key 's2' is given twice" in sent[1]["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("replies", "says"),
    [
        (["no json here", "{"], "the reply is not a plan"),
        ([json.dumps({"steps": {"s1": {"tool": "draft_rfq"}, "s2": {"tool": "draft_rfq"}}})] * 2,
         "steps s1 and s2 both use tool 'draft_rfq'"),
        ([json.dumps({"steps": {"s1": {"tool": "draft_rfq", "deps": ["s2"]},
                                "s2": {"tool": "collect_requirements", "deps": ["s1"]}}})] * 2,
         "dependency cycle"),
    ],
)  # fmt: skip
def test_a_reply_still_defective_after_the_last_try_is_one_error(
    replies: list[str], says: str
) -> None:
    error, sent = compile_with(replies)
    assert isinstance(error, PlanError) and len(sent) == 2
    assert "could not be compiled (2 tries)" in str(error) and says in str(error)
    assert all(len(line) < 200 for line in str(error).splitlines())


def test_tools_are_read_from_every_form_an_agent_has() -> None:
    from langchain_core.tools import tool

    @tool
    def place_order(item: str) -> str:
        """Place the order."""
        return item

    def select_vendor() -> None:
        """Select the vendor."""

    got = tool_infos([TOOLS[0], place_order, select_vendor, ("send_rfq", "Send it."),
                      ToolInfo("x"), {"name": "mcp_tool", "description": "An MCP tool."}])  # fmt: skip
    assert [(t.name, t.description) for t in got] == [
        ("collect_requirements", "Collect the buyer's requirements."),
        ("place_order", "Place the order."),
        ("select_vendor", "Select the vendor."),
        ("send_rfq", "Send it."),
        ("x", ""),
        ("mcp_tool", "An MCP tool."),
    ]
    with pytest.raises(PlanError, match="it has none"):
        asyncio.run(PlanCompiler(None, 1).compile(TASK, []))  # type: ignore[arg-type]


def test_taskgate_plan_compile_writes_a_plan_file_that_checks(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from taskgate.cli import app
    from taskgate.plans import load_plan

    (tmp_path / "prompt.txt").write_text(TASK)
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS))
    runner = CliRunner()
    with FakeServer(script([json.dumps(GOOD)])) as srv:
        args = ["plan", "compile", "--instructions", str(tmp_path / "prompt.txt"), "--tools",
                str(tmp_path / "tools.json"), "--base-url", srv.base_url, "--model", "fake",
                "--out", str(tmp_path / "plans" / "plan.json")]  # fmt: skip
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert load_plan(tmp_path / "plans" / "plan.json") == load_plan_like({"steps": GOOD["steps"]})
    with FakeServer(script(["nope", "still nope"])) as srv:
        args[args.index("--base-url") + 1] = srv.base_url
        failed = runner.invoke(app, args)
    assert failed.exit_code == 2 and "Traceback" not in failed.output
    assert "taskgate: error: the plan could not be compiled (2 tries)" in failed.output
    (tmp_path / "tools.json").write_text("{nope")
    bad = runner.invoke(app, args)
    assert bad.exit_code == 2 and "tools.json: not JSON" in bad.output


def load_plan_like(data: dict[str, Any]) -> Any:
    from taskgate.plans import parse_plan

    return parse_plan(json.dumps(data), ".json")


def test_the_proxy_compiles_each_conversations_plan_from_its_prompt_and_tools() -> None:
    import httpx

    from proxy_helpers import post
    from taskgate import Reply
    from taskgate.llm.fake import ToolCall
    from taskgate.proxy import ProxyConfig
    from taskgate.proxy.testing import ProxyServer

    def respond(body: dict[str, Any]) -> Reply:
        last = str(body["messages"][-1]["content"])
        if last.startswith("You set up a task plan"):  # the helper's compile call
            return Reply(json.dumps(GOOD))
        return Reply("", tool_calls=(ToolCall("draft_rfq", {}, id="c1"),))

    messages = [{"role": "system", "content": TASK}, {"role": "user", "content": "Draft the RFQ."}]
    with FakeServer(respond) as upstream, httpx.Client() as client:
        config = ProxyConfig(upstream.base_url, compile_plans=True, status_token="t")
        with ProxyServer(config) as proxy:
            reply = post(client, proxy.base_url, messages, tools=TOOLS)
            shown = client.get(f"{proxy.url}/taskgate/conversations",
                               headers={"Authorization": "Bearer t"}).json()  # fmt: skip
            (row,) = shown["conversations"]
            conv = client.get(f"{proxy.url}/taskgate/conversations/{row['id']}",
                              headers={"Authorization": "Bearer t"}).json()  # fmt: skip
    message = reply["choices"][0]["message"]
    assert message["content"].startswith(
        "draft_rfq was not run: it needs 'collect the requirements'"
    )
    assert list(conv["plan"]["steps"]) == ["s1", "s2"]


@pytest.mark.parametrize("choice", ["refuse", "forward"])
def test_a_plan_the_proxy_cannot_compile_is_the_operators_choice(choice: str) -> None:
    import httpx

    from taskgate import Reply
    from taskgate.proxy import ProxyConfig
    from taskgate.proxy.testing import ProxyServer

    def respond(body: dict[str, Any]) -> Reply:
        last = str(body["messages"][-1]["content"])
        return Reply("not a plan" if "plan" in last else "Hello.")

    messages = [{"role": "system", "content": TASK}, {"role": "user", "content": "hi"}]
    with FakeServer(respond) as upstream, httpx.Client() as client:
        config = ProxyConfig(upstream.base_url, compile_plans=True, on_compile_error=choice)
        with ProxyServer(config) as proxy:
            body = {"model": "fake", "messages": messages, "tools": TOOLS}
            resp = client.post(f"{proxy.base_url}/chat/completions", json=body)
    if choice == "refuse":
        error = resp.json()["error"]["message"]
        assert resp.status_code == 400 and "the plan could not be compiled" in error
        assert "\n" not in error and "--on-compile-error forward" in error
    else:
        assert (
            resp.status_code == 200 and resp.json()["choices"][0]["message"]["content"] == "Hello."
        )
