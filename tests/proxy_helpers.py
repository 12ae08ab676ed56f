"""Shared by the proxy's tests: a raw-transcript client that talks through the proxy."""

from __future__ import annotations

import time
from typing import Any

import httpx

from taskgate.lab import EpisodeParams, generate_episode
from taskgate.lab.episodes.models import Episode


def episodes(n: int, steps: int = 10, first: int = 100) -> list[Episode]:
    return [generate_episode(EpisodeParams(steps=steps, seed=first + i)) for i in range(n)]


def post(
    client: httpx.Client, url: str, messages: list[dict[str, Any]], *, retry: bool = False,
    headers: dict[str, str] | None = None, **extra: Any,
) -> dict[str, Any]:  # fmt: skip
    """One chat call; with ``retry``, connection failures and 5xx are retried until it answers."""
    body = {"model": "fake", "messages": messages, **extra}
    while True:
        try:
            resp = client.post(f"{url}/chat/completions", json=body, headers=headers)
        except httpx.HTTPError:
            if not retry:
                raise
            time.sleep(0.05)
            continue
        if retry and resp.status_code >= 500:
            time.sleep(0.05)
            continue
        assert resp.status_code == 200, f"{resp.status_code}: {resp.text}"
        data: dict[str, Any] = resp.json()
        return data


def talk(
    url: str, episode: Episode, *, retry: bool = False, turns: int | None = None,
    headers: dict[str, str] | None = None, history: list[dict[str, Any]] | None = None,
) -> list[str]:  # fmt: skip
    """Play ``episode`` as the raw transcript does (brief, then each user message with the
    history), up to turn ``turns``, going on from ``history`` (which grows); return the replies
    the client got."""
    messages = history if history is not None else []
    if not messages:
        messages.append({"role": "system", "content": episode.brief})
    done = sum(1 for m in messages if m["role"] == "user")
    replies = []
    with httpx.Client(timeout=60) as client:
        for turn in episode.turns[done:turns]:
            messages.append({"role": "user", "content": turn.message})
            data = post(client, url, messages, retry=retry, headers=headers)
            reply = data["choices"][0]["message"]["content"] or ""
            replies.append(reply)
            messages.append({"role": "assistant", "content": reply})
    return replies


class RawUpstream:
    """An upstream that answers each chat call with the next of ``bodies`` as it stands (a JSON
    body, or SSE when it starts with ``data:``): for replies no well-behaved server sends."""

    def __init__(self, bodies: list[bytes], status: int = 200) -> None:
        from aiohttp import web

        from taskgate import FakeServer, script

        outer = self

        class Server(FakeServer):
            async def _chat(self, request: web.Request) -> web.StreamResponse:
                await request.read()
                body = outer.bodies.pop(0)
                kind = "text/event-stream" if body.startswith(b"data:") else "application/json"
                return web.Response(body=body, status=outer.status, headers={"Content-Type": kind})

        self.bodies, self.status = bodies, status
        self.server = Server(script([]))

    def __enter__(self) -> Any:
        return self.server.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(None, None, None)


SYSTEM = "You are a procurement assistant for ACME Corp."


class Chat:
    """One ordinary conversation through the proxy."""

    def __init__(self, url: str, client: httpx.Client) -> None:
        self.url, self.client = url, client
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]

    def say(self, text: str) -> dict[str, Any]:
        self.messages.append({"role": "user", "content": text})
        message = post(self.client, self.url, self.messages)["choices"][0]["message"]
        kept = {"role": "assistant", "content": message["content"]}
        if message.get("tool_calls"):
            kept["tool_calls"] = message["tool_calls"]
        self.messages.append(kept)
        return dict(message)

    def result(self, call_id: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": "ok"})


def repeating(respond: Any) -> Any:
    """An upstream that, told of its refused calls (plan mode: the proxy answers them with tool
    messages carrying the gate's notices), repeats the notices to the user as its reply, and
    otherwise answers as ``respond`` does: the user reads the refusal only because the model
    said it."""
    from taskgate import Reply

    def answer(body: dict[str, Any]) -> Any:
        messages = body["messages"]
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        told = [str(m.get("content")) for m in messages[last + 1 :] if m.get("role") == "tool"]
        if told and all(" was not run: " in t for t in told):
            return Reply("\n\n".join(told))
        return respond(body)

    return answer
