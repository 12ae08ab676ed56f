"""The one session registry the proxy, the MCP gate and the middleware keep their live state in."""

from __future__ import annotations

import asyncio
import threading

import pytest

from taskgate.errors import UsageError
from taskgate.gate.registry import SessionRegistry


def test_the_least_recently_used_entries_go_past_the_size() -> None:
    reg: SessionRegistry[str, threading.Lock] = SessionRegistry(2, threading.Lock)
    reg.put("a", "A")
    reg.put("b", "B")
    assert reg.get("a") == "A"  # now the most recently used
    reg.put("c", "C")
    assert list(reg) == ["a", "c"]
    assert reg.peek("b") is None


def test_an_entry_whose_lock_is_held_is_never_evicted_and_keeps_its_lock() -> None:
    reg: SessionRegistry[str, threading.Lock] = SessionRegistry(1, threading.Lock)
    reg.put("a", "A")
    lock = reg.lock("a")
    with lock:
        reg.put("b", "B")
        reg.put("c", "C")
        assert "a" in reg and reg.lock("a") is lock  # one lock a key, while in use
    reg.put("d", "D")
    assert list(reg) == ["d"] and reg.locks <= 1


def test_an_entry_the_surface_calls_busy_stays() -> None:
    busy = {"a"}
    gone: list[str] = []
    reg: SessionRegistry[str, threading.Lock] = SessionRegistry(
        1, threading.Lock, busy=lambda k, v: k in busy, gone=lambda k, v: gone.append(k)
    )
    reg.put("a", "A")
    reg.put("b", "B")
    assert list(reg) == ["a", "b"] and gone == []
    busy.clear()
    reg.put("c", "C")
    assert list(reg) == ["c"] and gone == ["a", "b"]


def test_popping_an_entry_keeps_a_lock_someone_holds() -> None:
    """A request that forgets its conversation (a journal conflict) while it holds the key's lock
    must not let the next request of that key take a fresh lock and interleave."""
    reg: SessionRegistry[str, threading.Lock] = SessionRegistry(4, threading.Lock)
    reg.put("a", "A")
    lock = reg.lock("a")
    with lock:
        reg.pop("a")
        assert reg.lock("a") is lock
    reg.pop("a")
    assert reg.locks == 0


def test_an_awaited_asyncio_lock_counts_as_in_use() -> None:
    async def run() -> list[str]:
        reg: SessionRegistry[str, asyncio.Lock] = SessionRegistry(1, asyncio.Lock)
        reg.put("a", "A")
        lock = reg.lock("a")
        await lock.acquire()
        waiter = asyncio.ensure_future(lock.acquire())
        await asyncio.sleep(0)
        lock.release()  # the waiter holds it next
        reg.put("b", "B")
        kept = list(reg)
        await waiter
        lock.release()
        return kept

    assert asyncio.run(run()) == ["a", "b"]


def test_a_registry_holds_at_least_one_entry() -> None:
    with pytest.raises(UsageError, match="at least one"):
        SessionRegistry(0, threading.Lock)


def test_locks_left_by_entries_that_went_while_held_are_swept() -> None:
    reg: SessionRegistry[str, threading.Lock] = SessionRegistry(4, threading.Lock)
    for i in range(500):
        key = f"k{i}"
        with reg.lock(key):
            reg.pop(key)  # e.g. a journal conflict while the request held the key
        reg.put("live", "L")
    assert reg.locks <= 2 * len(reg) + 64
