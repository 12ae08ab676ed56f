"""Reading and writing run directories.

A run directory holds ``episodes.jsonl`` (one episode per line) and ``log.jsonl`` (the records of
every episode-arm, appended and flushed as they happen). An episode-arm counts only once its
``end`` record is written; a later complete run of the same episode-arm replaces an earlier one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pydantic import TypeAdapter, ValidationError

from .episodes.models import Episode
from .episodes.records import CallRecord, EndRecord, EpisodeRecord, Record, TurnRecord
from .errors import LogFormatError

EPISODES = "episodes.jsonl"
LOG = "log.jsonl"
_RECORD: TypeAdapter[Record] = TypeAdapter(Record)
_EPISODE = TypeAdapter(Episode)
_CHUNK = 1 << 16

Key = tuple[str, str]  # (episode id, arm)
AnyRecord = EpisodeRecord | TurnRecord | CallRecord | EndRecord


@dataclass
class Run:
    """One finished episode-arm as logged."""

    header: EpisodeRecord
    turns: list[TurnRecord] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)


def write_episodes(path: Path, episodes: Iterable[Episode]) -> None:
    """Write the episodes to a new file and rename it over ``path`` (a crash leaves either)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for e in episodes:
                f.write(e.model_dump_json() + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_episodes(path: Path) -> list[Episode]:
    """Episodes from a JSON Lines file, a JSON list, or a single JSON object."""
    if not path.exists():
        raise LogFormatError(f"no episodes file at {path}")
    text = path.read_text(encoding="utf-8")
    try:
        stripped = text.lstrip()
        if stripped.startswith("["):
            return [Episode.model_validate(x) for x in json.loads(text)]
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1:
            return [_EPISODE.validate_json(ln) for ln in lines]
        return [Episode.model_validate_json(text)]
    except (ValidationError, json.JSONDecodeError) as exc:
        raise LogFormatError(f"{path} is not an episode file: {str(exc)[:500]}") from exc


class LogWriter:
    """Appends records to ``log.jsonl``, one line each, flushed at once.

    A torn last line (a write cut off by an interruption) is cut off first (see
    :func:`drop_torn_tail`); nothing else in the file is touched.
    """

    def __init__(self, path: Path) -> None:
        drop_torn_tail(path)
        self._file: IO[str] = path.open("a", encoding="utf-8")

    def __call__(self, record: AnyRecord) -> None:
        self._file.write(record.model_dump_json() + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_log(path: Path) -> dict[Key, Run]:
    """The complete episode-arms of a log (interrupted ones are left out)."""
    if not path.exists():
        return {}
    open_runs: dict[Key, Run] = {}
    done: dict[Key, Run] = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = _RECORD.validate_json(line)
            except ValidationError as exc:
                if not line.endswith("\n"):  # a line cut short by an interruption
                    continue
                raise LogFormatError(f"{path}:{n} is not a log record: {str(exc)[:300]}") from exc
            key = (rec.episode, rec.arm)
            if isinstance(rec, EpisodeRecord):
                open_runs[key] = Run(rec)
            elif key not in open_runs:
                continue  # the tail of a run whose start was replaced
            elif isinstance(rec, TurnRecord):
                open_runs[key].turns.append(rec)
            elif isinstance(rec, CallRecord):
                open_runs[key].calls.append(rec)
            else:
                done[key] = open_runs.pop(key)
    return done


def drop_torn_tail(path: Path) -> None:
    """Make a file end at a line break after an interrupted append, in place.

    A last line left without its newline is cut off with one ``truncate``, unless it is a whole
    JSON object (the write was cut just before its newline), which gets its newline appended.
    Either is one system call on the file's end: a crash at any point loses no complete line.
    """
    try:
        f = path.open("r+b")
    except FileNotFoundError:
        return
    with f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        start = _last_line_start(f, size)
        f.seek(start)
        if _is_json_object(f.read()):
            f.seek(size)
            f.write(b"\n")
        else:
            f.truncate(start)


def _last_line_start(f: IO[bytes], size: int) -> int:
    pos = size
    while pos > 0:
        step = min(_CHUNK, pos)
        pos -= step
        f.seek(pos)
        at = f.read(step).rfind(b"\n")
        if at >= 0:
            return pos + at + 1
    return 0


def _is_json_object(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data), dict)
    except ValueError:  # not JSON, or not UTF-8
        return False
