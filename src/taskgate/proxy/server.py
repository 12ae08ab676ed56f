"""The gating proxy's chat endpoint: each request gated and forwarded to the upstream (httpx).

A request whose system prompt is a brief (plan lines, :func:`~taskgate.protocol.briefparse.brief_steps`)
belongs to a gated conversation: the proxy compiles the brief on the first request, turns each new
user message into a request (its work order, the matcher's step) or a revision, shows the upstream
what the rung adds, judges the reply and hands the client only what the gate admits. Any other
request is forwarded untouched. A request's events reach the journal in one write, after the
upstream answered and before the client gets the reply: if anything fails on the way, nothing is
written and the conversation is as it was.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import orjson
from starlette.requests import Request
from starlette.responses import Response

from taskgate.core.ledger import PlanEntry
from taskgate.core.plan import Plan, Revision
from taskgate.core.validator import validate
from taskgate.errors import ModelError, TaskgateError, UsageError, WorkOrderError
from taskgate.gate.session import GateSession, Opened
from taskgate.journal.events import (
    CommitEvent,
    Conversation,
    LedgerEvent,
    ReplyEvent,
    TurnEvent,
)
from taskgate.llm.plan_compiler import PlanCompiler
from taskgate.matching import ask_back_question
from taskgate.matching.wordings import wordings
from taskgate.protocol.briefparse import brief_steps
from taskgate.proxy.compiling import (
    MAX_BRIEF_CHARS,
    bounded,
    installable,
    uncovered,
)
from taskgate.proxy.gating import (
    Conflict,
    Judged,
    align,
    settle,
    text_of,
    upstream_messages,
    user_text,
    work_order_of,
)
from taskgate.proxy.operator import give
from taskgate.proxy.session import (
    HEADER,
    Call,
    Proxy,
    finish,
)
from taskgate.proxy.stream import relay_stream, stream, unjudged
from taskgate.proxy.telling import completion, gate_message, post, told
from taskgate.serving.errors import HttpError, dumps
from taskgate.serving.http import owner, read_body
from taskgate.understanding import Turn, turns

_FORWARD = ("authorization", "content-type", "accept", "openai-organization", "openai-project")


async def chat(request: Request) -> Response:
    proxy: Proxy = request.app.state.proxy
    try:
        raw = await read_body(request)
        started = time.perf_counter()  # the proxy's time starts once the request is in
        body = _body(raw)
        headers = forwarded_headers(request.headers)
        planned = proxy.config.planned
        if planned and not any(m.get("role") == "user" for m in body["messages"]):
            if proxy.arm.gating:  # no request to judge its calls by: refused, not passed on
                proxy.overheads.refusing("no-user-turn", "it has no user message", "")
                raise HttpError(
                    400,
                    "a gated conversation's request carries the user's message (role 'user'): "
                    "the gate judges the agent's tool calls by what the user asked, and this "
                    "request asks nothing",
                )
            proxy.overheads.forwarded("no-user-turn", "it has no user message to gate")
            return await _passthrough(proxy, request, body)
        brief = _system(body["messages"]) if planned else _brief(body["messages"])
        if brief is None:  # not a gated conversation: forwarded as it came
            proxy.overheads.forwarded(
                "no-brief",
                "its system prompt is no brief (to gate an ordinary agent's tool calls, start "
                "the proxy with --plan FILE)",
            )
            return await _passthrough(proxy, request, body)
        base = conversation_key(request.headers, brief, body["messages"])
        named = HEADER in request.headers
        _, lock, conv = await _continued(proxy, base, body["messages"], named)
        call: Call | None = None
        try:
            call = Call(proxy, conv, body, headers, len(conv.events), lock)
            call.named = HEADER in request.headers
            response = await _gated(call, brief, started)
        except BaseException:
            if call is not None:
                call.rollback()
            lock.release()
            raise
        if not call.owns_lock:  # a stream releases it when it ends
            lock.release()
        return response
    except HttpError as exc:
        proxy.overheads.errors[str(exc.status)] += 1  # what failed shows in the metrics
        return exc.response()


#: how many runs of one opening (the same system prompt and first user message, no header) the
#: proxy tells apart: the same script run again starts a new conversation, not a 409
GENERATIONS = 32


async def _continued(
    proxy: Proxy, base: str, messages: list[dict[str, Any]], named: bool
) -> tuple[str, Any, Any]:
    """The conversation a request continues, its lock held: the one its key names, or, for a
    conversation named by its opening alone (no header), the run of that opening the request
    continues (``NAME.2~OWNER``, ``NAME.3~OWNER``, ...). A first request that no run fits (the
    same script run again) starts the next run; a request that fits none is the first run's,
    and meets its 409. A conversation named by the header is that conversation, always. Locks
    are taken in the runs' order, the first run's held throughout."""
    first = await _locked(proxy, base)
    if named or not first[2].events or _fits(first[2], messages):
        return first  # as it always was
    name, _, who = base.rpartition("~")
    for n in range(2, GENERATIONS + 1):
        key = f"{name}.{n}~{who}"
        if not await proxy.known(key) and not _fits(Conversation(key), messages):
            break  # no such run yet, and the request is no first one: it fits no run
        try:
            found = await _locked(proxy, key)
        except BaseException:
            first[1].release()
            raise
        if _fits(found[2], messages):
            first[1].release()
            return found
        found[1].release()
    return first


async def _locked(proxy: Proxy, key: str) -> tuple[str, Any, Any]:
    lock = proxy.lock(key)
    await lock.acquire()
    try:
        return key, lock, await proxy.readable(key)
    except BaseException:
        lock.release()
        raise


def _fits(conv: Any, messages: list[dict[str, Any]]) -> bool:
    """Whether a request continues ``conv``: it falls in place (:func:`align`; a malformed one
    is left for the gate to refuse) and says what the conversation's turns said, each user
    message and the reply the client got after it (another run's history of the same shape is
    not this conversation's)."""
    try:
        align(conv, messages)
    except Conflict:
        return False
    except UsageError:
        return True
    turn, after_user = -1, False
    for m in messages:
        role = m.get("role")
        if role == "user":
            turn, after_user = turn + 1, True
            if (
                turn < len(conv.turns)
                and (text_of(m.get("content")) or "") != conv.turns[turn].client
            ):
                return False
        elif role == "assistant" and after_user:
            after_user = False
            replies = conv.turns[turn].replies if 0 <= turn < len(conv.turns) else []
            said = text_of(m.get("content")) or ""
            if replies and said != (replies[0].returned or ""):
                return False
    return True


def _body(raw: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise HttpError(400, f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise HttpError(400, "the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise HttpError(400, "'messages' must be a non-empty list of message objects")
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise HttpError(400, "every message must be an object with a string 'role'")
    return body


def _system(messages: list[dict[str, Any]]) -> str:
    """Plan mode: the agent's own system prompt (or nothing), which names its conversations."""
    first = messages[0]
    text = text_of(first.get("content")) if first.get("role") in ("system", "developer") else ""
    return text or ""


def _brief(messages: list[dict[str, Any]]) -> str | None:
    first = messages[0]
    if first.get("role") not in ("system", "developer"):
        return None
    text = text_of(first.get("content"))
    return text if text is not None and _is_brief(text) else None


_BRIEFS: OrderedDict[bytes, bool] = OrderedDict()
#: how a plan line's binding starts (see :mod:`taskgate.protocol.briefparse`)
_CODE_END, _TOOL_END = "  [completion code ", "  [tool: "


def _is_brief(text: str) -> bool:
    """Whether a system prompt is a brief (it has plan lines); a conversation sends the same
    one on every request, so the answer is cached by the prompt's digest (the cache holds no
    prompt: a client sending huge ones leaves no memory behind). A prompt over the brief's
    budget is not read line by line (tens of megabytes of short lines held the event loop for
    seconds): one with a plan line's binding in it is a brief, and refused as too long."""
    if len(text) > MAX_BRIEF_CHARS:  # never parsed line by line: a look for a plan line's end
        return _CODE_END in text or _TOOL_END in text  # (then refused as over the budget)
    digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
    known = _BRIEFS.get(digest)
    if known is None:
        known = _BRIEFS[digest] = bool(brief_steps(text))
        if len(_BRIEFS) > 4096:
            _BRIEFS.popitem(last=False)
    return known


def conversation_key(headers: Mapping[str, str], brief: str, messages: list[dict[str, Any]]) -> str:
    """The conversation's key: its name (the header's, or a hash of its brief and first user
    message: two conversations that open identically share one, so name them by the header),
    then ``~`` and its owner: a hash of the client's API key, or ``anon`` for a request without
    one. A name cannot hold ``~``, so no request reaches a conversation of another owner,
    whatever it names: a keyed conversation is reached only with its key, and requests without
    a key share the anonymous owner."""
    named = headers.get(HEADER)
    if named is not None:
        if not 0 < len(named) <= 200 or not named.isprintable() or "~" in named:
            raise HttpError(400, f"the {HEADER} header must be 1-200 printable characters, no '~'")
        base = named
    else:
        first = next((m for m in messages if m.get("role") == "user"), {})
        text = text_of(first.get("content")) or ""
        base = "h-" + hashlib.sha256(f"{brief}\x00{text}".encode()).hexdigest()[:24]
    return f"{base}~{owner(headers)}"


def forwarded_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The client's headers the upstream gets; one that is not ASCII is a 400 (HTTP client
    libraries cannot send it on)."""
    out = {k: headers[k] for k in _FORWARD if k in headers}
    for name, value in out.items():
        if not value.isascii():
            raise HttpError(400, f"the {name} header must be ASCII text")
    return out


def _api_key(headers: Mapping[str, str]) -> str:
    auth = headers.get("authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") else "EMPTY"


async def _forward(call: Call) -> Response:
    proxy, body = call.proxy, call.body
    if body.get("stream"):
        return await relay_stream(proxy, call.headers, body)
    return relay(await post(proxy, call.headers, body))


async def _gated(call: Call, brief: str, started: float) -> Response:
    proxy, conv, body = call.proxy, call.conv, call.body
    if conv.key in proxy.ungated_keys:  # its brief could not be compiled: forwarded, as before
        proxy.overheads.forwarded("compile-failed", "", conv.key)
        return await _forward(call)
    model, key = str(body.get("model", "")), _api_key(call.headers)
    if body.get("n", 1) != 1:
        raise HttpError(400, "a gated conversation takes one choice per request (n=1)")
    if not conv.started:
        try:
            plan = proxy.config.plan or await call.waiting(_compiled(call, brief, model, key))
        except HttpError as exc:  # the brief could not be compiled: the operator's choice
            return await _uncompiled(call, exc)
        call.add(LedgerEvent(entry=PlanEntry(plan=plan, lenient=True)), applied=False)
    try:
        place = align(conv, body["messages"])
    except Conflict as exc:
        hint = "" if call.named else (
            f"; two conversations that open alike share one: send a {HEADER} header naming each"
        )  # fmt: skip
        raise HttpError(409, f"{exc}{hint}", "conversation_conflict") from None
    except UsageError as exc:
        raise HttpError(400, str(exc)) from None
    call.place = place
    if place.kind == "retry":
        retried = conv.pending
        if retried is not None and retried.handed_out:  # the same reply again, not the upstream
            return replayed(call, retried, model, bool(body.get("stream")), started)
        conv.retract()
        if retried is not None and retried.ask_back:  # the same question again, not the upstream
            return await ask_back(call, retried.returned, model, bool(body.get("stream")), started)
    elif conv.pending is not None:
        call.add(CommitEvent(keep=settle(conv.pending, place.answered)))
    if conv.held:  # an operator's revisions, before the message (a retry's reply too)
        give(call, approvals=False)
    if place.kind == "turn":
        question = await _open_turn(call, place.message, model, key)
        if question is not None:
            return await ask_back(call, question, model, bool(body.get("stream")), started)
    if conv.held:  # and approvals, for the request now open
        give(call, approvals=True)
    forward = {**body, "messages": upstream_messages(conv, body["messages"])}
    if body.get("stream"):
        return await stream(call, forward, started)
    return await _complete(call, forward, started)


async def _compiled(call: Call, brief: str, model: str, key: str) -> Plan:
    """The conversation's plan: compiled from its brief, or (``--plan compile``) from the agent's
    instructions (its system prompt, else its first user message) and the request's tools."""
    proxy = call.proxy
    if not proxy.config.compile_plans:
        bounded(brief)
        problems: list[str] = []
        briefs = proxy.compiler(model, key, on_problem=problems.append)
        plan = await _helping(briefs.compile_plan(brief))
        return installable(plan, problems, uncovered(plan, brief))
    messages = call.body["messages"]
    task = brief or next(
        (text_of(m.get("content")) or "" for m in messages if m.get("role") == "user"), ""
    )
    if len(task) > MAX_BRIEF_CHARS:  # the helper is asked with it: the brief's budget holds
        raise HttpError(413, f"the agent's instructions are over {MAX_BRIEF_CHARS} characters")
    tools = call.body.get("tools")
    compiler = PlanCompiler(proxy.helper(model, key))
    try:
        return await compiler.compile(task, tools if isinstance(tools, list) else [])
    except ModelError as exc:
        raise HttpError(502, f"the proxy's helper model failed: {exc}", "upstream_error") from None
    except TaskgateError as exc:  # one line: the defects joined
        why = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        raise HttpError(400, why) from None


async def _uncompiled(call: Call, exc: HttpError) -> Response:
    """A conversation whose brief could not be compiled: forwarded ungated, or refused with one
    clear error (``--on-compile-error``); either way said once in the log and counted. Only a
    brief the compiler cannot read is forwarded: a helper model that failed (a 502) and a brief
    over the budget (a 413) are refused whatever the choice, so an outage never opens the gate.
    A forwarded conversation stays forwarded (until the proxy restarts), so it never turns gated
    halfway."""
    proxy, why, key = call.proxy, str(exc), call.conv.key
    note = f"its brief could not be compiled ({why})"
    if proxy.config.on_compile_error == "forward" and exc.status < 500 and exc.status != 413:
        proxy.overheads.forwarded("compile-failed", note, key)
        proxy.ungated_keys.add(key)
        return await _forward(call)
    proxy.overheads.refusing("compile-failed", note, key)
    if exc.status >= 500 or exc.status == 413:  # an outage, or a brief over the budget
        raise exc
    raise HttpError(
        exc.status,
        f"{why} (the proxy refuses a conversation it cannot compile; start it with "
        "--on-compile-error forward to pass such conversations on ungated)",
        exc.kind,
    )


async def _helping(coro: Any) -> Any:
    try:
        return await coro
    except ModelError as exc:
        raise HttpError(502, f"the proxy's helper model failed: {exc}", "upstream_error") from None
    except TaskgateError as exc:  # e.g. a brief the parser cannot read
        raise HttpError(400, f"the brief or message could not be read: {exc}") from None


async def _open_turn(call: Call, message: str, model: str, key: str) -> str | None:
    """A new user message: a request (its work order, the matched step) or a revision. When the
    matcher cannot tell which step a request means, no request opens (its work order stays
    unused, for the user's answer) and the ask-back question is returned."""
    proxy, conv = call.proxy, call.conv
    machine, arm = conv.machine, proxy.arm
    if proxy.config.planned:  # plan mode: every message is a request, as written
        return await _open_planned(call, message, model, key)
    work_order = work_order_of(message)
    if work_order is None:
        problems: list[str] = []
        compiler = proxy.compiler(model, key, on_problem=problems.append)
        plan = machine.graph.to_plan()
        revision = await call.waiting(_helping(compiler.compile_revision(plan, message)))
        if problems:  # never read as no change: a cancel lost would leave its step runnable
            proxy.overheads.refusing("revision-unreadable", problems[0], conv.key)
            raise HttpError(
                502,
                "the proxy's helper model gave no usable revision for this message (nothing "
                f"was changed; send the request again): {problems[0]}",
                "upstream_error",
            )
        unknown = [d.detail for d in validate(plan, revision) if d.kind == "unknown-revision-step"]
        if unknown:  # the compiler named steps the plan lacks: its cancel may be the right one
            proxy.overheads.refusing("revision-unreadable", unknown[0], conv.key)
            raise HttpError(
                502,
                "the proxy's helper model read this message as a revision of steps the plan "
                f"does not have ({'; '.join(unknown[:3])}); nothing was changed: send the "
                "request again",
                "upstream_error",
            )
        if revision != Revision():
            try:
                machine.revise(revision)
                call.add(LedgerEvent(entry=machine.last_entry()))
            except TaskgateError as exc:  # one the state cannot take (a done step) changes
                proxy.overheads.noted("revision-refused", str(exc), conv.key)  # nothing
        machine.close_request()
    else:
        step, redo, question = None, False, None
        if arm.uses_matcher:
            plan = machine.graph.to_plan()
            match = await call.waiting(_helping(proxy.matcher(model, key).match(plan, message)))
            step = match.step if match.step in machine.graph else None
            redo = match.explicit_redo
            asked = [c for c in match.candidates if c in machine.graph]
            question = ask_back_question(plan, asked) if step is None and asked else None
        try:
            if question is not None:
                machine.close_request()
            else:
                machine.open_request(step, explicit_redo=redo, work_order=work_order)
        except WorkOrderError:  # a work order used before: no request
            machine.close_request()
    call.add(LedgerEvent(entry=machine.last_entry()))
    forwarded = user_text(arm, machine, conv.notices, message)
    call.add(TurnEvent(client=message, forwarded=forwarded, time=time.time()))
    return None if work_order is None else question


async def _open_planned(call: Call, message: str, model: str, key: str) -> str | None:
    """Plan mode: a new user message opens its request through the gate's core
    (:meth:`~taskgate.gate.GateSession.open_message`: the step the matcher resolves it to, or
    none; its work order minted here and never shown to anyone); the message goes to the upstream
    as the user wrote it. An unclear one gets the ask-back question instead."""
    proxy, machine = call.proxy, call.conv.machine
    session = GateSession.around(machine, proxy.arm.policy)
    tools = call.body.get("tools")  # steps with no text are matched by their tools' descriptions
    session.wordings = wordings(machine.graph.to_plan(), tools if isinstance(tools, list) else [])
    matcher = proxy.matcher(model, key)
    messages = call.body.get("messages")
    agent = _last_agent_text(messages)
    before = machine.ledger_length
    opening = session.open_message(message, matcher, agent=agent, earlier=_earlier(messages))
    opened: Opened = await call.waiting(_helping(opening))
    for entry in machine.ledger[before:]:  # the request, and the answers to held calls
        call.add(LedgerEvent(entry=entry))
    call.add(TurnEvent(client=message, forwarded=message, reading=opened.reading, time=time.time()))
    call.conv.reading = opened.reading  # what the gate understood, for this turn's calls
    return opened.ask_back


def _earlier(messages: object) -> tuple[Turn, ...]:
    """The conversation's earlier turns before the new user message (see
    :func:`~taskgate.understanding.turns`), from its last 40 messages."""
    if not isinstance(messages, list):
        return ()
    said = [(m["role"] == "user", text_of(m.get("content")) or "") for m in messages[-40:]
            if isinstance(m, dict) and m.get("role") in ("user", "assistant")]  # fmt: skip
    return turns(said)


def _last_agent_text(messages: object) -> str:
    """The text of the assistant's last message before the new user message (what it proposed
    or asked), or empty."""
    if not isinstance(messages, list):
        return ""
    for m in reversed(messages[:-1]):
        if isinstance(m, dict) and m.get("role") == "assistant":
            text = text_of(m.get("content"))
            if text:
                return text
        if isinstance(m, dict) and m.get("role") == "user":
            return ""
    return ""


async def ask_back(
    call: Call, question: str, model: str, streamed: bool, started: float
) -> Response:
    """The proxy's own reply, the ask-back question, written as the turn's reply; the upstream
    is not called."""
    await finish(call, question, question, Judged(), ask_back=True)
    call.proxy.overheads.add(time.perf_counter() - started - call.waited)
    return own_reply(model, question, (), "stop", streamed, "taskgate-ask-back")


def replayed(call: Call, reply: ReplyEvent, model: str, streamed: bool, started: float) -> Response:
    """A client retry of a hop whose reply handed out tool calls: that reply again, with the
    same call ids (the idempotency key is the conversation and the hop), and nothing written:
    the client goes on with whichever copy it got, and its tool messages settle the calls."""
    if not reply.calls:  # written by a proxy that did not keep the calls
        raise HttpError(
            409,
            f"conversation {call.conv.key}: this hop's reply handed out tool calls the journal "
            "did not keep; go on with the reply you got instead of retrying",
            "conversation_conflict",
        )
    call.proxy.overheads.add(time.perf_counter() - started - call.waited)
    finish_reason = reply.finish_reason or "tool_calls"
    calls = [dict(c) for c in reply.calls]
    return own_reply(model, reply.returned, calls, finish_reason, streamed, "taskgate-replay")


def own_reply(
    model: str,
    content: str,
    calls: Sequence[dict[str, Any]],
    finish_reason: str,
    streamed: bool,
    fingerprint: str,
) -> Response:
    """A reply the proxy writes itself (an ask-back, a replayed reply), whole or as a stream of
    a content chunk, the tool calls and a finish chunk."""
    reply = {
        "id": f"chatcmpl-taskgate-{uuid.uuid4().hex[:24]}",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": fingerprint,
    }
    if not streamed:
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = list(calls)
        choice = {"index": 0, "message": message, "finish_reason": finish_reason}
        data = {**reply, "object": "chat.completion", "choices": [choice]}
        return Response(dumps(data, 500, "the reply"), 200, media_type="application/json")
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": content}]
    deltas += [{"tool_calls": [{**c, "index": i}]} for i, c in enumerate(calls)]
    chunks = [{"index": 0, "delta": d} for d in deltas]
    chunks.append({"index": 0, "delta": {}, "finish_reason": finish_reason})
    events = b"".join(
        b"data: " + dumps({**reply, "object": "chat.completion.chunk", "choices": [c]}, 500,
                          "the reply") + b"\n\n"
        for c in chunks
    )  # fmt: skip
    return Response(events + b"data: [DONE]\n\n", 200, media_type="text/event-stream")


async def _complete(call: Call, forward: dict[str, Any], started: float) -> Response:
    proxy = call.proxy
    upstream = await call.waiting(post(proxy, call.headers, forward))
    if upstream.status_code != 200:  # passed through unchanged; nothing is written
        call.rollback()
        unjudged(upstream.status_code)
        return relay(upstream)
    data = completion(upstream.content)
    message = data["choices"][0]["message"]
    judged = Judged()
    choice = data["choices"][0]
    original, returned = gate_message(call, message, choice, judged)
    again = await told(call, forward, message, original, judged)  # plan mode: the agent's
    if again is not None:
        data, message, choice, returned = again.data, again.message, again.choice, again.returned
        original = "\n\n".join(again.originals)
    body = dumps(data, 502, "the upstream's reply")  # before the write: nothing fails after it
    calls = message.get("tool_calls") or []
    reason = choice.get("finish_reason")
    await finish(call, original, returned, judged, calls=calls, finish_reason=reason)
    proxy.overheads.add(time.perf_counter() - started - call.waited)
    return Response(body, 200, media_type="application/json")


def relay(upstream: httpx.Response) -> Response:
    media = upstream.headers.get("content-type", "application/json")
    return Response(upstream.content, upstream.status_code, media_type=media)


async def _passthrough(proxy: Proxy, request: Request, body: dict[str, Any]) -> Response:
    headers = forwarded_headers(request.headers)
    if body.get("stream"):
        return await relay_stream(proxy, headers, body)
    return relay(await post(proxy, headers, body))


# -- the other endpoints -------------------------------------------------------------------------
