"""Every message of the command line and the servers names only options and variables that
exist: each ``--option`` written in a string of ``taskgate.cli``, ``taskgate.proxy``,
``taskgate.serving``, ``taskgate.journal`` or ``taskgate.integrations.mcp`` (errors, help texts,
docstrings) is an option of some ``taskgate`` command, and each ``TASKGATE_...`` variable is one
the code reads."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="needs the proxy extra")

import typer

import taskgate
from taskgate.cli import app

SRC = Path(taskgate.__file__).parent
SCANNED = ("cli", "proxy", "serving", "journal", "integrations/mcp")
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_VARIABLE = re.compile(r"\bTASKGATE_[A-Z0-9_]+\b")
#: options of other programs that messages quote (the fake MCP server's own flags, pip's, git's)
_NOT_OURS = {"--help", "--log", "--http", "--no-cache", "--upgrade", "--user"}


def _options() -> set[str]:
    real: set[str] = set()
    seen: set[int] = set()

    def walk(command: Any) -> None:
        if id(command) in seen or not hasattr(command, "params"):
            return
        seen.add(id(command))
        for param in command.params:
            real.update(o for o in [*param.opts, *getattr(param, "secondary_opts", [])]
                        if o.startswith("--"))  # fmt: skip
        if hasattr(command, "list_commands"):
            ctx = typer.Context(command)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name))

    walk(typer.main.get_command(app))
    return real


def _variables() -> set[str]:
    read: set[str] = set()
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        read |= set(
            re.findall(r"environ(?:\.get|\.setdefault)?\(?\[?\s*[\"'](TASKGATE_[A-Z0-9_]+)", text)
        )
        read |= set(re.findall(r"getenv\(\s*[\"'](TASKGATE_[A-Z0-9_]+)", text))
        read |= set(re.findall(r"(?:VARIABLE|_ENV)\s*=\s*[\"'](TASKGATE_[A-Z0-9_]+)", text))
    return read


def test_every_message_names_options_and_variables_that_exist() -> None:
    options, variables = _options(), _variables()
    assert "--plan" in options and "--settle" in options and "TASKGATE_STATUS_TOKEN" in variables
    wrong = []
    for sub in SCANNED:
        for path in sorted((SRC / sub).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                    continue
                named = {*_OPTION.findall(node.value)} - options - _NOT_OURS
                named |= {*_VARIABLE.findall(node.value)} - variables
                wrong += [f"{path.relative_to(SRC)}:{node.lineno}: {n}" for n in sorted(named)]
    assert wrong == []
