"""``taskgate proxy``: the gating proxy in front of a model server; ``taskgate proxy-status``."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Annotated

import typer

from taskgate.cli.errors import fail
from taskgate.errors import MissingExtraError, UsageError
from taskgate.plans import load_plan

RungName = Annotated[
    str,
    typer.Option(
        "--arm",
        help="The rung: checklist | directive | enforcement | enforcement-request (or raw: "
        "track only).",
    ),
]


#: the serving options the proxy and the MCP gate share
AllowedHosts = Annotated[
    list[str] | None,
    typer.Option(
        "--allowed-host",
        help="A host name the gate answers besides IP addresses and localhost (repeatable; "
        "NAME, NAME:PORT or NAME:*): the name a reverse proxy or the clients reach it by. Any "
        "other Host is refused (421), as a DNS-rebinding page's would be.",
        metavar="NAME",
        show_default=False,
    ),
]
ForwardedIps = Annotated[
    str | None,
    typer.Option(
        "--forwarded-allow-ips",
        help="Trust X-Forwarded-For from these proxies' addresses (comma-separated, or *): "
        "wrong tokens are then counted per forwarded client. Default: trust none, count per "
        "connection.",
        metavar="IPS",
        show_default=False,
    ),
]


def proxy(
    upstream: Annotated[
        str, typer.Option("--upstream", help="The model server's base URL (…/v1).", metavar="URL")
    ],
    rung_name: RungName = "enforcement",
    plan_file: Annotated[
        str | None,
        typer.Option(
            "--plan",
            help="Gate every conversation's native tool calls with this plan file (TOML, JSON or "
            "YAML; see `taskgate plan check`): no brief, no work orders. `--plan compile` "
            "compiles each conversation's plan from its system prompt and tools instead (by the "
            "helper model). Without it, only conversations whose system prompt is a brief are "
            "gated.",
            metavar="FILE|compile",
        ),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="The journal: a SQLite file, or a postgresql:// URL shared by replicas "
            "(default: memory only).",
            metavar="PATH|URL",
        ),
    ] = None,
    host: Annotated[str, typer.Option("--host")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8100,
    compiler: Annotated[
        str, typer.Option("--compiler", help="llm (the model compiles the brief) | parser.")
    ] = "llm",
    matcher: Annotated[
        str | None,
        typer.Option(
            "--matcher",
            help="conversation (the user's message read with the agent's before it, no model "
            "call; conversation:llm, :cascade, :embedding) | llm | lexical | embedding (MiniLM) | "
            "cascade (embedding, then llm where it is unsure) | embedding:hash (for tests). "
            "Default: conversation with --plan, else llm.",
        ),
    ] = None,
    notices: Annotated[
        str,
        typer.Option(
            help="What a refused native tool call says: plain (words naming the tool and the "
            "step) or protocol (the paper's rejection notices).",
        ),
    ] = "plain",
    unbound: Annotated[
        str,
        typer.Option(
            help="A native tool call of a tool no plan step is bound to: run (passed ungated) or "
            "refuse.",
        ),
    ] = "run",
    on_compile_error: Annotated[
        str,
        typer.Option(
            "--on-compile-error",
            help="A brief the compiler cannot read: refuse the conversation (one clear error) "
            "or forward it ungated; either way logged once and counted in /taskgate/metrics.",
            metavar="refuse|forward",
        ),
    ] = "refuse",
    helper_url: Annotated[
        str | None,
        typer.Option("--helper-url", help="Compiler and matcher calls go here.", metavar="URL"),
    ] = None,
    helper_model: Annotated[
        str | None, typer.Option("--helper-model", help="Default: the request's model.")
    ] = None,
    allowed_host: AllowedHosts = None,
    forwarded_allow_ips: ForwardedIps = None,
    wait_for_upstream: Annotated[
        float,
        typer.Option(
            "--wait-for-upstream",
            help="At start, try the upstream for up to this many seconds (a model server still "
            "loading) before giving up with one line.",
            metavar="SECONDS",
            min=0,
        ),
    ] = 0.0,
) -> None:
    """Gate an agent's tool calls by --plan FILE: an OpenAI-compatible endpoint in front of
    --upstream. Each conversation's native tool calls are judged by the plan (without --plan,
    only conversations whose system prompt is a brief are gated, the paper's protocol). Point the
    agent's base URL at http://HOST:PORT/v1. With TASKGATE_STATUS_TOKEN set, the operators'
    console is at http://HOST:PORT/taskgate/console and the status endpoints take the token as a
    bearer token; TASKGATE_HELPER_API_KEY is the helper endpoint's key."""
    try:
        import uvicorn

        from taskgate.proxy import ProxyConfig, create_app, open_store
        from taskgate.proxy.app import fewer_collections
        from taskgate.proxy.gating import rung
        from taskgate.proxy.session import MATCHERS
        from taskgate.serving.serve import bind
        from taskgate.serving.serve import config as serving_config
    except MissingExtraError:
        raise
    except ModuleNotFoundError as exc:  # an extra's package, never taskgate's own modules
        if (exc.name or "taskgate").split(".")[0] == "taskgate":
            raise
        raise MissingExtraError("proxy", "taskgate proxy", exc.name) from None
    compiling = plan_file == "compile"
    plan = load_plan(plan_file) if plan_file is not None and not compiling else None
    if (plan is not None or compiling) and rung_name not in (
        "raw",
        "enforcement",
        "enforcement-request",
    ):
        raise UsageError(
            "--plan gates tool calls as the agent makes them: --arm raw, enforcement or "
            f"enforcement-request, not {rung_name!r}"
        )
    if matcher is None:
        matcher = "conversation" if plan is not None or compiling else "llm"
    if on_compile_error not in ("refuse", "forward"):
        raise UsageError(f"--on-compile-error must be refuse or forward, not {on_compile_error!r}")
    if unbound not in ("run", "refuse"):
        raise UsageError(f"--unbound must be run or refuse, not {unbound!r}")
    if notices not in ("plain", "protocol"):
        raise UsageError(f"--notices must be plain or protocol, not {notices!r}")
    if compiler not in ("llm", "parser"):
        raise UsageError(f"--compiler must be llm or parser, not {compiler!r}")
    if matcher not in MATCHERS:
        raise UsageError(f"--matcher: {MATCHERS.unknown(matcher)}")
    if not upstream.startswith(("http://", "https://")):
        raise UsageError(f"--upstream must be an http(s) URL, not {upstream!r}")
    rung(rung_name)
    if matcher in ("embedding", "cascade"):  # load MiniLM now: a missing extra fails here, once
        from taskgate.matching import shared_matcher

        shared_matcher().embedder.embed(["warm up"])
    config = ProxyConfig(
        upstream=upstream,
        rung=rung_name,
        compiler=compiler,
        matcher=matcher,
        helper_url=helper_url,
        helper_model=helper_model,
        helper_key=os.environ.get("TASKGATE_HELPER_API_KEY", "EMPTY"),
        status_token=os.environ.get("TASKGATE_STATUS_TOKEN") or None,
        plan=plan,
        on_compile_error=on_compile_error,
        notices="protocol" if notices == "protocol" else "plain",
        unbound="refuse" if unbound == "refuse" else "run",
        compile_plans=compiling,
        allowed_hosts=tuple(allowed_host or ()),
    )
    store = open_store(db)
    if store.shared:  # a database server: reachable now, or the proxy does not start
        asyncio.run(_reachable(db or ""))
    asyncio.run(_answers(upstream, wait_for_upstream))
    sock = bind(host, port)  # a port in use is one line, before anything is said to serve
    gates = (
        "every conversation with a plan compiled from its system prompt and tools"
        if compiling
        else f"every conversation with {plan_file}"
        if plan is not None
        else "conversations with a brief"
    )
    typer.echo(
        f"taskgate proxy: {rung_name} in front of {upstream}, at http://{host}:{port}/v1 "
        f"(gating {gates})"
    )
    if config.status_token:
        typer.echo(
            f"taskgate proxy: the operators' console is at http://{host}:{port}/taskgate/console"
        )
    with fewer_collections() as collector:  # this process only serves: see the function
        app = create_app(config, store, on_served=collector.served)
        uvicorn.Server(serving_config(app, forwarded_allow_ips)).run(sockets=[sock])


async def _answers(upstream: str, wait_s: float = 0.0) -> None:
    """The upstream accepts a connection (any HTTP answer will do: some servers have no
    ``/models``, or want a key), tried again for up to ``wait_s`` seconds (a model server still
    loading); else one line saying why not, naming ``--upstream``."""
    import time

    import httpx

    from taskgate.serving.failures import describe

    deadline = time.monotonic() + wait_s
    async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
        while True:
            try:
                await client.get(f"{upstream.rstrip('/')}/models")
                return
            except httpx.HTTPError as exc:
                why = describe(exc)
                if time.monotonic() >= deadline or "certificate" in why:
                    raise UsageError(
                        f"the upstream {upstream} cannot be reached: {why} (start it first, "
                        "give it time with --wait-for-upstream SECONDS, or correct --upstream)"
                    ) from None
            await asyncio.sleep(1.0)


async def _reachable(db: str) -> None:
    """Open the journal once and read it, on a store of its own (the served one connects in
    the server's event loop): an unreachable database is one line, before serving."""
    from taskgate.journal import open_store

    store = open_store(db)
    try:
        await store.keys()
    finally:
        await store.close()


#: a client's API key for proxy-status and mcp-status (a gate started without a status token)
CLIENT_KEY_VARIABLE = "TASKGATE_CLIENT_KEY"
#: what to pass when a caller may see nothing
_SEE = (
    "a gate started with a status token shows every {noun} to it (set TASKGATE_STATUS_TOKEN); "
    "one started without shows each client its own {noun}s (pass that client's --api-key)"
)


#: the status commands' shared options
ApiKey = Annotated[
    str | None,
    typer.Option("--api-key", envvar=CLIENT_KEY_VARIABLE, metavar="KEY",
                 help="A client's API key: see its own (a gate started with no status token)."),
]  # fmt: skip
AsJson = Annotated[bool, typer.Option("--json", help="The whole state as JSON.")]


def proxy_status(
    conversation: Annotated[
        str | None,
        typer.Argument(help="A conversation id (none: list them).", metavar="ID"),
    ] = None,
    url: Annotated[
        str, typer.Option("--url", help="The proxy.", metavar="URL")
    ] = "http://127.0.0.1:8100",
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Print a conversation's checklist (or list the conversations) from a running proxy."""
    status(url, "conversation", conversation, api_key, as_json)


def mcp_status(
    session: Annotated[
        str | None,
        typer.Argument(help="A session id (none: list them).", metavar="ID"),
    ] = None,
    url: Annotated[
        str, typer.Option("--url", help="The MCP gate's HTTP front.", metavar="URL")
    ] = "http://127.0.0.1:8200",
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Print a session's checklist (or list the sessions) from a running MCP gate."""
    status(url, "session", session, api_key, as_json)


def status(url: str, noun: str, key: str | None, api_key: str | None, as_json: bool) -> None:
    """The operators' status of a proxy's conversations or an MCP gate's sessions, or one line
    saying why the caller sees none and what to pass. An explicit ``--api-key`` is sent rather
    than the status token."""
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--url must be an http(s) URL, not {url!r}")
    token = api_key or os.environ.get("TASKGATE_STATUS_TOKEN")
    if token and not (token.isascii() and token.isprintable()):
        raise UsageError("--api-key (or TASKGATE_STATUS_TOKEN) must be printable ASCII")
    path = f"/taskgate/{noun}s"
    if key is not None:
        path += "/" + urllib.parse.quote(key, safe="")
    request = urllib.request.Request(url.rstrip("/") + path)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    gate = "proxy" if noun == "conversation" else "MCP gate"
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            data = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        try:
            error = json.loads(exc.read())["error"]
            message, ours = str(error["message"]), True
        except (ValueError, KeyError, TypeError):
            message, ours = f"HTTP {exc.code}", False
        if exc.code == 404 and not ours:
            raise fail(f"{url}: HTTP 404: is it a taskgate {gate}?") from None
        hint = f" ({_SEE.format(noun=noun)})" if exc.code == 404 and key is not None else ""
        raise fail(f"{url}: {message}{hint}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise fail(f"no taskgate {gate} answers at {url}: {exc}", 1) from None
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    if not isinstance(data, dict):
        raise fail(f"{url}: the answer is not a {gate}'s status JSON")
    if key is None:
        rows = data.get(f"{noun}s")
        if not isinstance(rows, list):
            raise fail(f"{url}: the answer is not a {gate}'s list of {noun}s")
        if not rows:
            typer.echo(f"no {noun}s to show: {_SEE.format(noun=noun)}", err=True)
        for row in rows:
            if isinstance(row, dict) and "id" in row:
                turns = f"  {row['turns']} turns" if "turns" in row else ""
                typer.echo(f"{row['id']}{turns}")
    else:
        _print_state(data, noun)


def _print_state(data: dict[str, object], noun: str = "conversation") -> None:
    rung = f"{data['rung']}, " if data.get("rung") else ""
    typer.echo(f"{noun} {data.get('id')} ({rung}{data.get('turns')} turns)")
    if "checklist" not in data:
        typer.echo("no plan yet")
        return
    checklist = str(data["checklist"])
    typer.echo(checklist)
    req = data.get("request")
    if isinstance(req, dict):
        order = req.get("work_order") if checklist.startswith("[") else None  # the paper's only
        step = req.get("step") or "no step"
        typer.echo(f"current request: {f'{order} -> ' if order else ''}{step}")
    refusals = data.get("refusals")
    if isinstance(refusals, list) and refusals:
        typer.echo(f"refused attempts: {len(refusals)}")
