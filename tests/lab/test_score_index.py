"""The score index gives exactly the log's scores, and is never used when it might not."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from taskgate.lab.reporting import build_report, load_runs
from taskgate.lab.rundir import LOG
from taskgate.lab.runner.config import LadderConfig
from taskgate.lab.runner.ladder import run_ladder
from taskgate.lab.scoring import index
from taskgate.lab.scoring.index import INDEX, read_index, score_run
from taskgate.lab.scoring.summary import Scored, score_entries

CONFIG = LadderConfig(arms=("raw", "checklist", "enforcement"), agent="scripted:always-book",
                      steps=(5,), episodes=4, corruption=(0.0, 0.03))  # fmt: skip


def _from_log(out: Path) -> list[Scored]:
    return [e.scored for e in score_entries(out, on_skip=lambda _: None)]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("index") / "run"
    asyncio.run(run_ladder(CONFIG, out))
    return out


@pytest.fixture
def copy(run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run, tmp_path / "run"))


def test_the_index_holds_the_logs_scores(run: Path) -> None:
    indexed = read_index(run)
    assert indexed is not None and len(indexed) == 2 * 3 * 4
    assert indexed == _from_log(run)
    assert score_run(run) == indexed


def _damage_a_byte(out: Path) -> None:
    data = bytearray((out / LOG).read_bytes())
    at = data.index(b"Noted.")
    data[at] = ord("n")
    (out / LOG).write_bytes(bytes(data))


def _drop_last_row(out: Path) -> None:  # the run died between the log's flush and the index
    rows = (out / INDEX).read_text().splitlines(keepends=True)
    (out / INDEX).write_text("".join(rows[:-1]))


def _append_a_foreign_end(out: Path) -> None:
    with (out / LOG).open("a") as f:
        f.write('{"episode":"x","arm":"raw","kind":"end","turns":0}\n')


def _append_a_foreign_line(out: Path) -> None:  # the log's reader warns about it: so must score
    with (out / LOG).open("a") as f:
        f.write('{"not": "a record"}\n')


def _cut_the_last_newline_and_row(out: Path) -> None:  # died writing the end's newline
    _drop_last_row(out)
    data = (out / LOG).read_bytes()
    (out / LOG).write_bytes(data[:-1])


def _tear_the_index(out: Path) -> None:
    with (out / INDEX).open("a") as f:
        f.write('{"episode":')


@pytest.mark.parametrize(
    "damage",
    [
        _damage_a_byte,
        _drop_last_row,
        _append_a_foreign_end,
        _append_a_foreign_line,
        _tear_the_index,
    ],
)
def test_an_index_that_might_not_match_the_log_is_not_used(copy: Path, damage: object) -> None:
    damage(copy)  # type: ignore[operator]
    assert read_index(copy) is None
    assert score_run(copy, on_skip=lambda _: None) == _from_log(copy)  # from the log instead


def test_an_interrupted_runs_unfinished_records_leave_the_index_usable(copy: Path) -> None:
    lines = (copy / LOG).read_text().splitlines(keepends=True)
    start = next(ln for ln in lines if '"kind":"episode"' in ln)
    turn = next(ln for ln in lines if '"kind":"turn"' in ln)
    with (copy / LOG).open("a") as f:  # an episode-arm under way, its last line torn
        f.write(start + turn + turn[:40])
    assert read_index(copy) == _from_log(copy)


def test_rows_of_another_scorer_are_not_used(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index, "fingerprint", lambda: "another scorer")
    assert read_index(copy) is None


def test_a_resumed_run_rebuilds_its_index_and_reports_as_one_run(run: Path, copy: Path) -> None:
    data = (copy / LOG).read_bytes()
    (copy / LOG).write_bytes(data[: len(data) // 2])  # interrupted mid-line, the index ahead
    assert read_index(copy) is None
    asyncio.run(run_ladder(CONFIG, copy))
    indexed = read_index(copy)
    assert indexed is not None and indexed == _from_log(copy)
    assert [s.score for s in indexed] == [s.score for s in _from_log(run)]
    whole = {t.key: t.body for t in build_report(load_runs([run])).tables if t.key != "overhead"}
    again = {t.key: t.body for t in build_report(load_runs([copy])).tables if t.key != "overhead"}
    assert again == whole


def test_a_log_of_an_older_version_gets_an_index_when_resumed(copy: Path) -> None:
    (copy / INDEX).unlink()
    assert read_index(copy) is None
    asyncio.run(run_ladder(CONFIG, copy))  # nothing left to run; the writer indexes the log
    assert read_index(copy) == _from_log(copy)


def test_a_log_with_skipped_lines_is_not_indexed_so_every_reading_warns(copy: Path) -> None:
    lines = (copy / LOG).read_text().splitlines(keepends=True)
    lines.insert(len(lines) // 2, "garbage\n")
    (copy / LOG).write_text("".join(lines))
    (copy / INDEX).unlink()
    asyncio.run(run_ladder(CONFIG, copy, on_skip=lambda _: None))  # the writer rebuilds
    assert read_index(copy) is None
    skipped: list[object] = []
    score_run(copy, on_skip=skipped.append)
    assert len(skipped) == 1
