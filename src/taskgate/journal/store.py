"""Where journals live: SQLite (one process) or PostgreSQL (replicas sharing state).

A journal row is ``(conversation, seq, event)``; a request's events are appended in one
transaction, at the sequence numbers that follow what the proxy folded, so a row is never written
twice and a second writer of the same conversation (another replica) loses with
:class:`StaleJournal` instead of forking it. Nothing is ever updated or deleted.

SQLite runs in WAL mode with ``synchronous=NORMAL``: every commit survives a killed process
(SIGKILL); only a power loss can take the newest ones. See :class:`SQLiteStore` for where its
writes run.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from taskgate.errors import LogFormatError, TaskgateError
from taskgate.journal.events import Event, dump_event, load_event

T = TypeVar("T")


class StaleJournal(TaskgateError):
    """Another writer appended to this conversation first; fold its events and try again."""


class Store(Protocol):
    #: whether other processes may write too (then each request first reads what they added)
    shared: bool

    async def load(self, key: str, since: int = 0) -> list[Event]: ...

    async def append(self, key: str, seq: int, events: Sequence[Event]) -> None: ...

    async def keys(self) -> list[str]: ...

    async def close(self) -> None: ...


class MemoryStore:
    """No durability: for tests and for a proxy run without ``--db``."""

    shared = False

    def __init__(self) -> None:
        self._rows: dict[str, list[Event]] = {}

    async def load(self, key: str, since: int = 0) -> list[Event]:
        return list(self._rows.get(key, [])[since:])

    async def append(self, key: str, seq: int, events: Sequence[Event]) -> None:
        rows = self._rows.setdefault(key, [])
        if len(rows) != seq:
            raise StaleJournal(key)
        rows.extend(events)

    async def keys(self) -> list[str]:
        return list(self._rows)

    async def close(self) -> None:
        return None


_SCHEMA = """
CREATE TABLE IF NOT EXISTS journal (
    conversation TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event BLOB NOT NULL,
    PRIMARY KEY (conversation, seq)
) WITHOUT ROWID
"""


class SQLiteStore:
    """The journal in one SQLite file (WAL). A commit appends to the write-ahead log without
    syncing it (about 50 us), so it runs right where the request is handled: a writer thread
    cost more in handing the GIL back and forth than the commit itself, and put 30-80 ms on the
    proxy's p99 (bench/bench_proxy.py). The slow part of a WAL, the checkpoint that copies it into
    the database file and syncs it, runs off the event loop on a thread of its own."""

    shared = False
    #: checkpoint when the write-ahead log has grown by this many pages (SQLite's default is 1000)
    CHECKPOINT_PAGES = 1000

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._db = _connect(self.path)
            self._db.execute("PRAGMA wal_autocheckpoint=0")  # ours, off the loop
        except sqlite3.Error as exc:
            raise LogFormatError(f"{self.path}: not a usable SQLite database: {exc}") from None
        self._pages = 0
        self._wake = threading.Event()
        self._closing = False
        self._checkpointer = threading.Thread(target=self._checkpoint_loop, daemon=True)
        self._checkpointer.start()

    async def load(self, key: str, since: int = 0) -> list[Event]:
        rows = await asyncio.to_thread(self._read, self._select, key, since)
        return [load_event(r) for r in rows]

    def _read(self, read: Callable[..., T], *args: Any) -> T:
        """A read of the journal; a failure of SQLite's is a :class:`LogFormatError` naming the
        file (a 503 on the surfaces), never a raw error."""
        try:
            return read(*args)
        except sqlite3.Error as exc:
            raise LogFormatError(f"{self.path}: the journal cannot be read: {exc}") from None

    def _select(self, key: str, since: int) -> list[bytes]:
        with _reader(self.path) as db:
            cur = db.execute(
                "SELECT event FROM journal WHERE conversation = ? AND seq >= ? ORDER BY seq",
                (key, since),
            )
            return [bytes(r[0]) for r in cur.fetchall()]

    async def append(self, key: str, seq: int, events: Sequence[Event]) -> None:
        rows = [(key, seq + i, dump_event(e)) for i, e in enumerate(events)]
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT INTO journal (conversation, seq, event) VALUES (?, ?, ?)", rows
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.IntegrityError:
            raise StaleJournal(key) from None
        except sqlite3.Error as exc:
            if self._db.in_transaction:  # a failed COMMIT leaves it open
                self._db.execute("ROLLBACK")
            raise LogFormatError(f"{self.path}: the journal write failed: {exc}") from None
        self._pages += 1 + sum(len(r[2]) for r in rows) // 4096
        if self._pages >= self.CHECKPOINT_PAGES:
            self._pages = 0
            self._wake.set()

    async def keys(self) -> list[str]:
        def read() -> list[str]:
            with _reader(self.path) as db:
                cur = db.execute("SELECT DISTINCT conversation FROM journal")
                return [str(r[0]) for r in cur.fetchall()]

        return await asyncio.to_thread(self._read, read)

    async def close(self) -> None:
        self._closing = True
        self._wake.set()
        await asyncio.to_thread(self._checkpointer.join)
        self._db.close()

    def _checkpoint_loop(self) -> None:
        with _reader(self.path) as db:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._closing:
                    return
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")  # blocks no reader or writer


@contextlib.contextmanager
def _reader(path: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
    try:
        yield db
    finally:
        db.close()


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(_SCHEMA)
    return db
