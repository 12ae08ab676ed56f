"""How the command line reports errors: one line on stderr, never a traceback.

Every subcommand is registered through :func:`guarded`. A taskgate error, an OS error or a file
that is not UTF-8 text ends the command with one line naming what was wrong, and exit status 2 when
the input was wrong (a flag, a file, a directory) or 1 when the work itself failed (a model
endpoint that stayed down). Outputs are checked before any work starts (:func:`writable_file`,
:func:`writable_dir`), so a bad ``--json`` or ``--out`` does not cost a whole run.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from taskgate.errors import ModelError, TaskgateError

if TYPE_CHECKING:
    from taskgate.lab.rundir import OnSkip, SkippedLine

F = TypeVar("F", bound=Callable[..., Any])
USAGE, FAILURE = 2, 1


def one_line(text: str, limit: int = 400) -> str:
    """Whitespace collapsed, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def fail(message: str, code: int = USAGE) -> typer.Exit:
    """Print ``taskgate: error: ...`` on stderr; the caller raises the returned Exit."""
    typer.echo(f"taskgate: error: {one_line(message)}", err=True)
    return typer.Exit(code)


def describe_os_error(exc: OSError) -> str:
    """``cannot open no/such/dir/x.json: No such file or directory``."""
    where = exc.filename if exc.filename is not None else "a file"
    return f"cannot open {where}: {exc.strerror or exc}"


def guarded(fn: F) -> F:
    """``fn``, with every error it can meet reported as one line."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ModelError as exc:
            raise fail(str(exc), FAILURE) from None
        except TaskgateError as exc:
            raise fail(str(exc)) from None
        except UnicodeDecodeError as exc:
            raise fail(f"a file is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except BrokenPipeError:  # the reader went away (``taskgate report | head``): not an error
            sys.stderr.close()  # nothing more can be said; silence the interpreter's own complaint
            raise typer.Exit(0) from None
        except OSError as exc:
            raise fail(describe_os_error(exc)) from None

    return run  # type: ignore[return-value]


def warner() -> OnSkip:
    """Report each line a reader skipped once, as one ``warning: FILE:LINE: ...`` on stderr."""
    seen: set[SkippedLine] = set()

    def warn(skipped: SkippedLine) -> None:
        if skipped not in seen:
            seen.add(skipped)
            typer.echo(f"warning: {skipped}", err=True)

    return warn


def writable_file(path: Path | None, flag: str) -> None:
    """A file we will write at the end: not a folder; its folder is made now if missing (as
    ``--out`` makes its directory), so a run never fails at its end for want of it."""
    if path is None:
        return
    if path.is_dir():
        raise typer.BadParameter(f"{path} is a directory, not a file", param_hint=flag)
    parent = path.parent if str(path.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise typer.BadParameter(f"{parent} is a file, not a folder", param_hint=flag) from None
    except OSError as exc:
        raise typer.BadParameter(
            f"the folder {parent} cannot be made: {exc}", param_hint=flag
        ) from None


def writable_dir(path: Path | None, flag: str) -> None:
    """A run directory: created if missing, but never a file."""
    if path is not None and path.exists() and not path.is_dir():
        raise typer.BadParameter(f"{path} exists and is not a directory", param_hint=flag)
