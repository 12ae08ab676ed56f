"""The probe's directory: ``probe.jsonl``, a header line and one line per reply, from which its
table is regenerated."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import LogFormatError

PROBE = "probe.jsonl"
#: the sample index of the greedy (temperature 0) re-ask of the recorded request
GREEDY = -1


class ProbeHeader(BaseModel):
    """What was probed, with what agent and sampling settings (a resumed probe must match)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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
    out: Path, on_skip: Callable[[str], None] | None = None
) -> tuple[ProbeHeader | None, list[ProbeReply]]:
    """The header and replies of a probe directory; unreadable lines are skipped and reported
    (an interrupted write leaves at most the last one half-written)."""
    path = out / PROBE
    if not path.exists():
        return None, []
    header: ProbeHeader | None = None
    replies: dict[tuple[str, int, str, int], ProbeReply] = {}  # a key written twice: the last
    with path.open("rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = orjson.loads(line)
                if n == 1:
                    header = ProbeHeader.model_validate(data)
                else:
                    reply = ProbeReply.model_validate(data)
                    replies[reply.key] = reply
            except (orjson.JSONDecodeError, ValidationError) as exc:
                if n == 1:
                    raise LogFormatError(f"{path}:1: not a probe header ({_first(exc)})") from None
                if on_skip is not None:
                    on_skip(f"{path}:{n}: skipped an unreadable line ({_first(exc)})")
    return header, list(replies.values())


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return f"{'.'.join(map(str, err['loc'])) or 'line'}: {err['msg']}"
    return str(exc).splitlines()[0]
