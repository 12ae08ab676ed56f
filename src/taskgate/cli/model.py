"""Model options (``--base-url``, ``--model``, ``--think``, ...) and the client they make.

With no endpoint given (no ``--base-url``, no ``OPENAI_BASE_URL``), the ``llm`` roles run on the
embedded SmolLM2 model, served by ``llama_cpp.server`` on loopback for the duration of the command.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated

import typer

from ..errors import ModelError
from ..llm.client import Endpoint
from ..llm.local import MODEL_NAME, LocalServer

BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else the embedded model)."
    ),
]
ModelOpt = Annotated[str | None, typer.Option(help="Model name (default: $TASKGATE_MODEL).")]
ThinkOpt = Annotated[bool, typer.Option(help="Thinking regime: its reply budgets (Appendix B.4).")]
ThinkKwargOpt = Annotated[
    bool, typer.Option(help="Send chat_template_kwargs.enable_thinking (hybrid models).")
]
TimeoutOpt = Annotated[float, typer.Option(min=1.0, help="Request timeout in seconds.")]
MaxTokensOpt = Annotated[
    int | None, typer.Option(min=16, help="Cap the agent's reply budget (default: the paper's).")
]


@dataclass(frozen=True)
class ModelOptions:
    base_url: str | None
    model: str | None
    think: bool
    think_kwarg: bool
    timeout: float
    max_tokens: int | None
    concurrency: int

    @property
    def embedded(self) -> bool:
        return not (self.base_url or os.environ.get("OPENAI_BASE_URL"))


@contextlib.contextmanager
def endpoint_for(opts: ModelOptions) -> Iterator[Endpoint]:
    """The endpoint to call; starts (and finally stops) the embedded model's server if needed."""
    common = {
        "think": opts.think,
        "think_kwarg": opts.think_kwarg,
        "timeout": opts.timeout,
        "reply_budget": opts.max_tokens,
        "concurrency": opts.concurrency,
    }
    if not opts.embedded:
        try:
            yield Endpoint.from_env(opts.base_url, opts.model, **common)
        except ModelError as exc:
            raise typer.BadParameter(str(exc)) from None
        return
    with LocalServer() as server:
        yield Endpoint(base_url=server.base_url, model=MODEL_NAME, **common)  # type: ignore[arg-type]
