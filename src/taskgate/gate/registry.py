"""The live sessions of a gating surface, by key: one registry for the proxy's conversations, the
MCP gate's sessions and the LangGraph middleware's threads.

A registry is bounded: past its size, the least recently used entries go, except one that is in
use (its key's lock held or waited on, or the surface's ``busy`` says so). What goes is only the
in-memory copy: the surface keeps its state elsewhere (the journal, the graph's checkpoints) and
folds it back when the key is next used. Each key has one lock (an :class:`asyncio.Lock` for the
async surfaces, a :class:`threading.Lock` for the middleware), made on first use and dropped with
the entry, so two requests of one conversation never interleave and the registry never holds more
locks than entries it may evict.

The registry itself takes no lock: an async surface uses it from its event loop, the middleware
under its own lock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

from taskgate.errors import UsageError

T = TypeVar("T")


class Lock(Protocol):
    def locked(self) -> bool: ...


L = TypeVar("L", bound=Lock)


def _never(key: str, value: object) -> bool:
    return False


class SessionRegistry(Generic[T, L]):
    """Keyed live entries, bounded to ``size``, least recently used first out, one lock a key."""

    def __init__(
        self,
        size: int,
        new_lock: Callable[[], L],
        busy: Callable[[str, T], bool] = _never,
        gone: Callable[[str, T], object] | None = None,
    ) -> None:
        if size < 1:
            raise UsageError(f"a registry holds at least one entry, not {size}")
        self.size = size
        self._entries: OrderedDict[str, T] = OrderedDict()
        self._locks: dict[str, L] = {}
        self._new_lock = new_lock
        self._busy = busy
        self._gone = gone  # told of each entry evicted (not of one popped)

    # -- entries -------------------------------------------------------------------------------------
    def get(self, key: str) -> T | None:
        """The entry of ``key``, now the most recently used; None when it is not held."""
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def peek(self, key: str) -> T | None:
        """The entry of ``key`` without marking it used."""
        return self._entries.get(key)

    def put(self, key: str, value: T) -> None:
        """Hold ``value`` for ``key`` (the most recently used), then evict past the size."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        self.evict(keep=key)
        if len(self._locks) > 2 * len(self._entries) + 64:
            self._sweep()

    def pop(self, key: str) -> T | None:
        """Forget the in-memory entry of ``key`` (read afresh next time); its lock stays while
        someone holds it."""
        value = self._entries.pop(key, None)
        lock = self._locks.get(key)
        if lock is not None and not self._in_use(lock):
            del self._locks[key]
        return value

    def clear(self) -> None:
        for key in list(self._entries):
            self.pop(key)

    def __getitem__(self, key: str) -> T:
        return self._entries[key]

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    # -- locks ---------------------------------------------------------------------------------------
    def lock(self, key: str) -> L:
        """The one lock of ``key``: whoever changes its entry holds it."""
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = self._new_lock()
        return lock

    @property
    def locks(self) -> int:
        """How many locks the registry holds: its entries' and those in use, plus, at most, as
        many again left by keys whose entries went while their locks were held (swept when a
        put finds more than twice as many locks as entries, and 64)."""
        return len(self._locks)

    def _sweep(self) -> None:
        """Drop the locks of keys with no entry that no one holds or waits on."""
        for key in [k for k, lock in self._locks.items() if k not in self._entries]:
            if not self._in_use(self._locks[key]):
                del self._locks[key]

    def held(self, key: str) -> bool:
        """Whether ``key``'s lock is held or waited on now."""
        lock = self._locks.get(key)
        return lock is not None and self._in_use(lock)

    # -- eviction ------------------------------------------------------------------------------------
    def evict(self, keep: str | None = None) -> None:
        """Down to ``size``: the least recently used entries not in use go, with their locks
        (never ``keep``, the entry just put)."""
        extra = len(self._entries) - self.size
        if extra <= 0:
            return
        victims = []
        for key, value in self._entries.items():  # oldest first; stops at the first enough
            if not (key == keep or self.held(key) or self._busy(key, value)):
                victims.append(key)
                if len(victims) == extra:
                    break
        for key in victims:
            value = self._entries.pop(key)
            self._locks.pop(key, None)
            if self._gone is not None:
                self._gone(key, value)

    @staticmethod
    def in_use(lock: Lock) -> bool:
        """Whether ``lock`` is held or, for an :class:`asyncio.Lock`, waited on."""
        return lock.locked() or bool(getattr(lock, "_waiters", None))

    @staticmethod
    def _in_use(lock: Lock) -> bool:
        return lock.locked() or bool(getattr(lock, "_waiters", None))
