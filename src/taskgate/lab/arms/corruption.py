"""The corrupted-state ablation (Appendix D.4): noise injected into a gate's own state.

At each turn, each step independently suffers a corruption with probability ``rate``: its DONE bit
flips (a spurious or a lost completion), or, when it has prerequisites, one of its prerequisite
edges is dropped (chosen with equal odds). The receipts ledger is never touched, so
:meth:`TaskMachine.repair_completions` can rebuild the completion set from it; dropped edges it
cannot rebuild.
"""

from __future__ import annotations

import random

from taskgate.core.graph import step_sort_key
from taskgate.core.machine import TaskMachine


class Corruptor:
    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self._rng = random.Random(f"taskgate/corruption/{seed}/{rate}")

    def inject(self, module: TaskMachine) -> list[str]:
        """Corrupt ``module`` in place; describe each injected event."""
        events: list[str] = []
        if self.rate <= 0:
            return events
        for step in module.steps:
            if self._rng.random() >= self.rate:
                continue
            prereqs = sorted(module.graph.prerequisites(step), key=step_sort_key)
            if prereqs and self._rng.random() < 0.5:
                u = self._rng.choice(prereqs)
                module.graph.relax(step, u)
                events.append(f"edge-drop {u}->{step}")
            elif step in module.done:
                module.corrupt_completion(step, False)
                events.append(f"lost-done {step}")
            else:
                module.corrupt_completion(step, True)
                events.append(f"spurious-done {step}")
        return events
