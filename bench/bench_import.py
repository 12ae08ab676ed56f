"""The library's import cost: ``from taskgate import ToolGate`` in a fresh interpreter.

Prints the median wall time of the import over fresh processes (the interpreter's own start-up
subtracted) and how many modules it loads. Target: under 150 ms on our 2-core machines, with no
statistics, plotting, model, HTTP or agent-framework package among the modules.

    python bench/bench_import.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys

TARGET_MS = 150.0
CODE = (
    "import sys, time; t = time.perf_counter(); from taskgate import ToolGate; "
    "print((time.perf_counter() - t) * 1000, len(sys.modules))"
)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    times, counts = [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", CODE], capture_output=True, text=True, check=True
        )
        ms, count = out.stdout.split()
        times.append(float(ms))
        counts.append(int(count))
    median = statistics.median(times)
    print(f"from taskgate import ToolGate: median {median:.0f} ms over {runs} fresh processes "
          f"(min {min(times):.0f}, max {max(times):.0f}); {counts[0]} modules loaded")  # fmt: skip
    print(f"target under {TARGET_MS:.0f} ms: {'met' if median < TARGET_MS else 'MISSED'}")


if __name__ == "__main__":
    main()
