"""The gate's verdict on one call, as the live gate, the replays and the battery all ask for it.

:func:`judge` never raises. A WRITE call is first parsed (:mod:`.arguments`): malformed arguments
are refused as such, naming the bad argument. A call that names a reservation, user or flight the
database lacks is allowed, so that tau2's own tool answers "not found" (it does so before it
writes anything). Otherwise the call is refused by the rules that fire on it, if any. Anything
else that fails while the rules read the call and the database is refused as arguments the gate
cannot evaluate: the last line of defence, not a verdict any test expects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taskgate.lab.experiments.tau2.arguments import MalformedArgumentsError, parse_arguments
from taskgate.lab.experiments.tau2.facts import DbView, unknown_entity
from taskgate.lab.experiments.tau2.rules import WRITE_TOOLS, Rule, Ruleset

#: The rule id a malformed call is refused under (in vetoes, overblocks and the battery).
MALFORMED = "malformed-arguments"


@dataclass(frozen=True)
class Verdict:
    rules: tuple[Rule, ...] = ()  # the rules that deny the call
    malformed: str | None = None  # why its arguments cannot be evaluated

    @property
    def refused(self) -> bool:
        return bool(self.rules) or self.malformed is not None

    @property
    def ids(self) -> tuple[str, ...]:
        return (MALFORMED,) if self.malformed is not None else tuple(r.id for r in self.rules)


ALLOWED = Verdict()


def judge(ruleset: Ruleset, db: DbView, tool: str, arguments: Mapping[str, Any]) -> Verdict:
    """What the gate does with this call on this database now. READ tools are always allowed."""
    if tool not in WRITE_TOOLS:
        return ALLOWED
    try:
        args = parse_arguments(tool, arguments)
        if unknown_entity(db, args) is not None:
            return ALLOWED  # tau2 refuses it: "... not found"
        return Verdict(rules=tuple(ruleset.firing(db, tool, args)))
    except MalformedArgumentsError as exc:
        return Verdict(malformed=str(exc))
    except Exception as exc:  # the gate must never raise into tau2's dispatch
        return Verdict(
            malformed=f"the gate cannot evaluate this call ({type(exc).__name__}: {exc})"
        )
