"""The subcommands' headings in ``taskgate --help`` and the lab's command names."""

from __future__ import annotations

ENGINEER = "For engineers: gate an agent"
LAB = "The lab: the paper's testbed (needs taskgate[lab])"

#: the lab's subcommands, in the order ``--help`` lists them
LAB_COMMANDS = (
    "ladder",
    "tools",
    "generate",
    "run",
    "score",
    "report",
    "merge",
    "matchers",
    "probe",
    "probe-tools",
    "probe-report",
    "one-node",
    "one-node-report",
    "pmbench",
    "pmbench-report",
    "rewrites",
    "raters",
    "raters-report",
    "tau2",
)
