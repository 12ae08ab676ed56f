"""The gating proxy: any OpenAI-compatible agent gets the ladder's rungs with no code change.

:func:`create_app` builds the ASGI app that ``taskgate proxy`` serves; :mod:`.journal` is the
conversation state as a fold of its journal, :mod:`.gating` the pure request and reply logic,
:mod:`.stream` the SSE path and :mod:`.store` the journal's SQLite and PostgreSQL homes.
"""

from __future__ import annotations

import taskgate.proxy._extra  # noqa: F401  (first: without the proxy's extra, one clear error)
from taskgate.journal.events import Conversation
from taskgate.journal.store import MemoryStore, SQLiteStore
from taskgate.journal.stores import open_store
from taskgate.proxy.app import create_app
from taskgate.proxy.session import ProxyConfig

__all__ = ["Conversation", "MemoryStore", "ProxyConfig", "SQLiteStore", "create_app", "open_store"]
