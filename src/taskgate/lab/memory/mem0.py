"""Mem0 as a memory arm's store: the ``mem0ai`` library's own extraction (its prompt, its JSON),
run on the cell's agent model through taskgate's client, over a local Qdrant store.

Per episode-arm: one folder under the run directory's ``memory/`` (a Qdrant collection and Mem0's
history database), emptied when the episode-arm starts (an interrupted one reruns from its start).
Per turn: ``search`` with the request (no model call), then ``add`` of the exchange (one model
call: Mem0 extracts the facts to keep). Offline: Mem0's telemetry is off (``MEM0_TELEMETRY`` is set
before it is imported), its config folder is the store's, and its embedder is taskgate's
(MiniLM from the wheel, or the hash fake); nothing is downloaded.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from taskgate.errors import MissingExtraError, ModelError
from taskgate.lab.memory.base import Recall
from taskgate.llm.client import ChatClient, OnCall
from taskgate.matching.embedders import Embedder

USER = "user"  # one collection per episode-arm: a single user id within it
TOP_K = 5  # the paper's: the same five as the top-k arm
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _mem0() -> Any:
    """The ``mem0`` module, imported with telemetry off and its config folder out of ``~``."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(Path(tempfile.gettempdir()) / "taskgate-mem0"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import mem0
        import mem0.memory.main as main
        import mem0.memory.telemetry as telemetry
    except ImportError:
        raise MissingExtraError("memory", "the Mem0 memory arms") from None
    main.MEM0_TELEMETRY = telemetry.MEM0_TELEMETRY = False  # even if imported before
    import logging

    logging.getLogger("mem0").setLevel(logging.ERROR)  # spaCy and fastembed are absent on purpose
    return mem0


def _version() -> str:
    try:
        return version("mem0ai")
    except PackageNotFoundError:
        raise MissingExtraError("memory", "the Mem0 memory arms") from None


class Mem0Memory:
    """One episode-arm's Mem0 store."""

    def __init__(
        self,
        embedder: Embedder,
        client: ChatClient | None,
        on_call: OnCall | None,
        store: Path | None,
        collection: str,
    ) -> None:
        if client is None:
            raise ModelError("the Mem0 memory arms need a model endpoint (Mem0 extracts with it)")
        self.name = f"mem0-{_version()}:{embedder.name}:k{TOP_K}"
        self._embedder, self._client, self._on_call = embedder, client, on_call
        root = store or Path(tempfile.gettempdir()) / "taskgate-memory"
        self._dir = root / (_UNSAFE.sub("_", collection)[:200] or "memory")
        self._memory: Any = None
        self._size = 0
        self._loop: asyncio.AbstractEventLoop | None = None

    def _open(self) -> Any:
        mem0 = _mem0()
        from mem0.embeddings.base import EmbeddingBase
        from mem0.llms.base import LLMBase

        shutil.rmtree(self._dir, ignore_errors=True)  # a rerun starts from an empty store
        self._dir.mkdir(parents=True)
        dims = int(self._embedder.embed(["dimension"]).shape[1])
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "memory",
                    "path": str(self._dir / "qdrant"),
                    "embedding_model_dims": dims,
                    "on_disk": True,
                },
            },
            # placeholders, replaced below by taskgate's embedder and model (they call nothing)
            "embedder": {"provider": "openai", "config": {"api_key": "unused"}},
            "llm": {"provider": "openai", "config": {"api_key": "unused", "model": "unused"}},
            "history_db_path": str(self._dir / "history.db"),
        }
        memory = mem0.Memory.from_config(config)
        owner = self

        class _Embed(EmbeddingBase):  # type: ignore[misc]
            def embed(self, text: str, memory_action: str | None = None) -> list[float]:
                return [float(x) for x in owner._embedder.embed([text])[0]]

        class _LLM(LLMBase):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__({"model": owner._client.model})

            def generate_response(
                self,
                messages: Sequence[dict[str, str]],
                response_format: Any = None,
                tools: Any = None,
                tool_choice: str = "auto",
                **kw: Any,
            ) -> str:
                return owner._complete(messages, response_format)

        memory.embedding_model = _Embed()
        memory.llm = _LLM()
        return memory

    def _complete(self, messages: Sequence[dict[str, str]], response_format: Any) -> str:
        """Mem0's model call (from its worker thread) on the event loop's client."""
        assert self._loop is not None
        extra = {"response_format": response_format} if response_format else None
        call = self._client.complete(messages, "memory", self._on_call, extra)
        return asyncio.run_coroutine_threadsafe(call, self._loop).result().text

    async def _ready(self) -> Any:
        if self._memory is None:
            self._loop = asyncio.get_running_loop()
            self._memory = await asyncio.to_thread(self._open)
        return self._memory

    async def remember(self, user: str, reply: str) -> None:
        memory = await self._ready()
        exchange = [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
        try:
            added = await asyncio.to_thread(memory.add, exchange, user_id=USER)
        except ModelError:
            raise
        except Exception as exc:  # Mem0 wraps a failed model call in its own error
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, ModelError):
                raise cause from None
            raise ModelError(f"Mem0 could not store the exchange: {exc}") from None
        self._size += sum(1 for r in added.get("results", []) if r.get("event") == "ADD")

    async def recall(self, query: str) -> Recall:
        memory = await self._ready()
        found = await asyncio.to_thread(
            memory.search, query, filters={"user_id": USER}, top_k=TOP_K
        )
        items = tuple(str(r["memory"]) for r in found.get("results", []))
        return Recall(items, self._size)

    async def close(self) -> None:
        memory, self._memory = self._memory, None
        if memory is not None:
            await asyncio.to_thread(_close, memory)


def _close(memory: Any) -> None:
    memory.close()
    client = getattr(getattr(memory, "vector_store", None), "client", None)
    if client is not None:
        client.close()
