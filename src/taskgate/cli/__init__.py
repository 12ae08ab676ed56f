"""The ``taskgate`` command: one small module per subcommand.

Each module parses its options (the shared option sets live in :mod:`.options`) and calls library
or lab functions. Every command is registered through :func:`.errors.guarded`, so bad input ends
in one line on stderr, never a traceback. ``--help`` lists the engineer's commands first and the
lab's after (:mod:`.names`); without the lab's extra, the lab's commands say which one to install.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import re
import signal
from typing import Any

import typer
from typer.core import TyperGroup

from taskgate._version import __version__
from taskgate.cli import demo, fake, mcp, plan, proxy
from taskgate.cli.errors import USAGE, guarded, one_line
from taskgate.cli.names import ENGINEER, LAB, LAB_COMMANDS
from taskgate.errors import MissingExtraError


class _Grouped(TyperGroup):
    """The root command: the engineer's commands, then the lab's, each list under its heading
    (typer's own panels need rich markup, which would also box the one-line usage errors). The
    lab's commands are loaded only when one runs or the list is printed (:mod:`.lab`)."""

    def list_commands(self, ctx: Any) -> list[str]:  # typer's click types
        return [*super().list_commands(ctx), *LAB_COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in LAB_COMMANDS:
            return _lab_command(cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """An unknown command is one usage line naming the nearest one."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            near = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            ctx.fail(f"no such command {name!r}{hint} (taskgate --help lists them)")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        commands = [(n, self.get_command(ctx, n)) for n in self.list_commands(ctx)]
        commands = [(n, c) for n, c in commands if c is not None and not c.hidden]
        groups: dict[str, list[tuple[str, str]]] = {}
        for name, command in commands:
            title = getattr(command, "rich_help_panel", None) or "Commands"
            groups.setdefault(title, []).append((name, summary(command)))
        for title, rows in groups.items():
            with formatter.section(title):
                formatter.write_dl(rows)


def summary(command: Any) -> str:
    """A command's summary in the list: the first sentence of its help, whole (click cuts it at
    45 characters or the terminal's width; the list wraps it instead)."""
    if command.short_help:
        return str(command.short_help)
    first = inspect.cleandoc(command.help or "").split("\n\n")[0]
    return re.split(r"(?<=[.])\s", " ".join(first.split()), maxsplit=1)[0]


@functools.cache
def _lab_group() -> Any:
    """The lab's commands as one click group, or the one line that says why there are none."""
    try:
        from taskgate.cli import lab
    except MissingExtraError as exc:
        return _why(exc.extra, exc.missing)
    except ModuleNotFoundError as exc:  # an extra's package, never taskgate's own modules
        if (exc.name or "taskgate").split(".")[0] == "taskgate":
            raise
        return _why("lab", exc.name)
    return typer.main.get_command(lab.app)


def _why(extra: str, missing: str | None) -> str:
    return f"the {extra!r} extra is not installed (no module named {missing!r})"


def _lab_command(name: str) -> Any:
    group = _lab_group()
    if not isinstance(group, str):
        command = group.get_command(None, name)
        command.rich_help_panel = LAB
        return command
    extra = "tau2" if name == "tau2" else "lab"  # tau2's extra brings the lab with it

    def absent() -> None:
        typer.echo(
            one_line(
                f"taskgate: error: `taskgate {name}` is part of the lab: {group}: "
                f"pip install 'taskgate[{extra}]'"
            ),
            err=True,
        )
        raise typer.Exit(USAGE)

    command = typer.main.get_command_from_info(
        typer.models.CommandInfo(
            name=name,
            callback=absent,
            help=f"(needs taskgate[{extra}])",
            context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                              "help_option_names": []},
        ),
        pretty_exceptions_short=True,
        rich_markup_mode=None,
    )  # fmt: skip
    setattr(command, "rich_help_panel", LAB)  # noqa: B010  (a click Command has no such field)
    return command


app = typer.Typer(
    name="taskgate",
    cls=_Grouped,
    help="Task state for LLM agents: compile, track, and gate multi-step work.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # usage errors as one plain "Error: ..." line, not a box
    context_settings={"max_content_width": 120},  # a wide terminal gets wide summaries
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
app.command("mcp-status", rich_help_panel=ENGINEER)(guarded(proxy.mcp_status))
app.command("demo", rich_help_panel=ENGINEER)(guarded(demo.demo))
app.command(
    "mcp",
    rich_help_panel=ENGINEER,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)(guarded(mcp.mcp))
app.add_typer(plan.app, name="plan", rich_help_panel=ENGINEER)
app.command("fake-server", rich_help_panel=ENGINEER)(guarded(fake.fake_server))


def main() -> None:
    # a SIGTERM (a job killed, a container stopped) unwinds like Ctrl-C: every context manager
    # runs, so the embedded model's llama.cpp servers stop with the command instead of outliving it
    signal.signal(signal.SIGTERM, _terminated)
    app()


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
