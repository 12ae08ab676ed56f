"""What every experiment outside the ladder shares: its file in the run directory, and how its
table is reported.

* An :class:`ExperimentFile` is one JSON Lines file: a header line with the settings a resumed run
  must match, then one record per line, appended as each is made. Opening it for a run checks the
  header (a directory of other settings is one error naming what differs), cuts a torn last line
  (an interrupted write), and writes the header when the file is new. Reading it skips and reports
  an unreadable line, and keeps a record written twice once (the last).
* An :class:`Experiment` names an experiment, its report command and its table; ``taskgate
  <name>-report`` is made from it (:mod:`taskgate.cli.lab`), so an experiment's report command is
  one registration in :data:`taskgate.lab.experiments.EXPERIMENTS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from taskgate.errors import UsageError
from taskgate.lab.rundir import OnSkip, drop_torn_tail, read_headed
from taskgate.lab.scoring.table import Table


class Header(BaseModel):
    """An experiment's settings, the first line of its file: a resumed run must match them."""

    model_config = ConfigDict(frozen=True, extra="forbid")


H = TypeVar("H", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)

#: a record writer: each call appends one line and flushes it
Sink = Callable[[BaseModel], None]


@dataclass(frozen=True)
class ExperimentFile(Generic[H]):
    """One experiment's file in its run directory (``name``), headed by a ``header`` model;
    ``what`` names a run of it in messages ("a probe", "a one-node run")."""

    name: str
    header: type[H]
    what: str

    def path(self, out: Path) -> Path:
        return out / self.name

    def read(
        self,
        out: Path,
        record: type[R],
        key: Callable[[R], Hashable],
        on_skip: OnSkip | None = None,
    ) -> tuple[H | None, list[R]]:
        """The header and the records (one per key, the last); ``(None, [])`` without a file."""
        return read_headed(
            self.path(out), self.header, record, key, f"{self.what}'s header", on_skip
        )

    def check(self, out: Path, old: H | None, new: H) -> None:
        """Refuse, before any work, to go on with a run of other settings in ``out``."""
        if old is not None and old != new:
            a, b = old.model_dump(), new.model_dump()
            diff = ", ".join(f"{k} {a[k]!r} not {b[k]!r}" for k in a if a.get(k) != b.get(k))
            raise UsageError(
                f"{out} holds {self.what} of other settings ({diff}); rerun with those or use "
                "another --out directory"
            )

    @contextmanager
    def appending(self, out: Path, header: H, fresh: bool) -> Iterator[Sink]:
        """Append records to the file (its header first when ``fresh``), each flushed as
        written; a torn last line left by an interrupted run is cut first."""
        out.mkdir(parents=True, exist_ok=True)
        path = self.path(out)
        drop_torn_tail(path)  # an interrupted last line: cut, so no record is glued to it
        with path.open("ab") as f:
            if fresh:
                f.write(header.model_dump_json().encode() + b"\n")
                f.flush()

            def sink(record: BaseModel) -> None:
                f.write(record.model_dump_json().encode() + b"\n")
                f.flush()

            yield sink


@dataclass(frozen=True)
class Experiment:
    """An experiment as the command line reports it: ``taskgate <command>`` prints the table
    that ``table`` (``module:function``, imported when the command runs) makes from one or more
    run directories alone."""

    name: str
    command: str
    summary: str
    table: str  # "package.module:function", called as function(dirs, on_skip)
    many: bool = False  # several directories, one column each
    dir_help: str = "A run directory of the experiment."

    def make_table(self, dirs: Sequence[Path], on_skip: OnSkip | None) -> Table:
        module, function = self.table.split(":")
        build: Callable[..., Any] = getattr(importlib.import_module(module), function)
        table = build(list(dirs) if self.many else dirs[0], on_skip)
        assert isinstance(table, Table)
        return table
