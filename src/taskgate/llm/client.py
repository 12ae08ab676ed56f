"""One async chat client for any OpenAI-compatible endpoint, on the official ``openai`` SDK.

Decoding follows Appendix B.4 of the paper: temperature 0; reply budgets per purpose and regime
(agent 400 / 2,500, matcher 200 / 2,500, compiler 3,000 / 6,000 tokens without / with thinking);
a thinking reply with empty content is retried with the budget doubled (up to 12,000); a
context-overflow error halves it (floor 512). Timeouts, connection errors, 429, 5xx and malformed
replies (a 200 whose body is not a chat completion: not JSON, no ``choices``, no message, or a
``null`` content without reasoning) are retried with exponential backoff, six attempts in all; when
they run out the call raises :class:`~taskgate.errors.ModelError`. An empty string content is a
reply (an empty one). Every call, retried or not, is reported to the caller's ``on_call`` with its
token usage. Reasoning content never enters the transcript.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self

import httpx
import openai

from ..episodes.records import CallInfo
from ..errors import ModelError

Purpose = Literal["agent", "matcher", "compiler"]
BUDGETS: dict[Purpose, tuple[int, int]] = {
    "agent": (400, 2500),
    "matcher": (200, 2500),
    "compiler": (3000, 6000),
}
MAX_BUDGET = 12000
MIN_BUDGET = 512
_OVERFLOW = re.compile(
    r"context[ _](?:length|window)|maximum context|context_length_exceeded|too many tokens|"
    r"exceeds? (?:the )?(?:available )?context",
    re.IGNORECASE,
)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)


class MalformedReply(ModelError):
    """A 200 response that is not a chat completion (a broken proxy or server): retried."""


_RETRYABLE = (
    openai.APITimeoutError,
    openai.APIConnectionError,
    openai.RateLimitError,
    openai.InternalServerError,
    openai.APIResponseValidationError,
    MalformedReply,
)


@dataclass(frozen=True)
class Endpoint:
    """Where and how to call a model. ``think`` selects the thinking regime's budgets;
    ``enable_thinking``, when set, is sent as ``chat_template_kwargs.enable_thinking`` (hybrid
    models such as Qwen3 switch thinking on and off by it)."""

    base_url: str
    model: str
    api_key: str = "EMPTY"
    think: bool = False
    enable_thinking: bool | None = None
    timeout: float = 900.0
    attempts: int = 6
    backoff: float = 1.0
    concurrency: int = 8
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    reply_budget: int | None = None  # overrides the agent's reply budget (not the paper's)

    @classmethod
    def from_env(cls, base_url: str | None = None, model: str | None = None, **kw: Any) -> Endpoint:
        """Flags first, then ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``TASKGATE_MODEL``."""
        url = base_url or os.environ.get("OPENAI_BASE_URL")
        name = model or os.environ.get("TASKGATE_MODEL")
        if not url:
            raise ModelError("no endpoint: pass --base-url or set OPENAI_BASE_URL")
        if not name:
            raise ModelError("no model: pass --model or set TASKGATE_MODEL")
        kw.setdefault("api_key", os.environ.get("OPENAI_API_KEY") or "EMPTY")
        return cls(base_url=url, model=name, **kw)


@dataclass(frozen=True)
class Completion:
    text: str
    reasoning: str
    info: CallInfo


OnCall = Callable[[CallInfo], None]


class ChatClient:
    """Calls one endpoint; at most ``endpoint.concurrency`` requests in flight.

    Close it with :meth:`close`, or use it as ``async with ChatClient(endpoint) as client:``.
    """

    def __init__(
        self, endpoint: Endpoint, *, sleep: Callable[[float], Any] = asyncio.sleep
    ) -> None:
        self.endpoint = endpoint
        self._sdk = openai.AsyncOpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            timeout=endpoint.timeout,
            max_retries=0,  # retries are ours: each one is logged and bounded
            http_client=_transport(endpoint),
        )
        self._gate = asyncio.Semaphore(endpoint.concurrency)
        self._sleep = sleep

    @property
    def model(self) -> str:
        return self.endpoint.model

    async def close(self) -> None:
        await self._sdk.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        purpose: Purpose,
        on_call: OnCall | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Completion:
        """One reply; ``extra`` adds fields to this request's body (a ``response_format``)."""
        ep = self.endpoint
        budget = BUDGETS[purpose][1 if ep.think else 0]
        if purpose == "agent" and ep.reply_budget is not None:
            budget = ep.reply_budget
        events: list[str] = []
        start = time.perf_counter()
        prompt = completion = 0
        last = ""
        attempt = 0
        for attempt in range(1, ep.attempts + 1):
            try:
                async with self._gate:
                    resp = await self._post(messages, budget, extra)
                text, reasoning = _content(resp)
            except _RETRYABLE as exc:
                last = _describe(exc)
                events.append(f"retry after {last}")
                if attempt < ep.attempts:
                    await self._sleep(ep.backoff * 2 ** (attempt - 1))
                continue
            except openai.BadRequestError as exc:
                last = _describe(exc)
                if _OVERFLOW.search(str(exc)) and budget > MIN_BUDGET:
                    budget = max(MIN_BUDGET, budget // 2)
                    events.append(f"context overflow: budget halved to {budget}")
                    continue
                break
            except openai.APIStatusError as exc:  # 4xx other than the above: not retryable
                last = _describe(exc)
                break
            prompt += _tokens(resp, "prompt_tokens")
            completion += _tokens(resp, "completion_tokens")
            if not text.strip() and ep.think and budget < MAX_BUDGET:
                budget = min(MAX_BUDGET, budget * 2)
                events.append(f"empty thinking reply: budget doubled to {budget}")
                last = "empty content"
                continue
            info = CallInfo(
                purpose=purpose, model=ep.model, attempts=attempt, max_tokens=budget,
                prompt_tokens=prompt, completion_tokens=completion,
                latency_s=time.perf_counter() - start, reasoning_chars=len(reasoning),
                events=tuple(events),
            )  # fmt: skip
            if on_call:
                on_call(info)
            return Completion(text, reasoning, info)
        info = CallInfo(
            purpose=purpose, model=ep.model, attempts=attempt, max_tokens=budget,
            prompt_tokens=prompt, completion_tokens=completion,
            latency_s=time.perf_counter() - start, error=last, events=tuple(events),
        )  # fmt: skip
        if on_call:
            on_call(info)
        raise ModelError(f"{ep.model} at {ep.base_url}: {purpose} call failed: {last}")

    async def _post(
        self,
        messages: Sequence[Mapping[str, str]],
        budget: int,
        extra: Mapping[str, Any] | None = None,
    ) -> Any:
        """The reply's JSON body; :class:`MalformedReply` if a 200's body is not JSON."""
        # The SDK's typed create() re-walks every message of the history through its TypedDict
        # transform on every call (quadratic over an episode, most of the runner's CPU). Its
        # low-level post() sends the same body through the same transport, errors and parsing.
        body: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": 0,
            "max_tokens": budget,
            **self._extra_body(),
            **(extra or {}),
        }
        # The raw response: the SDK would hand back a non-JSON body as a str, and a JSON one with
        # any shape as a ChatCompletion; what the body holds is checked here, by _content.
        resp = await self._sdk.post("/chat/completions", body=body, cast_to=httpx.Response)
        try:
            return json.loads(resp.content)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the limit
            kind = resp.headers.get("content-type", "no content type").split(";")[0]
            raise MalformedReply(
                f"a {resp.status_code} whose body is not JSON ({kind}, {len(resp.content)} bytes)"
            ) from None

    def _extra_body(self) -> dict[str, Any]:
        body = dict(self.endpoint.extra_body)
        if self.endpoint.enable_thinking is not None:
            kwargs = dict(body.get("chat_template_kwargs") or {})
            kwargs["enable_thinking"] = self.endpoint.enable_thinking
            body["chat_template_kwargs"] = kwargs
        return body


def _transport(endpoint: Endpoint) -> Any:
    """The SDK's aiohttp transport (``openai[aiohttp]``), else its default (httpx's own pool).

    httpcore's connection pool re-scans every connection for every queued request on each
    request's start and end: with a hundred requests in flight that was most of the runner's CPU
    (11-19 ms per turn, against 2 ms on aiohttp; see ``bench/bench_runner.py``).
    """
    try:
        return openai.DefaultAioHttpClient(timeout=endpoint.timeout)
    except RuntimeError:  # httpx-aiohttp is not installed
        return None


def _content(body: Any) -> tuple[str, str]:
    """The visible text and the reasoning, kept apart (reasoning_content, reasoning, <think>).

    Raises :class:`MalformedReply` unless the body is a chat completion: an object whose first
    choice has a message with a string content. A ``null`` content is the reply of a thinking
    model that spent its budget when there is reasoning, else malformed.
    """
    if not isinstance(body, dict):
        raise MalformedReply(f"a reply whose body is a JSON {type(body).__name__}, not an object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        error = body.get("error")
        if error is not None:
            detail = error.get("message", error) if isinstance(error, dict) else error
            raise MalformedReply(f"a reply with no choices but an error: {_line(str(detail))}")
        keys = ", ".join(map(str, list(body)[:5])) or "none"
        what = "empty choices" if isinstance(choices, list) else "no choices"
        raise MalformedReply(f"a reply with {what} (keys: {_line(keys)})")
    msg = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(msg, dict):
        raise MalformedReply("a reply whose first choice has no message")
    reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
    reasoning = reasoning if isinstance(reasoning, str) else ""
    text = msg.get("content")
    if text is None and reasoning:
        text = ""  # all reasoning, no answer (vLLM's reasoning parser)
    if not isinstance(text, str):
        shown = "null" if text is None else f"a {type(text).__name__}"
        raise MalformedReply(f"a reply whose message content is {shown}, not text")
    if "<think>" in text:
        reasoning += "".join(_THINK.findall(text))
        text = _THINK.sub("", text)
    return text.strip(), reasoning


def _tokens(body: dict[str, Any], name: str) -> int:
    """A token count from the reply's ``usage``; 0 where it does not say."""
    usage = body.get("usage")
    count = usage.get(name) if isinstance(usage, dict) else None
    return count if isinstance(count, int) else 0


def _line(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters."""
    return " ".join(text.split())[:limit]


def _describe(exc: Exception) -> str:
    """Status, exception name and the server's own message (cut short, on one line)."""
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    detail = _line(str(getattr(exc, "message", None) or exc))
    head = f"{status} {name}" if status else name
    return f"{head}: {detail}" if detail and detail != name else head
