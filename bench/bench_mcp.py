"""The MCP gate's added latency per ``tools/call``, at 64 concurrent sessions, on this machine.

Three processes: the shipped procurement MCP server over streamable HTTP (the upstream), ``taskgate
mcp --http`` in front of it with a SQLite journal and a five-step plan (``--requests plan``: each
step runs as the state allows), and this load generator. Each of 64 sessions (one MCP client
each, named by its ``X-Taskgate-Session`` header) calls the five steps in order, every call
gated, admitted, forwarded, and booked; then the same calls go to the upstream directly.

* Throughput: the sessions with no pause between calls (every process saturated).
* The gate's own time per call, with the sessions pausing between calls (as an agent does while
  its model writes: each session calls once a second on average, 64 calls/s together): what the
  gate spends judging, journaling and booking, the upstream's time left out (``GET
  /taskgate/metrics``). Targets: p50 under 2 ms, p99 under 10 ms. The gate runs on a core of its
  own.
* The client's time per call through the gate and to the upstream directly, at the same offered
  rate, from the same lean client (taskgate's own, :mod:`taskgate.integrations.mcp.upstream`:
  the SDK's client would add its own milliseconds and tails to both): the difference is what the
  gate adds as a client sees it. Targets: p50 under 2 ms, p99 under 10 ms. Each
  session connects (and so does its handshake) before its first call; the gate gets one round of
  sessions to warm up first.

* Over stdio (how a desktop client starts it), one client (the MCP SDK's own, as a desktop
  client's) and the shipped server as a separate process started by the gate: the time per call
  of a tool the plan does not gate, through the gate (``taskgate mcp``, its lean stdio front and
  client, :mod:`taskgate.integrations.mcp.stdio`) and to the same server directly. The difference
  is the extra hop the gate adds (the gate's own judging of a gated call is the figure above).
  The two paths are called alternately, call by call, from one client process, on every core
  (the HTTP part's pinning lifted, as a desktop runs its client and servers). Targets: p50
  under 1 ms, p99 under 5 ms; the median of three runs, each 300 calls on each path.

Run: .venv/bin/python bench/bench_mcp.py [ROUNDS]   (BENCH_PROFILE=FILE: the gate under cProfile;
BENCH_STDIO_UPSTREAM=1: the gate's upstream over stdio, its own child, instead of over HTTP)
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
from mcp import Client, StdioServerParameters

from taskgate.integrations.mcp.upstream import HttpUpstream

TARGET_P50_MS, TARGET_P99_MS = 2.0, 10.0
STDIO_P50_MS, STDIO_P99_MS = 1.0, 5.0
SESSIONS = 64
#: the calls per second the sessions offer together: each calls once a second on average (an
#: agent's model takes about that long to write its next call)
RATE = 64.0
STEPS = ("collect_requirements", "draft_rfq", "send_rfq", "select_vendor", "place_order")
PLAN = {"binding": "tool", "steps": {
    f"s{i}": {"tool": tool, **({"deps": [f"s{i - 1}"]} if i > 1 else {})}
    for i, tool in enumerate(STEPS, 1)
}}  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str) -> None:
    for _ in range(300):
        try:
            httpx.get(url, timeout=0.5)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"nothing answers at {url}")


async def session(url: str, name: str | None, times: list[float], pause: float, seed: int) -> None:
    headers = {"X-Taskgate-Session": name} if name else {}
    async with HttpUpstream(url, headers) as client:
        rng = random.Random(seed)
        for tool in STEPS:
            if pause:
                await anyio.sleep(rng.uniform(0, 2 * pause))
            start = time.perf_counter()
            result = await client.call_tool(tool, {"note": "bench"})
            times.append(time.perf_counter() - start)
            assert not result.is_error, result


async def load(
    url: str, rounds: int, named: bool, rate: float = 0.0, tag: str = "r"
) -> tuple[list[float], float]:
    """The calls' times, sorted, and the calls per second; ``rate``: the calls per second the
    sessions offer together (0: as fast as answers come)."""
    times: list[float] = []
    pause = SESSIONS / rate if rate else 0.0
    start = time.perf_counter()
    for r in range(rounds):
        async with anyio.create_task_group() as tg:
            for i in range(SESSIONS):
                name = f"{tag}{r}-s{i}-{rate:.0f}" if named else None
                tg.start_soon(session, url, name, times, pause, r * SESSIONS + i)
    return sorted(times), len(times) / (time.perf_counter() - start)


def cpu_seconds(pid: int) -> float:
    """A process's user and system CPU so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pin(pid: int, cpus: set[int]) -> None:
    if hasattr(os, "sched_setaffinity") and cpus <= os.sched_getaffinity(0):
        os.sched_setaffinity(pid, cpus)


CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
GATE_CPU = set(CPUS[-1:])
OTHER_CPUS = set(CPUS[:-1]) or GATE_CPU


def start_gate(plan: Path, db: Path, port: int, up_port: int) -> subprocess.Popen[bytes]:
    profile = (
        ["-m", "cProfile", "-o", os.environ["BENCH_PROFILE"]]
        if "BENCH_PROFILE" in os.environ
        else []
    )
    gate = subprocess.Popen(
        [sys.executable, *profile, "-m", "taskgate", "mcp", "--plan", str(plan), "--http", "--port",
         str(port), "--requests", "plan", "--db", str(db),
         *(["--upstream", f"{sys.executable} -m taskgate.integrations.mcp.testing"]
           if os.environ.get("BENCH_STDIO_UPSTREAM")
           else ["--upstream-url", f"http://127.0.0.1:{up_port}/mcp"])],
        env={**os.environ, "TASKGATE_STATUS_TOKEN": "bench"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    pin(gate.pid, GATE_CPU)
    wait_up(f"http://127.0.0.1:{port}/taskgate/metrics")
    return gate


def pct(sorted_times: list[float], q: float) -> float:
    return sorted_times[min(len(sorted_times) - 1, int(len(sorted_times) * q))] * 1000


async def stdio_paired(gated: StdioServerParameters, direct: StdioServerParameters,
                       n: int) -> tuple[list[float], list[float]]:  # fmt: skip
    """One client's calls through the gate and directly, alternated call by call, so that both
    paths meet the same machine at the same moments (a busy spell slows both alike)."""
    via: list[float] = []
    straight: list[float] = []
    async with Client(gated) as g, Client(direct) as d:
        for i in range(n + 10):
            for client, times in ((g, via), (d, straight)):
                start = time.perf_counter()
                result = await client.call_tool("search_catalog", {"note": str(i)})
                if i >= 10:  # after a warm-up
                    times.append(time.perf_counter() - start)
                assert not result.is_error, result
    return sorted(via), sorted(straight)


def stdio_added(plan: Path, runs: int = 3) -> tuple[float, float, list[float], list[float]]:
    """The median over ``runs`` of what the gate adds at p50 and p99 over stdio, and the last
    run's times (through the gate, directly)."""
    added50, added99 = [], []
    for _ in range(runs):
        via, straight = stdio_hop(plan)
        added50.append(pct(via, 0.5) - pct(straight, 0.5))
        added99.append(pct(via, 0.99) - pct(straight, 0.99))
    return sorted(added50)[runs // 2], sorted(added99)[runs // 2], via, straight


def stdio_hop(plan: Path, n: int = 300) -> tuple[list[float], list[float]]:
    """One stdio client's calls of an ungated tool: through the gate, and directly."""
    upstream = [sys.executable, "-m", "taskgate.integrations.mcp.testing"]
    direct = StdioServerParameters(command=upstream[0], args=upstream[1:], env=dict(os.environ))
    gated = StdioServerParameters(
        command=sys.executable,
        args=["-m", "taskgate", "mcp", "--plan", str(plan), "--", *upstream],
        env=dict(os.environ),
    )
    return anyio.run(stdio_paired, gated, direct, n)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    up_port = free_port()
    pin(os.getpid(), OTHER_CPUS)
    with tempfile.TemporaryDirectory() as tmp:
        plan = Path(tmp) / "plan.json"
        plan.write_text(json.dumps(PLAN))
        upstream = subprocess.Popen(
            [sys.executable, "-m", "taskgate.integrations.mcp.testing", "--http", str(up_port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        pin(upstream.pid, OTHER_CPUS)
        gates: list[subprocess.Popen[bytes]] = []
        try:
            wait_up(f"http://127.0.0.1:{up_port}/mcp")
            port = free_port()
            gates.append(start_gate(plan, Path(tmp) / "a.db", port, up_port))
            _, top = anyio.run(load, f"http://127.0.0.1:{port}/mcp", 1, True)
            direct, _ = anyio.run(load, f"http://127.0.0.1:{up_port}/mcp", rounds, False, RATE)
            port = free_port()
            gates.append(start_gate(plan, Path(tmp) / "b.db", port, up_port))
            anyio.run(load, f"http://127.0.0.1:{port}/mcp", 1, True, RATE, "w")  # warm-up
            cpu = cpu_seconds(gates[-1].pid)
            gated, offered = anyio.run(load, f"http://127.0.0.1:{port}/mcp", rounds, True, RATE)
            cpu_ms = (cpu_seconds(gates[-1].pid) - cpu) / len(gated) * 1000
            metrics = httpx.get(f"http://127.0.0.1:{port}/taskgate/metrics",
                                headers={"Authorization": "Bearer bench"}).json()  # fmt: skip
            if CPUS:  # the desktop case: the client, the gate and its server share every core
                os.sched_setaffinity(0, set(CPUS))
            stdio50, stdio99, via, straight = stdio_added(plan)
        finally:
            for proc in (*gates, upstream):
                proc.terminate()
                proc.wait()
    added50 = pct(gated, 0.5) - pct(direct, 0.5)
    added99 = pct(gated, 0.99) - pct(direct, 0.99)
    own_ok = metrics["p50_ms"] < TARGET_P50_MS and metrics["p99_ms"] < TARGET_P99_MS
    added_ok = added50 < TARGET_P50_MS and added99 < TARGET_P99_MS
    stdio_ok = stdio50 < STDIO_P50_MS and stdio99 < STDIO_P99_MS
    good = own_ok and added_ok and stdio_ok
    print(f"MCP gate, streamable HTTP, SQLite journal, {SESSIONS} concurrent sessions: "
          f"{top:.0f} calls/s saturated; {len(gated)} gated calls at {offered:.0f} calls/s, the "
          f"gate's process {cpu_ms:.1f} ms CPU per call (its MCP server and client included)")  # fmt: skip
    print(f"  the gate's own time per call: p50 {metrics['p50_ms']:.2f} ms, p99 "
          f"{metrics['p99_ms']:.2f} ms (targets {TARGET_P50_MS}/{TARGET_P99_MS})  "
          f"{'ok' if own_ok else 'MISSED'}")  # fmt: skip
    print(f"  the client's time per call: through the gate p50 {pct(gated, 0.5):.1f} ms, p99 "
          f"{pct(gated, 0.99):.1f} ms; directly p50 {pct(direct, 0.5):.1f} ms, p99 "
          f"{pct(direct, 0.99):.1f} ms; added p50 {added50:.1f} ms, p99 {added99:.1f} ms "
          f"(targets {TARGET_P50_MS}/{TARGET_P99_MS})  {'ok' if added_ok else 'MISSED'}")  # fmt: skip
    print(f"  stdio, one client, an ungated tool: through the gate p50 {pct(via, 0.5):.2f} ms, "
          f"p99 {pct(via, 0.99):.2f} ms; directly p50 {pct(straight, 0.5):.2f} ms, p99 "
          f"{pct(straight, 0.99):.2f} ms; added (median of 3 runs) p50 {stdio50:.2f} ms, p99 "
          f"{stdio99:.2f} ms (targets {STDIO_P50_MS}/{STDIO_P99_MS})  "
          f"{'ok' if stdio_ok else 'MISSED'}")  # fmt: skip
    print("all targets met" if good else "a target was missed")


if __name__ == "__main__":
    main()
