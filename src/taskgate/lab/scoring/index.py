"""The score index: each episode-arm's score, written once when it ends, next to the log.

Scoring a finished run from its log means parsing every turn record again (about 70% of the time
on a big run). The runner already holds an episode-arm's records when its ``end`` record is
written, so it scores it there (a fraction of a millisecond) and appends one line to
``scores.jsonl``. :func:`read_index` gives those scores back only when they provably belong to the
log as it is now; otherwise ``None``, and the caller scores the log itself. A row is trusted when:

* it was made by this scorer: ``fingerprint`` hashes the source of the modules that decide a score
  (a changed scorer ignores old rows);
* the log's first ``log_size`` bytes hash to the last row's ``log_digest`` (a running BLAKE2b over
  every byte the writer appended, seeded with what the log held when it opened it), so no line
  before it was changed, dropped or added;
* there is one row for every ``end`` record up to that point (``ends``), so a crash between the
  log's flush and the index's append leaves the index unused rather than short;
* the log past ``log_size`` holds no ``end`` record (nothing finished that the index lacks) and
  no line its reader would skip and report (the slow path says what is wrong with it);
* ``episodes.jsonl`` is the file the writer scored against (``episodes_digest``).

Anything else (no index, a torn or foreign line, a log written by an older version, a merged or
hand-edited log) falls back to scoring the log.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from taskgate.errors import TaskgateError
from taskgate.lab.episodes.models import Episode
from taskgate.lab.episodes.records import CallRecord, EndRecord, EpisodeRecord, TurnRecord
from taskgate.lab.rundir import (
    EPISODES,
    LOG,
    AnyRecord,
    Key,
    OnSkip,
    SkippedLine,
    parse_record,
    write_lines,
)
from taskgate.lab.scoring.scorer import EpisodeScore, score_episode
from taskgate.lab.scoring.summary import Scored, check_run_dir, score_entries, scored_of

INDEX = "scores.jsonl"
_END = b'"kind":"end"'  # only an end record holds these bytes unescaped (strings escape quotes)
_CHUNK = 1 << 20
_SCORE = TypeAdapter(EpisodeScore)
#: the modules whose code decides a score
_SCORING_SOURCES = (
    ("taskgate.lab.scoring", "scorer.py"),
    ("taskgate.protocol", "refusals.py"),
    ("taskgate.core", "ids.py"),
    ("taskgate.lab.episodes", "tools.py"),
    ("taskgate.lab.scoring", "summary.py"),  # the configuration, cell and seed a row is filed under
    ("taskgate.core", "verdict.py"),
    ("taskgate.lab.episodes", "models.py"),
)


@cache
def fingerprint() -> str:
    """A hash of the scorer's code: rows made by other code are not used."""
    h = hashlib.sha256()
    for package, name in _SCORING_SOURCES:
        h.update((resources.files(package) / name).read_bytes())
    return h.hexdigest()[:16]


class IndexRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    episode: str
    arm: str
    fingerprint: str
    log_size: int
    log_digest: str
    episodes_digest: str  # of episodes.jsonl as the writer found it
    ends: int
    cell: tuple[int, float, float]
    seed: int
    harness: str | None
    config: str
    score: dict[str, object]
    regime: str | None = None
    model: str = ""
    brief: str = "amended"
    schedule: str = "paper"
    base: str = ""
    batch: bool = False  # made from the log when the writer opened it (see ScoreIndexWriter)


_ROW = TypeAdapter(IndexRow)


def _digest_of(path: Path, size: int | None = None) -> tuple[hashlib.blake2b, int, int]:
    """The running digest of a file's first ``size`` bytes (all of it by default), its size and
    the number of end records in it."""
    h = hashlib.blake2b(digest_size=16)
    read = ends = 0
    tail = b""
    with path.open("rb") as f:
        while size is None or read < size:
            chunk = f.read(_CHUNK if size is None else min(_CHUNK, size - read))
            if not chunk:
                break
            h.update(chunk)
            ends += (tail + chunk).count(_END) - tail.count(_END)
            tail = chunk[-(len(_END) - 1) :]
            read += len(chunk)
    return h, read, ends


class ScoreIndexWriter:
    """A :class:`taskgate.lab.rundir.LogWriter` observer: scores each episode-arm as its end record
    is written and appends its row to ``scores.jsonl``."""

    def __init__(self, out: Path, episodes: Mapping[str, Episode]) -> None:
        self._out = out
        self._episodes = episodes
        self._open: dict[Key, tuple[EpisodeRecord, list[TurnRecord], list[str]]] = {}
        self._digest = hashlib.blake2b(digest_size=16)
        self._size = self._ends = 0
        self._episodes_digest = ""
        self._file: IO[str] | None = None

    def start(self, log: Path) -> None:
        """Called once the log's torn tail is cut: take in what it holds already. An index that
        does not match the log (an interrupted run, a log from an older version) is made again
        from the log, in one batch that replaces the file."""
        if log.exists():
            self._digest, self._size, self._ends = _digest_of(log)
        self._episodes_digest = _episodes_digest(self._out)
        if read_index(self._out) is None:
            self._rebuild()
        self._file = (self._out / INDEX).open("a", encoding="utf-8")

    def _rebuild(self) -> None:
        entries = []
        skipped: list[SkippedLine] = []
        if self._ends:
            with contextlib.suppress(TaskgateError):  # unreadable: an empty index, never used
                entries = score_entries(self._out, on_skip=skipped.append)
        if skipped:  # left unindexed, so that every reading of the log says what it skipped
            entries = []
        write_lines(self._out / INDEX, [self._row(e.scored, batch=True) for e in entries])

    def __call__(self, record: AnyRecord, line: bytes) -> None:
        self._digest.update(line)
        self._size += len(line)
        key = (record.episode, record.arm)
        if isinstance(record, EpisodeRecord):
            self._open[key] = (record, [], [])
        elif isinstance(record, TurnRecord) and key in self._open:
            self._open[key][1].append(record)
        elif isinstance(record, CallRecord) and key in self._open and record.purpose == "agent":
            self._open[key][2].append(record.model)
        elif isinstance(record, EndRecord):
            self._ends += 1
            header, turns, models = self._open.pop(key, (None, [], []))
            episode = self._episodes.get(header.source) if header is not None else None
            if header is None or episode is None or self._file is None:
                return  # not scored here: the index stays short, so it is not used
            try:
                score = score_episode(episode, turns)
            except TaskgateError:  # the log's reader will say what is wrong with these records
                return
            model = models[0] if models else None
            row = self._row(scored_of(header, episode, score, key, model), batch=False)
            self._file.write(row + "\n")
            self._file.flush()

    def _row(self, s: Scored, batch: bool) -> str:
        return IndexRow(
            episode=s.key[0],
            arm=s.key[1],
            fingerprint=fingerprint(),
            log_size=self._size,
            log_digest=self._digest.hexdigest(),
            episodes_digest=self._episodes_digest,
            ends=self._ends,
            cell=s.cell,
            seed=s.seed,
            harness=s.harness,
            config=s.config,
            regime=s.regime,
            model=s.model,
            brief=s.brief,
            schedule=s.schedule,
            base=s.base,
            score=_SCORE.dump_python(s.score, mode="json"),
            batch=batch,
        ).model_dump_json()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_index(out: Path) -> list[Scored] | None:
    """The run's scores from its index, sorted by (run id, arm) as the log's scorer returns
    them, or ``None`` when the index is absent or cannot be trusted (see the module's
    docstring)."""
    path, log = out / INDEX, out / LOG
    if not path.exists() or not log.exists():
        return None
    rows: list[IndexRow] = []
    try:
        with path.open("rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    return None  # a torn last row: the run was cut before it finished writing
                rows.append(_ROW.validate_json(line))
    except (ValidationError, OSError):
        return None
    if not _accounted(rows) or any(r.fingerprint != fingerprint() for r in rows):
        return None
    last = rows[-1]
    if os.path.getsize(log) < last.log_size or _episodes_digest(out) != last.episodes_digest:
        return None
    digest, _, _ = _digest_of(log, last.log_size)
    if digest.hexdigest() != last.log_digest or not _tail_is_clean(log, last.log_size):
        return None
    latest = {(r.episode, r.arm): r for r in rows}  # a later run of an episode-arm replaces it
    try:
        return [
            Scored(
                r.cell,
                r.seed,
                _SCORE.validate_python(r.score),
                r.harness,
                r.config,
                key,
                r.regime,
                r.model or r.config,
                r.brief,
                r.schedule,
                r.base or r.config,
            )
            for key, r in sorted(latest.items())
        ]
    except ValidationError:
        return None


def _episodes_digest(out: Path) -> str:
    path = out / EPISODES
    return _digest_of(path)[0].hexdigest() if path.exists() else ""


def _accounted(rows: list[IndexRow]) -> bool:
    """Whether the rows account for every end record: a batch made from the log (all of its rows
    at one log size) covers the end records it counts, then each live row covers one more."""
    if not rows:
        return False
    expected = 0
    for i, r in enumerate(rows):
        if r.batch:
            first = rows[0]
            if not first.batch or (r.ends, r.log_size) != (first.ends, first.log_size):
                return False
            expected = r.ends
        else:
            expected += 1
            if r.ends != expected:
                return False
        if i and r.log_size < rows[i - 1].log_size:
            return False
    return True


def _tail_is_clean(log: Path, offset: int) -> bool:
    """Whether the log past ``offset`` holds only records of episode-arms still unfinished (an
    interrupted run's): no end record, and no line the log's reader would skip and report."""
    with log.open("rb") as f:
        f.seek(offset)
        for line in f:
            whole = line.endswith(b"\n")
            if not line.strip():
                continue
            record, why = parse_record(line[:-1] if whole else line)
            if not whole:  # a last line cut short is left out silently, unless it is a record
                return not isinstance(record, EndRecord)
            if record is None or why or isinstance(record, EndRecord):
                return False
    return True


def score_run(out: Path, on_skip: OnSkip | None = None) -> list[Scored]:
    """Score every complete episode-arm in a run directory (see :func:`score_entries`): from its
    score index when that provably matches the log (see :mod:`taskgate.lab.scoring.index`), else
    from the log."""
    check_run_dir(out)
    indexed = read_index(out)
    if indexed is not None:
        return indexed
    return [e.scored for e in score_entries(out, on_skip)]
