"""Matcher speed: milliseconds per match of the embedding matcher (plan embeddings cached, each
request new), against the LLM matcher's round trip on the embedded model; and the cascade matcher's share
of requests that needed no model call. Then the agreement of the matchers that make no model call
(lexical, embedding, and the library's default conversation reader, reading the message alone)
with the scripted step, per wording tier (as ``taskgate matchers`` prints it),
over every label and over the paper's core labels; the held-out tier is what no threshold saw.

Run: make bench   (or .venv/bin/python bench/bench_matcher.py [--llm-calls N])
Target: under 20 ms per match on a 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from taskgate import ChatClient, EmbeddingMatcher, Endpoint, LLMMatcher, LocalServer, MiniLMEmbedder
from taskgate.lab.scoring.agreement import probes
from taskgate.llm.local import MODEL_NAME
from taskgate.matching.embedding import segments


def _requests() -> list[tuple[object, str]]:
    items = list(probes(["1", "heldout"], ["procurement", "release"], range(100, 116)))
    seen: dict[str, tuple[object, str]] = {}
    for p in items:  # one request per wording: work orders aside, a repeat is a cache hit
        if p.label != "filler":
            seen.setdefault(segments(p.message)[0], (p.plan, p.message))
    return list(seen.values())


def embedding(requests: list[tuple[object, str]]) -> None:
    t0 = time.perf_counter()
    matcher = EmbeddingMatcher(MiniLMEmbedder())
    plan0 = requests[0][0]
    matcher.resolve(plan0, "warm up")  # type: ignore[arg-type]
    print(f"embedding: MiniLM loaded in {time.perf_counter() - t0:.1f} s")
    for plan, _ in requests:
        matcher.plan_vectors(plan)  # type: ignore[arg-type]
    new, again, confident = [], [], 0
    for plan, msg in requests:
        t = time.perf_counter()
        got = matcher.resolve(plan, msg)  # type: ignore[arg-type]
        new.append((time.perf_counter() - t) * 1000)
        confident += got.confident
        t = time.perf_counter()
        matcher.resolve(plan, msg)  # type: ignore[arg-type]
        again.append((time.perf_counter() - t) * 1000)
    q = statistics.quantiles(new, n=100)
    print(
        f"embedding: {len(new)} requests, each worded anew: {statistics.mean(new):.2f} ms per match "
        f"(p50 {q[49]:.2f}, p99 {q[98]:.2f}); a repeated request {statistics.mean(again):.3f} ms"
    )
    print(
        f"cascade: {confident}/{len(new)} ({confident / len(new):.0%}) of these requests are "
        "answered without a model call"
    )


async def _llm(requests: list[tuple[object, str]], n: int, base_url: str) -> list[float]:
    out = []
    async with ChatClient(Endpoint(base_url=base_url, model=MODEL_NAME)) as client:
        matcher = LLMMatcher(client)
        for plan, msg in requests[:n]:
            t = time.perf_counter()
            await matcher.match(plan, msg)  # type: ignore[arg-type]
            out.append((time.perf_counter() - t) * 1000)
    return out


def llm(requests: list[tuple[object, str]], n: int) -> None:
    with LocalServer() as srv:
        asyncio.run(_llm(requests[:1], 1, srv.base_url))  # warm the server
        times = asyncio.run(_llm(requests, n, srv.base_url))
    print(
        f"llm (embedded SmolLM2-135M via llama.cpp): {statistics.mean(times):.0f} ms per match "
        f"(median {statistics.median(times):.0f}, {len(times)} calls)"
    )


def agreement(seeds: range) -> None:
    from taskgate import ConversationReader, LexicalMatcher
    from taskgate.lab.scoring.agreement import LABELS, evaluate

    items = list(probes(["0", "1", "heldout"], ["procurement", "release"], seeds))
    readers = (
        ("lexical", LexicalMatcher()),
        ("embedding", EmbeddingMatcher()),
        ("conversation", ConversationReader()),  # the library's default reader, message alone
        # the reader with the bundled MiniLM naming the requests its rules cannot resolve
        ("conversation+embedding", ConversationReader(EmbeddingMatcher())),
    )
    for name, matcher in readers:
        t = time.perf_counter()
        got = asyncio.run(evaluate(name, matcher, items))
        ms = (time.perf_counter() - t) / len(items) * 1000
        parts = []
        for tier in ("0", "1", "heldout"):
            a, n = got.overall(tier, LABELS)
            c, m = got.overall(tier)
            parts.append(f"tier {tier} {a / n:.3f} (core {c / m:.3f})")
        print(f"agreement, {name}: {'; '.join(parts)}; {ms:.2f} ms per probe, {len(items)} probes")
        if name == "conversation":  # the kinds of the paper's probes, one figure each
            kinds = []
            for label in ("ask", "premature", "redo_probe", "legit_redo", "ambiguous"):
                a, n = got.overall("heldout", [label])
                kinds.append(f"{label} {a / n:.3f} ({a}/{n})" if n else f"{label} -")
            print(f"  per kind, held-out wordings: {'; '.join(kinds)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llm-calls", type=int, default=20, help="0 skips the LLM matcher")
    args = ap.parse_args()
    requests = _requests()
    embedding(requests)
    agreement(range(100, 116))
    if args.llm_calls:
        llm(requests, args.llm_calls)


if __name__ == "__main__":
    main()
