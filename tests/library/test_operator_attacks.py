"""The operators' endpoints and console against a hostile neighbour on the same host, on the proxy
and on the MCP gate's status port (the same router, console and serving): each test is an attack
that used to work, and now fails. Real uvicorn servers on loopback, real sockets."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from plans import tool_chain
from serving import served
from taskgate import FakeServer, Reply, script
from taskgate.proxy import ProxyConfig
from taskgate.proxy.testing import ProxyServer
from taskgate.serving.signin import COOKIE, console_key, cookie_value
from taskgate.serving.throttle import LIMIT

TOKEN = "ops-secret"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def _proxy(**options: Any) -> Iterator[str]:
    with FakeServer(script([Reply("Hello.")] * 4)) as upstream, ProxyServer(
        ProxyConfig(upstream.base_url, plan=tool_chain(3), status_token=TOKEN, **options)
    ) as proxy:  # fmt: skip
        with httpx.Client() as client:  # one conversation to list
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            assert client.post(f"{proxy.base_url}/chat/completions", json=body).status_code == 200
        yield proxy.url


@contextmanager
def _mcp_status(**options: Any) -> Iterator[str]:
    pytest.importorskip("mcp", reason="needs the mcp extra")
    from taskgate.integrations.mcp import McpGate, McpGateConfig
    from taskgate.integrations.mcp.operator import status_app

    gate = McpGate(McpGateConfig(tool_chain(3), requests="plan", status_token=TOKEN))
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, gate.session("desk~local")).result()
    with served(status_app(gate, **options)) as url:
        yield url


#: the listing of each gate's URL (its conversations or its sessions)
_LISTINGS: dict[str, str] = {}


@pytest.fixture(params=["proxy", "mcp-status-port"])
def gate(request: pytest.FixtureRequest) -> Iterator[str]:
    """A gate with the status token set, one conversation (or session) in it."""
    proxied = request.param == "proxy"
    with _proxy() if proxied else _mcp_status() as url:
        _LISTINGS[url] = f"{url}/taskgate/{'conversations' if proxied else 'sessions'}"
        yield url


def _listing(url: str) -> str:
    return _LISTINGS[url]


def _sign_in(client: httpx.Client, url: str) -> tuple[str, str]:
    """Sign in through the form; the cookie's value and the console key the page was given."""
    answer = client.post(f"{url}/taskgate/console/signin", data={"token": TOKEN})
    assert answer.status_code == 200, answer.text
    port = url.rpartition(":")[2]
    value = client.cookies[f"{COOKIE}_{port}"]
    key = answer.text.split('name="taskgate-console-key" content="')[1].split('"')[0]
    return value, key


# -- the throttle ---------------------------------------------------------------------------------
def test_attack_x_forwarded_for_does_not_choose_the_address_guesses_are_counted_under(
    gate: str,
) -> None:
    """uvicorn's default trusted ``X-Forwarded-For`` from loopback: every guess could claim a new
    address, and 120 of 120 were compared with no 429."""
    answers = [
        httpx.get(_listing(gate), headers={"Authorization": f"Bearer guess{i}",
                                           "X-Forwarded-For": f"203.0.113.{i}"}).status_code
        for i in range(LIMIT + 5)
    ]  # fmt: skip
    assert answers[:LIMIT] == [401] * LIMIT and set(answers[LIMIT:]) == {429}
    right = httpx.get(_listing(gate), headers={**BEARER, "X-Forwarded-For": "198.51.100.7"})
    assert right.status_code == 429  # the connection's address is limited, whatever it claims


def test_attack_x_forwarded_for_does_not_open_the_metrics_or_lock_out_another_address() -> None:
    """Without a status token the metrics are the gate's own host's; a forwarded header from
    loopback can no longer say it is a remote client's (nor a remote one say it is local)."""
    with FakeServer(script([])) as upstream, \
            ProxyServer(ProxyConfig(upstream.base_url, plan=tool_chain(2))) as proxy:  # fmt: skip
        shown = httpx.get(f"{proxy.url}/taskgate/metrics", headers={"X-Forwarded-For": "8.8.8.8"})
    assert shown.status_code == 200  # the peer is loopback, whatever the header says


def test_attack_two_hundred_held_bodies_pass_the_sign_in_throttle_no_more(gate: str) -> None:
    """The sign-in checked the throttle, awaited the body, and only then counted a wrong token:
    connections that sent their headers and held their bodies all passed the check, 199 wrong
    tokens were compared, and the 200th signed in. Now each is counted before its body is read."""
    bodies = [f"token=guess{i}".encode() for i in range(60)]
    socks = [(_signin_sent(gate, len(body)), body) for body in bodies]  # bodies held back
    statuses = []
    for s, body in socks:
        s.sendall(body)
        statuses.append(_status(s))
    assert statuses.count(401) <= LIMIT and statuses.count(401) + statuses.count(429) == 60
    assert httpx.post(f"{gate}/taskgate/console/signin", data={"token": TOKEN}).status_code == 429


def _signin_sent(gate: str, length: int, body: bytes = b"") -> socket.socket:
    """A connection that sent a sign-in's headers declaring ``length`` bytes, and ``body``."""
    host, port = gate.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)))
    s.sendall(
        f"POST /taskgate/console/signin HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: "
        f"application/x-www-form-urlencoded\r\nContent-Length: {length}\r\n\r\n".encode()
        + body
    )
    return s


def _status(s: socket.socket) -> int:
    with s:
        s.settimeout(60)
        head = s.recv(64)
    return int(head.split()[1])


def test_attack_requests_without_credentials_lock_nobody_out(gate: str) -> None:
    """A request with no credentials counted as a wrong token, so twenty token-less loads (a
    page of img tags in another tab) kept the operator at 429."""
    for _ in range(LIMIT * 2):
        assert httpx.get(_listing(gate)).status_code == 401
        assert httpx.get(f"{gate}/taskgate/console").status_code == 401
        assert httpx.get(f"{gate}/taskgate/metrics").status_code == 401
    assert httpx.get(_listing(gate), headers=BEARER).status_code == 200
    with httpx.Client() as client:
        _sign_in(client, gate)


def test_attack_a_limited_address_keeps_the_signed_in_console(gate: str) -> None:
    """A local process spends the address's wrong tokens: the bearer token waits, but a console
    already signed in (its cookie and key cannot be guessed) goes on working."""
    with httpx.Client() as client:
        _, key = _sign_in(client, gate)
        for i in range(LIMIT + 1):
            httpx.get(_listing(gate), headers={"Authorization": f"Bearer guess{i}"})
        assert httpx.get(_listing(gate), headers=BEARER).status_code == 429
        assert client.get(f"{gate}/taskgate/console").status_code == 200
        listed = client.get(_listing(gate), headers={"x-taskgate-console": key})
        assert listed.status_code == 200


# -- the cookie -----------------------------------------------------------------------------------
def test_attack_a_page_on_another_port_that_took_the_cookie_operates_nothing(gate: str) -> None:
    """Browsers send a host's cookies to all its ports: a page on another local port read the
    HttpOnly cookie off its own request and, with the console's header, listed conversations and
    posted approvals. The cookie alone, with any header but its sign-in's key, is now refused."""
    with httpx.Client() as client:
        value, key = _sign_in(client, gate)
    port = gate.rpartition(":")[2]
    stolen = {"cookie": f"{COOKIE}_{port}={value}"}
    other_key = console_key(TOKEN, cookie_value(TOKEN))  # the key of another sign-in
    for header in ("1", "", other_key, "f" * 64, key.upper()):
        headers = {**stolen, "x-taskgate-console": header}
        assert httpx.get(_listing(gate), headers=headers).status_code == 401, header
        change = httpx.post(f"{_listing(gate)}/x/approvals", headers=headers,
                            json={"step": "s1", "by": "mallory"})  # fmt: skip
        assert change.status_code == 401, header
    assert (
        httpx.get(_listing(gate), headers={**stolen, "x-taskgate-console": key}).status_code == 200
    )


def test_attack_a_junk_cookie_of_the_same_name_does_not_sign_the_operator_out(gate: str) -> None:
    """A page can set a cookie of the console's name at path ``/``; Starlette's parser kept it
    over the real one, and sign-in looped back to the form. Every value of the name counts."""
    with httpx.Client() as client:
        value, key = _sign_in(client, gate)
    name = f"{COOKIE}_{gate.rpartition(':')[2]}"
    for jar in (f"{name}={value}; {name}=junk", f"{name}=junk; {name}={value}",
                f'{name}="junk"; other=1; {name}={value}'):  # fmt: skip
        headers = {"cookie": jar}
        assert httpx.get(f"{gate}/taskgate/console", headers=headers).status_code == 200, jar
        keyed = {**headers, "x-taskgate-console": key}
        assert httpx.get(_listing(gate), headers=keyed).status_code == 200, jar


def test_the_sign_in_page_hands_the_key_once_and_the_console_page_holds_none(gate: str) -> None:
    with httpx.Client() as client:
        value, key = _sign_in(client, gate)
        page = client.get(f"{gate}/taskgate/console")
    assert page.status_code == 200 and key not in page.text and value not in page.text


# -- bodies, hosts and connections ---------------------------------------------------------------
def test_attack_a_huge_sign_in_body_is_refused_before_it_is_read(gate: str) -> None:
    """The sign-in read up to 64 MiB before applying its 4 KiB limit."""
    with _signin_sent(gate, 60_000_000) as s:
        assert _status(s) == 413  # answered with no byte of the body sent
    chunks = (b"token=" + b"x" * 1000 for _ in range(10))  # no length: read up to the limit
    answer = httpx.post(f"{gate}/taskgate/console/signin", content=chunks,
                        headers={"content-type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert answer.status_code == 413


@pytest.mark.parametrize("where", ["proxy", "mcp-status-port"])
def test_attack_a_dns_rebinding_host_is_refused_on_every_route(where: str) -> None:
    """The proxy had no Host check: a DNS-rebinding page read the anonymous clients'
    conversations and the metrics, and drove ``/v1/chat/completions``."""
    with _proxy() if where == "proxy" else _mcp_status() as url:
        port = url.rpartition(":")[2]
        paths = ["/taskgate/metrics", "/taskgate/console", "/taskgate/conversations"]
        if where == "proxy":
            paths += ["/v1/models"]
        for path in paths:
            answer = httpx.get(f"{url}{path}", headers={"host": f"rebind.example:{port}"})
            assert answer.status_code == 421 and "--allowed-host" in answer.text, path
        if where == "proxy":
            posted = httpx.post(f"{url}/v1/chat/completions", headers={"host": f"evil.example:{port}"},
                                json={"model": "m", "messages": [{"role": "user", "content": "x"}]})  # fmt: skip
            assert posted.status_code == 421
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
            assert httpx.get(f"{url}/taskgate/metrics", headers={"host": host}).status_code in (
                200,
                401,
            )


def test_attack_a_page_of_another_origin_cannot_drive_the_proxy_with_a_simple_request() -> None:
    """A ``text/plain`` POST needs no CORS preflight: a page of any site could make the proxy
    call the upstream and write conversations."""
    with _proxy() as url:
        body = '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
        for origin in ("http://evil.example", "http://127.0.0.1:1", "http://localhost:1", "null"):
            answer = httpx.post(f"{url}/v1/chat/completions", content=body,
                                headers={"content-type": "text/plain", "origin": origin})  # fmt: skip
            assert answer.status_code == 403, origin


def test_an_allowed_host_name_is_answered() -> None:
    with _proxy(allowed_hosts=("gate.internal",)) as url:
        port = url.rpartition(":")[2]
        for host in (f"gate.internal:{port}", "gate.internal"):
            assert httpx.get(f"{url}/taskgate/metrics", headers={"host": host}).status_code == 401
        assert (
            httpx.get(f"{url}/taskgate/metrics", headers={"host": "other.internal"}).status_code
            == 421
        )


def test_attack_a_connection_that_trickles_its_headers_is_closed(
    gate: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No header timeout closed held connections (slowloris)."""
    import taskgate.serving.serve as serve

    monkeypatch.setattr(serve, "HEADER_TIMEOUT_S", 0.5)
    host, port = gate.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:  # a connection made after the patch
        s.sendall(b"GET /taskgate/metrics HTTP/1.1\r\nHost: x")
        s.settimeout(60)
        assert s.recv(100) == b""  # closed by the gate, without an answer


def test_attack_a_body_held_back_is_answered_408(
    gate: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import taskgate.serving.console as console

    monkeypatch.setattr(console, "_FORM_S", 0.5)  # the sign-in's own deadline (10 s)
    with _signin_sent(gate, 100, b"token=") as s:
        assert _status(s) == 408


def test_attack_guesses_spread_over_loopback_addresses_are_one_addresss(gate: str) -> None:
    """A local process may bind any of 127.0.0.0/8's 16 million addresses: 200 guesses from 10
    of them were all compared. Every loopback address is one bucket (an IPv6 address its /64)."""
    answers = []
    for i in range(LIMIT + 10):
        transport = httpx.HTTPTransport(local_address=f"127.0.{i // 250}.{i % 250 + 2}")
        with httpx.Client(transport=transport) as client:
            answers.append(
                client.get(_listing(gate), headers={"Authorization": f"Bearer g{i}"}).status_code
            )
    assert answers.count(401) == LIMIT and set(answers[LIMIT:]) == {429}


def test_attack_cookies_tossed_from_another_port_do_not_sign_the_operator_out(gate: str) -> None:
    """A page on another port set twenty 4 KB cookies at ``/taskgate``: the header passed 64 KiB
    and every sign-in in it was refused, so signing in again looped. Cookies of other names are
    passed over, however many or large."""
    with httpx.Client() as client:
        value, key = _sign_in(client, gate)
    name = f"{COOKIE}_{gate.rpartition(':')[2]}"
    tossed = "; ".join(f"junk{i}={'x' * 4000}" for i in range(20))
    headers = {"cookie": f"{tossed}; {name}={value}", "x-taskgate-console": key}
    assert httpx.get(f"{gate}/taskgate/console", headers=headers).status_code == 200
    assert httpx.get(_listing(gate), headers=headers).status_code == 200


def test_a_huge_system_prompt_is_not_read_line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tens of megabytes of short plan lines held the event loop for seconds while every line was
    parsed, before the brief's budget was applied: a prompt over the budget is judged by a look
    for a plan line's binding (a brief, refused as too long) and never parsed."""
    import taskgate.proxy.compiling as compiling
    import taskgate.proxy.server as server

    parsed: list[int] = []
    real = server.brief_steps
    for module in (server, compiling):
        monkeypatch.setattr(module, "brief_steps", lambda t: parsed.append(len(t)) or real(t))
    lines = "- s1: x  [completion code RC-1001]\n" * 20_000  # 700 KB of plan lines
    prose = "Be helpful.\n" * 60_000
    with FakeServer(script([Reply("Hello.")])) as upstream, \
            ProxyServer(ProxyConfig(upstream.base_url)) as proxy:  # fmt: skip
        for system, status in ((lines, 413), (prose, 200)):
            body = {"model": "m", "messages": [{"role": "system", "content": system},
                                               {"role": "user", "content": "hi"}]}  # fmt: skip
            answer = httpx.post(f"{proxy.base_url}/chat/completions", json=body, timeout=60)
            assert answer.status_code == status, answer.text[:200]
    assert parsed == []


def _mcp_http(allowed: tuple[str, ...] = ()) -> Any:
    pytest.importorskip("mcp", reason="needs the mcp extra")
    import sys

    from mcp import StdioServerParameters

    from taskgate.integrations.mcp import McpGate, McpGateConfig, http_app

    upstream = StdioServerParameters(
        command=sys.executable, args=["-m", "taskgate.integrations.mcp.testing"]
    )
    gate = McpGate(McpGateConfig(tool_chain(3), requests="plan", status_token=TOKEN))
    return served(http_app(gate, [upstream], allowed_hosts=allowed))


def test_an_allowed_host_name_is_answered_by_the_mcp_gate_too() -> None:
    """``--allowed-host`` let the name past the gate's own guard, but the MCP SDK's guard behind
    it answered 421 for anything but loopback names."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    with _mcp_http(("gate.internal",)) as url:
        port = url.rpartition(":")[2]
        for host in (f"gate.internal:{port}", "gate.internal"):
            named = {"host": host, "accept": "application/json, text/event-stream"}
            answer = httpx.post(f"{url}/mcp", json=init, headers=named)
            assert answer.status_code == 200, (host, answer.text)
            listed = httpx.get(f"{url}/taskgate/sessions", headers={**named, **BEARER})
            assert listed.status_code == 200, (host, listed.text)
        other = httpx.post(f"{url}/mcp", json=init, headers={"host": f"other.internal:{port}"})
        assert other.status_code == 421


def test_attack_a_body_held_back_on_the_2026_protocol_path_is_cut_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The MCP SDK's own transport (a request of the 2026 protocol) read bodies with no
    deadline: one held back kept its connection for good."""
    import taskgate.serving.http as http

    monkeypatch.setattr(http, "BODY_TIMEOUT_S", 0.5)
    with _mcp_http() as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as s:
            s.sendall(
                f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2099-01-01"
                "\r\nContent-Length: 100\r\n\r\n{".encode()
            )  # fmt: skip
            s.settimeout(60)
            got = s.recv(200)  # an answer or the connection closed, well before 60 s
    assert got == b"" or got.startswith(b"HTTP/1.1 4")
