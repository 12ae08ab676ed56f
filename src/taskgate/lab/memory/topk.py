"""Top-k retrieval: each past exchange embedded (all-MiniLM-L6-v2 on the CPU, or the hash fake),
the ``k`` most similar to the current request recalled verbatim."""

from __future__ import annotations

import asyncio

import numpy as np

from taskgate.lab.memory.base import Recall, exchange_text
from taskgate.matching.embedders import Embedder, Vectors

#: the paper's k
TOP_K = 5


class TopKMemory:
    """The exchanges of one episode-arm and their embeddings; recall by cosine similarity (ties go
    to the earlier exchange). An exchange is embedded with the next request, in one batch: the
    model's cost per turn is one call, not two."""

    def __init__(self, embedder: Embedder, k: int = TOP_K, threaded: bool = True) -> None:
        self.name = f"topk:{embedder.name}:k{k}"
        self._embedder, self._k, self._threaded = embedder, k, threaded
        self._texts: list[str] = []
        self._rows: list[Vectors] = []  # one row per embedded exchange, in order
        self._pending: list[str] = []  # stored exchanges not embedded yet

    async def _embed(self, texts: list[str]) -> Vectors:
        if self._threaded:  # a real model: off the event loop, so other episode-arms go on
            return await asyncio.to_thread(self._embedder.embed, texts)
        return self._embedder.embed(texts)

    async def remember(self, user: str, reply: str) -> None:
        text = exchange_text(user, reply)
        self._texts.append(text)
        self._pending.append(text)

    async def recall(self, query: str) -> Recall:
        if not self._texts:
            return Recall((), 0)
        rows = await self._embed([*self._pending, query])
        self._rows += list(rows[:-1])
        self._pending = []
        scores = np.vstack(self._rows) @ rows[-1]
        order = np.argsort(-scores, kind="stable")[: self._k]
        return Recall(tuple(self._texts[i] for i in order), len(self._texts))

    async def close(self) -> None:
        self._texts, self._rows, self._pending = [], [], []
