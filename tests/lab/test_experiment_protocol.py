"""An experiment is one place: its file (a header, appended records, a torn tail cut, other
settings refused) and its report command, made from its registration."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict
from typer.testing import CliRunner

from taskgate import UsageError
from taskgate.cli import app
from taskgate.lab.experiments import EXPERIMENTS, Experiment, ExperimentFile
from taskgate.lab.rundir import SkippedLine


class Head(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["head"] = "head"
    k: int


class Rec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    value: int


FILE = ExperimentFile("study.jsonl", Head, "a study")


def test_records_append_after_one_header_and_read_back_last_wins(tmp_path: Path) -> None:
    with FILE.appending(tmp_path, Head(k=2), fresh=True) as sink:
        sink(Rec(key="a", value=1))
    with FILE.appending(tmp_path, Head(k=2), fresh=False) as sink:
        sink(Rec(key="a", value=2))
        sink(Rec(key="b", value=3))
    head, recs = FILE.read(tmp_path, Rec, lambda r: r.key)
    assert head == Head(k=2) and [(r.key, r.value) for r in recs] == [("a", 2), ("b", 3)]
    assert FILE.path(tmp_path).read_text().count('"kind":"head"') == 1


def test_a_torn_last_line_is_cut_before_appending(tmp_path: Path) -> None:
    with FILE.appending(tmp_path, Head(k=2), fresh=True) as sink:
        sink(Rec(key="a", value=1))
    with FILE.path(tmp_path).open("ab") as f:
        f.write(b'{"key": "b", "val')  # an interrupted write
    with FILE.appending(tmp_path, Head(k=2), fresh=False) as sink:
        sink(Rec(key="c", value=3))
    skipped: list[SkippedLine] = []
    _, recs = FILE.read(tmp_path, Rec, lambda r: r.key, skipped.append)
    assert [r.key for r in recs] == ["a", "c"] and skipped == []


def test_a_directory_of_other_settings_is_refused_naming_what_differs(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"holds a study of other settings \(k 2 not 3\)"):
        FILE.check(tmp_path, Head(k=2), Head(k=3))
    FILE.check(tmp_path, None, Head(k=3))  # nothing there yet
    FILE.check(tmp_path, Head(k=3), Head(k=3))


@pytest.mark.parametrize("experiment", list(EXPERIMENTS.values()), ids=list(EXPERIMENTS))
def test_every_experiments_report_command_comes_from_its_registration(
    experiment: Experiment, tmp_path: Path
) -> None:
    result = CliRunner().invoke(app, [experiment.command, str(tmp_path / "nothing-here")])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "taskgate: error:" in result.output
