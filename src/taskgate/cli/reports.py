"""``taskgate <experiment>-report``: an experiment's table from its directories alone, one
command per :data:`~taskgate.lab.experiments.EXPERIMENTS` entry.

No ``from __future__ import annotations`` here: the command's annotations name the experiment's
help text, which typer reads from the function it is given."""

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

import typer

from taskgate.cli.errors import warner
from taskgate.lab.experiments import Experiment


def report_command(experiment: Experiment) -> Callable[..., None]:
    """The report command of ``experiment``: its directories in, its table out."""
    metavar = "DIR"

    def report(
        dirs: Annotated[
            list[Path],
            typer.Argument(help=experiment.dir_help, metavar=metavar, show_default=False),
        ],
        fmt: Annotated[Literal["md", "latex"], typer.Option(help="Table format.")] = "md",
    ) -> None:
        if len(dirs) > 1 and not experiment.many:
            raise typer.BadParameter(
                f"{experiment.command} reads one directory", param_hint=metavar
            )
        table = experiment.make_table(dirs, warner())
        typer.echo(f"{table.title}\n")
        typer.echo(table.render(fmt))

    report.__doc__ = experiment.summary
    report.__name__ = experiment.command.replace("-", "_")
    return report
