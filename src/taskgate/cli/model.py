"""Model options (``--base-url``, ``--model``, ``--think``, ...) and the client they make.

With no endpoint given (no ``--base-url``, no ``OPENAI_BASE_URL``), the ``llm`` roles run on the
embedded SmolLM2 model, served by ``llama_cpp.server`` on loopback for the duration of the command:
twice, one server for the agent and one for the matcher and compiler, so that each keeps the KV
prefix of its own prompts (llama.cpp serves one sequence per server).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Annotated

import typer

from ..errors import ModelError
from ..llm.client import ChatClient, Endpoint
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
def endpoint_for(opts: ModelOptions) -> Iterator[tuple[Endpoint, Endpoint | None]]:
    """The agent's endpoint and a helper one (or None); starts the embedded model if needed."""
    common = {
        "think": opts.think,
        "think_kwarg": opts.think_kwarg,
        "timeout": opts.timeout,
        "reply_budget": opts.max_tokens,
        "concurrency": opts.concurrency,
    }
    if not opts.embedded:
        try:
            endpoint = Endpoint.from_env(opts.base_url, opts.model, **common)
        except ModelError as exc:
            raise typer.BadParameter(str(exc)) from None
        yield endpoint, None
        return
    with LocalServer() as agent, LocalServer() as helper:
        yield (
            Endpoint(base_url=agent.base_url, model=MODEL_NAME, **common),  # type: ignore[arg-type]
            Endpoint(base_url=helper.base_url, model=MODEL_NAME, **common),  # type: ignore[arg-type]
        )


@contextlib.asynccontextmanager
async def clients(
    endpoints: tuple[Endpoint, Endpoint | None],
) -> AsyncIterator[tuple[ChatClient, ChatClient | None]]:
    """Open the clients of ``endpoint_for``'s endpoints, and close them at the end."""
    agent = ChatClient(endpoints[0])
    helper = ChatClient(endpoints[1]) if endpoints[1] is not None else None
    try:
        yield agent, helper
    finally:
        await agent.close()
        if helper is not None:
            await helper.close()
