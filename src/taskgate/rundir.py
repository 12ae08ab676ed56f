"""Reading and writing run directories.

A run directory holds ``episodes.jsonl`` (one episode per line) and ``log.jsonl`` (the records of
every episode-arm, appended and flushed as they happen). An episode-arm counts only once its
``end`` record is written; a later complete run of the same episode-arm replaces an earlier one.
"""

from __future__ import annotations

import json
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

Key = tuple[str, str]  # (episode id, arm)
AnyRecord = EpisodeRecord | TurnRecord | CallRecord | EndRecord


@dataclass
class Run:
    """One finished episode-arm as logged."""

    header: EpisodeRecord
    turns: list[TurnRecord] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)


def write_episodes(path: Path, episodes: Iterable[Episode]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for e in episodes:
            f.write(e.model_dump_json() + "\n")


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

    A torn last line (a write cut off by an interruption) is dropped before appending.
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
    """Cut a last line an interrupted write left without its newline."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])
