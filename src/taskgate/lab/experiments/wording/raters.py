"""The redo-probe wording study (Appendix A.3): model raters judge whether each redo-probe wording
reads, under the brief's one-shot rule, as a fresh order, a re-mention, or ambiguous.

The items are every paraphrase of every step template of the domains as a redo probe, and
``samples`` redo-probe turns drawn from generated episodes. Each of ``raters`` sessions judges every
item on its own (one call per item, the rater's own seed), reading only the rule and the request.
Verdicts go to ``raters.jsonl`` (resumable); the table counts majority and unanimous verdicts.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import orjson
from pydantic import BaseModel, ConfigDict

from taskgate.errors import LogFormatError, ModelError, ReplyFormatError, UsageError
from taskgate.lab.episodes.generator import cap, generate_episode
from taskgate.lab.episodes.models import EpisodeParams
from taskgate.lab.episodes.pools import POOLS
from taskgate.lab.experiments.protocol import ExperimentFile, Header
from taskgate.lab.progress import Progress
from taskgate.lab.rundir import OnSkip
from taskgate.lab.scoring.table import Table
from taskgate.llm.client import ChatClient, OnCall
from taskgate.llm.jsonreply import parse_reply
from taskgate.protocol.render import ONE_SHOT_SENTENCE

Verdict = Literal["fresh order", "re-mention", "ambiguous"]
VERDICTS: tuple[Verdict, ...] = ("fresh order", "re-mention", "ambiguous")
RATERS = "raters.jsonl"

RATER_PROMPT = (
    "A user working with an assistant on a multi-step project has set this rule:\n\n"
    '"{rule}"\n\nThe step named in the next message is already finished. Under the rule, does the '
    "message order the step to be done again (a fresh order), only mention it (a re-mention: the "
    "assistant should confirm it is done), or is it ambiguous?\n\nMESSAGE: {request}\n\n"
    'Answer with JSON only: {{"verdict": "fresh order" | "re-mention" | "ambiguous"}}'
)


class _Reply(BaseModel):
    verdict: Verdict


class Item(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    kind: Literal["template", "turn"]
    request: str


class RaterRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    item: str
    kind: Literal["template", "turn"]
    rater: int
    verdict: Verdict | None  # None: the rater's reply held no verdict


def items(domains: tuple[str, ...], samples: int, seed: int = 100) -> list[Item]:
    """The templates' paraphrases as redo probes, then ``samples`` sampled redo-probe turns."""
    out = [
        Item(key=f"{t.slug}/{i}", kind="template", request=f"{cap(p)} (#W5000).")
        for d in domains
        for t in POOLS[d]
        for i, p in enumerate(t.paraphrases)
    ]
    turns = []
    for s in range(seed, seed + max(samples, 0) * 2):
        for d in domains:
            ep = generate_episode(EpisodeParams(seed=s, steps=15, density=0.3, domain=d))
            turns += [(ep.id, t) for t in ep.turns if t.label == "redo_probe"]
    for ep_id, t in random.Random(seed).sample(turns, min(samples, len(turns))):
        out.append(Item(key=f"{ep_id}/{t.index}", kind="turn", request=t.message))
    return out


class Rater(Protocol):
    name: str

    async def judge(self, item: Item, rater: int) -> str: ...


class LLMRater:
    name = "llm"

    def __init__(self, client: ChatClient, temperature: float, on_call: OnCall | None) -> None:
        self._client, self._temperature, self._on_call = client, temperature, on_call

    async def judge(self, item: Item, rater: int) -> str:
        prompt = RATER_PROMPT.format(rule=ONE_SHOT_SENTENCE, request=item.request)
        extra = {"temperature": self._temperature, "seed": rater}
        msgs = [{"role": "user", "content": prompt}]
        return (await self._client.complete(msgs, "matcher", self._on_call, extra)).text


class ScriptedRater:
    """An oracle: every rater says ``verdict``; with ``split``, rater i says VERDICTS[i % 3]."""

    def __init__(self, verdict: Verdict = "re-mention", split: bool = False) -> None:
        self._verdict, self._split = verdict, split
        self.name = "scripted:split" if split else f"scripted:{verdict}"

    async def judge(self, item: Item, rater: int) -> str:
        verdict = VERDICTS[rater % 3] if self._split else self._verdict
        return orjson.dumps({"verdict": verdict}).decode()


@dataclass(frozen=True)
class RaterConfig:
    raters: int = 3
    samples: int = 40
    domains: tuple[str, ...] = ("procurement",)
    concurrency: int = 8

    def __post_init__(self) -> None:
        if self.raters < 1 or self.samples < 0 or self.concurrency < 1:
            raise UsageError("raters and concurrency must be at least 1, samples at least 0")
        unknown = [d for d in self.domains if d not in POOLS]
        if unknown:
            raise UsageError(f"unknown domain(s) {unknown}; choose from: {', '.join(POOLS)}")


class RaterHeader(Header):
    """The study's settings: a resumed study must match them."""

    kind: Literal["raters"] = "raters"
    rater: str
    raters: int
    samples: int
    domains: tuple[str, ...]


#: the raters study's file: its settings, then one verdict per (item, rater) per line
RATERS_FILE = ExperimentFile(RATERS, RaterHeader, "a raters study")


def read_raters(
    out: Path, on_skip: OnSkip | None = None
) -> tuple[RaterHeader | None, list[RaterRecord]]:
    """The header and each (item, rater)'s last verdict; unreadable lines are skipped."""
    return RATERS_FILE.read(out, RaterRecord, lambda r: (r.item, r.rater), on_skip)


async def run_raters(
    out: Path,
    rater: Rater,
    config: RaterConfig,
    progress: Progress | None = None,
    on_skip: OnSkip | None = None,
) -> Progress:
    """Every (item, rater) without a verdict in ``out`` (a reply that held none is asked again);
    rerunning resumes."""
    header = RaterHeader(
        rater=rater.name, raters=config.raters, samples=config.samples, domains=config.domains
    )
    old, records = read_raters(out, on_skip)
    RATERS_FILE.check(out, old, header)
    done = {(r.item, r.rater) for r in records if r.verdict is not None}
    jobs = [
        (item, r)
        for item in items(config.domains, config.samples)
        for r in range(1, config.raters + 1)
    ]
    todo = [j for j in jobs if (j[0].key, j[1]) not in done]
    progress = progress or Progress()
    progress.total = len(jobs)
    progress.skipped = len(jobs) - len(todo)
    for _ in range(progress.skipped):
        progress.advance()
    pending = iter(todo)
    with RATERS_FILE.appending(out, header, old is None) as sink:

        async def worker() -> None:
            for item, r in pending:
                try:
                    reply = await rater.judge(item, r)
                except ModelError as exc:
                    progress.fail(f"{item.key} rater {r}: {exc}")
                    continue
                try:
                    verdict: Verdict | None = parse_reply(reply, _Reply).verdict
                except ReplyFormatError:
                    verdict = None
                rec = RaterRecord(item=item.key, kind=item.kind, rater=r, verdict=verdict)
                sink(rec)
                progress.advance()

        await asyncio.gather(*(worker() for _ in range(config.concurrency)))
    return progress


def rater_table(out: Path, on_skip: OnSkip | None = None) -> Table:
    """The study's counts, for the templates, the sampled turns and both: a verdict is a majority
    of the study's raters (not of the verdicts that came back); an item some rater has not judged
    yet is counted as incomplete."""
    header, records = read_raters(out, on_skip)
    if header is None or not records:
        raise LogFormatError(f"{out} holds no rater verdicts ({RATERS})")
    by: dict[str, list[RaterRecord]] = {}
    for r in records:
        by.setdefault(r.item, []).append(r)
    need = header.raters
    body = []
    for label, kinds in (("templates", {"template"}), ("sampled turns", {"turn"}), ("all", None)):
        groups = [g for g in by.values() if kinds is None or g[0].kind in kinds]
        if not groups:
            continue
        n = len(groups)
        majority: Counter[str] = Counter()
        unanimous = no_majority = incomplete = 0
        for g in groups:
            incomplete += len(g) < need
            votes = Counter(r.verdict or "no verdict" for r in g)
            top, k = votes.most_common(1)[0]
            if k * 2 > need:
                majority[top] += 1
                unanimous += k == need and top == "re-mention"
            else:
                no_majority += 1
        body.append(
            [
                label,
                str(n),
                str(need),
                f"{majority['re-mention']}/{n}",
                f"{unanimous}/{n}",
                f"{majority['fresh order']}/{n}",
                f"{majority['ambiguous']}/{n}",
                f"{majority['no verdict']}/{n}",
                f"{no_majority}/{n}",
                f"{incomplete}/{n}",
            ]
        )
    columns = [
        "items",
        "n",
        "raters",
        "re-mention by majority",
        "re-mention, unanimous",
        "fresh-order majority",
        "ambiguous majority",
        "no verdict (replies unreadable)",
        "no majority",
        "incomplete",
    ]
    title = "Redo-probe wording study: model raters' verdicts under the one-shot rule (A.3)"
    return Table.of("raters", title, columns, body)
