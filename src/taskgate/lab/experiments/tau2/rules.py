"""Deny rules over the six WRITE tools, as data.

A rule names the tool it guards, a list of conditions that must *all* hold for it to fire, and the
reason shown on refusal. A condition is ``"<fact>"`` (true), ``"not <fact>"``, or
``"<fact> <op> <value>"`` with ``op`` one of ``== != > >= < <= in`` and a TOML-style value
(number, quoted string, true/false, [list]); ``<value>`` may also be another fact, or
``<n> * <fact>``.
Facts are the named functions of :mod:`.facts`. A ruleset file is TOML::

    [[rule]]
    id = "cancel-flown"
    tool = "cancel_reservation"
    when = ["reservation.any_flown"]
    reason = "a segment has already been flown; transfer to a human agent"
"""

from __future__ import annotations

import functools
import json
import operator
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from taskgate.errors import RulesetError
from taskgate.files import read_text
from taskgate.lab.experiments.tau2.facts import FACTS, DbView

WRITE_TOOLS = frozenset(
    {
        "book_reservation",
        "cancel_reservation",
        "send_certificate",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
    }
)
_COND = re.compile(
    r"^\s*(?:(?P<neg>not)\s+)?(?P<fact>[a-z_]+\.[a-z0-9_]+)\s*"
    r"(?:(?P<op>==|!=|>=|<=|>|<|in)\s*(?P<value>.+?))?\s*$"
)
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "in": lambda got, want: got in want,
}
_SCALED = re.compile(r"^(?:(?P<n>\d+(?:\.\d+)?)\s*\*\s*)?(?P<fact>[a-z_]+\.[a-z0-9_]+)$")


@dataclass(frozen=True)
class Condition:
    text: str
    fact: str
    negate: bool
    op: str | None
    value: Any
    scale_fact: str | None = None

    def holds(self, db: DbView, args: Mapping[str, Any]) -> bool:
        got = FACTS[self.fact](db, args)
        if self.op is None:
            return (not got) if self.negate else bool(got)
        want = self.value * FACTS[self.scale_fact](db, args) if self.scale_fact else self.value
        ok = _OPS[self.op](got, want)
        return not ok if self.negate else ok


@functools.cache  # rules are checked on every WRITE: parse each condition text once
def parse_condition(text: str) -> Condition:
    m = _COND.match(text)
    if m is None:
        raise RulesetError(
            f"condition {text!r} is not '<fact>', 'not <fact>' or '<fact> <op> <value>'"
        )
    fact = m.group("fact")
    if fact not in FACTS:
        raise RulesetError(
            f"condition {text!r} names unknown fact {fact!r}; known: {', '.join(FACTS)}"
        )
    raw = m.group("value")
    if raw is None:
        return Condition(text, fact, bool(m.group("neg")), None, None)
    scaled = _SCALED.match(raw.strip())
    if scaled:
        if scaled.group("fact") not in FACTS:
            raise RulesetError(f"condition {text!r} names unknown fact {scaled.group('fact')!r}")
        n = float(scaled.group("n") or 1)
        return Condition(text, fact, bool(m.group("neg")), m.group("op"), n, scaled.group("fact"))
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        raise RulesetError(
            f'condition {text!r}: {raw!r} is not a value (number, "string", true, [list])'
        ) from None
    return Condition(text, fact, bool(m.group("neg")), m.group("op"), value)


class Rule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    tool: str
    when: tuple[str, ...] = Field(min_length=1)
    reason: str = Field(min_length=1)

    @field_validator("tool")
    @classmethod
    def _tool(cls, v: str) -> str:
        if v not in WRITE_TOOLS:
            raise ValueError(
                f"unknown tool {v!r}; a rule guards one of: {', '.join(sorted(WRITE_TOOLS))}"
            )
        return v

    @field_validator("when")
    @classmethod
    def _conditions(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for text in v:
            parse_condition(text)  # raises naming the bad condition
        return v

    def fires(self, db: DbView, args: Mapping[str, Any]) -> bool:
        return all(parse_condition(c).holds(db, args) for c in self.when)


class Ruleset(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: tuple[Rule, ...] = Field(min_length=1)

    @field_validator("rule")
    @classmethod
    def _unique(cls, v: tuple[Rule, ...]) -> tuple[Rule, ...]:
        ids = [r.id for r in v]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"duplicate rule ids: {', '.join(sorted(dup))}")
        return v

    def firing(self, db: DbView, tool: str, args: Mapping[str, Any]) -> list[Rule]:
        """The rules that deny this call now (empty: allowed). READ tools are never denied."""
        return [r for r in self.rule if r.tool == tool and r.fires(db, args)]


def load_ruleset(source: str | Path) -> Ruleset:
    """A ruleset from a TOML or JSON file (or text); raise naming what is wrong."""
    text = read_text(source, "ruleset") if isinstance(source, Path) else source
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else tomllib.loads(text)
        return Ruleset.model_validate(data)
    except json.JSONDecodeError as exc:
        raise RulesetError(f"the ruleset is not valid JSON: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RulesetError(f"the ruleset is not valid TOML: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise RulesetError(f"ruleset {where}: {first['msg']}") from None


#: The hand-written rulesets by name: the paper's post-audit one (the default) and the pre-audit
#: one it was audited from (taskgate's first "reference" ruleset)
RULESETS = {"post-audit": "post_audit.toml", "pre-audit": "pre_audit.toml"}
DEFAULT_RULESET = "post-audit"


def named_ruleset(name: str = DEFAULT_RULESET) -> Ruleset:
    """A hand-written ruleset by name (see :data:`RULESETS`)."""
    try:
        file = RULESETS[name]
    except KeyError:
        known = ", ".join(RULESETS)
        raise RulesetError(f"unknown ruleset {name!r}; choose from: {known}") from None
    return load_ruleset(resources.files(__package__).joinpath(file).read_text("utf-8"))


def reference_ruleset() -> Ruleset:
    """The pre-audit ruleset, under its first name (``named_ruleset("pre-audit")``)."""
    return named_ruleset("pre-audit")


def post_audit_ruleset() -> Ruleset:
    """The paper's post-audit ruleset, taskgate's default (``named_ruleset("post-audit")``)."""
    return named_ruleset("post-audit")
