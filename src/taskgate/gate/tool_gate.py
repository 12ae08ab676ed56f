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

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from taskgate._aio import run_sync
from taskgate.errors import ToolRefused, UsageError
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
from taskgate.understanding.reader import ConversationReader

T = TypeVar("T")

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
    :meth:`call`, :meth:`acall` and :meth:`guard`, which run a tool behind it."""

    def user_message(
        self,
        message: str,
        matcher: Matcher | None = None,
        ask_back: bool = True,
        *,
        agent: str = "",
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
        if not ticket.admitted:
            raise ToolRefused(ticket)
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
            return result
        except Exception:
            outcome = "failed"
            raise
        finally:
            self.finish(ticket, outcome)

    async def acall(
        self, tool: str, fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any
    ) -> T:
        """:meth:`call` for a coroutine function (a cancelled call is held in doubt)."""
        ticket = self.begin(tool, arguments=call_arguments(fn, args, kwargs))
        if not ticket.admitted:
            raise ToolRefused(ticket)
        outcome: Outcome = "unknown"
        try:
            result = await fn(*args, **kwargs)
            outcome = "ok"
            return result
        except Exception:
            outcome = "failed"
            raise
        finally:
            self.finish(ticket, outcome)
