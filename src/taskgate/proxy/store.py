"""Where the proxy's journals live: SQLite (one proxy) or PostgreSQL (replicas sharing state).

A journal row is ``(conversation, seq, event)``; a request's events are appended in one
transaction, at the sequence numbers that follow what the proxy folded, so a row is never written
twice and a second writer of the same conversation (another replica) loses with
:class:`StaleJournal` instead of forking it. Nothing is ever updated or deleted.

SQLite runs in WAL mode on one writer thread, off the event loop; appends queued while a commit is
under way go out together in the next one (a group commit). ``synchronous=NORMAL`` keeps every
commit across a killed process (SIGKILL); only a power loss can take the newest ones.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Protocol

from ..errors import LogFormatError, TaskgateError
from .journal import Event, dump_event, load_event


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

_Job = tuple[str, int, list[bytes], Future[None]]


class SQLiteStore:
    """The journal in one SQLite file (WAL), written by one thread with group commits."""

    shared = False

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._db = _connect(self.path)
        except sqlite3.Error as exc:
            raise LogFormatError(f"{self.path}: not a usable SQLite database: {exc}") from None
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write_loop, daemon=True)
        self._read_lock = threading.Lock()
        self._reader = _connect(self.path)
        self._writer.start()

    async def load(self, key: str, since: int = 0) -> list[Event]:
        rows = await asyncio.to_thread(self._select, key, since)
        return [load_event(r) for r in rows]

    def _select(self, key: str, since: int) -> list[bytes]:
        with self._read_lock:
            cur = self._reader.execute(
                "SELECT event FROM journal WHERE conversation = ? AND seq >= ? ORDER BY seq",
                (key, since),
            )
            return [bytes(r[0]) for r in cur.fetchall()]

    async def append(self, key: str, seq: int, events: Sequence[Event]) -> None:
        done: Future[None] = Future()
        self._jobs.put((key, seq, [dump_event(e) for e in events], done))
        await asyncio.wrap_future(done)

    async def keys(self) -> list[str]:
        def read() -> list[str]:
            with self._read_lock:
                cur = self._reader.execute("SELECT DISTINCT conversation FROM journal")
                return [str(r[0]) for r in cur.fetchall()]

        return await asyncio.to_thread(read)

    async def close(self) -> None:
        self._jobs.put(None)
        await asyncio.to_thread(self._writer.join)
        self._reader.close()

    # -- the writer thread -----------------------------------------------------------------------
    def _write_loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                break
            batch = [job]
            while True:  # whatever queued meanwhile goes out in the same commit
                try:
                    more = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._jobs.put(None)
                    break
                batch.append(more)
            self._commit(batch)
        self._db.close()

    def _commit(self, batch: list[_Job]) -> None:
        failed: dict[int, BaseException] = {}
        try:
            self._db.execute("BEGIN IMMEDIATE")
            for n, (key, seq, rows, _) in enumerate(batch):
                self._db.execute("SAVEPOINT job")
                try:
                    self._db.executemany(
                        "INSERT INTO journal (conversation, seq, event) VALUES (?, ?, ?)",
                        [(key, seq + i, row) for i, row in enumerate(rows)],
                    )
                    self._db.execute("RELEASE job")
                except sqlite3.IntegrityError:
                    self._db.execute("ROLLBACK TO job")
                    self._db.execute("RELEASE job")
                    failed[n] = StaleJournal(key)
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            for _, _, _, done in batch:
                done.set_exception(LogFormatError(f"{self.path}: the journal write failed: {exc}"))
            return
        for n, (_, _, _, done) in enumerate(batch):
            if n in failed:
                done.set_exception(failed[n])
            else:
                done.set_result(None)


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(_SCHEMA)
    return db


def open_store(target: str | None) -> Store:
    """The store a ``--db`` value names: nothing (memory), a ``postgresql://`` URL, or a path."""
    if not target:
        return MemoryStore()
    if target.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore(target)
    return SQLiteStore(target)
