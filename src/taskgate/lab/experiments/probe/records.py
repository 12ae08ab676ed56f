"""The probe's directory: ``probe.jsonl``, a header line and one line per reply, from which its
table is regenerated."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from taskgate.lab.experiments.protocol import ExperimentFile, Header
from taskgate.lab.rundir import OnSkip

PROBE = "probe.jsonl"
#: the sample index of the greedy (temperature 0) re-ask of the recorded request
GREEDY = -1


class ProbeHeader(Header):
    """What was probed, with what agent and sampling settings (a resumed probe must match)."""

    kind: Literal["probe"] = "probe"
    source: str  # the raw-transcript run directory
    agent: str
    samples: int
    temperature: float
    top_p: float | None
    top_k: int | None = None
    seed: int
    variants: tuple[str, ...]
    greedy: bool
    cell: tuple[int, float] | None = None  # (S, density) probed


class ProbeReply(BaseModel):
    """One reply at one trap turn under one variant (``sample`` -1: the greedy re-ask)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["reply"] = "reply"
    episode: str
    turn: int
    step: str
    variant: str
    sample: int
    reply: str
    rebooked: bool
    recorded: bool  # the recorded reply's outcome at this trap turn
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def key(self) -> tuple[str, int, str, int]:
        return (self.episode, self.turn, self.variant, self.sample)


def read_probe(
    out: Path, on_skip: OnSkip | None = None
) -> tuple[ProbeHeader | None, list[ProbeReply]]:
    """The header and replies of a probe directory (a reply written twice: the last); unreadable
    lines are skipped and reported (an interrupted write leaves the last one half-written)."""
    return PROBE_FILE.read(out, ProbeReply, lambda r: r.key, on_skip)


#: the probe's file: its settings, then one reply per line
PROBE_FILE = ExperimentFile(PROBE, ProbeHeader, "a probe")
