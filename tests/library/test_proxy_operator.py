"""An operator's revisions and approvals of a conversation the proxy gates in plan mode:
``POST /taskgate/conversations/{id}/revisions`` and ``.../approvals`` (the status token only),
held in the journal and given at the conversation's next request, each a receipts-ledger entry."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from plans import tool_chain
from proxy_helpers import Chat, post, repeating
from taskgate import FakeServer, Reply, script
from taskgate.errors import TaskgateError
from taskgate.llm.fake import ToolCall
from taskgate.proxy import ProxyConfig
from taskgate.proxy.testing import ProxyServer

TOKEN = {"Authorization": "Bearer ops-secret"}


def calls(*names: str) -> Reply:
    return Reply("", tool_calls=tuple(ToolCall(n, {"note": ""}, id=f"call_{n}") for n in names))


def only_conversation(proxy: ProxyServer, client: httpx.Client) -> str:
    rows = client.get(f"{proxy.url}/taskgate/conversations", headers=TOKEN).json()
    (row,) = rows["conversations"]
    return str(row["id"])


def change(proxy: ProxyServer, client: httpx.Client, key: str, what: str, body: object,
           headers: dict[str, str] | None = TOKEN) -> httpx.Response:  # fmt: skip
    url = f"{proxy.url}/taskgate/conversations/{key}/{what}"
    return client.post(url, json=body, headers=headers)


def config(upstream: FakeServer) -> ProxyConfig:
    return ProxyConfig(upstream.base_url, plan=tool_chain(3), status_token="ops-secret")


def test_an_operator_cancels_a_step_and_its_call_is_refused_at_the_next_request() -> None:
    replies = [Reply("Hello."), calls("draft_rfq"), calls("send_rfq"), calls("collect_requirements"),
               Reply("Done."), calls("send_rfq"), Reply("Sent.")]  # fmt: skip
    with FakeServer(repeating(script(replies))) as upstream, ProxyServer(config(upstream)) as proxy, \
            httpx.Client() as client:  # fmt: skip
        chat = Chat(proxy.base_url, client)
        chat.say("hi")
        key = only_conversation(proxy, client)
        held = change(proxy, client, key, "revisions", {"cancel": "s2", "inherit": True})
        assert held.status_code == 200, held.text
        assert held.json()["held"] == [{"kind": "held", "revision": {
            "cancel": "s2", "rewires": {"s3": ["s1"]}}}]  # fmt: skip
        refused = chat.say("draft the RFQ")
        assert refused["content"].startswith(
            "draft_rfq was not run: 'draft the RFQ' was cancelled."
        )
        assert chat.say("send the RFQ")["content"].startswith(
            "send_rfq was not run: it needs 'collect the requirements' done first."
        )  # rewired onto s1, not stranded
        assert chat.say("collect the requirements")["tool_calls"]
        chat.result("call_collect_requirements")
        assert post(client, proxy.base_url, chat.messages)["choices"][0]["message"]["content"]
        chat.messages.append({"role": "assistant", "content": "Done."})
        assert chat.say("send the RFQ")["tool_calls"][0]["function"]["name"] == "send_rfq"
        shown = client.get(f"{proxy.url}/taskgate/conversations/{key}", headers=TOKEN).json()
    assert shown["statuses"]["s2"] == "CANCELLED" and shown["held"] == []
    assert any(row.get("kind") == "revision" for row in shown["ledger"])


def test_an_operators_approval_lets_the_next_request_run_one_blocked_call() -> None:
    replies = [calls("send_rfq"), calls("send_rfq"), Reply("Sent."), calls("send_rfq")]
    with FakeServer(repeating(script(replies))) as upstream, ProxyServer(config(upstream)) as proxy, \
            httpx.Client() as client:  # fmt: skip
        chat = Chat(proxy.base_url, client)
        assert "send_rfq was not run" in chat.say("send the RFQ")["content"]
        key = only_conversation(proxy, client)
        body = {"step": "send_rfq", "by": "ops-lead", "reason": "the vendor's deadline"}
        assert change(proxy, client, key, "approvals", body).status_code == 200
        ran = chat.say("It is approved: send the RFQ.")
        assert ran["tool_calls"][0]["function"]["name"] == "send_rfq"
        chat.result("call_send_rfq")
        post(client, proxy.base_url, chat.messages)
        chat.messages.append({"role": "assistant", "content": "Sent."})
        again = chat.say("send the RFQ")  # the approval was used up: done, not run again
        assert again["content"].startswith("send_rfq was not run: 'send the RFQ' is already done")
        shown = client.get(f"{proxy.url}/taskgate/conversations/{key}", headers=TOKEN).json()
    (approval,) = [row for row in shown["ledger"] if row.get("kind") == "approval"]
    assert (approval["step"], approval["by"]) == ("s3", "ops-lead")


def test_two_approvals_posted_at_once_get_one_200_and_one_409() -> None:
    """One approval at a time is enforced when an approval is posted: of two posted together,
    one is held and the other is refused with a 409 naming the first; nothing is dropped later."""
    from concurrent.futures import ThreadPoolExecutor

    with FakeServer(script([calls("send_rfq")])) as upstream, \
            ProxyServer(config(upstream)) as proxy, httpx.Client() as client:  # fmt: skip
        Chat(proxy.base_url, client).say("send the RFQ")
        key = only_conversation(proxy, client)
        bodies = [{"step": "send_rfq", "by": "alice"}, {"step": "draft_rfq", "by": "bob"}]
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(
                lambda b: change(proxy, client, key, "approvals", b), bodies))  # fmt: skip
        assert sorted(a.status_code for a in answers) == [200, 409]
        (refused,) = [a for a in answers if a.status_code == 409]
        assert "one approval at a time" in refused.json()["error"]["message"]
        shown = client.get(f"{proxy.url}/taskgate/conversations/{key}", headers=TOKEN).json()
    assert len(shown["held"]) == 1


@pytest.mark.parametrize(
    ("what", "body", "status", "says"),
    [
        ("revisions", {"cancel": "s9"}, 400, "s9"),
        ("revisions", {"cancel": "s1"}, 400, "s2 waiting forever on cancelled s1"),
        ("revisions", {}, 400, "a revision is one of"),
        ("revisions", {"cancel": "s2", "drop": True}, 400, "drop: Extra inputs"),
        ("revisions", {"rewire": {"s3": ["s3"]}}, 400, "the change was refused"),
        ("revisions", "[1", 400, "JSON"),
        ("approvals", {"step": "buy_laptops", "by": "ops"}, 400, "nothing to approve"),
        ("approvals", {"step": "send_rfq", "by": ""}, 400, "by: String should have at least"),
        ("approvals", {"step": "send_rfq"}, 400, "by: Field required"),
        ("approvals", {"step": "send_rfq", "by": "   "}, 400, "an approval names who gave it"),
    ],
)
def test_a_bad_change_is_one_line_and_nothing_is_held(
    what: str, body: object, status: int, says: str
) -> None:
    with FakeServer(script([Reply("Hello.")])) as upstream, \
            ProxyServer(config(upstream)) as proxy, httpx.Client() as client:  # fmt: skip
        Chat(proxy.base_url, client).say("hi")
        key = only_conversation(proxy, client)
        if isinstance(body, str):
            url = f"{proxy.url}/taskgate/conversations/{key}/{what}"
            resp = client.post(url, content=body, headers=TOKEN)
        else:
            resp = change(proxy, client, key, what, body)
        assert resp.status_code == status and says in resp.json()["error"]["message"]
        assert "\n" not in resp.json()["error"]["message"]
        shown = client.get(f"{proxy.url}/taskgate/conversations/{key}", headers=TOKEN).json()
        assert shown["held"] == []


def test_changes_need_the_status_token_and_name_a_conversation() -> None:
    with FakeServer(script([Reply("Hello."), Reply("Hi.")])) as upstream, httpx.Client() as client:
        open_config = ProxyConfig(upstream.base_url, plan=tool_chain(3))
        with ProxyServer(open_config) as proxy:  # no token: no one may change a conversation
            Chat(proxy.base_url, client).say("hi")
            (row,) = client.get(f"{proxy.url}/taskgate/conversations").json()["conversations"]
            resp = change(proxy, client, row["id"], "revisions", {"cancel": "s3"}, headers=None)
            assert resp.status_code == 403 and "TASKGATE_STATUS_TOKEN" in resp.text
        with ProxyServer(config(upstream)) as proxy:
            Chat(proxy.base_url, client).say("hi")
            key = only_conversation(proxy, client)
            forged = {"Authorization": "Bearer guess"}
            assert change(proxy, client, key, "revisions", {"cancel": "s3"},
                          headers=forged).status_code == 401  # fmt: skip
            assert change(proxy, client, "nobody~x", "revisions",
                          {"cancel": "s3"}).status_code == 404  # fmt: skip


def test_without_a_status_token_the_metrics_are_served_only_on_the_gates_own_host() -> None:
    """The metrics count every client's calls: without the operator's token, a client on another
    host reads none of them (a 403 naming the token), whatever key it sends; the gate's own host
    reads them; with the token, the token alone."""
    import asyncio

    from taskgate.proxy.app import create_app

    async def metrics(token: str | None, client: str, headers: dict[str, str]) -> int:
        app = create_app(
            ProxyConfig("http://127.0.0.1:9/v1", plan=tool_chain(3), status_token=token)
        )
        transport = httpx.ASGITransport(app=app, client=(client, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            return (await c.get("/taskgate/metrics", headers=headers)).status_code

    bob = {"Authorization": "Bearer sk-bob"}
    assert asyncio.run(metrics(None, "203.0.113.7", bob)) == 403
    assert asyncio.run(metrics(None, "203.0.113.7", {})) == 403
    assert asyncio.run(metrics(None, "127.0.0.1", bob)) == 200
    assert asyncio.run(metrics(None, "::1", {})) == 200
    assert asyncio.run(metrics("ops-secret", "203.0.113.7", TOKEN)) == 200
    assert asyncio.run(metrics("ops-secret", "127.0.0.1", bob)) == 401


def test_wrong_tokens_are_limited_per_address_with_a_429_that_says_when_to_retry() -> None:
    """Guesses at the status token, on any operator endpoint or the console, count against the
    address they come from (every loopback address one: a local process may bind any of them):
    past the limit it is a 429 with Retry-After, the right token included (a guess made then
    learns nothing), while an operator signed in before goes on, and another address is not
    limited; the window passes and the address may try again."""
    from taskgate.serving.signin import console_key
    from taskgate.serving.throttle import LIMIT, WINDOW_S, Throttle, bucket

    with FakeServer(script([Reply("Hello.")])) as upstream, \
            ProxyServer(config(upstream)) as proxy, httpx.Client() as attacker, \
            httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2")) as operator:  # fmt: skip
        signin = f"{proxy.url}/taskgate/console/signin"
        assert operator.post(signin, data={"token": "ops-secret"}).status_code == 200
        key = console_key("ops-secret", operator.cookies[f"taskgate_console_{proxy.port}"])
        paths = ["/taskgate/conversations", "/taskgate/metrics", "/taskgate/console"]
        answers = [
            attacker.get(f"{proxy.url}{paths[i % 3]}", headers={"Authorization": f"Bearer g{i}"})
            for i in range(LIMIT + 5)
        ]
        assert [a.status_code for a in answers[:LIMIT]] == [401] * LIMIT
        assert {a.status_code for a in answers[LIMIT:]} == {429}
        assert 0 < int(answers[-1].headers["retry-after"]) <= WINDOW_S
        right = attacker.get(f"{proxy.url}/taskgate/conversations", headers=TOKEN)
        assert right.status_code == 429  # no oracle while limited
        assert attacker.post(signin, data={"token": "ops-secret"}).status_code == 429
        other = operator.get(f"{proxy.url}/taskgate/conversations", headers=TOKEN)
        assert other.status_code == 429  # 127.0.0.2 is the same host: the same bucket
        listed = operator.get(f"{proxy.url}/taskgate/conversations",
                              headers={"x-taskgate-console": key})  # fmt: skip
        assert listed.status_code == 200  # the console signed in before is served
    assert bucket("127.0.0.2") == bucket("127.9.9.9") == bucket("::1") == "loopback"
    assert bucket("2001:db8::1") == bucket("2001:db8::ffff") == "2001:db8::/64"
    assert bucket("::ffff:203.0.113.9") == "203.0.113.9" != bucket("203.0.113.10")
    throttle = Throttle()
    for i in range(LIMIT):
        throttle.failed("198.51.100.1", now=float(i))
    assert throttle.wait_s("198.51.100.1", now=float(LIMIT)) == WINDOW_S - LIMIT
    assert throttle.wait_s("198.51.100.2", now=float(LIMIT)) == 0
    assert throttle.wait_s("198.51.100.1", now=WINDOW_S + LIMIT) == 0


def test_a_held_change_survives_a_restart_on_the_sqlite_journal(tmp_path: Path) -> None:
    from taskgate.journal.store import SQLiteStore

    db = tmp_path / "journal.db"
    replies = [Reply("Hello."), calls("draft_rfq")]
    with FakeServer(script(replies)) as upstream, httpx.Client() as client:
        with ProxyServer(config(upstream), SQLiteStore(db)) as proxy:
            chat = Chat(proxy.base_url, client)
            chat.say("hi")
            key = only_conversation(proxy, client)
            assert change(proxy, client, key, "revisions", {"cancel": "s3"}).status_code == 200
        with ProxyServer(config(upstream), SQLiteStore(db)) as proxy:  # a new process
            shown = client.get(f"{proxy.url}/taskgate/conversations/{key}", headers=TOKEN).json()
            assert len(shown["held"]) == 1
            chat.url = proxy.base_url
            chat.say("collect the requirements")  # the next request gives it
            shown = client.get(f"{proxy.url}/taskgate/conversations/{key}", headers=TOKEN).json()
    assert shown["held"] == [] and shown["statuses"]["s3"] == "CANCELLED"


def test_the_proxys_notices_option_gives_the_papers_notices() -> None:
    with FakeServer(script([calls("send_rfq")])) as upstream, httpx.Client() as client:
        protocol = ProxyConfig(upstream.base_url, plan=tool_chain(3), notices="protocol")
        with ProxyServer(protocol) as proxy:
            refused = Chat(proxy.base_url, client).say("send the RFQ")
    assert "REJECTED" in refused["content"] and not refused.get("tool_calls")
    with pytest.raises(TaskgateError, match="notices must be plain or protocol"):
        ProxyConfig("http://127.0.0.1:1/v1", notices="loud")


def test_conversations_beyond_the_cap_leave_memory_and_come_back_from_the_journal() -> None:
    replies = [calls("collect_requirements"), Reply("Collected."), Reply("Hi."), Reply("Hi."),
               calls("draft_rfq")]  # fmt: skip
    with FakeServer(script(replies)) as upstream, httpx.Client() as client:
        config = ProxyConfig(upstream.base_url, plan=tool_chain(3), max_conversations=2)
        with ProxyServer(config) as proxy:
            first = Chat(proxy.base_url, client)
            assert first.say("Collect the requirements.")["tool_calls"]
            first.result("call_collect_requirements")
            post(client, proxy.base_url, first.messages)
            first.messages.append({"role": "assistant", "content": "Collected."})
            Chat(proxy.base_url, client).say("hello from the second")
            Chat(proxy.base_url, client).say("hello from the third")
            state = proxy.app.state.proxy
            assert len(state.conversations) <= 2 and state.conversations.locks <= 2
            drafted = first.say("Draft the RFQ.")  # the first, read back: s1 has its receipt
    assert [c["function"]["name"] for c in drafted["tool_calls"]] == ["draft_rfq"]
