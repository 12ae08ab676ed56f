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
from typing import Any

import typer

from ..errors import ModelError
from ..llm.client import ChatClient, Endpoint
from ..llm.local import MODEL_NAME, LocalServer
from .options import EndpointOptions


def embedded(opts: EndpointOptions) -> bool:
    """No endpoint given: the llm roles run on the embedded model."""
    return not (opts.base_url or os.environ.get("OPENAI_BASE_URL"))


@contextlib.contextmanager
def endpoint_for(
    opts: EndpointOptions, think: bool = False
) -> Iterator[tuple[Endpoint, Endpoint | None]]:
    """The agent's endpoint and a helper one (or None); starts the embedded model if needed."""
    common: dict[str, Any] = {
        "think": think,
        "enable_thinking": opts.thinking,
        "timeout": opts.timeout,
        "reply_budget": opts.max_tokens,
        "concurrency": opts.concurrency,
        "attempts": opts.retries + 1,
    }
    if not embedded(opts):
        try:
            endpoint = Endpoint.from_env(opts.base_url, opts.model, **common)
        except ModelError as exc:
            raise typer.BadParameter(str(exc)) from None
        yield endpoint, None
        return
    with LocalServer() as agent, LocalServer() as helper:
        yield (
            Endpoint(base_url=agent.base_url, model=MODEL_NAME, **common),
            Endpoint(base_url=helper.base_url, model=MODEL_NAME, **common),
        )


@contextlib.asynccontextmanager
async def clients(
    endpoints: tuple[Endpoint, Endpoint | None],
) -> AsyncIterator[tuple[ChatClient, ChatClient | None]]:
    """Open the clients of ``endpoint_for``'s endpoints, and close them at the end."""
    async with contextlib.AsyncExitStack() as stack:
        agent = await stack.enter_async_context(ChatClient(endpoints[0]))
        helper = None
        if endpoints[1] is not None:
            helper = await stack.enter_async_context(ChatClient(endpoints[1]))
        yield agent, helper
