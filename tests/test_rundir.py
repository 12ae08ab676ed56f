"""Run directories under crashes: recovery loses no finished episode-arm."""

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

import taskgate
from taskgate import LadderConfig, run_ladder
from taskgate.rundir import (
    EPISODES,
    LOG,
    LogWriter,
    drop_torn_tail,
    read_log,
)
from taskgate.runner.ladder import COMPILED, Progress

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


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


# -- item 4: recovering a torn tail, and crashing while recovering ---------------------------------

# Recovers ``src``'s copy at ``work`` in a forked child that SIGKILLs itself at its k-th profiler
# event (every Python call and return, every C call and return: open, seek, read, truncate, ...),
# for k = 0, 1, 2, ... until a child gets through. Prints each k's outcome and file digest.
KILLER = r"""
import hashlib, json, os, shutil, signal, sys
from pathlib import Path
from taskgate.rundir import LogWriter

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
        "from taskgate.rundir import LogWriter",
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
    ]
