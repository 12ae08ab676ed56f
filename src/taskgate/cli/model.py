"""Model options (``--base-url``, ``--model``, ``--think``, ...) and the clients they make.

``--base-url`` may be given several times, or ``--endpoints FILE`` may list the servers (one base
URL per line, optionally followed by that server's own concurrency limit; blank lines and ``#``
comments are skipped): the client spreads the calls over them (see
:class:`~taskgate.llm.client.ChatClient`). ``--matcher-base-url`` and ``--compiler-base-url``
(repeatable too) give those roles their own servers; by default they use the agent's.

With no endpoint given (no ``--base-url``, no ``--endpoints``, no ``OPENAI_BASE_URL``), the
``llm`` roles run on the embedded SmolLM2 model, served by ``llama_cpp.server`` on loopback for the
duration of the command: twice, one server for the agent and one for the matcher and compiler, so
that each keeps the KV prefix of its own prompts (llama.cpp serves one sequence per server).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import typer

from taskgate.cli.options import EndpointOptions
from taskgate.errors import ModelError
from taskgate.files import read_text
from taskgate.lab.runner.roles import Clients
from taskgate.llm.client import ChatClient
from taskgate.llm.endpoint import Endpoint
from taskgate.llm.local import MODEL_NAME, LocalServer

_LIMIT = re.compile(r"[1-9][0-9]{0,5}")  # an endpoint's concurrency limit: 1 to 999999


@dataclass(frozen=True)
class Endpoints:
    """Each role's endpoints; the matcher's and the compiler's default to the agent's."""

    agent: tuple[Endpoint, ...]
    matcher: tuple[Endpoint, ...] = ()
    compiler: tuple[Endpoint, ...] = ()

    @property
    def model(self) -> str:
        return self.agent[0].model

    @property
    def helper(self) -> Endpoint | None:
        """The first endpoint of the matcher's (or the compiler's) own list, if any."""
        return (self.matcher or self.compiler or (None,))[0]


def embedded(opts: EndpointOptions) -> bool:
    """No endpoint given: the llm roles run on the embedded model."""
    return not (opts.base_url or opts.endpoints or os.environ.get("OPENAI_BASE_URL"))


@contextlib.contextmanager
def endpoint_for(opts: EndpointOptions, think: bool = False) -> Iterator[Endpoints]:
    """Each role's endpoints from the options; starts the embedded model if none is given."""
    common: dict[str, Any] = {
        "think": think,
        "enable_thinking": opts.thinking,
        "deepseek_thinking": opts.deepseek_thinking,
        "timeout": opts.timeout,
        "reply_budget": opts.max_tokens,
        "concurrency": opts.concurrency,
        "attempts": opts.retries + 1,
    }
    if embedded(opts):
        named = [f for f, v in (("--model", opts.model), ("--matcher-model", opts.matcher_model),
                                ("--compiler-model", opts.compiler_model)) if v is not None]  # fmt: skip
        if named:
            raise typer.BadParameter(
                f"{named[0]} names a model but no endpoint serves it: give --base-url (or "
                "--endpoints, or set OPENAI_BASE_URL); without one the embedded model runs",
                param_hint=named[0],
            )
    else:
        agent = _listed(opts.base_url, opts.endpoints, "--base-url")
        try:
            first = Endpoint.from_env(agent[0][0] if agent else None, opts.model, **common)
        except ModelError as exc:
            raise typer.BadParameter(str(exc)) from None
        agents = _like(first, agent) or (first,)
        yield Endpoints(
            agent=agents,
            matcher=_own(first, agents, opts.matcher_base_url, opts.matcher_model),
            compiler=_own(first, agents, opts.compiler_base_url, opts.compiler_model),
        )
        return
    with LocalServer() as agent_srv, LocalServer() as helper_srv:
        helper = (Endpoint(base_url=helper_srv.base_url, model=MODEL_NAME, **common),)
        yield Endpoints(
            agent=(Endpoint(base_url=agent_srv.base_url, model=MODEL_NAME, **common),),
            matcher=helper,
            compiler=helper,
        )


def _own(
    first: Endpoint, agents: tuple[Endpoint, ...], urls: Sequence[str] | None, model: str | None
) -> tuple[Endpoint, ...]:
    """A helper role's endpoints: its own URLs, or the agent's when only its model is its own
    (empty: it shares the agent's endpoints and model)."""
    own = _like(first, _listed(urls, None, ""))
    if model is None:
        return own
    return tuple(dataclasses.replace(e, model=model) for e in own or agents)


def _like(first: Endpoint, listed: list[tuple[str, int | None]]) -> tuple[Endpoint, ...]:
    """Endpoints like ``first`` at the listed URLs, each with its own limit where one is given."""
    return tuple(
        dataclasses.replace(first, base_url=url, concurrency=limit or first.concurrency)
        for url, limit in listed
    )


def _listed(
    urls: Sequence[str] | None, path: Path | None, flag: str
) -> list[tuple[str, int | None]]:
    """(base URL, its own concurrency limit or None) from repeated flags and an endpoints file."""
    out: list[tuple[str, int | None]] = [(u, None) for u in urls or ()]
    if path is not None:
        text = read_text(path, "endpoints file")
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) > 2 or (len(line) == 2 and not _LIMIT.fullmatch(line[1])):
                raise typer.BadParameter(
                    f"{path}:{n}: expected a base URL and an optional concurrency limit (1 to "
                    f"999999), got {raw.strip()[:80]!r}",
                    param_hint="--endpoints",
                )
            out.append((line[0], int(line[1]) if len(line) == 2 else None))
        if not out:
            raise typer.BadParameter(f"{path} lists no endpoint", param_hint="--endpoints")
    for url, _ in out:
        if not _http_url(url):
            hint = flag or "--matcher-base-url/--compiler-base-url"
            raise typer.BadParameter(f"{url[:80]!r} is not an http(s) URL", param_hint=hint)
    return out


def _http_url(url: str) -> bool:
    """An http(s) URL with a host (its port is checked when it is called)."""
    try:
        split = urlsplit(url)
        return split.scheme in ("http", "https") and bool(split.hostname)
    except ValueError:  # an unclosed IPv6 bracket and kin
        return False


@contextlib.asynccontextmanager
async def clients(
    endpoints: Endpoints, warn: Callable[[str], None] | None = None
) -> AsyncIterator[Clients]:
    """Open a client per role list, check that each has an endpoint that answers (warning about
    those that do not), and close them at the end."""
    async with contextlib.AsyncExitStack() as stack:

        async def open_(eps: tuple[Endpoint, ...]) -> ChatClient | None:
            if not eps:
                return None
            client = await stack.enter_async_context(ChatClient(eps))
            await client.check(warn)
            return client

        agent = await open_(endpoints.agent)
        matcher = await open_(endpoints.matcher)
        same = endpoints.compiler == endpoints.matcher  # one client: one limit on that server
        yield Clients(agent, matcher, matcher if same else await open_(endpoints.compiler))


def card_roles(
    opts: EndpointOptions, agent: str, compiler: str, matcher: str, memory: bool = False
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Each role's model and endpoints as a run card records them (before any server starts):
    ``""`` and ``[]`` for a scripted role, ``embedded`` for the embedded model's endpoint.
    ``memory``: the Mem0 arms extract with the agent's model even when the agent is scripted, so
    the model is recorded under ``memory``."""
    from taskgate.lab.runner.roles import ROLES

    models: dict[str, str] = {}
    endpoints: dict[str, list[str]] = {}
    own_urls = {"matcher": opts.matcher_base_url, "compiler": opts.compiler_base_url}
    own_models = {"matcher": opts.matcher_model, "compiler": opts.compiler_model}
    if embedded(opts):
        urls, model = ["embedded"], MODEL_NAME
    else:
        urls = [u for u, _ in _listed(opts.base_url, opts.endpoints, "--base-url")]
        urls = urls or [os.environ.get("OPENAI_BASE_URL", "")]
        model = opts.model or os.environ.get("TASKGATE_MODEL", "")
    for role, name in (("agent", agent), ("compiler", compiler), ("matcher", matcher)):
        if not ROLES.needs_model(role, name):  # type: ignore[arg-type]
            models[role], endpoints[role] = "", []
            continue
        models[role] = own_models.get(role) or model
        endpoints[role] = list(own_urls.get(role) or urls)
    if memory:
        models["memory"], endpoints["memory"] = model, list(urls)
    return models, endpoints
