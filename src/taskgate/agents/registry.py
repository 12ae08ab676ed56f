"""Agents, matchers and compilers by name: what the CLI and config files accept.

Each name maps to a factory that takes the episode (scripted roles read its ground truth; model
roles ignore it). Model-backed roles register here too, under their own prefixes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..episodes.models import Episode
from ..errors import UnknownNameError
from .base import Agent, Compiler, Matcher
from .scripted import (
    AlwaysBookAgent,
    CorruptCompiler,
    ObedientAgent,
    PerfectAgent,
    ScriptedCompiler,
    ScriptedMatcher,
)

T = TypeVar("T")
AgentFactory = Callable[[Episode], Agent]
MatcherFactory = Callable[[Episode], Matcher]
CompilerFactory = Callable[[Episode], Compiler]

AGENTS: dict[str, AgentFactory] = {
    "scripted:perfect": lambda e: PerfectAgent(),
    "scripted:always-book": lambda e: AlwaysBookAgent(),
    "scripted:obedient": lambda e: ObedientAgent(),
}
MATCHERS: dict[str, MatcherFactory] = {"scripted": ScriptedMatcher}
COMPILERS: dict[str, CompilerFactory] = {
    "scripted": ScriptedCompiler,
    "scripted:corrupt": CorruptCompiler,
}


def _lookup(table: dict[str, T], kind: str, name: str) -> T:
    try:
        return table[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown {kind} {name!r}; choose from: {', '.join(table)}"
        ) from None


def agent_factory(name: str) -> AgentFactory:
    return _lookup(AGENTS, "agent", name)


def matcher_factory(name: str) -> MatcherFactory:
    return _lookup(MATCHERS, "matcher", name)


def compiler_factory(name: str) -> CompilerFactory:
    return _lookup(COMPILERS, "compiler", name)
