"""``taskgate mcp``: the MCP gate in front of one or more MCP servers.

taskgate mcp --plan plan.toml -- python my_server.py          # stdio, for an MCP client
taskgate mcp --plan plan.toml --http --port 8200 --upstream-url http://127.0.0.1:9000/mcp
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from taskgate.cli.proxy import AllowedHosts, ForwardedIps
from taskgate.core.graph import TaskGraph
from taskgate.core.plan import Plan
from taskgate.core.verdict import Policy
from taskgate.errors import MissingExtraError, TaskgateError, UsageError
from taskgate.plans import load_plan


def mcp(
    ctx: typer.Context,
    plan_file: Annotated[
        str,
        typer.Option(
            "--plan",
            help="The plan file (TOML, JSON or YAML; see `taskgate plan check`), or `compile` to "
            "compile it at start from --task and the upstreams' tools with the helper model.",
            metavar="FILE|compile",
        ),
    ],
    upstream_url: Annotated[
        list[str] | None,
        typer.Option(
            help="An upstream MCP server over streamable HTTP (repeatable).",
            metavar="URL",
            show_default=False,
        ),
    ] = None,
    upstream: Annotated[
        list[str] | None,
        typer.Option(
            help="An upstream MCP server's command, run over stdio (repeatable; quoted "
            "as one string). The command after `--` is one too.",
            metavar="COMMAND",
            show_default=False,
        ),
    ] = None,
    requests: Annotated[
        str,
        typer.Option(
            help="How a request opens: tool (the client model calls taskgate_request "
            "with the user's message), application (the application that has the user's "
            "messages posts each to /taskgate/sessions/{id}/requests) or plan (one standing "
            "request: any step the state allows runs, in the plan's order)."
        ),
    ] = "tool",
    arm: Annotated[
        str, typer.Option(help="enforcement (state-bound) or enforcement-request (request-bound).")
    ] = "enforcement",
    notices: Annotated[
        str, typer.Option(help="plain or protocol (the paper's notices).")
    ] = "plain",
    unbound: Annotated[
        str, typer.Option(help="Tools no step is bound to: run (ungated) or refuse.")
    ] = "run",
    db: Annotated[
        str | None,
        typer.Option(
            help="The journal: a SQLite file or a postgresql:// URL (default: memory, "
            "nothing survives a restart).",
            show_default=False,
        ),
    ] = None,
    session: Annotated[
        str, typer.Option(help="The stdio client's session name (a restart continues it).")
    ] = "stdio",
    http: Annotated[bool, typer.Option(help="Serve streamable HTTP at /mcp instead of stdio.")] = (
        False
    ),
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8200,
    status_port: Annotated[
        int | None,
        typer.Option(
            help="With stdio: also serve the operators' endpoints on this port.",
            min=1,
            max=65535,
            show_default=False,
        ),
    ] = None,
    sdk_stdio: Annotated[
        bool,
        typer.Option(
            "--sdk-stdio",
            help="With stdio: serve the client with the MCP SDK's transport, which also speaks "
            "the 2026 protocol (a few ms more per call than the default).",
        ),
    ] = False,
    task: Annotated[
        Path | None,
        typer.Option(
            help="With --plan compile: a text file describing the work.", show_default=False
        ),
    ] = None,
    helper_url: Annotated[
        str | None,
        typer.Option(
            help="With --plan compile: the model that compiles (OpenAI-compatible).",
            metavar="URL",
            show_default=False,
        ),
    ] = None,
    helper_model: Annotated[
        str | None, typer.Option(help="With --plan compile: its model name.", show_default=False)
    ] = None,
    settle: Annotated[
        str | None,
        typer.Option(
            help="Instead of serving: settle the call of this step (or its tool) held in doubt "
            "in --session's journal (--db), saying with --ran or --not-run whether it ran; "
            "then exit. Give the options the gate was started with (--plan, --requests, --arm), "
            "and stop that gate first: this process cannot see a call it is still forwarding "
            "(a running gate settles through its --status-port).",
            metavar="STEP",
            show_default=False,
        ),
    ] = None,
    ran: Annotated[
        bool | None,
        typer.Option(
            "--ran/--not-run", help="With --settle: whether the call ran.", show_default=False
        ),
    ] = None,
    allowed_host: AllowedHosts = None,
    forwarded_allow_ips: ForwardedIps = None,
) -> None:
    """Serve an MCP gate: the upstream servers' tools, each call judged on the session's task
    state before it reaches them. TASKGATE_STATUS_TOKEN enables the operators' changes;
    TASKGATE_SESSION_SECRET signs the MCP session ids given over HTTP (they outlive a restart)."""
    try:
        import uvicorn

        from taskgate.integrations.mcp import (
            McpGate,
            McpGateConfig,
            build_server,
            http_app,
            run_stdio,
            serve_stdio,
        )
        from taskgate.journal import open_store
        from taskgate.serving.hosts import checked
        from taskgate.serving.serve import bind
        from taskgate.serving.serve import config as serving_config
    except MissingExtraError:
        raise
    except ModuleNotFoundError as exc:
        raise MissingExtraError("mcp", "taskgate mcp", exc.name) from None
    if settle is not None:  # no upstream is started: the journal alone is settled
        _choice("--requests", requests, ("tool", "application", "plan"))
        _choice("--arm", arm, ("enforcement", "enforcement-request"))
        policy = Policy.STATE_BOUND if arm == "enforcement" else Policy.REQUEST_BOUND
        _settle(plan_file, db, session, settle, ran, requests, policy)
        return
    targets = _upstreams(upstream or [], upstream_url or [], list(ctx.args))
    _choice("--requests", requests, ("tool", "application", "plan"))
    _choice("--arm", arm, ("enforcement", "enforcement-request"))
    _choice("--notices", notices, ("plain", "protocol"))
    _choice("--unbound", unbound, ("run", "refuse"))
    if plan_file == "compile":
        plan = asyncio.run(_compiled(targets, task, helper_url, helper_model))
    else:
        plan = load_plan(plan_file)
    config = McpGateConfig(
        plan,
        requests=requests,  # type: ignore[arg-type]
        policy=Policy.STATE_BOUND if arm == "enforcement" else Policy.REQUEST_BOUND,
        notices=notices,  # type: ignore[arg-type]
        unbound=unbound,  # type: ignore[arg-type]
        status_token=os.environ.get("TASKGATE_STATUS_TOKEN") or None,
    )
    hosts = checked(allowed_host or ())
    gate = McpGate(config, open_store(db))
    if http:  # the upstreams checked first: a failed start is one line, not a server's log
        asyncio.run(_unwrapped(_check(plan, targets)))
        sock = bind(host, port)
        print(f"taskgate mcp: at http://{host}:{port}/mcp", file=sys.stderr)
        if config.status_token:
            print(f"taskgate mcp: the operators' console is at http://{host}:{port}/taskgate/console",
                  file=sys.stderr)  # fmt: skip
        secret = os.environ.get("TASKGATE_SESSION_SECRET", "").encode() or None
        app = http_app(gate, targets, host=host, secret=secret, allowed_hosts=hosts)
        uvicorn.Server(serving_config(app, forwarded_allow_ips)).run(sockets=[sock])
        return
    status = None if status_port is None else bind("127.0.0.1", status_port, "--status-port")
    if sdk_stdio:
        serving = serve_stdio(build_server(gate, targets, session=session))
    else:
        serving = run_stdio(gate, targets, session=session)
    asyncio.run(_unwrapped(_stdio(gate, serving, status, hosts, forwarded_allow_ips)))


def _settle(
    plan_file: str,
    db: str | None,
    session: str,
    what: str,
    ran: bool | None,
    requests: str,
    policy: Policy,
) -> None:
    """``taskgate mcp --settle STEP --ran|--not-run --db FILE --plan FILE``: settle the stdio
    session's call in doubt on its journal, as the operators' endpoint does."""
    from taskgate.gate.session import step_named
    from taskgate.integrations.mcp import McpGate, McpGateConfig
    from taskgate.journal import open_store

    if ran is None:
        raise UsageError("--settle needs --ran or --not-run: say whether the call ran")
    if not db:
        raise UsageError("--settle needs the gate's journal: --db FILE (or a postgresql:// URL)")
    if "://" not in db and not Path(db).is_file():
        raise UsageError(f"--db {db}: no such journal (settle reads the gate's own --db)")
    if plan_file == "compile":
        raise UsageError("--settle needs the plan file the gate was started with: --plan FILE")
    plan = load_plan(plan_file)
    step = step_named(TaskGraph(plan), what)
    key = f"{session}~local"

    async def go() -> None:
        config = McpGateConfig(plan, requests=requests, policy=policy)  # type: ignore[arg-type]
        gate = McpGate(config, open_store(db))
        try:
            if key not in await gate.store.keys():
                raise UsageError(f"the journal {db} has no session {session!r}")
            await gate.settle(key, step, ran)
        finally:
            await gate.store.close()

    asyncio.run(go())
    print(f"taskgate mcp: the call of {step} in session {session} is settled: "
          f"{'it ran (its receipt is booked)' if ran else 'it did not run (the step is free)'}")  # fmt: skip


async def _unwrapped(coro: Any) -> Any:
    """``coro``, an error of taskgate's raised from inside a task group raised as itself."""
    try:
        return await coro
    except BaseExceptionGroup as group:
        found = _first(group, TaskgateError) or _first(group, OSError)
        if found is None:
            raise
        if isinstance(found, OSError):  # an upstream command that cannot start, a port in use
            raise UsageError(f"an upstream MCP server could not be reached: {found}") from None
        raise found from None


def _first(group: BaseExceptionGroup[Any], kind: type[BaseException]) -> BaseException | None:
    for exc in group.exceptions:
        if isinstance(exc, kind):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            inner = _first(exc, kind)
            if inner is not None:
                return inner
    return None


async def _check(plan: Plan, targets: list[Any]) -> None:
    """Every upstream answers, and every step's tool is one of theirs."""
    from taskgate.gate.tool_gate import check_tools

    check_tools(plan, [t.name for t in await _tools(targets)])


async def _tools(targets: list[Any]) -> list[Any]:
    from taskgate.integrations.mcp.stdio import StdioUpstream
    from taskgate.integrations.mcp.upstream import HttpUpstream

    tools: list[Any] = []
    for target in targets:
        try:
            async with (
                HttpUpstream(target) if isinstance(target, str) else StdioUpstream(target) as client
            ):
                tools += (await client.list_tools()).tools
        except Exception as exc:  # the SDK's own errors: one line naming the server
            if isinstance(exc, TaskgateError):
                raise
            from taskgate.serving.failures import describe

            raise UsageError(
                f"the upstream MCP server {_name(target)} did not answer: {describe(exc)}"
            ) from None
    return tools


def _name(target: Any) -> str:
    return target if isinstance(target, str) else shlex.join([target.command, *target.args])


async def _stdio(
    gate: Any, serving: Any, sock: Any, hosts: tuple[str, ...], forwarded: str | None
) -> None:
    """Serve the stdio client; with a bound status socket, the operators' endpoints beside."""
    if sock is None:
        await serving
        return
    import uvicorn

    from taskgate.integrations.mcp.operator import status_app
    from taskgate.serving.serve import config as serving_config

    status = uvicorn.Server(serving_config(status_app(gate, hosts), forwarded))
    if gate.config.status_token:
        print(f"taskgate mcp: the operators' console is at http://127.0.0.1:"
              f"{sock.getsockname()[1]}/taskgate/console", file=sys.stderr)  # fmt: skip
    status_task = asyncio.create_task(status.serve(sockets=[sock]))
    try:
        await serving
    finally:
        status.should_exit = True
        await status_task


def _choice(flag: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise UsageError(f"{flag} must be {' or '.join(allowed)}, not {value!r}")


def _upstreams(commands: list[str], urls: list[str], rest: list[str]) -> list[Any]:
    """The upstream servers: stdio commands (``--upstream``, and what follows ``--``) and URLs."""
    from mcp import StdioServerParameters

    out: list[Any] = []
    for line in [*commands, *([shlex.join(rest)] if rest else [])]:
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"--upstream {line!r}: {exc}") from None
        if not argv:
            raise UsageError("an upstream command is empty")
        out.append(StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ)))
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--upstream-url must be an http(s) URL, not {url!r}")
        out.append(url)
    if not out:
        raise UsageError("give the upstream MCP server: `taskgate mcp --plan FILE -- COMMAND ...` "
                         "or --upstream-url URL")  # fmt: skip
    return out


async def _compiled(
    targets: list[Any], task: Path | None, url: str | None, model: str | None
) -> Plan:
    """The plan compiled at start from ``task`` and the upstreams' tools."""
    if task is None or url is None or model is None:
        raise UsageError("--plan compile needs --task FILE, --helper-url URL and --helper-model")
    from taskgate.llm.client import ChatClient
    from taskgate.llm.endpoint import Endpoint
    from taskgate.llm.plan_compiler import PlanCompiler

    tools = await _tools(targets)
    key = os.environ.get("TASKGATE_HELPER_API_KEY", "EMPTY")
    helper = ChatClient(Endpoint(base_url=url, model=model, api_key=key))
    try:
        return await PlanCompiler(helper).compile(task.read_text(encoding="utf-8"), tools)
    finally:
        await helper.close()
