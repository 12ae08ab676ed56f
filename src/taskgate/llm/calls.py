"""What the chat client reports of one model call (a run log records it as a ``call`` record)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class CallInfo(BaseModel):
    """One model call (all its attempts): what the client reports and a run log records."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    purpose: Literal["agent", "matcher", "compiler", "memory"]  # memory: Mem0's own calls
    model: str
    attempts: int
    max_tokens: int
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    error: str | None = None
    reasoning_chars: int = 0
    events: tuple[str, ...] = ()  # retries and budget changes, in order
    reask: bool = False  # a corrective re-ask after a malformed reply
    #: the agent's calls: the share of this prompt (in characters) that is a prefix of the
    #: episode-arm's previous agent prompt, which a server's prefix (KV) cache can reuse
    prefix_share: float | None = None
    endpoint: str | None = None  # the base URL that served the call's last attempt
