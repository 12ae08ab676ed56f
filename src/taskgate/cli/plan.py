"""``taskgate plan check FILE`` and ``taskgate plan schema``: the engineer's plan files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from taskgate.cli.errors import USAGE, guarded, one_line
from taskgate.errors import PlanError
from taskgate.plans import load_plan, plan_schema

app = typer.Typer(
    help="Plan files: check one, or print their JSON Schema.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.command("check")
@guarded
def check(
    file: Annotated[
        Path, typer.Argument(help="A plan file: .toml, .json, .yaml or .yml.", show_default=False)
    ],
) -> None:
    """Read and check a plan file; print its steps in order (exit 2 and one line per defect when
    it is not a plan the gate can run)."""
    try:
        plan = load_plan(file)
    except PlanError as exc:  # one line, then one line per defect
        head, *defects = str(exc).splitlines()
        typer.echo(f"taskgate: error: {one_line(head)}", err=True)
        for line in defects:
            typer.echo(f"taskgate: error:   {one_line(line)}", err=True)
        raise typer.Exit(USAGE) from None
    typer.echo(f"{file}: {len(plan.steps)} step(s), each bound to a tool")
    for sid, spec in plan.steps.items():
        needs = f" after {', '.join(spec.deps)}" if spec.deps else ""
        text = f" ({one_line(spec.text, 120)})" if spec.text else ""
        typer.echo(f"  {one_line(f'{sid}: {spec.tool}{text}{needs}')}")


@app.command("schema")
@guarded
def schema() -> None:
    """Print the JSON Schema of plan files (editors validate a plan file against it)."""
    typer.echo(json.dumps(plan_schema(), indent=2))
