"""Opening the journal a ``--db`` value names: in memory, a SQLite file, or PostgreSQL."""

from __future__ import annotations

from taskgate.journal.postgres import PostgresStore
from taskgate.journal.store import MemoryStore, SQLiteStore, Store


def open_store(target: str | None) -> Store:
    """The store a ``--db`` value names: nothing (memory), a ``postgresql://`` URL, or a path."""
    if not target:
        return MemoryStore()
    if target.startswith(("postgresql://", "postgres://")):
        return PostgresStore(target)
    return SQLiteStore(target)
