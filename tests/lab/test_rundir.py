"""Run directories under crashes and damage: recovery loses no finished episode-arm, a bad line
loses nothing around it, and every skipped line is reported with its file and line."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import taskgate
from taskgate.cli import app
from taskgate.errors import LogFormatError
from taskgate.lab import LadderConfig, run_ladder
from taskgate.lab.rundir import (
    COMPILED,
    EPISODES,
    LOG,
    LogWriter,
    SkippedLine,
    SkippedLineWarning,
    append_compiled,
    drop_torn_tail,
    read_compiled,
    read_log,
)
from taskgate.lab.runner.ladder import Progress
from taskgate.lab.runner.roles import CompileCache
from taskgate.lab.scoring.index import INDEX, score_run
from taskgate.lab.scoring.summary import summarize

ARMS = ("raw", "checklist", "directive", "enforcement")
FINISHED = 16 * len(ARMS)


def ladder(out: Path) -> Progress:
    config = LadderConfig(arms=ARMS, agent="scripted:obedient", steps=(5,), episodes=16)
    return asyncio.run(run_ladder(config, out))


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory of 64 finished episode-arms (read-only: tests copy it)."""
    out = tmp_path_factory.mktemp("finished")
    ladder(out)
    return out


@pytest.fixture
def run(tmp_path: Path, finished: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    return out


def rows(out: Path) -> list[dict[str, object]]:
    return [r.json_row() for r in summarize(score_run(out, lambda s: None), ARMS)]


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


# -- item 4: recovering a torn tail, and crashing while recovering ---------------------------------

# Recovers ``src``'s copy at ``work`` in a forked child that SIGKILLs itself at its k-th profiler
# event (every Python call and return, every C call and return: open, seek, read, truncate, ...),
# for k = 0, 1, 2, ... until a child gets through. Prints each k's outcome and file digest.
KILLER = r"""
import hashlib, json, os, shutil, signal, sys
from pathlib import Path
from taskgate.lab.rundir import LogWriter

src, work = Path(sys.argv[1]), Path(sys.argv[2])
outcomes = []
k = 0
while True:
    shutil.copyfile(src, work)
    pid = os.fork()
    if pid == 0:
        events = [0]
        def hook(frame, event, arg):
            events[0] += 1
            if events[0] > k:
                os.kill(os.getpid(), signal.SIGKILL)
        sys.setprofile(hook)
        LogWriter(work).close()
        sys.setprofile(None)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert killed or os.WEXITSTATUS(status) == 0, status
    digest = hashlib.sha256(work.read_bytes()).hexdigest()
    outcomes.append({"k": k, "killed": killed, "digest": digest})
    if not killed:
        break
    k += 1
print(json.dumps(outcomes))
"""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_crash_anywhere_in_recovery_loses_no_finished_episode_arm(run: Path) -> None:
    log = run / LOG
    whole = log.read_bytes()
    torn = whole + lines(log)[0][:-300]  # a rerun's episode record, cut off by an interruption
    (run / "torn.jsonl").write_bytes(torn)
    src = str(Path(taskgate.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", KILLER, str(run / "torn.jsonl"), str(log)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    outcomes = json.loads(done.stdout)
    killed = [o for o in outcomes if o["killed"]]
    assert len(killed) > 20 and not outcomes[-1]["killed"]  # killed at every point, then through
    # Interrupted anywhere, the file is the torn one or the recovered one: never anything less.
    states = {o["digest"] for o in outcomes}
    assert states == {digest(torn), digest(whole)}
    assert {o["digest"] for o in killed} == states  # killed before and after the cut
    assert outcomes[-1]["digest"] == digest(whole)
    for data in (torn, whole):  # each state a crash can leave: read, then recovered again
        log.write_bytes(data)
        assert len(read_log(log)) == FINISHED
        LogWriter(log).close()
        assert log.read_bytes() == whole and len(read_log(log)) == FINISHED


def test_the_old_rewrite_fails_the_crash_test(tmp_path: Path) -> None:
    """The same killer against a recovery that rewrites the file (as resume did) finds a kill
    point that empties the log: the test above can tell the two apart."""
    path = tmp_path / "log.jsonl"
    data = b'{"a": 1}\n{"b": 2}\n{"c"'
    path.write_bytes(data)
    script = KILLER.replace(
        "from taskgate.lab.rundir import LogWriter",
        "class LogWriter:\n"
        "    def __init__(self, p):\n"
        "        d = p.read_bytes()\n"
        "        p.write_bytes(d[: d.rfind(b'\\n') + 1])\n"
        "    def close(self):\n"
        "        pass",
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), str(tmp_path / "work.jsonl")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert digest(b"") in {o["digest"] for o in json.loads(done.stdout) if o["killed"]}


def test_a_torn_tail_is_cut_in_place(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c": ')
    inode = path.stat().st_ino
    drop_torn_tail(path)
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n' and path.stat().st_ino == inode
    drop_torn_tail(path)  # nothing torn: untouched
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'


def test_a_whole_last_record_only_missing_its_newline_is_kept(run: Path) -> None:
    log = run / LOG
    data = log.read_bytes()
    log.write_bytes(data[:-1])  # the end record of the last finished episode-arm, no newline
    assert len(read_log(log)) == FINISHED
    LogWriter(log).close()
    assert log.read_bytes() == data and len(read_log(log)) == FINISHED


@pytest.mark.parametrize(
    ("data", "after"),
    [(b"", b""), (b"torn", b""), (b"x" * 200_000, b""), (b"ok\n" + b"y" * 200_000, b"ok\n"),
     (b"ok\n", b"ok\n"), (b"[1]\n{}", b"[1]\n{}\n"), (b"\n\n[1]", b"\n\n")],
)  # fmt: skip
def test_drop_torn_tail_cases(tmp_path: Path, data: bytes, after: bytes) -> None:
    path = tmp_path / "f"
    path.write_bytes(data)
    drop_torn_tail(path)
    assert path.read_bytes() == after
    drop_torn_tail(tmp_path / "absent")  # no file: nothing to do
    assert not (tmp_path / "absent").exists()


def test_episodes_are_replaced_atomically(run: Path) -> None:
    inode = (run / EPISODES).stat().st_ino
    config = LadderConfig(arms=ARMS, agent="scripted:obedient", steps=(5,), episodes=17)
    asyncio.run(run_ladder(config, run))  # one more episode: the file is written anew
    assert (run / EPISODES).stat().st_ino != inode
    assert len(lines(run / EPISODES)) == 17 and sorted(os.listdir(run)) == [
        COMPILED,
        EPISODES,
        LOG,
        INDEX,  # no temporary file is left behind
    ]


# -- item 5: a bad line is skipped and reported, never the lines around it -------------------------


def damage(path: Path, at: int, new: list[bytes]) -> None:
    """Replace line ``at`` (1-based) with the lines ``new``."""
    old = lines(path)
    path.write_bytes(b"".join(old[: at - 1] + new + old[at:]))


def insert(path: Path, after: int, line: bytes) -> None:
    """Insert ``line`` after line ``after`` (1-based): it becomes line ``after + 1``."""
    old = lines(path)
    path.write_bytes(b"".join([*old[:after], line, *old[after:]]))


@pytest.mark.parametrize(
    "garbage",
    [b"garbage\n", b"\xff\xfe not utf-8\n", b'{"episode": "x", "arm": "raw", "kind": "?"}\n',
     b'["a", "list"]\n', b"\x00\x00\x00\x00\n"],
    ids=["garbage", "not-utf8", "not-a-record", "a-list", "nul-bytes"],
)  # fmt: skip
def test_a_bad_line_in_the_middle_is_skipped_and_reported(
    run: Path, finished: Path, garbage: bytes
) -> None:
    log = run / LOG
    at = len(lines(log)) // 2
    insert(log, at, garbage)
    skipped: list[SkippedLine] = []
    runs = read_log(log, skipped.append)
    assert runs == read_log(finished / LOG)  # every finished episode-arm, every record of each
    assert [(s.path, s.line) for s in skipped] == [(log, at + 1)]
    assert str(skipped[0]).startswith(f"{log}:{at + 1}: skipped: not a log record")
    assert "\n" not in str(skipped[0])
    with pytest.warns(SkippedLineWarning, match=rf"log\.jsonl:{at + 1}: skipped"):
        assert len(read_log(log)) == FINISHED  # by default, a warning


def test_a_cut_line_followed_by_later_appends_keeps_the_record_after_it(
    run: Path, finished: Path
) -> None:
    log = run / LOG
    old = lines(log)
    at = next(i for i, ln in enumerate(old, 1) if b'"kind":"turn"' in ln and i > len(old) // 2)
    victim = json.loads(old[at - 1])
    damage(log, at, [old[at - 1][:50]])  # cut short, and the next record appended right after
    skipped: list[SkippedLine] = []
    runs = read_log(log, skipped.append)
    lost = (victim["episode"], victim["arm"])
    clean = read_log(finished / LOG)
    assert runs == {k: r for k, r in clean.items() if k != lost}  # only the damaged one is out
    assert len(skipped) == 2 and skipped[0].line == at < skipped[1].line
    assert "cut-off record (50 bytes)" in skipped[0].why
    assert f"{lost[0]} / {lost[1]} ends with 43 turn records for its 44 turns" in skipped[1].why


def test_resume_reruns_only_what_a_bad_line_damaged(run: Path, finished: Path) -> None:
    log = run / LOG
    old = lines(log)
    at = next(i for i, ln in enumerate(old, 1) if b'"kind":"turn"' in ln)
    damage(log, at, [b"garbage\n", b"more garbage\n"])  # a turn lost, plus one more bad line
    before = log.read_bytes()
    with pytest.warns(SkippedLineWarning):
        progress = ladder(run)
    assert progress.skipped == FINISHED - 1 and progress.failed == 0
    assert log.read_bytes().startswith(before)  # appended to, never rewritten
    assert rows(run) == rows(finished)


def test_score_and_report_warn_once_per_bad_line_and_score_the_rest(
    run: Path, finished: Path
) -> None:
    log = run / LOG
    at = len(lines(log)) // 3
    insert(log, at, b"garbage\n")
    cli = CliRunner()
    for command in (["score"], ["report"], ["report", "--fmt", "latex"]):
        clean = cli.invoke(app, [*command, str(finished)])
        got = cli.invoke(app, [*command, str(run)])
        assert got.exit_code == 0 and clean.exit_code == 0, got.output
        # the first line names the directory and its configuration; the tables are the same
        assert got.stdout.split("\n", 1)[1] == clean.stdout.split("\n", 1)[1]
        assert clean.stderr == ""
        assert got.stderr.splitlines() == [
            f"warning: {log}:{at + 1}: skipped: not a log record: "
            "Invalid JSON: expected value at line 1 column 1"
        ]


def test_a_log_naming_an_absent_episode_names_the_file_and_line(run: Path) -> None:
    episodes = lines(run / EPISODES)
    (run / EPISODES).write_bytes(b"".join(episodes[1:]))
    with pytest.raises(LogFormatError, match=r"log\.jsonl:\d+: names episode '[^']+', absent"):
        score_run(run)


def test_a_bad_episode_line_names_the_file_and_line(run: Path) -> None:
    damage(run / EPISODES, 3, [b'{"id": "broken"}\n'])
    with pytest.raises(LogFormatError, match=r"episodes\.jsonl:3 is not an episode: ") as err:
        score_run(run)
    assert "\n" not in str(err.value)


def test_a_torn_compile_cache_entry_is_absent(run: Path, finished: Path) -> None:
    path = run / COMPILED
    old = lines(path)
    assert len(old) == 32  # a plan and a revision per episode
    path.write_bytes(b"".join([*old[:5], b'{"what": "plan", "key": \n', *old[5:-1], old[-1][:40]]))
    with pytest.warns(SkippedLineWarning, match=r"compiled\.jsonl:6: skipped: not a compile cache"):
        entries = read_compiled(path)
    assert len(entries) == 31  # the torn last entry is absent, silently
    with pytest.warns(SkippedLineWarning, match=r"compiled\.jsonl:6: skipped"):
        cache = CompileCache(path)  # reads through read_compiled
    assert len(cache._entries) == len(entries)
    (run / LOG).unlink()  # rerun everything: the torn entry is compiled again, and appended
    with pytest.warns(SkippedLineWarning):
        progress = ladder(run)
    assert progress.failed == 0 and rows(run) == rows(finished)
    skipped: list[SkippedLine] = []
    entries = read_compiled(path, skipped.append)
    assert len(entries) == 32 and [s.line for s in skipped] == [6]


def test_an_append_after_a_torn_entry_is_not_glued_to_it(tmp_path: Path, finished: Path) -> None:
    path = tmp_path / COMPILED
    first = lines(finished / COMPILED)[0]
    path.write_bytes(first + first[:30])
    what, key, plan, calls = read_compiled(finished / COMPILED, lambda s: None)[0]
    append_compiled(path, (what, "new", plan, calls))
    skipped: list[SkippedLine] = []
    got = read_compiled(path, skipped.append)
    assert got == [(what, key, plan, calls), (what, "new", plan, calls)] and not skipped
