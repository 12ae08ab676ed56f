"""The one-node case (Appendix J): standing one-shot commitments compiled into guarded triggers
that fire on a later, differently phrased request, with and without transcript sanitization of
the consumed one-shot, against a prompt manifest and the bare transcript."""

from taskgate.lab.experiments.onenode.report import node_table
from taskgate.lab.experiments.onenode.roles import (
    EmbeddingTriggerMatcher,
    LLMNodeAgent,
    LLMTriggerCompiler,
    LLMTriggerMatcher,
    NaiveNodeAgent,
    PerfectNodeAgent,
    ScriptedTriggerCompiler,
    ScriptedTriggerMatcher,
)
from taskgate.lab.experiments.onenode.run import (
    ARMS,
    NodeConfig,
    NodeRoles,
    read_node_log,
    run_node_episode,
    run_one_node,
)
from taskgate.lab.experiments.onenode.testbed import (
    CATEGORIES,
    Commitment,
    NodeEpisode,
    NodeTurn,
    generate,
)

__all__ = [
    "ARMS",
    "CATEGORIES",
    "Commitment",
    "EmbeddingTriggerMatcher",
    "LLMNodeAgent",
    "LLMTriggerCompiler",
    "LLMTriggerMatcher",
    "NaiveNodeAgent",
    "NodeConfig",
    "NodeEpisode",
    "NodeRoles",
    "NodeTurn",
    "PerfectNodeAgent",
    "ScriptedTriggerCompiler",
    "ScriptedTriggerMatcher",
    "generate",
    "node_table",
    "read_node_log",
    "run_node_episode",
    "run_one_node",
]
