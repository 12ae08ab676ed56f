"""The paper's experiments beyond the ladder, one folder each: the probe (:mod:`.probe`), the
one-node case (:mod:`.onenode`), the wording study (:mod:`.wording`), PM-Bench (:mod:`.pmbench`)
and the tau2 study (:mod:`.tau2`).

Each keeps its records in one file of its run directory (:mod:`.protocol`) and is registered in
:data:`EXPERIMENTS`, from which its ``taskgate <name>-report`` command is made. An experiment
imports the lab and the library, never another experiment (an import contract checks it).
"""

from taskgate.lab.experiments.protocol import Experiment, ExperimentFile
from taskgate.registry import Registry

_PKG = "taskgate.lab.experiments"

#: the experiments whose tables are reported from their directories alone
EXPERIMENTS: Registry[Experiment] = Registry(
    "experiment",
    (
        (e.name, e)
        for e in (
            Experiment(
                "probe",
                "probe-report",
                "Table 3 from probe directories alone.",
                f"{_PKG}.probe.report:probe_table",
                many=True,
                dir_help="One or several probe directories (one column each).",
            ),
            Experiment(
                "one-node",
                "one-node-report",
                "The one-node table from its run directory alone.",
                f"{_PKG}.onenode.report:node_table",
                dir_help="A one-node run directory.",
            ),
            Experiment(
                "raters",
                "raters-report",
                "The wording study's table from its directory alone.",
                f"{_PKG}.wording.raters:rater_table",
                dir_help="A raters directory.",
            ),
            Experiment(
                "pmbench",
                "pmbench-report",
                "Table 21 from its run directory alone.",
                f"{_PKG}.pmbench.report:pmbench_table",
                dir_help="A PM-Bench run directory.",
            ),
        )
    ),
)

__all__ = ["EXPERIMENTS", "Experiment", "ExperimentFile"]
