"""PM-Bench under the state-coupling ladder (Appendix I): the benchmark's released week, its own
prompts and its own scorer, from a checkout the user points to (PM-Bench has no licence, so
nothing of it ships here), with the rungs that own an intention record.

``load_checkout`` finds and checks the checkout; ``run_pmbench`` runs the rungs into a run
directory (resumable); ``pmbench_table`` is Table 21 from that directory alone.
``STANDIN`` is a stand-in checkout with a two-day week for tests, written for taskgate: not
PM-Bench.
"""

from __future__ import annotations

from taskgate.lab.experiments.pmbench.agents import AGENTS, LLMPMAgent, PMAgent, scripted_agent
from taskgate.lab.experiments.pmbench.checkout import STANDIN, Checkout, PMBenchError, load_checkout
from taskgate.lab.experiments.pmbench.coupling import NAMES, PMBENCH_RUNGS
from taskgate.lab.experiments.pmbench.experiment import PMConfig, RunSpec, run_pmbench
from taskgate.lab.experiments.pmbench.ledger import ledger_runner
from taskgate.lab.experiments.pmbench.loop import Limits, PMRoles, StepRecord, run_week
from taskgate.lab.experiments.pmbench.record import Intention, IntentionRecord, Op
from taskgate.lab.experiments.pmbench.report import pmbench_table
from taskgate.lab.experiments.pmbench.roles import LLMDueJudge, LLMIntentionCompiler, selects
from taskgate.lab.experiments.pmbench.scripted import ScriptedDueJudge, ScriptedIntentionCompiler
from taskgate.lab.experiments.pmbench.week import Week

#: the stand-in checkout's tiny week (two days: cues, times, a channel, a cancel, a reschedule)
TINY_WEEK = STANDIN / "data" / "tiny_week.json"

__all__ = [
    "AGENTS",
    "NAMES",
    "PMBENCH_RUNGS",
    "STANDIN",
    "TINY_WEEK",
    "Checkout",
    "Intention",
    "IntentionRecord",
    "LLMDueJudge",
    "LLMIntentionCompiler",
    "LLMPMAgent",
    "Limits",
    "Op",
    "PMAgent",
    "PMBenchError",
    "PMConfig",
    "PMRoles",
    "RunSpec",
    "ScriptedDueJudge",
    "ScriptedIntentionCompiler",
    "StepRecord",
    "Week",
    "ledger_runner",
    "load_checkout",
    "pmbench_table",
    "run_pmbench",
    "run_week",
    "scripted_agent",
    "selects",
]
