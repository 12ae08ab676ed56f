"""Progress of a batch run: counts that a progress display reads, shared by every runner.

It lives below the runners (the ladder's and the tau2 study's) and the CLI, so that none of
them imports another sideways to report progress.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from taskgate.llm.calls import CallInfo


@dataclass
class Progress:
    """Counts a progress display reads; ``on_change`` is called after each update."""

    total: int = 0
    done: int = 0
    skipped: int = 0
    failed: int = 0
    calls: int = 0
    tokens: int = 0
    call_errors: int = 0
    failures: list[str] = field(default_factory=list)
    on_change: Callable[[Progress], None] | None = field(default=None, repr=False)

    def advance(self) -> None:
        self.done += 1
        self._changed()

    def fail(self, what: str) -> None:
        self.failed += 1
        self.failures.append(what)
        self.advance()

    def count_call(self, info: CallInfo) -> None:
        self.calls += 1
        self.tokens += info.prompt_tokens + info.completion_tokens
        self.call_errors += info.error is not None
        self._changed()

    def _changed(self) -> None:
        if self.on_change:
            self.on_change(self)
