"""The ``taskgate`` command: one small module per subcommand.

Each module parses its options (the shared option sets live in :mod:`.options`) and calls library
or lab functions. Every command is registered through :func:`.errors.guarded`, so bad input ends
in one line on stderr, never a traceback. ``--help`` lists the engineer's commands first and the
lab's after (:mod:`.names`); without the lab's extra, the lab's commands say which one to install.
"""

from __future__ import annotations

import signal
from typing import Any

import typer
from typer.core import TyperGroup

from taskgate._version import __version__
from taskgate.cli import demo, proxy
from taskgate.cli.errors import USAGE, guarded, one_line
from taskgate.cli.names import ENGINEER, LAB, LAB_COMMANDS
from taskgate.errors import MissingExtraError


class _Grouped(TyperGroup):
    """Lists the commands under their headings (typer's own panels need rich markup, which
    would also box the one-line usage errors)."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:  # typer's click types
        names = [n for n in self.list_commands(ctx) if not getattr(self.commands[n], "hidden", 0)]
        width = formatter.width - 6 - max(map(len, names), default=0)
        groups: dict[str, list[tuple[str, str]]] = {}
        for name in names:
            command = self.commands[name]
            title = getattr(command, "rich_help_panel", None) or "Commands"
            groups.setdefault(title, []).append((name, command.get_short_help_str(width)))
        for title, rows in groups.items():
            with formatter.section(title):
                formatter.write_dl(rows)


app = typer.Typer(
    name="taskgate",
    cls=_Grouped,
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


app.command("proxy", rich_help_panel=ENGINEER)(guarded(proxy.proxy))
app.command("proxy-status", rich_help_panel=ENGINEER)(guarded(proxy.proxy_status))
app.command("demo", rich_help_panel=ENGINEER)(guarded(demo.demo))


def _missing_lab(why: str) -> None:
    """Each lab command, when the lab's extra is not installed: one line saying which to install."""

    def make(name: str) -> Any:
        def absent(ctx: typer.Context) -> None:
            typer.echo(
                one_line(f"taskgate: error: `taskgate {name}` is the lab's: {why}"),
                err=True,
            )
            raise typer.Exit(USAGE)

        absent.__doc__ = "(needs taskgate[lab])"
        return absent

    settings = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
    for name in LAB_COMMANDS:
        app.command(name, rich_help_panel=LAB, context_settings=settings)(make(name))


try:
    from taskgate.cli import lab
except MissingExtraError as exc:
    _missing_lab(str(exc))
except ModuleNotFoundError as exc:  # an extra's package, never taskgate's own modules
    if (exc.name or "taskgate").split(".")[0] == "taskgate":
        raise
    _missing_lab(f"no module named {exc.name!r}: pip install 'taskgate[lab]'")
else:
    lab.register(app)


def main() -> None:
    # a SIGTERM (a job killed, a container stopped) unwinds like Ctrl-C: every context manager
    # runs, so the embedded model's llama.cpp servers stop with the command instead of outliving it
    signal.signal(signal.SIGTERM, _terminated)
    app()


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
