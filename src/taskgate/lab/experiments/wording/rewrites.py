"""The tier-2 rewrite cache: three held-out wordings per step template, written by a model that
is not the agent, validated, and stored as the JSON file the generator reads (``--rewrites``).

Each template gets one model call at the given temperature; its reply must hold three rewrites,
each one line, distinct from one another and from the template's own three paraphrases, and
keeping a content word of the step (its noun). A reply that fails is re-asked with what was
wrong, up to ``attempts`` times. The cache is written after every template, so an interrupted
build resumes; templates still without valid rewrites are named at the end.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from taskgate.errors import LogFormatError, ReplyFormatError, UsageError
from taskgate.lab.episodes.pools import POOLS, Template
from taskgate.llm.client import ChatClient, OnCall
from taskgate.llm.jsonreply import parse_reply

#: the generator's wording roles, in the cache's order: ask, premature probe, redo probe
ROLES = ("ask", "premature", "redo_probe")
_WORD = re.compile(r"[a-z]+")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "for",
        "to",
        "in",
        "on",
        "at",
        "with",
        "from",
        "our",
        "my",
        "your",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "into",
        "out",
        "up",
        "get",
        "set",
        "make",
        "have",
        "has",
        "do",
        "please",
        "now",
        "then",
        "we",
        "us",
        "you",
        "what",
        "need",
        "together",
    ]
)

REWRITE_PROMPT = (
    "Rewrite this work request three different ways, as a colleague might phrase it. Keep what is "
    "asked and its main noun; change the wording; add no details, names or numbers; one line "
    'each, no trailing period.\n\nREQUEST: {text}\n\nAnswer with JSON only: {{"rewrites": '
    '["...", "...", "..."]}}'
)


class _Reply(BaseModel):
    rewrites: list[str]


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def step_nouns(tpl: Template) -> set[str]:
    """The words that name the step: the content words of its paraphrases after each one's
    opening verb ("draft the request for quotation" -> request, quotation)."""
    return set().union(*(content_words(p.split(" ", 1)[-1]) for p in tpl.paraphrases))


def check_rewrites(tpl: Template, rewrites: Sequence[str]) -> str | None:
    """What is wrong with ``rewrites`` for ``tpl`` (``None``: they are valid)."""
    if len(rewrites) != 3:
        return f"give exactly three rewrites, not {len(rewrites)}"
    own = {p.lower().strip() for p in tpl.paraphrases}
    nouns = step_nouns(tpl)
    seen: set[str] = set()
    for r in rewrites:
        text = r.strip()
        key = text.lower().rstrip(".")
        if not text or "\n" in text or len(text) > 200:
            return "each rewrite must be one non-empty line of at most 200 characters"
        if key in own:
            return f"{text!r} repeats the original wording"
        if key in seen:
            return f"{text!r} is given twice"
        if not content_words(text) & nouns:
            return f"{text!r} drops the step's noun (keep one of: {', '.join(sorted(nouns))})"
        if re.search(r"[0-9#]", text):
            return f"{text!r} adds numbers"
        seen.add(key)
    return None


class Rewriter(Protocol):
    name: str

    async def rewrite(self, tpl: Template, problem: str | None) -> str: ...


class LLMRewriter:
    """A model at the cache's temperature (the paper: not the agent under test, at 0.7)."""

    name = "llm"

    def __init__(self, client: ChatClient, temperature: float, on_call: OnCall | None) -> None:
        self._client, self._temperature, self._on_call = client, temperature, on_call

    async def rewrite(self, tpl: Template, problem: str | None) -> str:
        prompt = REWRITE_PROMPT.format(text=tpl.text)
        if problem:
            prompt += f"\n\nYour previous answer was not usable: {problem}. Try again."
        extra = {"temperature": self._temperature}
        msgs = [{"role": "user", "content": prompt}]
        # a short JSON reply: the matcher's budget (200 tokens without thinking)
        return (await self._client.complete(msgs, "matcher", self._on_call, extra)).text


class ScriptedRewriter:
    """A deterministic rewriter for tests and smoke runs: each paraphrase with a new opening."""

    name = "scripted"

    async def rewrite(self, tpl: Template, problem: str | None) -> str:
        openings = ("please go ahead and", "could you", "time to")
        got = [f"{o} {p}" for o, p in zip(openings, tpl.paraphrases, strict=True)]
        return json.dumps({"rewrites": got})


@dataclass(frozen=True)
class RewriteConfig:
    domains: tuple[str, ...] = ("procurement", "release")
    attempts: int = 3
    temperature: float = 0.7

    def __post_init__(self) -> None:
        unknown = [d for d in self.domains if d not in POOLS]
        if unknown:
            raise UsageError(f"unknown domain(s) {unknown}; choose from: {', '.join(POOLS)}")
        if self.attempts < 1:
            raise UsageError("attempts must be at least 1")


@dataclass
class RewriteResult:
    written: int = 0
    kept: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # slug -> the last problem


def read_cache(path: Path) -> dict[str, list[str]]:
    """A rewrite cache file (empty when absent); an error naming the file when it is not one."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LogFormatError(f"{path} is not a rewrite cache: {exc}") from None
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in data.values()
    ):
        raise LogFormatError(f"{path} is not a rewrite cache (slug -> list of wordings)")
    return data


def _write(path: Path, cache: Mapping[str, Sequence[str]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # a reader never sees half a file


async def build_rewrites(
    path: Path,
    rewriter: Rewriter,
    config: RewriteConfig,
    on_done: Callable[[str], None] | None = None,
) -> RewriteResult:
    """Fill ``path`` with valid rewrites for every template of the domains (those already valid
    there are kept)."""
    cache = read_cache(path)
    result = RewriteResult()
    for domain in config.domains:
        for tpl in POOLS[domain]:
            if tpl.slug in cache and check_rewrites(tpl, cache[tpl.slug]) is None:
                result.kept += 1
                continue
            problem: str | None = None
            for _ in range(config.attempts):
                reply = await rewriter.rewrite(tpl, problem)
                try:
                    got = [r.strip().rstrip(".") for r in parse_reply(reply, _Reply).rewrites]
                except ReplyFormatError as exc:
                    problem = str(exc)
                    continue
                problem = check_rewrites(tpl, got)
                if problem is None:
                    cache[tpl.slug] = got
                    _write(path, cache)
                    result.written += 1
                    break
            if problem is not None:
                result.failed[tpl.slug] = problem
            if on_done is not None:
                on_done(tpl.slug)
    return result
