"""The journal in PostgreSQL (psycopg 3), shared by replicas (of the proxy or the MCP gate)
behind a load balancer.

The table is the SQLite store's: ``(conversation, seq)`` is the primary key, so two replicas that
both try to append a conversation's next event cannot both win; the loser gets
:class:`~taskgate.journal.store.StaleJournal`, reads what the winner wrote and answers 409.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from taskgate.errors import LogFormatError, MissingExtraError
from taskgate.journal.events import Event, dump_event, load_event
from taskgate.journal.store import StaleJournal

_SCHEMA = """
CREATE TABLE IF NOT EXISTS taskgate_journal (
    conversation TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event BYTEA NOT NULL,
    PRIMARY KEY (conversation, seq)
)
"""


class PostgresStore:
    """Journals in a PostgreSQL database named by a ``postgresql://`` URL (a small pool)."""

    shared = True

    def __init__(self, url: str, size: int = 8) -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise MissingExtraError("proxy", "the PostgreSQL journal") from None
        self.url, self.size = url, size
        self._pool: asyncio.Queue[Any] | None = None
        self._opening = asyncio.Lock()

    async def _conn(self) -> Any:
        import psycopg

        async with self._opening:
            if self._pool is None:
                pool: asyncio.Queue[Any] = asyncio.Queue()
                try:
                    for _ in range(self.size):
                        conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
                        pool.put_nowait(conn)
                    await pool._queue[0].execute(_SCHEMA)  # type: ignore[attr-defined]
                except psycopg.Error as exc:
                    raise LogFormatError(f"PostgreSQL at {_safe(self.url)}: {exc}") from None
                self._pool = pool
        return await self._pool.get()

    async def _run(self, fn: Any) -> Any:
        import psycopg

        conn = await self._conn()
        try:
            return await fn(conn)
        except psycopg.errors.UniqueViolation:
            raise
        except psycopg.Error as exc:
            raise LogFormatError(f"PostgreSQL at {_safe(self.url)}: {exc}") from None
        finally:
            assert self._pool is not None
            self._pool.put_nowait(conn)

    async def load(self, key: str, since: int = 0) -> list[Event]:
        async def select(conn: Any) -> list[Event]:
            cur = await conn.execute(
                "SELECT event FROM taskgate_journal WHERE conversation = %s AND seq >= %s "
                "ORDER BY seq",
                (key, since),
            )
            return [load_event(bytes(r[0])) for r in await cur.fetchall()]

        result: list[Event] = await self._run(select)
        return result

    async def append(self, key: str, seq: int, events: Sequence[Event]) -> None:
        import psycopg

        rows = [(key, seq + i, dump_event(e)) for i, e in enumerate(events)]

        async def insert(conn: Any) -> None:
            async with conn.transaction(), conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO taskgate_journal (conversation, seq, event) VALUES (%s, %s, %s)",
                    rows,
                )

        try:
            await self._run(insert)
        except psycopg.errors.UniqueViolation:
            raise StaleJournal(key) from None

    async def keys(self) -> list[str]:
        async def select(conn: Any) -> list[str]:
            cur = await conn.execute("SELECT DISTINCT conversation FROM taskgate_journal")
            return [str(r[0]) for r in await cur.fetchall()]

        result: list[str] = await self._run(select)
        return result

    async def close(self) -> None:
        if self._pool is None:
            return
        while not self._pool.empty():
            await self._pool.get_nowait().close()
        self._pool = None


def _safe(url: str) -> str:
    """The URL without its password."""
    head, at, tail = url.rpartition("@")
    if not at:
        return url
    scheme, _, cred = head.partition("://")
    return f"{scheme}://{cred.split(':')[0]}@{tail}"
