"""The scripted agents, matchers and compilers by name (the names the CLI accepts).

Each name maps to a factory that takes the episode, whose ground truth the scripted roles read.
Model-backed, lexical and parser roles are added to these names by :mod:`taskgate.runner.roles`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..episodes.models import Episode
from .base import Agent, Compiler, Matcher
from .scripted import (
    AlwaysBookAgent,
    CorruptCompiler,
    ObedientAgent,
    PerfectAgent,
    ScriptedCompiler,
    ScriptedMatcher,
)

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
