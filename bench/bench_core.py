"""Core speed: one gate verdict on an 18-step graph, and parsing a 2 KB reply.

Targets on a 2-core machine: verdict under 20 us, parse under 50 us. Prints medians over batches,
the tool gate's cost per admitted call (judge and reserve, run a no-op tool, record the receipt),
and the tamper-evident ledger's cost per entry: sealing, loading with the chain checked, and
replaying with every admission judged again.
Run: make bench   (or .venv/bin/python bench/bench_core.py)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from taskgate import (
    Booking,
    Plan,
    Policy,
    StepSpec,
    TaskMachine,
    ToolGate,
    dump_ledger,
    load_ledger,
    parse_bookings,
)


def median_us(fn: Callable[[], object], batch: int = 2000, batches: int = 31) -> float:
    samples = []
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter_ns() - t0) / batch / 1000)
    return statistics.median(samples)


def eighteen_step_machine() -> TaskMachine:
    steps = {}
    for i in range(1, 19):
        deps = tuple(f"s{j}" for j in (i - 1, i - 3, i - 7) if j >= 1)
        steps[f"s{i}"] = StepSpec(deps=deps, code=f"RC-{1000 + i}", text=f"step number {i}")
    m = TaskMachine(Plan(steps=steps), seed=0)
    for i in range(1, 10):  # half the plan done
        req = m.open_request(f"s{i}")
        m.submit(Booking(f"RC-{1000 + i}", req.work_order))
    m.open_request("s12")
    return m


def two_kb_reply() -> str:
    prose = (
        "Step s12 requires s10 and s11, which are not complete yet, so I will hold it. "
        "Meanwhile the **budget code** is registered and the RFQ went out to the vendors. "
    )
    text = (prose * 12)[:1900]
    return text + "\n\n- ref RC-1010/#W4821\n- ref RC-1011/#W4821\n"


def main() -> None:
    m = eighteen_step_machine()
    assert m.request is not None
    wo = m.request.work_order
    cases = {
        "verdict, blocked step, state-bound": Booking("RC-1012", wo),
        "verdict, eligible step, request-bound": Booking("RC-1010", wo),
        "verdict, done step, state-bound": Booking("RC-1004", wo),
    }
    print("taskgate core benchmark (median of 31 batches)")
    for name, booking in cases.items():
        policy = Policy.REQUEST_BOUND if "request" in name else Policy.STATE_BOUND
        us = median_us(lambda b=booking, p=policy: m.judge(b, p))
        print(f"  {name:<40} {us:8.2f} us   (target < 20 us)")
    reply = two_kb_reply()
    assert len(parse_bookings(reply)) == 2
    us = median_us(lambda: parse_bookings(reply), batch=500)
    print(
        f"  {'parse a ' + str(len(reply)) + '-byte reply (2 bookings)':<40} {us:8.2f} us   (target < 50 us)"
    )
    no_ref = reply.replace("ref", "see")
    us = median_us(lambda: parse_bookings(no_ref), batch=500)
    print(f"  {'parse a ' + str(len(no_ref)) + '-byte reply (no booking)':<40} {us:8.2f} us")
    print(f"  {'tool gate: judge + receipt, one call':<40} {tool_gate_call_us():8.2f} us")
    ledger_costs()


def ledger_costs() -> None:
    """The tamper-evident ledger: sealing (SHA-256, and HMAC with a key) and checking per entry,
    and replaying a ledger with every admission judged again, per entry."""
    m = eighteen_step_machine()
    entries = list(m.ledger)
    n = len(entries)
    for label, key in (("sha-256", None), ("hmac", "s3cret")):
        text = dump_ledger(entries, key)
        seal_us = median_us(lambda k=key: dump_ledger(entries, k), batch=50) / n
        load_us = median_us(lambda t=text, k=key: load_ledger(t, k), batch=50) / n
        print(f"  {'ledger: seal one entry (' + label + ')':<40} {seal_us:8.2f} us")
        print(f"  {'ledger: load, check one entry (' + label + ')':<40} {load_us:8.2f} us")
    replay_us = median_us(lambda: TaskMachine.from_ledger(entries), batch=50) / n
    print(f"  {'ledger: replay one entry (re-judged)':<40} {replay_us:8.2f} us   ({n} entries)")


def tool_gate_call_us() -> float:
    """One admitted tool call through ToolGate (judge and reserve, then the receipt), on an
    18-step tool-bound plan; each call is an authorized redo of a DONE step under a fresh request,
    so every call is admitted and recorded."""
    steps = {
        f"s{i}": {"tool": f"tool_{i}", "deps": [f"s{i - 1}"] if i > 1 else []} for i in range(1, 19)
    }
    gate = ToolGate(Plan.model_validate({"binding": "tool", "steps": steps}), seed=1)
    gate.open_request("s1")
    gate.call("tool_1", lambda: None)
    samples: list[float] = []
    for _ in range(31):
        batch: list[float] = []
        for _ in range(200):
            gate.open_request("s1", explicit_redo=True)
            t = time.perf_counter()
            gate.call("tool_1", lambda: None)
            batch.append(time.perf_counter() - t)
        samples.append(statistics.median(batch) * 1e6)
    return statistics.median(samples)


if __name__ == "__main__":
    main()
