"""The lab's subcommands (the paper's testbed), listed under the "The lab" heading.

Importing this module imports the lab. :mod:`taskgate.cli` imports it only when a lab command
runs or ``--help`` lists the commands, so ``taskgate proxy`` and ``taskgate demo`` never load the
lab; without the lab's extra each lab command says which extra to install, in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from taskgate.cli import (
    generate,
    ladder,
    matchers,
    merge,
    onenode,
    pmbench,
    probe,
    run,
    score,
    tau2,
    tools,
    wording,
)
from taskgate.cli.errors import guarded
from taskgate.cli.names import LAB, LAB_COMMANDS
from taskgate.cli.reports import report_command
from taskgate.lab.experiments import EXPERIMENTS

#: the lab's subcommands, as one typer app whose commands the root command hands on
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)


def _register() -> None:
    """Add the lab's subcommands to :data:`app`, in :data:`LAB_COMMANDS`' order."""
    commands: dict[str, Callable[..., Any]] = {
        "ladder": ladder.ladder,
        "tools": tools.tools,
        "generate": generate.generate,
        "run": run.run,
        "score": score.score,
        "report": score.report,
        "merge": merge.merge,
        "matchers": matchers.matchers,
        "probe": probe.probe,
        "probe-tools": probe.probe_tools,
        "one-node": onenode.one_node,
        "pmbench": pmbench.pmbench,
        "rewrites": wording.rewrites,
        "raters": wording.raters,
    }
    for experiment in EXPERIMENTS.values():
        commands[experiment.command] = report_command(experiment)
    for name in LAB_COMMANDS:
        if name == "tau2":
            app.add_typer(tau2.app, name="tau2", rich_help_panel=LAB)
        else:
            app.command(name, rich_help_panel=LAB)(guarded(commands[name]))


_register()
