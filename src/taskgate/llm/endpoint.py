"""Where and how to call a model: an OpenAI-compatible endpoint and its budgets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from taskgate.errors import ModelError


@dataclass(frozen=True)
class Endpoint:
    """Where and how to call a model. ``think`` selects the thinking regime's budgets;
    ``enable_thinking``, when set, is sent as ``chat_template_kwargs.enable_thinking``
    (models such as Qwen3 switch thinking on and off by it); ``deepseek_thinking``, when set, as
    DeepSeek's own switch, ``thinking: {"type": "enabled" | "disabled"}``."""

    base_url: str
    model: str
    api_key: str = "EMPTY"
    think: bool = False
    enable_thinking: bool | None = None
    deepseek_thinking: bool | None = None
    timeout: float = 900.0
    attempts: int = 6
    backoff: float = 1.0
    concurrency: int = 8
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    reply_budget: int | None = None  # overrides the agent's reply budget (not the paper's)

    @property
    def regime(self) -> str:
        """The reasoning regime as a run names it: ``think`` or ``no-think`` (the budgets), with
        the switch sent to the server where one is (``think, enable_thinking=true``)."""
        parts = ["think" if self.think else "no-think"]
        if self.enable_thinking is not None:
            parts.append(f"enable_thinking={str(self.enable_thinking).lower()}")
        if self.deepseek_thinking is not None:
            parts.append(f"deepseek thinking={'enabled' if self.deepseek_thinking else 'disabled'}")
        return ", ".join(parts)

    @classmethod
    def from_env(cls, base_url: str | None = None, model: str | None = None, **kw: Any) -> Endpoint:
        """Flags first, then ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``TASKGATE_MODEL``."""
        url = base_url or os.environ.get("OPENAI_BASE_URL")
        name = model or os.environ.get("TASKGATE_MODEL")
        if not url:
            raise ModelError("no endpoint: pass --base-url or set OPENAI_BASE_URL")
        if not name:
            raise ModelError("no model: pass --model or set TASKGATE_MODEL")
        kw.setdefault("api_key", os.environ.get("OPENAI_API_KEY") or "EMPTY")
        return cls(base_url=url, model=name, **kw)
