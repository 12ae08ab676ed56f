"""The gate fails closed: when what it depends on fails (the compiler's reply, the helper model,
a revision it cannot read), it refuses, says so once in its log, counts it in the metrics, and
never lets a call run that it would otherwise refuse. Each test injects one failure."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from taskgate import FakeServer, Plan, Reply, harness_brief, render_brief, script
from taskgate.llm.fake import ToolCall
from taskgate.proxy import ProxyConfig
from taskgate.proxy.testing import ProxyServer

PROSE = "Sure! First you should collect the requirements, and then draft the RFQ."
TOOLS_PLAN = Plan.model_validate({"binding": "tool", "steps": {
    "s1": {"tool": "collect_requirements", "text": "collect the requirements"},
    "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"]},
}})  # fmt: skip
CODES_PLAN = Plan.model_validate({"steps": {
    "s1": {"code": "RC-1001", "text": "collect the requirements"},
    "s2": {"code": "RC-1002", "text": "draft the RFQ", "deps": ["s1"]},
}})  # fmt: skip


def _draft() -> Reply:
    return Reply("", tool_calls=(ToolCall("draft_rfq", {"work_order": "#W3001"}, id="c1"),))


def _chat(proxy: ProxyServer, brief: str, message: str) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "system", "content": brief},
                                       {"role": "user", "content": message}]}  # fmt: skip
    return httpx.post(f"{proxy.base_url}/chat/completions", json=body, timeout=30)


@pytest.mark.parametrize("brief", ["native", "codes"])
def test_attack_a_compiler_answering_in_prose_refuses_the_brief_and_runs_nothing(
    brief: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The model answers the compile prompt (and its re-ask) in prose: the proxy used to fall
    back to the brief's step texts, a plan binding no tool and no code, so ``draft_rfq`` passed
    as a tool no step is bound to (and booking lines were stripped as unknown)."""
    text = harness_brief(TOOLS_PLAN, "native") if brief == "native" else render_brief(CODES_PLAN)
    with FakeServer(script([PROSE, PROSE, _draft()])) as upstream:
        with ProxyServer(ProxyConfig(upstream.base_url)) as proxy:
            answer = _chat(proxy, text, "Draft the RFQ (#W3001).")
            metrics = httpx.get(f"{proxy.url}/taskgate/metrics").json()
            listed = httpx.get(f"{proxy.url}/taskgate/conversations").json()
        asked = len(upstream.requests)
    assert answer.status_code == 422
    said = answer.json()["error"]["message"]
    assert "could not be compiled" in said and "unusable after a re-ask" in said
    assert "--on-compile-error forward" in said  # the operator's explicit choice, named
    assert "tool_calls" not in answer.text  # the agent's call never reached the client
    assert asked == 2  # the compile and its re-ask; the agent's turn was never asked for
    assert metrics["refused"] == {"compile-failed": 1} and metrics["ungated"] == {}
    assert listed["conversations"] == [] or all(not c["started"] for c in listed["conversations"])
    lines = [r.getMessage() for r in caplog.records if "could not be compiled" in r.getMessage()]
    assert len(lines) == 1


def test_a_compile_failure_is_forwarded_only_where_the_operator_chose_it() -> None:
    text = harness_brief(TOOLS_PLAN, "native")
    with FakeServer(script([PROSE, PROSE, _draft()])) as upstream:
        config = ProxyConfig(upstream.base_url, on_compile_error="forward")
        with ProxyServer(config) as proxy:
            answer = _chat(proxy, text, "Draft the RFQ (#W3001).")
            metrics = httpx.get(f"{proxy.url}/taskgate/metrics").json()
    assert answer.status_code == 200  # ungated, as the operator chose, and counted
    assert metrics["ungated"] == {"compile-failed": 1}


def test_attack_a_plan_the_validator_rejects_is_never_installed() -> None:
    """A compiler reply that parses but binds steps to nothing (empty tools), or loops, is
    refused like an unreadable one."""
    empty = '{"steps": {"s1": {"deps": [], "tool": ""}, "s2": {"deps": ["s1"], "tool": ""}}}'
    looped = (
        '{"steps": {"s1": {"deps": ["s2"], "tool": "collect_requirements"}, '
        '"s2": {"deps": ["s1"], "tool": "draft_rfq"}}}'
    )
    for reply, why in ((empty, "empty tool"), (looped, "cycle")):
        with FakeServer(script([reply, _draft()])) as upstream, \
                ProxyServer(ProxyConfig(upstream.base_url)) as proxy:  # fmt: skip
            answer = _chat(proxy, harness_brief(TOOLS_PLAN, "native"), "Draft it (#W3001).")
        assert answer.status_code == 422, why
        assert why in answer.json()["error"]["message"]


def test_attack_a_revision_the_helper_cannot_read_changes_nothing_and_is_refused() -> None:
    """A cancel the compiler's model answers in prose used to be read as no change at all,
    leaving the cancelled step runnable; now the turn is refused (nothing written) and the same
    request sent again, with the model back, cancels it."""
    compiled = '{"steps": {"s1": {"deps": [], "code": "RC-1001"}, "s2": {"deps": ["s1"], "code": "RC-1002"}}}'  # fmt: skip
    cancel = '{"cancel": "s2", "rewires": {}, "relax": null}'
    brief = render_brief(CODES_PLAN)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": brief},
        {"role": "user", "content": "Drop the RFQ draft, we no longer need it."},
    ]
    replies = [compiled, PROSE, PROSE, compiled, cancel, "Understood."]
    with FakeServer(script(replies)) as upstream, \
            ProxyServer(ProxyConfig(upstream.base_url)) as proxy, httpx.Client() as client:  # fmt: skip
        url = f"{proxy.base_url}/chat/completions"
        first = client.post(url, json={"model": "m", "messages": messages}, timeout=30)
        before = client.get(f"{proxy.url}/taskgate/conversations").json()["conversations"]
        again = client.post(url, json={"model": "m", "messages": messages}, timeout=30)
        key = client.get(f"{proxy.url}/taskgate/conversations").json()["conversations"]
        state = client.get(f"{proxy.url}/taskgate/conversations/{key[0]['id']}").json()
        metrics = client.get(f"{proxy.url}/taskgate/metrics").json()
    assert first.status_code == 502 and "no usable revision" in first.text
    assert before == [] or before[0]["turns"] == 0  # nothing of the refused turn was written
    assert again.status_code == 200
    assert state["statuses"]["s2"] == "CANCELLED"
    assert metrics["refused"].get("revision-unreadable") == 1
