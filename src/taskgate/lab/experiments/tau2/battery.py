"""The rule battery: run a ruleset (reference or compiled) over cases and score it.

Each case is judged as the gate judges a live call (:func:`.verdict.judge`); a case the gate
refuses as malformed fires ``malformed-arguments``.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from taskgate.errors import RulesetError
from taskgate.lab.experiments.tau2.facts import DbView
from taskgate.lab.experiments.tau2.rules import Ruleset
from taskgate.lab.experiments.tau2.verdict import judge


class Case(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    rule: str
    tool: str
    args: dict[str, Any]
    expect: Literal["allow", "deny"]
    patch: dict[str, Any] = {}


@dataclass(frozen=True)
class Outcome:
    case: Case
    decision: Literal["allow", "deny"]
    fired: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return self.decision == self.case.expect


#: Each hand-written ruleset's battery: cases whose expected decisions encode that ruleset
BATTERIES = {"post-audit": "battery_post_audit.toml", "pre-audit": "battery_pre_audit.toml"}


def battery(name: str = "post-audit") -> list[Case]:
    """The cases of the battery of ruleset ``name``: ``post-audit`` (the paper's 33, the default,
    as its ruleset is) or ``pre-audit`` (the first battery's 40)."""
    if name not in BATTERIES:
        raise RulesetError(f"unknown battery {name!r}; choose from: {', '.join(BATTERIES)}")
    text = resources.files(__package__).joinpath(BATTERIES[name]).read_text("utf-8")
    return [Case.model_validate(c) for c in tomllib.loads(text)["case"]]


def patched(db: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the touched tables with each dotted path set (the rest shared, read-only)."""
    out = dict(db)
    for path, value in patch.items():
        keys = path.split(".")
        out[keys[0]] = node = dict(out[keys[0]])
        for k in keys[1:-1]:
            node[k] = copy.deepcopy(node[k])
            node = node[k]
        node[keys[-1]] = value
    return out


def run_battery(
    ruleset: Ruleset, db: Mapping[str, Any], cases: list[Case] | None = None
) -> list[Outcome]:
    out = []
    for case in cases or battery():
        view = DbView(patched(db, case.patch) if case.patch else db)
        fired = judge(ruleset, view, case.tool, case.args).ids
        out.append(Outcome(case, "deny" if fired else "allow", fired))
    return out
