"""The trap-turn probe (Appendix A.4): why the text rungs fail.

From a finished raw-transcript run, every trap turn (a fresh work order for a step already done)
is re-asked with the recorded history held fixed and one thing changed: the request's form, where
the task state is shown, or the agent's own earlier execution record (:mod:`.variants`). Each
variant is sampled N times; a greedy re-ask of the recorded request measures how often the
recorded outcome reproduces. The share of replies that book the finished step again is reported
per variant with Wilson intervals (:mod:`.report`).
"""

from taskgate.lab.experiments.probe.cases import TrapTurn, rebooks, trap_turns
from taskgate.lab.experiments.probe.records import ProbeHeader, ProbeReply, read_probe
from taskgate.lab.experiments.probe.report import probe_table
from taskgate.lab.experiments.probe.runner import (
    LLMProbeAgent,
    ProbeAgent,
    ProbeAsk,
    ProbeConfig,
    ProbePlan,
    ScriptedProbeAgent,
    plan_probe,
    probe_traps,
    run_probe,
)
from taskgate.lab.experiments.probe.variants import VARIANTS, Variant

__all__ = [
    "VARIANTS",
    "LLMProbeAgent",
    "ProbeAgent",
    "ProbeAsk",
    "ProbeConfig",
    "ProbeHeader",
    "ProbePlan",
    "ProbeReply",
    "ScriptedProbeAgent",
    "TrapTurn",
    "Variant",
    "plan_probe",
    "probe_table",
    "probe_traps",
    "read_probe",
    "rebooks",
    "run_probe",
    "trap_turns",
]
