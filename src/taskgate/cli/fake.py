"""``taskgate fake-server``: the shipped fake model server in the foreground, to try a set-up
with no model (``taskgate ladder --base-url URL --model fake``, a proxy's ``--upstream``)."""

from __future__ import annotations

import difflib
import threading
from typing import Annotated

import typer

from taskgate.errors import MissingExtraError, UsageError

RESPONDERS = ("obedient", "careless", "faulty")


def fake_server(
    responder: Annotated[
        str,
        typer.Option(
            help="obedient: follows the protocol (compiles briefs, matches, books what the "
            "directive says); careless: ignores the task state on a share --rate of requests; "
            "faulty: obedient, with a share --rate of requests answered by a server error, a "
            "rate limit, a dropped connection or a broken reply."
        ),
    ] = "obedient",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: any free).")
    ] = 8000,
    model: Annotated[str, typer.Option(help="The model name GET /v1/models lists.")] = "fake",
    rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="careless and faulty: the share.")
    ] = 0.3,
    latency: Annotated[float, typer.Option(min=0.0, help="Seconds each reply takes.")] = 0.0,
    seed: Annotated[int, typer.Option(help="faulty: the seed of which requests fail.")] = 0,
) -> None:
    """Serve the fake OpenAI-compatible model on loopback until Ctrl-C."""
    if responder not in RESPONDERS:
        near = difflib.get_close_matches(responder, RESPONDERS, n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise typer.BadParameter(
            f"unknown responder {responder!r}: {hint}choose from {', '.join(RESPONDERS)}",
            param_hint="--responder",
        )
    try:
        from taskgate.llm.fake import FakeServer, careless_responder, protocol_responder
    except MissingExtraError:
        raise
    except ModuleNotFoundError as exc:
        raise MissingExtraError("llm", "taskgate fake-server", exc.name) from None
    answer = careless_responder(rate) if responder == "careless" else protocol_responder
    server = FakeServer(
        answer, latency=latency, port=port, keep_requests=False, models=(model,),
        fault_rate=rate if responder == "faulty" else 0.0, fault_seed=seed,
    )  # fmt: skip
    try:
        server.__enter__()
    except OSError as exc:
        raise UsageError(f"--port {port}: {exc.strerror or exc}") from None
    typer.echo(
        f"taskgate fake-server: {responder} at {server.base_url} (model {model!r}); Ctrl-C stops it",
        err=True,
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.__exit__(None, None, None)
