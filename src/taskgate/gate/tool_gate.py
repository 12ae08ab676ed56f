"""One small object an engineer wraps around any tool dispatcher: the gate's core
(:class:`~taskgate.gate.session.GateSession`) plus the calls that run a tool behind it.

For each tool call the gate judges the call against the current request, lets an admitted call
run, and records the receipt once the call succeeded (every rule is the core's). Judging and
reserving the step happen in one critical section, and so does recording the receipt: tool calls
of one model turn may run concurrently, and a second call of a step that another admitted call is
executing is refused (``in-progress``), so two calls of the same step never both execute. A call
that raises books nothing and releases the step; a call that was cancelled or interrupted (it may
have run) holds its step in doubt until :meth:`~GateSession.settle`.

The gate's state is its receipts ledger: :attr:`ToolGate.ledger` and
:meth:`ToolGate.from_ledger` save and restore it exactly.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from taskgate._aio import run_sync
from taskgate.core.plan import Plan
from taskgate.core.verdict import Policy
from taskgate.errors import ToolHeld, ToolRefused, UsageError
from taskgate.gate.asking import Ask
from taskgate.gate.session import (
    Call,
    Doubt,
    GateSession,
    Notices,
    Opened,
    Outcome,
    Ticket,
    Unbound,
    Unrequested,
    cancelling,
    check_strands,
    check_tools,
    step_named,
)
from taskgate.roles import Matcher
from taskgate.understanding.grounding import result_text
from taskgate.understanding.reader import ConversationReader

T = TypeVar("T")
#: what a ToolGate's ``ask`` callback answers for a held call: True (run it as shown), False or
#: None (do not), or a mapping of edited arguments (run the same tool with those instead)
Answer = bool | None | Mapping[str, Any]
#: a person asked about a held call, sync or async (see :class:`ToolGate`)
Asker = Callable[[Ask], Answer | Awaitable[Answer]]

__all__ = [
    "Call",
    "Doubt",
    "GateSession",
    "Notices",
    "Opened",
    "Outcome",
    "Ticket",
    "ToolGate",
    "Unbound",
    "Unrequested",
    "cancelling",
    "check_strands",
    "check_tools",
    "step_named",
]


def call_arguments(
    fn: Callable[..., object], args: tuple[object, ...], kwargs: Mapping[str, object]
) -> dict[str, object] | None:
    """Every argument of a call ``fn(*args, **kwargs)`` by its parameter's name, positional ones
    included (a value passed by position is checked like one passed by name); where ``fn`` has
    no signature to bind to, positional values are named ``arg0``, ``arg1``, ... ``None`` for a
    call with no arguments."""
    if not args:
        return dict(kwargs) or None
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):  # a builtin, or arguments the function would refuse
        return {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}
    params, out = inspect.signature(fn).parameters, {}
    for name, value in bound.items():
        kind = params[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD and isinstance(value, dict):
            out.update(value)
        else:
            out[name] = list(value) if kind is inspect.Parameter.VAR_POSITIONAL else value
    return out


class ToolGate(GateSession):
    """Task state around a tool dispatcher, at the policy you choose: the gate's core
    (:class:`GateSession`: requests, judging, finishing, approvals, revisions) plus
    :meth:`call`, :meth:`acall` and :meth:`guard`, which run a tool behind it.

    A call the gate holds (it cannot tell the user agreed to exactly this call) is put to a
    person by ``ask``, a callback (sync, or async for :meth:`acall`) given the held call
    (:class:`~taskgate.gate.asking.Ask`: the exact call and the question to show) that answers
    True (run it as shown), False (do not) or a mapping of edited arguments (run those: the
    tool is called with them as keywords). Without ``ask``, :meth:`call` raises
    :class:`~taskgate.errors.ToolHeld` carrying the question and the ask's id (answer it with
    :meth:`answer`, then make the call again), and a guarded tool returns the question for the
    agent to put to the user, whose next message is read against it."""

    #: the callback that asks a person about a held call (None: raise ToolHeld, or ask back)
    ask: Asker | None = None

    def __init__(
        self, plan: Plan, policy: Policy = Policy.STATE_BOUND, *, ask: Asker | None = None,
        **options: Any,
    ) -> None:  # fmt: skip
        super().__init__(plan, policy, **options)
        if ask is not None and not callable(ask):
            raise UsageError("ask is a callback taking the held call, or None")
        self.ask = ask

    def user_message(
        self,
        message: str,
        matcher: Matcher | None = None,
        ask_back: bool = True,
        *,
        agent: str | None = None,
    ) -> Opened:
        """:meth:`open_message` from sync code; the reading defaults to the gate's own
        (:class:`~taskgate.ConversationReader`, no model call). Call it with each new user
        message, before the agent runs on it, with the agent's message before it as ``agent``
        (so a "yes" confirms what the agent proposed)."""
        reader = matcher or ConversationReader()
        return run_sync(self.open_message(message, reader, ask_back, agent=agent))

    def guard(self, fn: Callable[..., Any], tool: str | None = None) -> Callable[..., Any]:
        """``fn`` behind the gate, ready to hand to an agent framework as a tool: the same name
        (``tool``, default ``fn.__name__``), signature and docstring; an admitted call runs
        ``fn`` and is the receipt once it returns; a refused call returns the refusal notice
        (what the model reads) and ``fn`` does not run. Works for coroutine functions too."""
        name = tool or getattr(fn, "__name__", None) or type(fn).__name__

        if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004  (an object whose __call__ is async)
        ):

            @functools.wraps(fn)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await self.acall(name, fn, *args, **kwargs)
                except ToolRefused as refused:
                    return refused.notice

            guarded_async.__name__ = name
            return guarded_async

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return self.call(name, fn, *args, **kwargs)
            except ToolRefused as refused:
                return refused.notice

        guarded.__name__ = name
        return guarded

    def call(self, tool: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` as a call of ``tool`` if the gate admits it.

        Raises :class:`ToolRefused` when refused (``fn`` does not run); an exception from ``fn``
        books nothing and propagates; an interrupt (``KeyboardInterrupt``, a cancellation) holds
        the step in doubt: the call may have run.
        """
        ticket = self.begin(tool, arguments=call_arguments(fn, args, kwargs))
        if ticket.held and self.ask is not None:
            answer = self.ask(ticket.ask)  # type: ignore[arg-type]
            if inspect.isawaitable(answer):
                close = getattr(answer, "close", None)
                if callable(close):
                    close()
                raise UsageError("the ask callback is asynchronous: run the tool with acall")
            ticket, args, kwargs = self._answered(ticket, answer, args, kwargs)
        if not ticket.admitted:
            raise ToolHeld(ticket) if ticket.held else ToolRefused(ticket)
        outcome: Outcome = "unknown"
        try:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):  # it has not run yet: never a receipt
                close = getattr(result, "close", None)
                if callable(close):
                    close()
                outcome = "failed"
                raise UsageError(f"{tool} is asynchronous: run it with acall (or guard it)")
            outcome = "ok"
            self.hear(result_text(result))  # its values ground later calls'
            return result
        except Exception:
            outcome = "failed"
            raise
        finally:
            self.finish(ticket, outcome)

    def _answered(
        self, ticket: Ticket, answer: object, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Ticket, tuple[Any, ...], dict[str, Any]]:
        """The ask callback's answer to a held call, recorded; the call judged again (the one
        shown, or the edited one with its arguments as keywords), or the refusal of a no."""
        ask = ticket.ask
        assert ask is not None
        if isinstance(answer, Mapping):
            call = self.answer(ask.id, "edit", by="ask callback", channel="callback",
                               arguments=answer)  # fmt: skip
            args, kwargs = (), {str(k): v for k, v in answer.items()}
        elif answer is True:
            call = self.answer(ask.id, "approve", by="ask callback", channel="callback")
        elif answer is False or answer is None:
            call = self.answer(ask.id, "reject", by="ask callback", channel="callback")
        else:
            raise UsageError(
                f"the ask callback answers True, False or edited arguments, not {answer!r}"
            )
        if call is None:
            tool = ticket.call.tool or "The call"
            refused = dataclasses.replace(ticket, ask=None, refusal=(
                f'"{tool}" was not run: the user said no to it. Do not call it again unless they '
                "ask for it."))  # fmt: skip
            return refused, args, kwargs
        return self.begin(call.tool, arguments=call.arguments), args, kwargs

    async def acall(
        self, tool: str, fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any
    ) -> T:
        """:meth:`call` for a coroutine function (a cancelled call is held in doubt)."""
        ticket = self.begin(tool, arguments=call_arguments(fn, args, kwargs))
        if ticket.held and self.ask is not None:
            answer = self.ask(ticket.ask)  # type: ignore[arg-type]
            if inspect.isawaitable(answer):
                answer = await answer
            ticket, args, kwargs = self._answered(ticket, answer, args, kwargs)
        if not ticket.admitted:
            raise ToolHeld(ticket) if ticket.held else ToolRefused(ticket)
        outcome: Outcome = "unknown"
        try:
            result = await fn(*args, **kwargs)
            outcome = "ok"
            self.hear(result_text(result))  # its values ground later calls'
            return result
        except Exception:
            outcome = "failed"
            raise
        finally:
            self.finish(ticket, outcome)
