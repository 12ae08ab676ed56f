"""Several endpoints behind one client: spreading, per-endpoint limits, failover and recovery,
the start-up check, and a ladder run that loses one of two servers midway."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

import pytest

from taskgate import ChatClient, Endpoint, FakeServer, protocol_responder
from taskgate.errors import ModelError
from taskgate.lab import LadderConfig, run_ladder
from taskgate.lab.rundir import LOG, read_log
from taskgate.lab.scoring.index import score_run
from taskgate.lab.scoring.summary import summarize
from taskgate.llm.client import CallInfo
from taskgate.llm.fake import Fault, Reply

HI = [{"role": "user", "content": "hi"}]


def echo(_: dict[str, object]) -> Reply:
    return Reply("ok")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def endpoint(url: str, **kw: object) -> Endpoint:
    kw.setdefault("backoff", 0.05)
    return Endpoint(base_url=url, model="fake", **kw)  # type: ignore[arg-type]


def calls_of(client: ChatClient, n: int) -> list[CallInfo]:
    """``n`` concurrent calls; their call infos."""
    infos: list[CallInfo] = []

    async def go() -> None:
        async with client:
            await asyncio.gather(*(client.complete(HI, "agent", infos.append) for _ in range(n)))

    asyncio.run(go())
    return infos


def test_calls_spread_over_endpoints_by_requests_in_flight() -> None:
    with FakeServer(echo, latency=0.2) as a, FakeServer(echo, latency=0.2) as b:
        client = ChatClient(
            [endpoint(a.base_url, concurrency=2), endpoint(b.base_url, concurrency=2)]
        )
        infos = calls_of(client, 4)
    assert len(a.requests) == len(b.requests) == 2
    assert sorted(i.endpoint or "" for i in infos) == sorted([a.base_url] * 2 + [b.base_url] * 2)


def test_each_endpoint_keeps_its_own_limit() -> None:
    """One endpoint takes three at a time, the other one: six calls split 3 + 1 at first, and the
    wide endpoint, always the one with room, serves the rest."""
    with FakeServer(echo, latency=0.3) as wide, FakeServer(echo, latency=0.3) as narrow:
        eps = [endpoint(wide.base_url, concurrency=3), endpoint(narrow.base_url, concurrency=1)]
        infos = calls_of(ChatClient(eps), 8)
    assert len(infos) == 8 and len(wide.requests) == 6 and len(narrow.requests) == 2


def test_a_dead_endpoint_fails_over_at_once_and_stays_out_of_rotation() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    slept: list[float] = []

    async def no_sleep(s: float) -> None:
        slept.append(s)

    with FakeServer(echo) as live:
        client = ChatClient([endpoint(dead), endpoint(live.base_url)], sleep=no_sleep)
        client.routes[1].in_flight = 1  # so that the first call picks the dead one
        first = calls_of(client, 1)[0]
        client.routes[1].in_flight = 0
        later = calls_of(client, 3)
    assert first.attempts == 2 and first.endpoint == live.base_url and not slept
    assert first.events[0].startswith("retry after connection error") and dead in first.events[0]
    assert all(i.attempts == 1 and i.endpoint == live.base_url for i in later)


def test_an_endpoint_that_recovers_comes_back_into_rotation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = clock(monkeypatch)
    port = free_port()
    back = f"http://127.0.0.1:{port}/v1"
    with FakeServer(echo) as other:
        client = ChatClient([endpoint(back), endpoint(other.base_url)])
        client.routes[1].in_flight = 1
        assert calls_of(client, 1)[0].endpoint == other.base_url  # failed over
        client.routes[1].in_flight = 0
        assert client.routes[0].down_until > now[0]  # cooling down
        with FakeServer(echo, port=port) as revived:
            now[0] += 0.1  # past the cool-down (0.05 s after one failure)
            infos = calls_of(client, 4)
    assert revived.requests and any(i.endpoint == back for i in infos)
    assert client.routes[0].failures == 0


def test_when_every_endpoint_is_down_a_retry_waits_and_the_call_fails_clearly() -> None:
    urls = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(2)]
    client = ChatClient([endpoint(u, attempts=3) for u in urls])
    with pytest.raises(ModelError, match="fake at 2 endpoints: agent call failed: connection"):
        calls_of(client, 1)


def test_the_start_up_check_warns_of_a_dead_endpoint_and_fails_when_none_answers() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    warnings: list[str] = []
    with FakeServer(echo) as live:
        client = ChatClient([endpoint(dead), endpoint(live.base_url)])

        async def check() -> None:
            async with client:
                await client.check(warnings.append)

        asyncio.run(check())
    assert len(warnings) == 1 and dead in warnings[0] and "going on without it" in warnings[0]
    assert client.routes[0].down_until > 0 and client.routes[1].down_until == 0

    lonely = ChatClient([endpoint(dead), endpoint(dead.replace("/v1", "/v2"))])
    warnings.clear()
    with pytest.raises(ModelError, match=f"no model endpoint can serve this run .*{dead}"):
        asyncio.run(lonely.check(warnings.append))
    assert warnings == []  # no "going on without it" before the error


ARMS = ("raw", "checklist", "directive", "enforcement")


def run(out: Path, urls: list[str]) -> None:
    config = LadderConfig(
        arms=ARMS, agent="llm", compiler="llm", matcher="llm", steps=(5,), episodes=4,
        concurrency=16,
    )  # fmt: skip

    async def go() -> None:
        async with ChatClient([endpoint(u, backoff=0.02) for u in urls]) as client:
            progress = await run_ladder(config, out, client=client)
        assert progress.failed == 0

    asyncio.run(go())


def test_a_server_killed_mid_run_loses_nothing_and_changes_no_table(tmp_path: Path) -> None:
    with FakeServer(protocol_responder) as single:
        run(tmp_path / "single", [single.base_url])
    with (
        FakeServer(protocol_responder, latency=0.01) as a,
        FakeServer(protocol_responder, latency=0.01) as b,
    ):

        def kill_a() -> None:
            while len(a.requests) < 150:
                time.sleep(0.005)
            a.__exit__(None, None, None)  # killed, requests in flight included

        killer = threading.Thread(target=kill_a)
        killer.start()
        run(tmp_path / "two", [a.base_url, b.base_url])
        killer.join()
    runs = read_log(tmp_path / "two" / LOG)
    served = {c.endpoint for r in runs.values() for c in r.calls}
    assert served == {a.base_url, b.base_url} and len(runs) == 16
    assert any(
        e.startswith("retry after") for r in runs.values() for c in r.calls for e in c.events
    )
    lines = (tmp_path / "two" / LOG).read_text().splitlines()
    ends = [ln for ln in lines if '"kind":"end"' in ln]
    assert len(ends) == 16  # each episode-arm finished exactly once
    tables = [
        [r.json_row() for r in summarize(score_run(tmp_path / d), ARMS)] for d in ("single", "two")
    ]
    assert tables[0] == tables[1]


def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A clock the test moves by hand, as the client's cool-downs read it (no test here waits
    on the machine's speed)."""
    import types

    from taskgate.llm import client as client_module
    from taskgate.llm import http as http_module

    now = [1000.0]
    fake = types.SimpleNamespace(monotonic=lambda: now[0], perf_counter=time.perf_counter)
    monkeypatch.setattr(http_module, "time", fake)
    monkeypatch.setattr(client_module, "time", fake)
    return now


def test_failures_of_calls_in_flight_count_once_and_one_call_tests_recovery(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = clock(monkeypatch)
    route = ChatClient([endpoint("http://127.0.0.1:1/v1"), endpoint("http://127.0.0.1:2/v1")])
    first, second = route.routes
    for _ in range(40):  # forty calls in flight fail together: one cool-down, not forty
        first.failed(0.05)
    assert first.failures == 1 and not first.up(now[0] + 0.049)
    now[0] += 0.06  # past the cool-down
    second.in_flight = 5  # busier: the recovered endpoint would be everyone's choice
    assert route._pick() is first and first.probing  # the one test call
    assert route._pick() is second  # the others wait for its answer
    first.served()
    assert route._pick() is first and not first.probing


def test_a_404_or_401_from_one_of_several_servers_sends_the_call_elsewhere() -> None:
    with (
        FakeServer(echo, faults=[Fault.error(404, "model not found")]) as wrong,
        FakeServer(echo) as right,
    ):
        client = ChatClient([endpoint(wrong.base_url), endpoint(right.base_url)])
        right_route = client.routes[1]
        right_route.in_flight = 1  # so that the first call picks the wrong one
        info = calls_of(client, 1)[0]
    assert info.attempts == 2 and info.endpoint == right.base_url
    assert info.events[0].startswith("retry after 404 Not Found: model not found")
    one = FakeServer(echo, faults=[Fault.error(404, "model not found")])
    with one as alone, pytest.raises(ModelError, match="404"):  # one server: the answer stands
        calls_of(ChatClient([endpoint(alone.base_url)]), 1)
    assert len(alone.requests) == 1


def test_the_compiler_and_matcher_can_have_their_own_model_and_servers() -> None:
    from taskgate.cli.model import endpoint_for
    from taskgate.cli.options import EndpointOptions

    agent = "http://127.0.0.1:9/v1"
    opts = EndpointOptions(base_url=[agent], model="big", compiler_model="big-nothink")
    with endpoint_for(opts) as eps:
        assert [e.model for e in eps.agent] == ["big"] and eps.matcher == ()
        assert [(e.base_url, e.model) for e in eps.compiler] == [(agent, "big-nothink")]
    own = "http://127.0.0.2:9/v1"
    opts = EndpointOptions(
        base_url=[agent], model="big", compiler_base_url=[own], matcher_model="small"
    )
    with endpoint_for(opts) as eps:
        assert [(e.base_url, e.model) for e in eps.compiler] == [(own, "big")]
        assert [(e.base_url, e.model) for e in eps.matcher] == [(agent, "small")]
