"""A reply judged, and in plan mode the refusals told to the agent rather than to the user.

:func:`gate_message` judges one reply message in place. In plan mode (``taskgate proxy --plan``,
an ordinary agent's conversation) a reply whose every tool call the gate refused does not reach
the client as it is: the gate's notices are the agent's to act on, not the person's to read.
:func:`told` sends the upstream its own reply with each refused call answered by a tool
message carrying the notice, and the model's next reply, in its own words, is what the client
gets, judged like any other (at most :data:`ROUNDS` times). If the upstream fails on such a
round, the client gets the reply before it with the notices as its text, as at the other rungs:
the calls stay stopped either way. A reply that keeps a call, or asks the user the gate's
question, goes to the client as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from taskgate.proxy.gating import Judged, judge_text, text_of, told_id, unbound_calls
from taskgate.proxy.session import Call, Proxy
from taskgate.serving.errors import HttpError, dumps
from taskgate.serving.failures import describe

#: how many times one request tells the agent its calls were refused and asks it again
ROUNDS = 2


def gate_message(
    call: Call, message: dict[str, Any], choice: dict[str, Any], judged: Judged
) -> tuple[str, str]:
    """Judge one reply message in place (refused booking lines and tool calls taken out); its
    content as the upstream wrote it and as the client gets it."""
    machine, arm = call.conv.machine, call.proxy.arm
    raw, calls = message.get("content"), message.get("tool_calls")
    content = "" if raw is None else text_of(raw)
    if content is None:  # fail closed: text the gate cannot read is not passed on
        raise HttpError(502, "the upstream's reply content is neither text nor text parts")
    if (calls is not None and not isinstance(calls, list)) or message.get("function_call"):
        raise HttpError(
            502, "the upstream's reply carries tool calls in a form the gate cannot read"
        )
    returned = content
    if machine.graph.binding == "code":
        returned = judge_text(machine, arm, content, judged)
    if calls:
        since = len(judged.refused)
        kept, refusals = (
            call.judge_calls(calls, judged)
            if machine.graph.binding == "tool"
            else unbound_calls(arm, calls, call.proxy.config.unbound)
        )
        if told_later(call, judged, since, kept):
            refusals = []
        if refusals:
            returned = "\n\n".join([returned, *refusals] if returned else refusals)
        if kept:
            message["tool_calls"] = kept
        else:
            message.pop("tool_calls", None)
            choice["finish_reason"] = "stop"
    if returned != content:
        message["content"] = returned
        choice.pop("logprobs", None)  # they would spell out what was taken out
    return content, returned


def told_later(call: Call, judged: Judged, since: int, kept: Sequence[Any]) -> bool:
    """Plan mode, a reply that hands out some calls and refuses others (and asks the user
    nothing): the refused ones are told to the agent on the next request, as their tool
    results beside the handed-out calls' (see ``ReplyEvent.refused``), not in the reply's text.
    Whether it was so."""
    if not (call.proxy.config.planned and kept and len(judged.refused) > since and not judged.asks):
        return False
    judged.later += judged.refused[since:]
    return True


def completion(raw: bytes) -> dict[str, Any]:
    """An upstream's whole reply as a chat completion of one choice, or a 502 saying why not."""
    try:
        data = orjson.loads(raw)
        message = data["choices"][0]["message"]
        one = len(data["choices"]) == 1
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        message, one = None, True
    if not isinstance(message, dict):
        raise HttpError(502, "the upstream's reply is not a chat completion", "upstream_error")
    if not one:  # fail closed: the gate judges one choice
        raise HttpError(502, "the upstream answered with several choices; the gate judges one")
    return data  # type: ignore[no-any-return]


async def post(proxy: Proxy, headers: dict[str, str], body: dict[str, Any]) -> httpx.Response:
    try:
        return await proxy.http.post(
            f"{proxy.upstream}/chat/completions",
            content=dumps(body, 400, "the request"),
            headers=headers,
        )
    except httpx.HTTPError as exc:
        raise HttpError(
            502, f"the upstream at {proxy.upstream} failed: {describe(exc)}", "upstream_error"
        ) from None


@dataclass
class Told:
    """The reply the client gets after the agent was told of its refused calls: the whole
    completion, its message and choice (judged), and what the upstream wrote in every round."""

    data: dict[str, Any]
    message: dict[str, Any]
    choice: dict[str, Any]
    originals: list[str]
    returned: str


def _refused_only(call: Call, message: Mapping[str, Any], judged: Judged, since: int) -> bool:
    """Whether the reply is one to tell the agent about: plan mode, some call refused, none
    handed out, no question to the user, and each refused call with an id of its own (a tool
    message answers it by that id)."""
    refused = judged.refused[since:]
    ids = [str(c.get("id")) for c, _ in refused]
    return (
        call.proxy.config.planned
        and bool(refused)
        and not message.get("tool_calls")
        and not judged.asks
        and all(told_id(c, ids[:i]) for i, (c, _) in enumerate(refused))
    )


def _answered(
    messages: Sequence[Any], content: str, refused: Sequence[tuple[Mapping[str, Any], str]]
) -> list[Any]:
    """The upstream's messages, then its reply with the refused calls, then each answered by
    the gate's notice as the tool's result."""
    calls = [dict(c) for c, _ in refused]
    said = [{"role": "tool", "tool_call_id": c["id"], "content": notice} for c, notice in refused]
    return [*messages, {"role": "assistant", "content": content or None, "tool_calls": calls},
            *said]  # fmt: skip


async def told(
    call: Call, forward: dict[str, Any], message: dict[str, Any], original: str, judged: Judged
) -> Told | None:
    """Tell the agent of its refused calls and judge its next reply (see the module); None when
    the reply is not one to tell it about, or the upstream failed on the first round."""
    if not _refused_only(call, message, judged, 0):
        return None
    body = {k: v for k, v in forward.items() if k not in ("stream", "stream_options")}
    if body.get("tool_choice") not in (None, "none"):  # a forced call would be refused again
        body["tool_choice"] = "auto"
    messages, since, originals = list(forward["messages"]), 0, [original]
    got: Told | None = None
    for _ in range(ROUNDS):
        messages = _answered(messages, original, judged.refused[since:])
        since = len(judged.refused)
        try:
            upstream = await call.waiting(post(call.proxy, call.headers,
                                               {**body, "messages": messages}))  # fmt: skip
            if upstream.status_code != 200:
                break
            data = completion(upstream.content)
            choice = data["choices"][0]
            # its checks come before any judging: a reply it cannot read judged nothing
            original, returned = gate_message(call, choice["message"], choice, judged)
        except HttpError:
            break  # the reply before stands, its notices as its text
        originals.append(original)
        got = Told(data, choice["message"], choice, list(originals), returned)
        if not _refused_only(call, got.message, judged, since):
            break
    return got
