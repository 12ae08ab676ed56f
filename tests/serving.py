"""An ASGI app served on loopback for a test, as every gate is served (a real uvicorn server)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def served(app: Any) -> Iterator[str]:
    """``app`` on loopback in a background thread, with the gates' own serving configuration
    (:func:`taskgate.serving.serve.config`); its base URL."""
    import uvicorn

    from taskgate.llm.fake import loopback_socket
    from taskgate.serving.serve import config

    sock = loopback_socket(0)
    server = uvicorn.Server(config(app))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
