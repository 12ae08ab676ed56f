"""The proxy's journal survives: SIGKILL at random points of a 16-conversation run, and replicas
that share one PostgreSQL database."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="needs the proxy extra")

from proxy_helpers import episodes, post, talk
from taskgate import FakeServer, Plan, careless_responder
from taskgate.llm.fake import Reply, ToolCall
from taskgate.protocol.tools import harness_brief
from taskgate.proxy import ProxyConfig
from taskgate.proxy.testing import ProxyServer

pytestmark = pytest.mark.slow


def states(url: str) -> dict[str, Any]:
    rows = httpx.get(f"{url}/taskgate/conversations", timeout=30).json()["conversations"]
    return {
        r["id"]: httpx.get(f"{url}/taskgate/conversations/{r['id']}", timeout=30).json()
        for r in rows
    }


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Killable:
    """``taskgate proxy`` as a process, killed with SIGKILL and restarted on the same database."""

    def __init__(self, upstream: str, db: Path, *extra: str) -> None:
        self.port = free_port()
        self.args = [
            sys.executable, "-m", "taskgate", "proxy", "--upstream", upstream, "--db", str(db),
            "--port", str(self.port), *extra,
        ]  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.url}/taskgate/conversations", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.05)
        raise AssertionError("the proxy did not come up")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.kills += 1

    @contextlib.contextmanager
    def killed_now_and_then(self, rng: random.Random, low: float, high: float) -> Iterator[None]:
        """Start the proxy, and while the block runs kill it with SIGKILL every ``low`` to
        ``high`` seconds and restart it on the same database."""
        self.start()
        finished = threading.Event()

        def killer() -> None:
            while not finished.wait(rng.uniform(low, high)):
                self.kill()
                self.start()

        thread = threading.Thread(target=killer)
        thread.start()
        try:
            yield
        finally:
            finished.set()
            thread.join()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def run_all(url: str, eps: list[Any]) -> None:
    with ThreadPoolExecutor(len(eps)) as pool:
        list(pool.map(lambda ep: talk(f"{url}/v1", ep, retry=True), eps))


def test_sigkill_at_random_points_loses_and_duplicates_no_receipt(tmp_path: Path) -> None:
    eps = episodes(16)
    with FakeServer(careless_responder(0.4), keep_requests=False) as upstream:
        with ProxyServer(ProxyConfig(upstream.base_url)) as reference:
            run_all(reference.url, eps)
            expected = states(reference.url)
        proxy = Killable(upstream.base_url, tmp_path / "journal.db")
        # kills every 0.05-0.3 s: at least three land within the run however fast the machine
        with proxy.killed_now_and_then(random.Random(7), 0.05, 0.3):
            run_all(proxy.url, eps)
        got = states(proxy.url)
        proxy.stop()
    assert proxy.kills >= 3
    assert len(expected) == 16 and got == expected


# -- tool-bound plans, replies with several calls -------------------------------------------------
TOOLS = ("collect_requirements", "draft_rfq", "send_rfq", "shortlist_vendors", "place_order")
TOOL_PLAN = Plan.model_validate({"binding": "tool", "steps": {
    "s1": {"tool": TOOLS[0], "text": "collect the requirements"},
    "s2": {"tool": TOOLS[1], "text": "draft the RFQ", "deps": ["s1"]},
    "s3": {"tool": TOOLS[2], "text": "send the RFQ", "deps": ["s2"]},
    "s4": {"tool": TOOLS[3], "text": "shortlist the vendors"},
    "s5": {"tool": TOOLS[4], "text": "place the order", "deps": ["s3", "s4"]},
}})  # fmt: skip


def greedy(body: dict[str, Any]) -> Reply:
    """An upstream that calls, in one reply, every tool its conversation has not yet seen run
    (dependents included: the gate must hand out only what the state allows); the same request
    always gets the same reply, call ids included."""
    messages = body["messages"]
    ran = {m["content"].removeprefix("ran ") for m in messages if m["role"] == "tool"}
    hop = sum(1 for m in messages if m["role"] == "assistant")
    left = [t for t in TOOLS if t not in ran]
    if not left:
        return Reply("All done.")
    return Reply("Working.", tool_calls=tuple(ToolCall(t, {}, id=f"call_{t}_{hop}") for t in left))


def work(url: str, name: str, executed: list[str]) -> None:
    """A client that runs the tool calls it gets (``executed`` is its side-effect log) and answers
    them, four user turns long, retrying through kills."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": harness_brief(TOOL_PLAN, "native")}
    ]
    headers = {"X-Taskgate-Conversation": name}
    with httpx.Client(timeout=60) as client:
        for turn in range(3):
            messages.append(
                {"role": "user", "content": f"Please get on with it (#W{5000 + turn})."}
            )
            for _ in range(10):
                data = post(client, f"{url}/v1", messages, retry=True, headers=headers)
                message = data["choices"][0]["message"]
                messages.append(message)
                calls = message.get("tool_calls") or []
                if not calls:
                    break
                for call in calls:
                    executed.append(call["function"]["name"])
                    messages.append({"role": "tool", "tool_call_id": call["id"],
                                     "content": f"ran {call['function']['name']}"})  # fmt: skip


def test_sigkill_with_tool_bound_plans_runs_no_step_twice_and_books_every_one(
    tmp_path: Path,
) -> None:
    names = [f"tools-{i}" for i in range(8)]
    gated = ("--compiler", "parser", "--matcher", "lexical")
    with FakeServer(greedy, latency=0.25, keep_requests=False) as upstream:
        config = ProxyConfig(upstream.base_url, compiler="parser", matcher="lexical")
        with ProxyServer(config) as reference:
            with ThreadPoolExecutor(len(names)) as pool:
                list(pool.map(lambda n: work(reference.url, n, []), names))
            expected = states(reference.url)
        proxy = Killable(upstream.base_url, tmp_path / "journal.db", *gated)
        executed: dict[str, list[str]] = {n: [] for n in names}
        killed = proxy.killed_now_and_then(random.Random(11), 0.2, 0.6)
        with killed, ThreadPoolExecutor(len(names)) as pool:
            list(pool.map(lambda n: work(proxy.url, n, executed[n]), names))
        got = states(proxy.url)
        proxy.stop()
    assert proxy.kills >= 3
    for name in names:
        assert sorted(executed[name]) == sorted(TOOLS)  # every step ran, none of them twice
        (state,) = [v for k, v in got.items() if k.startswith(f"{name}~")]
        assert set(state["statuses"].values()) == {"DONE"}
        admits = [e["tool"] for e in state["ledger"] if e.get("decision") == "admit"]
        assert sorted(admits) == sorted(TOOLS)  # one receipt per execution
    assert got == expected


# -- PostgreSQL -----------------------------------------------------------------------------------
def test_two_replicas_on_one_postgresql_database_share_every_conversation(postgres: str) -> None:
    from taskgate.journal.postgres import PostgresStore

    eps = episodes(4, first=300)
    db = postgres
    with FakeServer(careless_responder(0.4), keep_requests=False) as upstream:
        config = ProxyConfig(upstream.base_url)
        with ProxyServer(config) as reference:
            run_all(reference.url, eps)
            expected = states(reference.url)
        with (
            ProxyServer(config, PostgresStore(db)) as a,
            ProxyServer(config, PostgresStore(db)) as b,
        ):
            histories: list[list[dict[str, Any]]] = [[] for _ in eps]
            for n in range(1, 45):  # turn by turn, each turn at the other replica
                for ep, history in zip(eps, histories, strict=True):
                    talk((a if n % 2 else b).base_url, ep, turns=n, history=history)
            got_a, got_b = states(a.url), states(b.url)
    assert got_a == got_b
    assert {k: v for k, v in got_a.items() if k in expected} == expected


def test_a_replica_that_wrote_second_answers_409_and_catches_up(postgres: str) -> None:
    import asyncio

    from taskgate.journal.events import TurnEvent
    from taskgate.journal.postgres import PostgresStore
    from taskgate.journal.store import StaleJournal

    db = postgres
    key = f"race-{os.getpid()}-{time.monotonic_ns()}"

    async def race() -> list[Any]:
        one, two = PostgresStore(db), PostgresStore(db)
        try:
            await one.append(key, 0, [TurnEvent(client="a", forwarded="a")])
            with pytest.raises(StaleJournal):
                await two.append(key, 0, [TurnEvent(client="b", forwarded="b")])
            return await two.load(key)
        finally:
            await one.close()
            await two.close()

    assert asyncio.run(race()) == [TurnEvent(client="a", forwarded="a")]
