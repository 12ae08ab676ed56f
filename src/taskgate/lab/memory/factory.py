"""Build one episode-arm's memory store by kind and embedder name."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from taskgate.errors import UnknownNameError
from taskgate.lab.memory.base import Memory
from taskgate.lab.memory.topk import TopKMemory
from taskgate.llm.client import ChatClient, OnCall
from taskgate.matching.embedders import Embedder, HashEmbedder, minilm

EmbedderName = Literal["minilm", "hash"]
EMBEDDERS: tuple[EmbedderName, ...] = ("minilm", "hash")


def embedder_of(name: str) -> Embedder:
    """The process's MiniLM embedder, or a fresh hash fake (unit tests, smoke runs)."""
    if name == "minilm":
        return minilm()
    if name == "hash":
        return HashEmbedder()
    raise UnknownNameError(f"unknown embedder {name!r}; choose from: {', '.join(EMBEDDERS)}")


def build_memory(
    kind: str,
    *,
    embedder: str = "minilm",
    client: ChatClient | None = None,
    on_call: OnCall | None = None,
    store: Path | None = None,
    collection: str = "memory",
) -> Memory:
    """A new, empty store of ``kind`` (``topk`` or ``mem0``) for one episode-arm.

    Mem0 runs its extraction and update on ``client`` (the cell's agent model), keeps its vector
    store and history under ``store`` in the collection ``collection``, and logs its calls to
    ``on_call`` as ``memory`` calls.
    """
    if kind == "topk":
        return TopKMemory(embedder_of(embedder), threaded=embedder != "hash")
    if kind == "mem0":
        from taskgate.lab.memory.mem0 import Mem0Memory

        return Mem0Memory(embedder_of(embedder), client, on_call, store, collection)
    raise UnknownNameError(f"unknown memory {kind!r}; choose from: topk, mem0")
