"""The embedding matcher: requests resolved to steps by sentence similarity, with no model call.

Each step's wording (its brief text; a tool-bound step without text is read by its tool name) is
embedded once per plan and cached. A request is cut into segments (the whole message, and its
parts between quotes, "or", dashes and sentence ends, with work orders removed), each embedded
once and cached, and each step scored by its best segment. Then:

* **ambiguous**: two or more segments each name a different step from ``name`` up (as in
  "'send the RFQ' or 'tabulate the quotes', whichever you think"): no step, both candidates;
* **nothing near**: the best step is under ``near``: no step, no candidates (small talk);
* **resolved**: the best step reaches ``accept``: that step, *confident* when it also reaches
  ``sure`` and leads the second step by ``sure_margin``;
* **unsure**, in between: no step, the nearest candidates (one, or two when they are close).

Ambiguous, nothing-near and confident resolutions are what the cascade matcher keeps; it asks the
LLM matcher about the rest. The explicit-redo flag comes from :mod:`taskgate.matching.redo` and is
raised only with a step. Thresholds are calibrated on the generator's own paraphrases (tiers 0 and 1, both
domains, scored with ``taskgate matchers --tiers 0,1``), never on the held-out wordings.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Generic, TypeVar

from taskgate.core.plan import Plan
from taskgate.errors import MissingExtraError

try:
    import numpy as np
except ModuleNotFoundError:  # pragma: no cover - without the extra
    raise MissingExtraError("embedding", "the embedding matchers") from None
from taskgate.matching.askback import step_wording
from taskgate.matching.embedders import Embedder, HashEmbedder, Vectors, minilm
from taskgate.matching.redo import explicit_redo
from taskgate.roles import Match

_WORK_ORDER = re.compile(r"\(?#W\d+\)?")
_CUT = re.compile(r"['\"\u2018\u2019\u201c\u201d]|\s--\s|[;.!?]\s|\b(?:or|either|whichever)\b")
_WORDS = re.compile(r"[A-Za-z0-9]+")
#: what of a request is read: MiniLM reads at most 256 word pieces of a text anyway, and a hostile
#: megabyte must not become thousands of segments to embed
MAX_CHARS, MAX_SEGMENTS = 2000, 12
K = TypeVar("K")
V = TypeVar("V")


class _Lru(Generic[K, V]):
    """A small thread-safe least-recently-used map."""

    def __init__(self, size: int) -> None:
        self._data: OrderedDict[K, V] = OrderedDict()
        self._size, self._lock = size, threading.Lock()

    def peek(self, key: K) -> V | None:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        return None

    def put(self, key: K, value: V) -> V:
        with self._lock:
            self._data[key] = value
            while len(self._data) > self._size:
                self._data.popitem(last=False)
        return value


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Cosine similarities of the decision rule (see the module's docstring)."""

    accept: float = 0.45  # the nearest step is taken from here up
    near: float = 0.4  # under this, nothing is near: no step and no ask-back
    name: float = 0.4  # a segment names a step from here up (two named steps: ambiguous)
    margin: float = 0.0  # ... when it leads the segment's second step by this much
    sure: float = 0.6  # a resolved step is confident from here up
    sure_margin: float = 0.08  # ... when it leads the second step by this much


@dataclass(frozen=True, slots=True)
class Resolution:
    """What the embedding matcher decided, and how sure it was."""

    step: str | None
    candidates: tuple[str, ...] = ()
    explicit_redo: bool = False
    confident: bool = True
    best: float = 0.0
    second: float = 0.0

    def as_match(self) -> Match:
        return Match(self.step, self.explicit_redo, self.candidates)


def segments(message: str) -> list[str]:
    """The whole request (work orders removed) and its parts of two or more words: of its first
    ``MAX_CHARS`` characters, at most ``MAX_SEGMENTS`` texts."""
    text = " ".join(_WORK_ORDER.sub(" ", message[:MAX_CHARS]).split())
    parts = [" ".join(p.split()) for p in _CUT.split(text)]
    out = [text] if text else []
    out += [p for p in parts if len(_WORDS.findall(p)) >= 2 and p != text]
    return list(dict.fromkeys(out))[:MAX_SEGMENTS]


class EmbeddingMatcher:
    """The :class:`~taskgate.Matcher` protocol on sentence embeddings (MiniLM by default)."""

    def __init__(
        self, embedder: Embedder | None = None, thresholds: Thresholds | None = None
    ) -> None:
        self.embedder: Embedder = embedder or minilm()
        self.thresholds = thresholds or Thresholds()
        self._texts: _Lru[str, Vectors] = _Lru(16384)  # step wordings and request segments
        self._pool: ThreadPoolExecutor | None = None  # the model's own thread, made on first use

    async def match(self, plan: Plan, message: str) -> Match:
        return (await self.aresolve(plan, message)).as_match()

    async def aresolve(self, plan: Plan, message: str) -> Resolution:
        """:meth:`resolve`, on the event loop when every text is cached (microseconds), else on
        the matcher's own thread, so the model neither blocks the loop nor fills its default
        thread pool (which a server needs for other work)."""
        texts = [*(step_wording(plan, s) for s in plan.steps), *segments(message)]
        if all(self._texts.peek(t) is not None for t in texts):
            return self.resolve(plan, message)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="taskgate-embedding")
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, self.resolve, plan, message
        )

    def match_now(self, plan: Plan, message: str) -> Match:
        return self.resolve(plan, message).as_match()

    def _embed(self, texts: Sequence[str]) -> Vectors:
        got: dict[str, Vectors] = {}
        missing: list[str] = []
        for text in dict.fromkeys(texts):
            row = self._texts.peek(text)
            if row is None:
                missing.append(text)
            else:
                got[text] = row
        if missing:
            for text, new in zip(missing, self.embedder.embed(missing), strict=True):
                got[text] = self._texts.put(text, new)
        return np.stack([got[t] for t in texts])

    def plan_vectors(self, plan: Plan) -> tuple[list[str], Vectors]:
        ids = list(plan.steps)
        return ids, self._embed([step_wording(plan, s) for s in ids])

    def resolve(self, plan: Plan, message: str) -> Resolution:
        ids, steps = self.plan_vectors(plan)
        parts = segments(message)
        if not ids or not parts:
            return Resolution(None)
        sims = self._embed(parts) @ steps.T  # segments x steps
        return self._decide(ids, sims, message)

    def _decide(self, ids: list[str], sims: Vectors, message: str) -> Resolution:
        t = self.thresholds
        score = sims.max(axis=0)
        order = np.argsort(-score, kind="stable")
        best = float(score[order[0]])
        second = float(score[order[1]]) if len(ids) > 1 else 0.0
        named = _named(sims[1:], t) if sims.shape[0] > 1 else []
        if len(named) >= 2:
            ranked = sorted(named, key=lambda j: -score[j])
            return Resolution(None, tuple(ids[j] for j in ranked), False, True, best, second)
        if best < t.near:
            return Resolution(None, (), False, True, best, second)
        top = ids[order[0]]
        if best >= t.accept:
            sure = best >= t.sure and best - second >= t.sure_margin
            return Resolution(top, (), explicit_redo(message), sure, best, second)
        close = len(ids) > 1 and best - second < t.sure_margin
        cands = (top, ids[order[1]]) if close else (top,)
        return Resolution(None, cands, False, False, best, second)


def _named(sims: Vectors, t: Thresholds) -> list[int]:
    """The steps that some segment names clearly: above ``name`` and ahead by ``margin``."""
    out: list[int] = []
    for row in sims:
        order = np.argsort(-row, kind="stable")
        first = float(row[order[0]])
        second = float(row[order[1]]) if len(row) > 1 else 0.0
        if first >= t.name and first - second >= t.margin and int(order[0]) not in out:
            out.append(int(order[0]))
    return out


def shared_matcher(fake: bool = False) -> EmbeddingMatcher:
    """The process's one embedding matcher on MiniLM (``fake``: on :class:`HashEmbedder`), so
    that every episode-arm, conversation and gate shares its model and caches."""
    return _shared(bool(fake))


@cache
def _shared(fake: bool) -> EmbeddingMatcher:
    if fake:
        return EmbeddingMatcher(HashEmbedder(), HASH_THRESHOLDS)
    return EmbeddingMatcher(minilm())


#: the fake embedder's own thresholds (hashed words name a step less loosely than MiniLM)
HASH_THRESHOLDS = Thresholds(name=0.6, margin=0.03)
