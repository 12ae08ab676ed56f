"""Parser speed on hostile text: 1 MB of each adversarial input, and 1 MB of ordinary prose.

A reply is untrusted text, so parsing must be linear in its length. The adversarial inputs are a
prefix of a booking (or of a self-ledger mark) followed by a megabyte of what the pattern tolerates
there: spaces, newlines, ``*``, backticks. A backtracking pattern takes hours on these (it was ~1 s
per 10 KB, growing quadratically). Target on a 2-core machine: every row under 100 ms.
Prints the best of 5 runs per text.
Run: make bench   (or .venv/bin/python bench/bench_parser.py)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from taskgate import parse_bookings
from taskgate.protocol.marks import parse_marks

SIZE = 1_000_000
TARGET_MS = 100.0
RUNS = {"spaces": " ", "newlines": "\n", "stars": "*", "backticks": "`"}
BOOKING_PREFIXES = ["ref", "ref RC", "ref RC-1", "ref RC-1/", "ref RC-1/W", "ref RC-1/#W"]
MARK_PREFIXES = ["LEDGER", "LEDGER RC", "LEDGER RC-1", "- LEDGER RC-1"]


def hostile(prefix: str, run: str) -> str:
    return prefix + run * ((SIZE - len(prefix) - 1) // len(run)) + "x"


def prose_with_bookings() -> str:
    para = (
        "Step s12 requires s10 and s11, which are not complete yet, so I will hold it. For "
        "reference, the **budget code** is registered and the RFQ went out to the preferred "
        "vendors.\n\n- ref RC-1010/#W4821\n- LEDGER RC-1010 DONE\n\n"
    )
    return (para * (SIZE // len(para) + 1))[:SIZE]


def best_ms(fn: Callable[[str], object], text: str, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def table(name: str, fn: Callable[[str], Sequence[object]], prefixes: list[str]) -> float:
    print(f"  {name}: a prefix, then 1 MB of one character, then 'x'")
    print(f"    {'prefix':<16}" + "".join(f"{r:>12}" for r in RUNS))
    worst = 0.0
    for prefix in prefixes:
        cells = []
        for run in RUNS.values():
            text = hostile(prefix, run)
            assert fn(text) == [], (prefix, run)  # no phantom booking or mark
            ms = best_ms(fn, text)
            worst = max(worst, ms)
            cells.append(f"{ms:9.1f} ms")
        print(f"    {prefix!r:<16}" + "".join(cells))
    return worst


def main() -> None:
    print(f"taskgate parser benchmark: 1 MB texts, best of 5 (target < {TARGET_MS:.0f} ms each)")
    prose = prose_with_bookings()
    n_bookings, n_marks = len(parse_bookings(prose)), len(parse_marks(prose))
    worst = max(
        table("parse_bookings", parse_bookings, BOOKING_PREFIXES),
        table("parse_marks (self-ledger arm)", parse_marks, MARK_PREFIXES),
    )
    ref_dense = ("ref " * (SIZE // 4))[:SIZE]
    rows = [
        (f"parse_bookings, prose ({n_bookings} bookings)", parse_bookings, prose),
        (f"parse_marks, prose ({n_marks} marks)", parse_marks, prose),
        ("parse_bookings, 'ref ref ref ...'", parse_bookings, ref_dense),
        ("parse_marks, 'LEDGER\\n' repeated", parse_marks, ("LEDGER\n" * (SIZE // 7))[:SIZE]),
    ]
    for name, fn, text in rows:
        ms = best_ms(fn, text)
        worst = max(worst, ms)
        print(f"  {name:<48} {ms:8.1f} ms")
    verdict = "met" if worst < TARGET_MS else "MISSED"
    print(f"  {'slowest of all':<48} {worst:8.1f} ms   (target < {TARGET_MS:.0f} ms: {verdict})")


if __name__ == "__main__":
    main()
