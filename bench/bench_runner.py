"""Runner overhead against a fake OpenAI-compatible server with a fixed per-request latency.

A 32-episode x 4-arm cell (S=10) runs with the llm compiler, matcher and agent through real HTTP.
The ideal wall time is the critical path: the longest chain of calls one episode-arm must make one
after another (a gate arm's: its episode's compile calls, shared by the gate arms, then each turn's
matcher and agent calls; 61 calls at S=10), times the latency, read from the run's log. Target:
the measured wall time within 1.2x of that (within 1.05x at 2 s with 512 episodes per arm).
The fake server answers each request ``latency`` seconds after it arrived (its own work
included, as a model server's service time is). Also prints the runner's own CPU time per turn and
per model call (the server runs in another
process, so its work is not counted, but its CPU time is printed too).

With ``--check`` it is the regression guard that ``make test`` (and so CI) runs: it exits 1 when
the runner's CPU time per turn exceeds a generous bound (CPU time, unlike wall time, barely moves
on a busy machine; the bound is about three times today's figure, and the regression it guards
against was five to nine times).

Run: .venv/bin/python bench/bench_runner.py [latency_seconds [episodes_per_arm [in_flight]]] [--check]
(the scale figure: ``bench_runner.py 2 512``, 2,048 episode-arms in flight; memory against the
length of a run: ``bench_runner.py 0.02 64 64`` and ``bench_runner.py 0.02 512 64``, the same
episode-arms in flight, eight times as many run; the ratio then is not the point, as only 64 of
the grid's episode-arms are in flight at a time)
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from taskgate import ChatClient, Endpoint, FakeServer, protocol_responder
from taskgate.lab import LadderConfig, run_ladder
from taskgate.lab.arms.registry import get_arm
from taskgate.lab.rundir import LOG, Run, read_log


def serve(port_out: multiprocessing.Queue, latency: float) -> None:  # type: ignore[type-arg]
    with FakeServer(protocol_responder, latency=latency, keep_requests=False) as srv:
        port_out.put(srv.port)
        while True:
            time.sleep(3600)


def critical_path(runs: dict[tuple[str, str], Run]) -> int:
    """The most calls one episode-arm makes in sequence: its own turn calls, plus its episode's
    compile calls when it acts on the compiled state (they are logged by one of the gate arms)."""
    compiles: Counter[str] = Counter()
    for (episode, _), run in runs.items():
        compiles[episode] += sum(c.purpose == "compiler" for c in run.calls)
    return max(
        sum(c.purpose != "compiler" for c in run.calls)
        + (compiles[episode] if get_arm(arm).compiled else 0)
        for (episode, arm), run in runs.items()
    )


def cpu_seconds(pid: int | None) -> float | None:
    """A process's CPU time so far (user + system), from /proc; None where there is no /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: the guard's bound on the runner's CPU time per turn (about 0.9 ms on a 2-core machine today)
CHECK_MS_PER_TURN = 3.0


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv[1:]
    latency = float(args[0]) if args else 0.2
    episodes = int(args[1]) if len(args) > 1 else 32  # per arm
    in_flight = int(args[2]) if len(args) > 2 else 4 * episodes  # default: every episode-arm
    ports: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    server = multiprocessing.Process(target=serve, args=(ports, latency), daemon=True)
    server.start()
    port = ports.get(timeout=30)
    arms = ("raw", "checklist", "directive", "enforcement")
    config = LadderConfig(
        arms=arms,
        agent="llm",
        compiler="llm",
        matcher="llm",
        steps=(10,),
        episodes=episodes,
        concurrency=in_flight,
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)

        async def go() -> None:
            endpoint = Endpoint(
                base_url=f"http://127.0.0.1:{port}/v1", model="fake", concurrency=2 * in_flight
            )
            client = ChatClient(endpoint)
            try:
                await run_ladder(config, out, client=client)
            finally:
                await client.close()

        cpu0 = time.process_time()
        t0 = time.perf_counter()
        asyncio.run(go())
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before reading the log
        runs = read_log(out / LOG)
        calls = sum(len(r.calls) for r in runs.values())
    server_cpu = cpu_seconds(server.pid)
    server.terminate()
    turns = sum(len(r.turns) for r in runs.values())
    ideal = critical_path(runs) * latency
    print(
        f"fake server latency {latency * 1000:.0f} ms per request; {len(runs)} episode-arms "
        f"({in_flight} in flight), {calls} calls"
    )
    target = 1.05 if latency >= 1 else 1.2
    print(
        f"wall {wall:.2f} s; ideal critical path {ideal:.2f} s ({critical_path(runs)} calls); "
        f"ratio {wall / ideal:.3f} (target <= {target:g})"
    )
    print(
        f"runner CPU {cpu:.2f} s = {cpu / turns * 1000:.2f} ms per turn ({turns} turns), "
        f"{cpu / calls * 1000:.2f} ms per model call"
    )
    if server_cpu is not None:
        print(
            f"fake server CPU {server_cpu:.2f} s (its own process; {server_cpu / wall:.0%} of a core)"
        )
    print(f"runner peak resident memory {peak:.0f} MB")
    per_turn = cpu / turns * 1000
    if check and per_turn > CHECK_MS_PER_TURN:
        print(
            f"REGRESSION: the runner spent {per_turn:.2f} ms of CPU per turn, over the guard's "
            f"{CHECK_MS_PER_TURN:g} ms (profile it: python -m cProfile bench/bench_runner.py)"
        )
        sys.exit(1)
    if check:
        print(f"runner guard: {per_turn:.2f} ms per turn <= {CHECK_MS_PER_TURN:g} ms: ok")


if __name__ == "__main__":
    main()
