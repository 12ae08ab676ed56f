"""The proxy on loopback in a background thread, for tests and benchmarks (a real uvicorn server,
as ``taskgate proxy`` runs it)::

    with FakeServer(protocol_responder) as upstream, ProxyServer(ProxyConfig(upstream.base_url)) as proxy:
        client = openai.OpenAI(base_url=proxy.base_url, api_key="x")
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from taskgate.errors import UsageError
from taskgate.journal.store import Store
from taskgate.llm.fake import loopback_socket
from taskgate.proxy.app import create_app
from taskgate.proxy.session import ProxyConfig


@dataclass
class ProxyServer:
    config: ProxyConfig
    store: Store | None = None
    port: int = 0
    app: Any = field(default=None, init=False, repr=False)  # the Starlette app it serves
    _server: object = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def __enter__(self) -> ProxyServer:
        import uvicorn

        from taskgate.serving.serve import config

        sock = loopback_socket(self.port)
        self.port = int(sock.getsockname()[1])
        app = self.app = create_app(self.config, self.store)
        server = uvicorn.Server(config(app, lifespan="on"))
        self._server = server
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise UsageError(f"the proxy did not start on port {self.port}")
            time.sleep(0.01)
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        server = self._server
        if server is not None:
            server.should_exit = True  # type: ignore[attr-defined]
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._server = self._thread = None
