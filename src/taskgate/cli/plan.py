"""``taskgate plan check FILE``, ``taskgate plan compile`` and ``taskgate plan schema``: the
engineer's plan files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from taskgate.cli.errors import USAGE, guarded, one_line, writable_file
from taskgate.core.plan import Plan
from taskgate.errors import PlanError
from taskgate.plans import load_plan, plan_schema

app = typer.Typer(
    help="Plan files: check one, compile one with a model, or print their JSON Schema.",
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
    except PlanError as exc:
        _defects(exc)
    typer.echo(f"{file}: {len(plan.steps)} step(s), each bound to a tool")
    for sid, spec in plan.steps.items():
        needs = f" after {', '.join(spec.deps)}" if spec.deps else ""
        text = f" ({one_line(spec.text, 120)})" if spec.text else ""
        typer.echo(f"  {one_line(f'{sid}: {spec.tool}{text}{needs}')}")


def _defects(exc: PlanError) -> NoReturn:
    """The error as one line, then one line per defect; exit 2."""
    head, *defects = str(exc).splitlines()
    typer.echo(f"taskgate: error: {one_line(head)}", err=True)
    for line in defects:
        typer.echo(f"taskgate: error:   {one_line(line)}", err=True)
    raise typer.Exit(USAGE) from None


@app.command("schema")
@guarded
def schema() -> None:
    """Print the JSON Schema of plan files (editors validate a plan file against it)."""
    typer.echo(json.dumps(plan_schema(), indent=2))


@app.command("compile")
@guarded
def compile_plan(
    instructions: Annotated[
        Path,
        typer.Option(
            help="A text file: the agent's system prompt (its instructions).", show_default=False
        ),
    ],
    tools: Annotated[
        Path,
        typer.Option(
            help="A JSON file: the agent's tools, as the OpenAI API takes them (a list of "
            '{"type": "function", "function": {"name", "description", ...}}) or as MCP lists '
            "them.",
            show_default=False,
        ),
    ],
    base_url: Annotated[
        str,
        typer.Option(
            help="The OpenAI-compatible endpoint of the model that compiles.",
            show_default=False,
            metavar="URL",
        ),
    ],
    model: Annotated[str, typer.Option(help="The model's name.", show_default=False)],
    out: Annotated[
        Path | None,
        typer.Option(help="Write the plan here (JSON); default: print it.", show_default=False),
    ] = None,
    attempts: Annotated[int, typer.Option(help="Tries, the re-asks included.", min=1)] = 2,
) -> None:
    """Compile a plan from an agent's instructions and tools with a model, check it, and write it
    as a plan file (review it before you gate with it; exit 2 and one line per defect when the
    model's last reply is not a plan)."""
    import asyncio
    import os

    from taskgate.llm.client import ChatClient
    from taskgate.llm.endpoint import Endpoint
    from taskgate.llm.plan_compiler import PlanCompiler

    writable_file(out, "--out")
    task = _text(instructions)
    try:
        listed = json.loads(_text(tools))
    except json.JSONDecodeError as exc:
        raise PlanError(f"{tools}: not JSON ({exc.msg} at line {exc.lineno})") from None
    listed = listed.get("tools", listed) if isinstance(listed, dict) else listed
    if not isinstance(listed, list):
        raise PlanError(f"{tools}: a list of tools, not a {type(listed).__name__}")

    async def go() -> Plan:
        key = os.environ.get("OPENAI_API_KEY", "EMPTY")
        client = ChatClient(Endpoint(base_url=base_url, model=model, api_key=key))
        try:
            return await PlanCompiler(client, attempts).compile(task, listed)
        finally:
            await client.close()

    try:
        plan = asyncio.run(go())
    except PlanError as exc:
        _defects(exc)
    data = plan.model_dump(mode="json", exclude_defaults=True)
    text = json.dumps({"binding": "tool", **data}, indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    typer.echo(f"{out}: {len(plan.steps)} step(s); check it with `taskgate plan check {out}`")


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(
            f"{path}: cannot read it: {getattr(exc, 'strerror', None) or exc}"
        ) from None
