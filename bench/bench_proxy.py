"""The gating proxy's added latency per request, and its throughput, on this machine.

Three processes: a zero-latency upstream (``FakeServer`` with the protocol responder), ``taskgate
proxy`` at the enforcement rung with its SQLite journal (the parser compiles briefs and the lexical
matcher matches, so no helper model call is counted), and this load generator. C conversations
are open at once, each playing one generated episode (S=10) as the raw transcript does, growing
its history turn by turn; each turn is one gated request, judged and journaled.

The proxy runs on a core of its own, the upstream and the load generator on the others.

* Throughput: 64 conversations with no pause between turns (every process saturated): requests
  per second, and the proxy's CPU per request.
* Added latency: 64 and 512 open conversations, each pausing between turns (as an agent does while
  its model writes) so that together they offer half the measured throughput. The proxy measures
  its own time per request minus the time it waited on the upstream (``GET /taskgate/metrics``).
  Targets: p50 under 2 ms and p99 under 10 ms, whole and streamed replies.
* Plan mode (``--plan FILE``): the same, for ordinary conversations (a plain system prompt, no
  work orders) gated at their native tool calls with a ten-step tool-bound plan: each turn asks for
  the next step, the upstream calls its tool, the client answers with the tool's result (a second
  gated request) and the upstream says it is done; the lexical matcher resolves every message.

Run: .venv/bin/python bench/bench_proxy.py [TURNS]
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from taskgate.lab import EpisodeParams, generate_episode

TARGET_P50_MS, TARGET_P99_MS = 2.0, 10.0
#: the proxy gets a core of its own; the upstream and this load generator share the others (on a
#: 2-core machine the load generator alone can take a core at 512 conversations, and its
#: preempting the proxy was most of the proxy's p99)
CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
PROXY_CPU = set(CPUS[-1:])
OTHER_CPUS = set(CPUS[:-1]) or PROXY_CPU
UPSTREAM = """
import re, sys, time
from taskgate import FakeServer, Reply, protocol_responder
from taskgate.llm.fake import ToolCall

def respond(body):
    messages = body["messages"]
    if messages[0]["content"] != PLAIN:
        return protocol_responder(body)
    if messages[-1]["role"] == "tool":
        return Reply("Done.")
    n = re.search(r"#(\\d+)", messages[-1]["content"]).group(1)
    return Reply("", tool_calls=(ToolCall(f"tool_{n}", {}, id=f"call_{len(messages)}"),))

PLAIN = sys.argv[2]
with FakeServer(respond, port=int(sys.argv[1]), keep_requests=False):
    time.sleep(10**6)
"""
#: plan mode: the agent's own system prompt, and a ten-step chain bound to its tools
PLAIN = "You are an operations assistant. Use the tools to do what the user asks."
TASKS = ("open the ticket", "check the inventory", "reserve the stock", "quote the price",
         "confirm the customer", "charge the card", "pack the parcel", "book the courier",
         "send the invoice", "close the ticket")  # fmt: skip
PLAN = {"binding": "tool", "steps": {
    f"s{i}": {"tool": f"tool_{i}", "text": text, **({"deps": [f"s{i - 1}"]} if i > 1 else {})}
    for i, text in enumerate(TASKS, 1)
}}  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_up(url: str) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(600):
            try:
                async with session.get(url) as resp:
                    if resp.status < 500:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise SystemExit(f"{url} did not come up")


async def ask(
    session: aiohttp.ClientSession, url: str, messages: list[dict[str, Any]], stream: bool,
    latencies: list[float],
) -> bytes:  # fmt: skip
    body = orjson.dumps({"model": "fake", "messages": messages, "stream": stream})
    start = time.perf_counter()
    async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
        raw = await r.read()
    latencies.append(time.perf_counter() - start)
    assert r.status == 200, raw[:300]
    return raw


async def planned_conversation(
    session: aiohttp.ClientSession, url: str, seed: int, turns: int, stream: bool,
    latencies: list[float], pause: float,
) -> None:  # fmt: skip
    """Plan mode: ask for each step in turn; run the tool call the reply hands out."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": PLAIN}]
    rng = random.Random(seed)
    for n in range(1, min(turns, 10) + 1):
        if pause:
            await asyncio.sleep(rng.uniform(0, 2 * pause))
        ask_for = f"Please {TASKS[n - 1]} now (that is #{n} for order {seed})."
        messages.append({"role": "user", "content": ask_for})
        calls = reply_calls(await ask(session, url, messages, stream, latencies), stream)
        assert calls, f"step {n} was refused"
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
        raw = await ask(session, url, messages, stream, latencies)
        messages.append({"role": "assistant", "content": reply_text(raw, stream)})


def reply_calls(raw: bytes, stream: bool) -> list[dict[str, Any]]:
    if not stream:
        return list(orjson.loads(raw)["choices"][0]["message"].get("tool_calls") or [])
    calls: dict[int, dict[str, Any]] = {}
    for line in raw.split(b"\n"):
        if line.startswith(b"data: {"):
            for choice in orjson.loads(line[6:]).get("choices", []):
                for delta in choice["delta"].get("tool_calls") or []:
                    call = calls.setdefault(delta["index"], {"type": "function", "function": {
                        "name": "", "arguments": ""}})  # fmt: skip
                    call["id"] = delta.get("id") or call.get("id")
                    fn = delta.get("function") or {}
                    call["function"]["name"] += fn.get("name") or ""
                    call["function"]["arguments"] += fn.get("arguments") or ""
    return [calls[i] for i in sorted(calls)]


async def conversation(
    session: aiohttp.ClientSession, url: str, seed: int, turns: int, stream: bool,
    latencies: list[float], pause: float,
) -> None:  # fmt: skip
    ep = generate_episode(EpisodeParams(steps=10, seed=seed))
    messages: list[dict[str, Any]] = [{"role": "system", "content": ep.brief}]
    rng = random.Random(seed)
    for turn in ep.turns[:turns]:
        if pause:
            await asyncio.sleep(rng.uniform(0, 2 * pause))
        messages.append({"role": "user", "content": turn.message})
        body = orjson.dumps({"model": "fake", "messages": messages, "stream": stream})
        start = time.perf_counter()
        async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
            raw = await r.read()
        latencies.append(time.perf_counter() - start)
        assert r.status == 200, raw[:300]
        messages.append({"role": "assistant", "content": reply_text(raw, stream)})


def reply_text(raw: bytes, stream: bool) -> str:
    if not stream:
        return str(orjson.loads(raw)["choices"][0]["message"]["content"])
    parts = []
    for line in raw.split(b"\n"):
        if line.startswith(b"data: {"):
            for choice in orjson.loads(line[6:]).get("choices", []):
                parts.append(choice["delta"].get("content") or "")
    return "".join(parts)


async def load(
    url: str, conversations: int, turns: int, stream: bool, first: int, rate: float = 0.0,
    planned: bool = False,
) -> dict[str, float]:  # fmt: skip
    """Run the conversations; ``rate``: the requests per second they offer together (0: as fast
    as answers come)."""
    pause = conversations / rate if rate else 0.0
    if planned:  # two requests per turn
        pause *= 2
    latencies: list[float] = []
    talk = planned_conversation if planned else conversation
    connector = aiohttp.TCPConnector(limit=conversations)
    async with aiohttp.ClientSession(connector=connector) as session:
        start = time.perf_counter()
        await asyncio.gather(
            *(talk(session, f"{url}/v1/chat/completions", first + i, turns, stream,
                   latencies, pause)
              for i in range(conversations))
        )  # fmt: skip
        wall = time.perf_counter() - start
        async with session.get(f"{url}/taskgate/metrics") as r:
            metrics = orjson.loads(await r.read())
    latencies.sort()
    return {
        "requests": len(latencies),
        "rps": len(latencies) / wall,
        "client_p50_ms": latencies[len(latencies) // 2] * 1000,
        "client_p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
        **{
            k: float(v)
            for k, v in metrics.items()
            if isinstance(v, int | float) and k != "requests"
        },
    }


def pin(pid: int, cpus: set[int]) -> None:
    """Run ``pid`` on ``cpus`` only (where the machine has them)."""
    if hasattr(os, "sched_setaffinity") and cpus <= os.sched_getaffinity(0):
        os.sched_setaffinity(pid, cpus)


def proxy_process(
    upstream: str, db: Path, plan: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    mode = ["--plan", str(plan)] if plan is not None else ["--compiler", "parser"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskgate", "proxy", "--upstream", upstream, "--port", str(port),
         "--db", str(db), "--matcher", "lexical", *mode],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    pin(proc.pid, PROXY_CPU)
    return proc, f"http://127.0.0.1:{port}"


def cpu_seconds(pid: int) -> float:
    """A process's user and system CPU so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    upstream: str, conversations: int, turns: int, stream: bool, rate: float, planned: bool = False
) -> dict[str, float]:
    """One fresh proxy (and journal) under one load."""
    with tempfile.TemporaryDirectory() as tmp:
        plan = None
        if planned:
            plan = Path(tmp) / "plan.json"
            plan.write_bytes(orjson.dumps(PLAN))
        proc, url = proxy_process(upstream, Path(tmp) / "journal.db", plan)
        try:
            asyncio.run(wait_up(f"{url}/taskgate/metrics"))
            cpu = cpu_seconds(proc.pid)
            first = 1000 + conversations + (5000 if stream else 0)
            r = asyncio.run(load(url, conversations, turns, stream, first, rate, planned))
            r["cpu_ms"] = (cpu_seconds(proc.pid) - cpu) / r["requests"] * 1000
        finally:
            proc.terminate()
            proc.wait()
    return r


def section(upstream_url: str, turns: int, stream: bool, planned: bool) -> bool:
    """Throughput, then added latency at 64 and 512 conversations; whether the targets were met."""
    ok = True
    kind = "streamed" if stream else "whole"
    top = measure(upstream_url, 64, turns, stream, 0.0, planned)
    print(
        f"  {kind}: {top['rps']:.0f} requests/s saturated (64 conversations, no pauses), "
        f"proxy CPU {top['cpu_ms']:.2f} ms per request"
    )
    rate = top["rps"] / 2
    for conversations in (64, 512):
        r = measure(upstream_url, conversations, turns, stream, rate, planned)
        good = r["p50_ms"] < TARGET_P50_MS and r["p99_ms"] < TARGET_P99_MS
        ok &= good
        print(
            f"    {conversations:4d} conversations at {r['rps']:.0f} requests/s offered: "
            f"added p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms (targets "
            f"{TARGET_P50_MS}/{TARGET_P99_MS}); client p50 {r['client_p50_ms']:.1f} ms, "
            f"p99 {r['client_p99_ms']:.1f} ms  {'ok' if good else 'MISSED'}"
        )
    return ok


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    up_port = free_port()
    upstream = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(up_port), PLAIN])
    pin(upstream.pid, OTHER_CPUS)
    pin(os.getpid(), OTHER_CPUS)
    upstream_url = f"http://127.0.0.1:{up_port}/v1"
    asyncio.run(wait_up(f"{upstream_url}/models"))
    print(
        f"gating proxy, enforcement rung, SQLite journal, zero-latency upstream; {turns} turns each"
    )
    ok = True
    try:
        for planned in (False, True):
            if planned:
                print("plan mode (--plan, a ten-step tool-bound plan): ordinary conversations, "
                      "native tool calls, a turn and a tool result per step")  # fmt: skip
            for stream in (False, True):
                ok &= section(upstream_url, turns, stream, planned)
    finally:
        upstream.terminate()
        upstream.wait()
    print("all targets met" if ok else "a target was missed")


if __name__ == "__main__":
    main()
