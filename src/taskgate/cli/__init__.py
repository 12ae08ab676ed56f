"""The ``taskgate`` command: one small module per subcommand.

Each module parses its options (the shared option sets live in :mod:`.options`) and calls library
functions: the public API (``taskgate``) where one exists, otherwise the run-directory, report and
integration modules that back it. Every command is registered through :func:`.errors.guarded`, so
bad input ends in one line on stderr, never a traceback.
"""

from __future__ import annotations

import signal

import typer

from taskgate._version import __version__
from taskgate.cli import (
    demo,
    generate,
    ladder,
    matchers,
    merge,
    onenode,
    pmbench,
    probe,
    proxy,
    run,
    score,
    tau2,
    tools,
    wording,
)
from taskgate.cli.errors import guarded

app = typer.Typer(
    name="taskgate",
    help="Task state for LLM agents: compile, track, and gate multi-step work.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # usage errors as one plain "Error: ..." line, not a box
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"taskgate {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Task state for LLM agents: compile, track, and gate multi-step work."""


app.command("demo")(guarded(demo.demo))
app.command("generate")(guarded(generate.generate))
app.command("run")(guarded(run.run))
app.command("score")(guarded(score.score))
app.command("report")(guarded(score.report))
app.command("ladder")(guarded(ladder.ladder))
app.command("tools")(guarded(tools.tools))
app.command("merge")(guarded(merge.merge))
app.command("matchers")(guarded(matchers.matchers))
app.command("probe")(guarded(probe.probe))
app.command("probe-tools")(guarded(probe.probe_tools))
app.command("probe-report")(guarded(probe.probe_report))
app.command("one-node")(guarded(onenode.one_node))
app.command("one-node-report")(guarded(onenode.one_node_report))
app.command("pmbench")(guarded(pmbench.pmbench))
app.command("pmbench-report")(guarded(pmbench.pmbench_report))
app.command("rewrites")(guarded(wording.rewrites))
app.command("raters")(guarded(wording.raters))
app.command("raters-report")(guarded(wording.raters_report))
app.command("proxy")(guarded(proxy.proxy))
app.command("proxy-status")(guarded(proxy.proxy_status))
app.add_typer(tau2.app, name="tau2")


def main() -> None:
    # a SIGTERM (a job killed, a container stopped) unwinds like Ctrl-C: every context manager
    # runs, so the embedded model's llama.cpp servers stop with the command instead of outliving it
    signal.signal(signal.SIGTERM, _terminated)
    app()


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
