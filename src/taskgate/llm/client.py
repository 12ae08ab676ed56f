"""One async chat client for any OpenAI-compatible endpoint (or several serving one model).

Decoding follows Appendix B.4 of the paper: temperature 0; reply budgets per purpose and regime
(agent 400 / 2,500, matcher 200 / 2,500, compiler 3,000 / 6,000 tokens without / with thinking);
a thinking reply with empty content is retried with the budget doubled (up to 12,000); a
context-overflow error halves it (floor 512). Timeouts, connection errors, 408, 409, 429, 5xx and malformed
replies (a 200 whose body is not a chat completion: not JSON, no ``choices``, no message, or a
``null`` content without reasoning) are retried with exponential backoff, six attempts in all; when
they run out the call raises :class:`~taskgate.errors.ModelError`. An empty string content is a
reply (an empty one). Every call, retried or not, is reported to the caller's ``on_call`` with its
token usage. Reasoning content never enters the transcript. The HTTP is :mod:`taskgate.llm.http`
(aiohttp; why not the ``openai`` SDK is said there).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

import orjson

from taskgate.errors import ModelError
from taskgate.llm.calls import CallInfo
from taskgate.llm.endpoint import Endpoint
from taskgate.llm.http import Route, StatusError, TransportError, one_line

Purpose = Literal["agent", "matcher", "compiler", "memory"]
BUDGETS: dict[Purpose, tuple[int, int]] = {
    "agent": (400, 2500),
    "matcher": (200, 2500),
    "compiler": (3000, 6000),
    "memory": (1000, 4000),  # Mem0's fact extraction (the memory baselines)
}
MAX_BUDGET = 12000
MIN_BUDGET = 512
_OVERFLOW = re.compile(
    r"context[ _](?:length|window)|maximum context|context_length_exceeded|too many tokens|"
    r"exceeds? (?:the )?(?:available )?context",
    re.IGNORECASE,
)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)
#: statuses that another server of the model may not answer (a wrong key, the model not loaded):
#: with several endpoints they send the call elsewhere, with one they end it
_OTHER_SERVER = (401, 403, 404)


class MalformedReply(ModelError):
    """A 200 response that is not a chat completion (a broken proxy or server): retried."""


@dataclass(frozen=True)
class Completion:
    text: str
    reasoning: str
    info: CallInfo


OnCall = Callable[[CallInfo], None]


class ChatClient:
    """Calls one endpoint, or spreads calls over several serving the same model.

    Each endpoint keeps its own limit (``endpoint.concurrency`` requests in flight). A call goes to
    the endpoint with the fewest requests in flight among those in rotation. An endpoint whose
    request fails (no response, 408, 409, 429, 5xx, a 200 that is not a reply, or 401, 403 or 404,
    which another server of the model may well not answer) leaves the rotation for a cool-down
    that doubles with each cool-down in a row (``backoff``, then twice that, up to 30 s; failures
    of calls already in flight do not lengthen it); the failed call is retried at once on another
    endpoint. After the cool-down one call tests whether it has recovered, and the others wait for
    its answer. With one endpoint, or all of them out, a retry waits its backoff first. Each call's :class:`CallInfo` names the endpoint that
    served it. The budgets and the retry count are the first endpoint's.

    Close it with :meth:`close`, or use it as ``async with ChatClient(endpoint) as client:``.
    Its connections belong to the event loop of its first call: close it before that loop ends
    (used from a new loop it opens new ones, and aiohttp warns of the old ones left open).
    """

    def __init__(
        self,
        endpoint: Endpoint | Sequence[Endpoint],
        *,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        endpoints = [endpoint] if isinstance(endpoint, Endpoint) else list(endpoint)
        if not endpoints:
            raise ModelError("a chat client needs at least one endpoint")
        self.endpoint = endpoints[0]
        self.routes = [Route(ep) for ep in endpoints]
        self._sleep = sleep

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        return tuple(r.endpoint for r in self.routes)

    async def check(self, warn: Callable[[str], None] | None = None) -> None:
        """Ask every endpoint for ``/models``: one that does not answer is warned about and left
        out of rotation (the cool-down of a failure); :class:`ModelError` when none answers."""
        reasons = await asyncio.gather(*(r.probe() for r in self.routes))
        if all(why is not None for why in reasons):
            listed = "; ".join(
                f"{r.url}: {why}" for r, why in zip(self.routes, reasons, strict=True)
            )
            raise ModelError(f"no model endpoint can serve this run ({listed})")
        for route, why in zip(self.routes, reasons, strict=True):
            if why is not None:
                route.failed(self.endpoint.backoff)
                if warn is not None:
                    warn(f"endpoint {route.url} does not answer ({why}); going on without it")

    @property
    def closed(self) -> bool:
        """Whether no connection is open (before the first call, and after :meth:`close`)."""
        return all(r.closed for r in self.routes)

    async def close(self) -> None:
        for route in self.routes:
            await route.close()

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
        route = self.routes[0]
        for attempt in range(1, ep.attempts + 1):
            route = self._pick()
            try:
                resp = await self._post(route, messages, budget, extra)
                text, reasoning = _content(resp)
            except (TransportError, MalformedReply) as exc:
                last = _describe(exc)
            except StatusError as exc:
                last = _describe(exc)
                if not exc.retryable and not (self._many and exc.status in _OTHER_SERVER):
                    route.served()  # it answered: up, if it was being tested
                    if exc.status == 400 and _OVERFLOW.search(exc.body) and budget > MIN_BUDGET:
                        budget = max(MIN_BUDGET, budget // 2)
                        events.append(f"context overflow: budget halved to {budget}")
                        continue
                    break
            else:
                prompt += _tokens(resp, "prompt_tokens")
                completion += _tokens(resp, "completion_tokens")
                route.served()
                if not text.strip() and ep.think and budget < MAX_BUDGET:
                    budget = min(MAX_BUDGET, budget * 2)
                    events.append(f"empty thinking reply: budget doubled to {budget}")
                    last = "empty content"
                    continue
                info = CallInfo(
                    purpose=purpose, model=route.endpoint.model, attempts=attempt,
                    max_tokens=budget, prompt_tokens=prompt, completion_tokens=completion,
                    latency_s=time.perf_counter() - start, reasoning_chars=len(reasoning),
                    events=tuple(events), endpoint=route.url,
                )  # fmt: skip
                if on_call:
                    on_call(info)
                return Completion(text, reasoning, info)
            # a retryable failure: this endpoint leaves the rotation while another can serve
            events.append(f"retry after {last}" + (f" at {route.url}" if self._many else ""))
            if self._many:
                route.failed(ep.backoff)
            if attempt < ep.attempts and not self._any_up():
                await self._sleep(ep.backoff * 2 ** (attempt - 1))
        info = CallInfo(
            purpose=purpose, model=route.endpoint.model, attempts=attempt, max_tokens=budget,
            prompt_tokens=prompt, completion_tokens=completion,
            latency_s=time.perf_counter() - start, error=last, events=tuple(events),
            endpoint=route.url,
        )  # fmt: skip
        if on_call:
            on_call(info)
        where = route.url if not self._many else f"{len(self.routes)} endpoints"
        raise ModelError(f"{route.endpoint.model} at {where}: {purpose} call failed: {last}")

    @property
    def _many(self) -> bool:
        return len(self.routes) > 1

    def _any_up(self) -> bool:
        """Whether a retry can go somewhere at once (never with a single endpoint)."""
        now = time.monotonic()
        return self._many and any(r.up(now) for r in self.routes)

    def _pick(self) -> Route:
        """The endpoint in rotation with the fewest requests in flight; when all are out, the one
        whose cool-down ends first (its next call tests whether it has recovered)."""
        if not self._many:
            return self.routes[0]
        now = time.monotonic()
        up = [r for r in self.routes if r.up(now)]
        if not up:
            return min(self.routes, key=lambda r: r.down_until)
        route = min(up, key=lambda r: r.in_flight / r.endpoint.concurrency)
        route.take(now)
        return route

    async def _post(
        self,
        route: Route,
        messages: Sequence[Mapping[str, str]],
        budget: int,
        extra: Mapping[str, Any] | None = None,
    ) -> Any:
        """The reply's JSON body; :class:`MalformedReply` if a 200's body is not JSON."""
        body: dict[str, Any] = {
            "model": route.endpoint.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": 0,
            "max_tokens": budget,
            **_extra_body(route.endpoint),
            **(extra or {}),
        }
        status, kind, content = await route.post("/chat/completions", body)
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:  # not JSON, not UTF-8, or nested past orjson's limit
            kind = kind.split(";")[0] or "no content type"
            raise MalformedReply(
                f"a {status} whose body is not JSON ({kind}, {len(content)} bytes)"
            ) from None


def _extra_body(endpoint: Endpoint) -> dict[str, Any]:
    body = dict(endpoint.extra_body)
    if endpoint.enable_thinking is not None:
        kwargs = dict(body.get("chat_template_kwargs") or {})
        kwargs["enable_thinking"] = endpoint.enable_thinking
        body["chat_template_kwargs"] = kwargs
    if endpoint.deepseek_thinking is not None:
        body["thinking"] = {"type": "enabled" if endpoint.deepseek_thinking else "disabled"}
    return body


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
            # a string, or only the kind of value: str() of a deeply nested one would recurse
            shown = detail if isinstance(detail, str) else f"a JSON {type(detail).__name__}"
            raise MalformedReply(f"a reply with no choices but an error: {one_line(shown)}")
        keys = ", ".join(map(str, list(body)[:5])) or "none"
        what = "empty choices" if isinstance(choices, list) else "no choices"
        raise MalformedReply(f"a reply with {what} (keys: {one_line(keys)})")
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
    return count if type(count) is int and count >= 0 else 0  # not a bool, not negative


def _describe(exc: Exception) -> str:
    """What went wrong, on one line: ``500 Internal Server Error: <the server's message>``,
    ``timeout after 900 s``, ``connection error: ...``, ``MalformedReply: ...``."""
    if isinstance(exc, MalformedReply):
        return f"MalformedReply: {one_line(str(exc))}"
    return one_line(str(exc))
