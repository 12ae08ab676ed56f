"""The journal: a gated conversation as an append-only record of events, and where it is kept.

Shared by every surface that keeps its conversations outside the process (the gating proxy, the
MCP gate): :mod:`.events` holds the events and the fold (:class:`Conversation`), :mod:`.store`
the in-memory and SQLite stores, :mod:`.postgres` the PostgreSQL store, and :func:`open_store`
opens the one a ``--db`` value names.
"""

from taskgate.journal.events import Conversation, Event, dump_event, load_event
from taskgate.journal.store import MemoryStore, SQLiteStore, StaleJournal, Store
from taskgate.journal.stores import open_store

__all__ = [
    "Conversation",
    "Event",
    "MemoryStore",
    "SQLiteStore",
    "StaleJournal",
    "Store",
    "dump_event",
    "load_event",
    "open_store",
]
