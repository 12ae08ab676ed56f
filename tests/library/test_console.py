"""The operators' console (``/taskgate/console``), served by the proxy and the MCP gate: who may
load it, and what an operator sees and does in a real headless Chromium.

Chromium is the Debian package (``make browser`` installs it); playwright drives it. Without
either, the browser tests skip and say which is missing; the sign-in tests run on httpx alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from browser import headless_chromium
from plans import tool_chain
from proxy_helpers import Chat, post, repeating
from serving import served
from taskgate import FakeServer, Reply, script
from taskgate.core.plan import Plan
from taskgate.llm.fake import ToolCall
from taskgate.proxy import ProxyConfig
from taskgate.proxy.testing import ProxyServer
from taskgate.serving.signin import (
    COOKIE,
    LIFETIME_S,
    console_key,
    cookie_name,
    cookie_value,
    valid,
)

TOKEN = "ops-secret"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def calls(*names: str) -> Reply:
    return Reply("", tool_calls=tuple(ToolCall(n, {"note": ""}, id=f"call_{n}") for n in names))


def config(
    upstream: FakeServer, plan: Plan | None = None, token: str | None = TOKEN
) -> ProxyConfig:
    return ProxyConfig(upstream.base_url, plan=plan or tool_chain(3), status_token=token)


# -- who may load it ---------------------------------------------------------------------------------
def test_a_token_less_or_forged_console_load_is_refused_and_the_token_signs_in() -> None:
    with FakeServer(repeating(script([Reply("Hello.")]))) as upstream, \
            ProxyServer(config(upstream)) as proxy, httpx.Client() as client:  # fmt: skip
        page = f"{proxy.url}/taskgate/console"
        bare = client.get(page)
        assert bare.status_code == 401 and "console.js" not in bare.text
        assert 'name="token"' in bare.text  # the sign-in form, not the console
        forged = f"{2**33}.{'0' * 32}.{'f' * 64}"
        other = cookie_value("another-gates-token")
        for cookie in (forged, other, "garbage", "1." * 5000):
            refused = client.get(page, headers={"cookie": f"{COOKIE}_{proxy.port}={cookie}"})
            assert refused.status_code == 401 and "console.js" not in refused.text
            assert "not valid or has expired" in refused.text
        wrong = client.post(f"{page}/signin", data={"token": "guess"})
        assert wrong.status_code == 401 and COOKIE not in wrong.headers.get("set-cookie", "")
        foreign = client.post(f"{page}/signin", data={"token": TOKEN},
                              headers={"origin": "http://evil.example"})  # fmt: skip
        assert foreign.status_code == 403
        signed = client.post(f"{page}/signin", data={"token": TOKEN})
        assert signed.status_code == 200 and "signin.js" in signed.text  # keeps the key, goes on
        value = client.cookies[f"{COOKIE}_{proxy.port}"]
        assert f'content="{console_key(TOKEN, value)}"' in signed.text
        set_cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in set_cookie and "SameSite=strict" in set_cookie
        assert "Path=/taskgate" in set_cookie
        shown = client.get(page)  # the client kept the cookie
        assert shown.status_code == 200 and "console.js" in shown.text
        policy = shown.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert client.get(page, headers=BEARER).status_code == 200


def test_the_cookie_reaches_the_json_endpoints_only_with_the_consoles_header_and_origin() -> None:
    with FakeServer(repeating(script([Reply("Hello.")]))) as upstream, \
            ProxyServer(config(upstream)) as proxy, httpx.Client() as client:  # fmt: skip
        Chat(proxy.base_url, client).say("hi")
        listing = f"{proxy.url}/taskgate/conversations"
        value = cookie_value(TOKEN)
        jar = {"cookie": f"{COOKIE}_{proxy.port}={value}"}
        assert client.get(listing, headers=jar).status_code == 401  # a cookie alone: no
        unkeyed = {**jar, "x-taskgate-console": "1"}
        assert client.get(listing, headers=unkeyed).status_code == 401  # nor without its key
        own = {**jar, "x-taskgate-console": console_key(TOKEN, value)}
        assert client.get(listing, headers=own).status_code == 200
        foreign = {**own, "origin": "http://evil.example"}
        refused = client.get(listing, headers=foreign)
        assert refused.status_code == 403 and "another origin" in refused.text
        key = client.get(listing, headers=own).json()["conversations"][0]["id"]
        body = {"step": "send_rfq", "by": "alice"}
        url = f"{listing}/{key}/approvals"
        assert client.post(url, json=body, headers=foreign).status_code == 403
        assert client.post(url, json=body, headers=jar).status_code == 401
        behind = {  # behind a reverse proxy at https://ops.example that keeps the address
            "cookie": f"{COOKIE}={value}", "x-taskgate-console": console_key(TOKEN, value),
            "origin": "https://ops.example", "x-forwarded-host": "ops.example",
        }  # fmt: skip
        assert client.get(listing, headers=behind).status_code == 200
        assert client.post(url, json=body, headers=own).status_code == 200


def test_a_sign_in_expires_and_a_changed_token_signs_everyone_out() -> None:
    value = cookie_value(TOKEN, now=1000.0)
    assert valid(value, TOKEN, now=1000.0 + LIFETIME_S - 1)
    assert not valid(value, TOKEN, now=1000.0 + LIFETIME_S + 1)
    assert not valid(value, "a-new-token", now=1000.0)
    expires, nonce, seal = value.split(".")
    assert not valid(f"{int(expires) + 10**6}.{nonce}.{seal}", TOKEN, now=1000.0)  # lengthened


def test_odd_sign_in_forms_are_one_line_and_wrong_tokens_are_throttled() -> None:
    with FakeServer(repeating(script([Reply("Hello.")]))) as upstream, \
            ProxyServer(config(upstream)) as proxy, httpx.Client() as client:  # fmt: skip
        signin = f"{proxy.url}/taskgate/console/signin"
        fields = client.post(signin, content=b"a=1&b=2&c=3&d=4&e=5&token=x",
                             headers={"content-type": "application/x-www-form-urlencoded"})  # fmt: skip
        assert fields.status_code == 400 and "takes one field" in fields.text
        odd = client.post(signin, content=b"token=%ff%fe\x00\xff")
        assert odd.status_code == 401 and "not the gate's status token" in odd.text
        assert client.get(signin, follow_redirects=False).status_code == 303  # a reload
        answers = [client.post(signin, data={"token": f"guess{i}"}).status_code for i in range(25)]
        assert answers.count(429) >= 4 and "Too many wrong tokens" in client.post(
            signin, data={"token": TOKEN}).text  # fmt: skip


def test_two_gates_on_one_host_keep_their_sign_ins_apart() -> None:
    """Browsers share a host's cookies across its ports: each gate's cookie is named by its."""
    assert cookie_name({"host": "127.0.0.1:8100"}) == f"{COOKIE}_8100"
    assert cookie_name({"host": "127.0.0.1:8200"}) == f"{COOKIE}_8200"
    assert cookie_name({"host": "ops.example", "x-forwarded-host": "ops.example:443"}) == (
        f"{COOKIE}_443"
    )


def test_without_a_status_token_the_console_is_off_and_says_how_to_turn_it_on() -> None:
    with FakeServer(repeating(script([Reply("Hello.")]))) as upstream, \
            ProxyServer(config(upstream, token=None)) as proxy, httpx.Client() as client:  # fmt: skip
        page = client.get(f"{proxy.url}/taskgate/console")
        assert page.status_code == 403 and "TASKGATE_STATUS_TOKEN" in page.text
        assert client.post(f"{proxy.url}/taskgate/console/signin",
                           data={"token": ""}).status_code == 403  # fmt: skip


# -- in a real browser ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as b:
        yield b


def signed_in(browser: Any, url: str) -> Any:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    page.goto(f"{url}/taskgate/console")
    page.fill("#token", TOKEN)
    page.click("#signin")
    page.wait_for_selector("#metrics li")
    return page


def test_an_approval_clicked_in_the_console_lets_the_blocked_call_run_next(browser: Any) -> None:
    replies = [calls("send_rfq"), calls("send_rfq"), Reply("Sent.")]
    with FakeServer(repeating(script(replies))) as upstream, ProxyServer(config(upstream)) as proxy, \
            httpx.Client() as client:  # fmt: skip
        chat = Chat(proxy.base_url, client)
        assert "send_rfq was not run" in chat.say("send the RFQ")["content"]
        page = signed_in(browser, proxy.url)
        listed = page.locator("#list button.row").first.text_content() or ""
        assert '"send the RFQ"' in listed and "anonymous" in listed and "1 turn" in listed
        page.click("#list button.row")
        page.wait_for_selector("#timeline li.refuse")
        notice = page.locator("#timeline li.refuse .text").first.text_content() or ""
        assert notice.startswith("send_rfq was not run: it needs")
        assert "1 refused" in (page.locator("#metrics").text_content() or "")
        page.click("#graph g.node[data-step='s3']")
        page.click("#do-approve")
        page.fill("#approve-by", "ops-lead")
        page.fill("#approve-reason", "the vendor's deadline")
        page.click("#act-confirm")  # the dialog is the confirmation
        page.wait_for_selector("#waiting li.held")
        assert "ops-lead approves one call" in (page.locator("#waiting").text_content() or "")
        ran = chat.say("It is approved: send the RFQ.")
        assert ran["tool_calls"][0]["function"]["name"] == "send_rfq"
        page.wait_for_selector("#timeline li.approval")  # live: no reload
        approval = page.locator("#timeline li.approval .text").text_content() or ""
        assert approval == "ops-lead approved one call of 'send the RFQ': the vendor's deadline"
        assert "handed out, no result yet: send_rfq" in (
            page.locator("#waiting").text_content() or ""
        )
        chat.result("call_send_rfq")
        post(client, proxy.base_url, chat.messages)  # the tool's result: the call is booked
        page.wait_for_selector("#timeline li.admit")
        assert (
            page.locator("#timeline li.admit .text").text_content()
            == "send_rfq ran for 'send the RFQ'"
        )
        assert page.errors == []


def test_signing_in_from_a_second_tab_keeps_the_first_signed_in(browser: Any) -> None:
    """A second tab's sign-in replaces the cookie and the console key together: the first tab
    reads the key at each request and goes on (it used to sign every tab out)."""
    with FakeServer(repeating(script([Reply("Hello.")]))) as upstream, \
            ProxyServer(config(upstream)) as proxy, httpx.Client() as client:  # fmt: skip
        Chat(proxy.base_url, client).say("hi")
        context = browser.new_context()
        try:
            first, second = context.new_page(), context.new_page()
            second.goto(f"{proxy.url}/taskgate/console")  # left at the sign-in form
            for page in (first, second):
                if page is first:
                    page.goto(f"{proxy.url}/taskgate/console")
                page.fill("#token", TOKEN)
                page.click("#signin")
                page.wait_for_selector("#metrics li")
            first.evaluate("document.getElementById('live').textContent = ''")
            from playwright.sync_api import expect

            expect(first.locator("#live")).to_have_text(re.compile("^live"), timeout=30_000)
            # a poll after the second sign-in, answered
            assert first.locator("#token").count() == 0 and second.locator("#token").count() == 0
        finally:
            context.close()


def test_steps_named_like_javascripts_built_ins_are_drawn(browser: Any) -> None:
    """A plan's step ids are any strings a client's brief or a compiled plan gives: the page
    keeps them in Maps, so ``constructor`` or ``__proto__`` is a step like any other."""
    names = ["constructor", "__proto__", "toString"]
    plan = Plan.model_validate({"binding": "tool", "steps": {
        sid: {"tool": f"tool_{i}", **({"deps": [names[i - 1]]} if i else {})}
        for i, sid in enumerate(names)}})  # fmt: skip
    with FakeServer(repeating(script([calls("tool_2")]))) as upstream, \
            ProxyServer(config(upstream, plan)) as proxy, httpx.Client() as client:  # fmt: skip
        Chat(proxy.base_url, client).say("do the last one")
        page = signed_in(browser, proxy.url)
        page.click("#list button.row")
        page.wait_for_selector("#graph g.node")
        drawn = page.locator("#graph g.node").evaluate_all("gs => gs.map(g => g.dataset.step)")
        assert drawn == names
        assert page.locator("#graph g.node.blocked").count() == 2
        assert page.errors == []


def test_hostile_names_and_notices_render_as_text(browser: Any) -> None:
    plan = Plan.model_validate({"binding": "tool", "steps": {
        "s1": {"tool": "draft_rfq", "text": HOSTILE},
        "s2": {"tool": "send_rfq", "text": "send it", "deps": ["s1"]}}})  # fmt: skip
    hostile_call = Reply("", tool_calls=(ToolCall(HOSTILE, {}, id="call_x"),))
    with FakeServer(repeating(script([calls("send_rfq"), hostile_call]))) as upstream, \
            ProxyServer(config(upstream, plan)) as proxy, httpx.Client() as client:  # fmt: skip
        named = {"x-taskgate-conversation": HOSTILE}
        chat = Chat(proxy.base_url, client)
        chat.say("send it")
        chat.messages[-1:] = []
        client.post(f"{proxy.base_url}/chat/completions", headers=named, json={
            "model": "fake", "messages": [{"role": "user", "content": HOSTILE}]})  # fmt: skip
        page = signed_in(browser, proxy.url)
        rows = page.locator("#list button.row .id").all_text_contents()
        assert any(HOSTILE in row for row in rows)
        for i in range(len(rows)):
            page.locator("#list button.row").nth(i).click()
            page.wait_for_selector("#timeline li")
            text = page.locator("#detail").text_content() or ""
            assert "<img" in text or "send_rfq was not run" in text
        assert page.evaluate("window.__pwned") is None
        assert page.locator("#detail img, #list img, #detail script").count() == 0
        assert page.errors == []


def test_the_mcp_gate_serves_the_same_console_and_a_click_settles_a_call_in_doubt(
    browser: Any, tmp_path: Path
) -> None:
    """A call that began and never ended (the gate died mid-call) shows as in doubt; "It did not
    run", confirmed, settles it, and the step may be called again."""
    pytest.importorskip("mcp", reason="needs the mcp extra")
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from starlette.applications import Starlette

    from taskgate.integrations.mcp import McpGate, McpGateConfig
    from taskgate.integrations.mcp.operator import routes
    from taskgate.journal.store import SQLiteStore

    journal = tmp_path / "j.db"
    plan_config = McpGateConfig(tool_chain(3), requests="plan", status_token=TOKEN)

    async def died_mid_call() -> None:
        async def gone() -> str:
            raise ConnectionError("the gate died")

        with pytest.raises(ConnectionError):
            await McpGate(plan_config, SQLiteStore(journal)).call(
                "desk~local", "collect_requirements", {}, gone, lambda r: True
            )

    with ThreadPoolExecutor(1) as pool:  # playwright holds this thread's event loop
        pool.submit(asyncio.run, died_mid_call()).result()
    gate = McpGate(plan_config, SQLiteStore(journal))
    with served(Starlette(routes=routes(gate, local=True))) as url:
        page = signed_in(browser, url)
        assert page.locator("body").get_attribute("data-noun") == "session"
        page.click("#list button.row")
        page.wait_for_selector("#waiting li.doubt")
        assert "in doubt: a call of 'collect the requirements'" in (
            page.locator("#waiting li.doubt").text_content() or ""
        )
        page.click("#waiting li.doubt button.settle-not")
        page.click("#act-confirm")
        page.wait_for_selector("#waiting li.doubt", state="detached")
        assert "Settled" in (page.locator("#flash").text_content() or "")
        status = httpx.get(f"{url}/taskgate/sessions/desk~local", headers=BEARER).json()
        assert status["in_doubt"] == [] and status["statuses"]["s1"] == "TODO"
        assert page.errors == []


def test_the_ledger_shows_the_users_words_beside_each_request_and_how_they_were_read(
    browser: Any,
) -> None:
    replies = [calls("collect_requirements"), Reply("Collected.")]
    with FakeServer(repeating(script(replies))) as upstream, ProxyServer(config(upstream)) as proxy, \
            httpx.Client() as client:  # fmt: skip
        chat = Chat(proxy.base_url, client)
        chat.say("Please collect the requirements for 40 laptops.")
        listed = client.get(f"{proxy.url}/taskgate/conversations", headers=BEARER).json()
        key = listed["conversations"][0]["id"]
        shown = client.get(f"{proxy.url}/taskgate/conversations/{key}", headers=BEARER).json()
        requests = [r for r in shown["ledger"] if r["kind"] == "request"]
        said = shown["said"][str(requests[0]["seq"])]
        assert said == {"user": "Please collect the requirements for 40 laptops.",
                        "read_as": "request"}  # fmt: skip
        page = signed_in(browser, proxy.url)
        page.click("#list button.row")
        page.wait_for_selector("#timeline li.request")
        row = page.locator("#timeline li.request .text").first.text_content() or ""
        assert '"Please collect the requirements for 40 laptops."' in row
        assert "read as a request" in row
        assert page.errors == []
