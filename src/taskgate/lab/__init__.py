"""The lab: the paper's testbed on top of the library.

Episodes and their generator, the arms (the ladder's rungs with the episode loop's hooks), the
scripted and model-backed players, the runner and its run directories, the exact-match scorer,
statistics, reports and figures, the real-tool harness, the memory baselines and the experiments
(:mod:`taskgate.lab.experiments`: the probe, the one-node case, the wording study, PM-Bench and the
tau2 study). Needs ``taskgate[lab]``. The lab imports the library; the library never imports the
lab.
"""

import taskgate.lab._extra  # noqa: F401  (first: without the lab's extra, one clear error)
from taskgate.lab.agents.base import Oracle, TurnView
from taskgate.lab.agents.scripted import (
    AlwaysBookAgent,
    CorruptCompiler,
    ObedientAgent,
    PerfectAgent,
    ScriptedCompiler,
    ScriptedMatcher,
)
from taskgate.lab.arms.arm import Arm, ArmState, Exchange, Judged
from taskgate.lab.arms.memory import MemoryArm
from taskgate.lab.arms.registry import ARMS, LADDER, MEMORY_LADDER, TOOL_LADDER, get_arm
from taskgate.lab.episodes.generator import generate_episode
from taskgate.lab.episodes.models import Episode, EpisodeParams, Turn
from taskgate.lab.episodes.tools import harness_episode, tool_plan
from taskgate.lab.experiments.onenode import NodeConfig, node_table, run_one_node
from taskgate.lab.experiments.probe import ProbeConfig, ScriptedProbeAgent, probe_table, run_probe
from taskgate.lab.experiments.wording import (
    RaterConfig,
    RewriteConfig,
    build_rewrites,
    rater_table,
    run_raters,
)
from taskgate.lab.memory import Memory, Recall, TopKMemory, build_memory
from taskgate.lab.progress import Progress
from taskgate.lab.reporting import Report, RunSet, build_report, load_runs
from taskgate.lab.reporting.figures import write_figures
from taskgate.lab.reporting.html import render_html, write_html
from taskgate.lab.runner.config import LadderConfig
from taskgate.lab.runner.episode import Players, run_episode
from taskgate.lab.runner.ladder import run_episodes, run_ladder
from taskgate.lab.runner.roles import ROLES, Clients, RoleContext, RoleRegistry, build_players
from taskgate.lab.scoring.index import read_index, score_run
from taskgate.lab.scoring.scorer import CHANNELS, EpisodeScore, score_episode
from taskgate.lab.scoring.stats import holm, mcnemar_exact, wilson
from taskgate.lab.scoring.summary import Row, adjacent_contrasts, pair_contrasts, summarize
from taskgate.lab.scoring.table import Table

__all__ = [
    "ARMS",
    "CHANNELS",
    "LADDER",
    "MEMORY_LADDER",
    "ROLES",
    "TOOL_LADDER",
    "AlwaysBookAgent",
    "Arm",
    "ArmState",
    "Clients",
    "CorruptCompiler",
    "Episode",
    "EpisodeParams",
    "EpisodeScore",
    "Exchange",
    "Judged",
    "LadderConfig",
    "Memory",
    "MemoryArm",
    "NodeConfig",
    "ObedientAgent",
    "Oracle",
    "PerfectAgent",
    "Players",
    "ProbeConfig",
    "Progress",
    "RaterConfig",
    "Recall",
    "Report",
    "RewriteConfig",
    "RoleContext",
    "RoleRegistry",
    "Row",
    "RunSet",
    "ScriptedCompiler",
    "ScriptedMatcher",
    "ScriptedProbeAgent",
    "Table",
    "TopKMemory",
    "Turn",
    "TurnView",
    "adjacent_contrasts",
    "build_memory",
    "build_players",
    "build_report",
    "build_rewrites",
    "generate_episode",
    "get_arm",
    "harness_episode",
    "holm",
    "load_runs",
    "mcnemar_exact",
    "node_table",
    "pair_contrasts",
    "probe_table",
    "rater_table",
    "read_index",
    "render_html",
    "run_episode",
    "run_episodes",
    "run_ladder",
    "run_one_node",
    "run_probe",
    "run_raters",
    "score_episode",
    "score_run",
    "summarize",
    "tool_plan",
    "wilson",
    "write_figures",
    "write_html",
]
