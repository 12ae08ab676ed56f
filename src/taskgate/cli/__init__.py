"""The ``taskgate`` command: one small module per subcommand, all calling the public API."""

from __future__ import annotations

import typer

from .._version import __version__
from . import demo, generate, ladder, run, score, tau2

app = typer.Typer(
    name="taskgate",
    help="Task state for LLM agents: compile, track, and gate multi-step work.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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


app.command("demo")(demo.demo)
app.command("generate")(generate.generate)
app.command("run")(run.run)
app.command("score")(score.score)
app.command("report")(score.report)
app.command("ladder")(ladder.ladder)
app.add_typer(tau2.app, name="tau2")


def main() -> None:
    app()
