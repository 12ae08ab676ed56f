"""Reading and writing run directories.

A run directory holds ``episodes.jsonl`` (one episode per line), ``log.jsonl`` (the records of
every episode-arm, appended as they happen and flushed as each episode-arm ends), for compiled
arms ``compiled.jsonl`` (the compile cache a resumed run reuses), and ``scores.jsonl`` (each
finished episode-arm's score, see :mod:`taskgate.lab.scoring.index`). An episode-arm counts only
once its ``end`` record is written and every one of its turns was read back; a later complete run
of the same episode-arm replaces an earlier one.

Files are never rewritten in place: appends go to the end, a torn last line (a write cut off by an
interruption) is cut off with one ``truncate``, and ``episodes.jsonl`` (and a rebuilt score index)
is replaced by an atomic rename. A line that cannot be read (garbage, or a record cut short and then followed by later
appends) is skipped, never the lines around it, and reported to the reader's ``on_skip`` as a
:class:`SkippedLine` (by default, a :class:`SkippedLineWarning`).
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from taskgate.core.plan import Plan, Revision
from taskgate.errors import LogFormatError
from taskgate.files import read_text
from taskgate.lab.episodes.models import Episode
from taskgate.lab.episodes.records import CallRecord, EndRecord, EpisodeRecord, Record, TurnRecord
from taskgate.llm.calls import CallInfo

EPISODES = "episodes.jsonl"
LOG = "log.jsonl"
COMPILED = "compiled.jsonl"
MEMORY = "memory"  # the Mem0 arms' stores, one collection per episode-arm
_RECORD: TypeAdapter[Record] = TypeAdapter(Record)
_EPISODE = TypeAdapter(Episode)
_RECORD_START = b'{"episode":'  # how every record's line begins (its first field)
_CHUNK = 1 << 16
_MAX_GLUED = 4  # record starts tried on one damaged line (one cut-off record, then the next)

Key = tuple[str, str]  # (episode id, arm)
AnyRecord = EpisodeRecord | TurnRecord | CallRecord | EndRecord


@dataclass(frozen=True)
class SkippedLine:
    """A line of a run-directory file that a reader skipped: which file, which line, and why."""

    path: Path
    line: int
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: skipped: {self.why}"


class SkippedLineWarning(UserWarning):
    """A reader skipped a line of a run-directory file (issued when no ``on_skip`` is given)."""


OnSkip = Callable[[SkippedLine], None]


def warn_skipped(skipped: SkippedLine) -> None:
    """The readers' default ``on_skip``: a :class:`SkippedLineWarning` naming file and line."""
    warnings.warn(str(skipped), SkippedLineWarning, stacklevel=3)


@dataclass
class Run:
    """One finished episode-arm as logged; ``line`` is where its episode record is."""

    header: EpisodeRecord
    turns: list[TurnRecord] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    line: int = field(default=0, compare=False)
    seconds: float | None = field(default=None, compare=False)  # wall clock, from the end record


def write_episodes(path: Path, episodes: Iterable[Episode]) -> None:
    """Write the episodes to a new file and rename it over ``path`` (a crash leaves either)."""
    write_lines(path, (e.model_dump_json() for e in episodes))


def write_lines(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` to a new file and rename it over ``path`` (a crash leaves either)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for line in lines:
                f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # as an ordinary new file, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_episodes(path: Path) -> list[Episode]:
    """Episodes from a JSON Lines file, a JSON list, or a single JSON object."""
    if not path.exists():
        raise LogFormatError(f"no episodes file at {path}")
    text = read_text(path, "episodes file")
    stripped = text.lstrip()
    try:
        if stripped.startswith("["):
            return [Episode.model_validate(x) for x in json.loads(text)]
    except (ValidationError, json.JSONDecodeError) as exc:
        raise LogFormatError(f"{path} is not an episode file: {_why(exc)}") from exc
    lines = [(n, ln) for n, ln in enumerate(text.split("\n"), 1) if ln.strip()]
    if len(lines) <= 1:
        try:
            return [Episode.model_validate_json(text)]
        except ValidationError as exc:
            raise LogFormatError(f"{path} is not an episode file: {_why(exc)}") from exc
    episodes = []
    for n, ln in lines:
        try:
            episodes.append(_EPISODE.validate_json(ln))
        except ValidationError as exc:
            raise LogFormatError(f"{path}:{n} is not an episode: {_why(exc)}") from exc
    return episodes


class LogWriter:
    """Appends records to ``log.jsonl``, one line each, flushed at each episode-arm's ``end``
    record (what an interruption loses is then only records of unfinished episode-arms, which a
    rerun plays again anyway) and when closed.

    A torn last line (a write cut off by an interruption) is cut off first (see
    :func:`drop_torn_tail`); nothing else in the file is touched.
    """

    def __init__(self, path: Path, observer: LogObserver | None = None) -> None:
        drop_torn_tail(path)
        self._observer = observer
        if observer is not None:
            observer.start(path)
        self._file: IO[bytes] = path.open("ab")

    def __call__(self, record: AnyRecord) -> None:
        line = record.model_dump_json().encode() + b"\n"
        self._file.write(line)
        if isinstance(record, EndRecord):
            self._file.flush()
        if self._observer is not None:
            self._observer(record, line)

    def close(self) -> None:
        self._file.close()
        if self._observer is not None:
            self._observer.close()


class LogObserver(Protocol):
    """Sees every line a :class:`LogWriter` appends, after it is written (an ``end`` record's
    after the flush): the score index (:mod:`taskgate.lab.scoring.index`) is one."""

    def start(self, log: Path) -> None: ...

    def __call__(self, record: AnyRecord, line: bytes) -> None: ...

    def close(self) -> None: ...


def read_log(path: Path, on_skip: OnSkip | None = None) -> dict[Key, Run]:
    """The complete episode-arms of a log (interrupted ones are left out).

    A line that is not a record is skipped and reported to ``on_skip`` (default:
    :func:`warn_skipped`); a record glued behind a cut-off one is kept. An episode-arm that lost
    a turn that way is left out as unfinished (a resumed run reruns it), and reported too. A last
    line cut short by an interruption is left out silently.
    """
    report = on_skip or warn_skipped
    open_runs: dict[Key, Run] = {}
    done: dict[Key, Run] = {}
    for n, raw, whole in _lines(path):
        rec, why = parse_record(raw)
        if rec is None:
            if whole:
                report(SkippedLine(path, n, why))
            continue
        if why:  # a cut-off record before this one, on the same line
            report(SkippedLine(path, n, why))
        key = (rec.episode, rec.arm)
        if isinstance(rec, EpisodeRecord):
            open_runs[key] = Run(rec, line=n)
        elif key not in open_runs:
            continue  # the tail of a run whose start was replaced
        elif isinstance(rec, TurnRecord):
            open_runs[key].turns.append(rec)
        elif isinstance(rec, CallRecord):
            open_runs[key].calls.append(rec)
        else:
            run = open_runs.pop(key)
            got = [t.index for t in run.turns]
            if got == list(range(rec.turns)):
                run.seconds = rec.seconds
                done[key] = run
            else:
                report(
                    SkippedLine(
                        path,
                        n,
                        f"episode-arm {rec.episode} / {rec.arm} ends with {len(got)} turn records "
                        f"for its {rec.turns} turns; left out as unfinished",
                    )
                )
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


#: a compile cache entry: what it is, its key, the plan or revision, and the compile calls that
#: made it (none for a scripted compiler, or in a cache written before they were kept)
Compiled = tuple[Literal["plan", "revision"], str, Plan | Revision, tuple[CallInfo, ...]]


def read_compiled(path: Path, on_skip: OnSkip | None = None) -> list[Compiled]:
    """The compile cache's entries, in file order. An entry that cannot be read is absent (it
    is compiled again); one in the middle of the file is also reported to ``on_skip``."""
    report = on_skip or warn_skipped
    out: list[Compiled] = []
    for n, raw, whole in _lines(path):
        try:
            row = _COMPILED_ROW.validate_json(raw)
            value: Plan | Revision = (
                Plan.model_validate(row.value)
                if row.what == "plan"
                else Revision.model_validate(row.value)
            )
            out.append((row.what, row.key, value, row.calls))
        except ValidationError as exc:
            if whole:
                report(SkippedLine(path, n, f"not a compile cache entry: {_why(exc)}"))
    return out


def append_compiled(path: Path, entry: Compiled) -> None:
    """Append one compile cache entry (after cutting a torn last line, see :func:`drop_torn_tail`)."""
    what, key, value, calls = entry
    drop_torn_tail(path)
    row: dict[str, Any] = {"what": what, "key": key, "value": value.model_dump(mode="json")}
    if calls:
        row["calls"] = [c.model_dump(mode="json") for c in calls]
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


class _CompiledRow(BaseModel):
    what: Literal["plan", "revision"]
    key: str
    value: dict[str, Any]
    calls: tuple[CallInfo, ...] = ()


_COMPILED_ROW = TypeAdapter(_CompiledRow)


def _lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line without its newline, whether the newline was there) of each non-blank
    line; bytes, so that no undecodable or odd character can stop the reading."""
    if not path.exists():
        return
    with path.open("rb") as f:
        for n, line in enumerate(f, 1):
            whole = line.endswith(b"\n")
            body = line[:-1] if whole else line
            if body.strip():
                yield n, body, whole


def parse_record(raw: bytes) -> tuple[AnyRecord | None, str]:
    """The record on a line, and what was wrong with the line ("" if nothing).

    A record cut short by an interruption and then followed by later appends shares its line with
    the next record; that record, found at its first field, is kept.
    """
    try:
        return _RECORD.validate_json(raw), ""
    except ValidationError as exc:
        why = f"not a log record: {_why(exc)}"
    at = raw.find(_RECORD_START, 1)
    for _ in range(_MAX_GLUED):  # bounded: a garbage line costs linear time, not quadratic
        if at <= 0:
            break
        try:
            rec = _RECORD.validate_json(raw[at:])
        except ValidationError:
            at = raw.find(_RECORD_START, at + 1)
            continue
        return rec, f"a cut-off record ({at} bytes) before the record that follows it on the line"
    return None, why


def _why(exc: ValidationError | json.JSONDecodeError) -> str:
    """A one-line reason: the first error, where it is, and how many there are."""
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON ({exc.msg} at character {exc.pos})"
    errors = exc.errors(include_url=False)
    first = errors[0] if errors else {"loc": (), "msg": str(exc)}
    loc = ".".join(str(x) for x in first["loc"])
    msg = " ".join(str(first["msg"]).split())[:200]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{loc + ': ' if loc else ''}{msg}{more}"


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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


H = TypeVar("H", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


def read_headed(
    path: Path,
    header: type[H],
    record: type[R],
    key: Callable[[R], Hashable],
    what: str,
    on_skip: OnSkip | None = None,
) -> tuple[H | None, list[R]]:
    """An experiment's file (the probe's, the raters'): a header line with the settings a resumed
    run must match, then one record per line; a key written twice counts once, the last line.
    A first line that is no header is an error naming the file (``what`` says what it should be);
    another unreadable line is skipped and reported to ``on_skip`` (default:
    :func:`warn_skipped`). ``(None, [])`` when the file does not exist."""
    if not path.exists():
        return None, []
    report = on_skip or warn_skipped
    head: H | None = None
    got: dict[Hashable, R] = {}
    with path.open("rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if n == 1:
                    head = header.model_validate(data)
                else:
                    rec = record.model_validate(data)
                    got[key(rec)] = rec
            except (json.JSONDecodeError, ValidationError) as exc:
                why = _why(exc)
            except UnicodeDecodeError:
                why = "not UTF-8 text"
            else:
                continue
            if n == 1:
                raise LogFormatError(f"{path}:1: not {what} ({why})")
            report(SkippedLine(path, n, why))
    return head, list(got.values())
