"""Running a coroutine from sync code, also when the caller's thread already runs a loop."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end and return its result (on a fresh loop in a worker thread when
    this thread already runs one, e.g. inside a notebook or an async framework). asyncio is
    imported here, not with the library: ``from taskgate import ToolGate`` stays lean."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
