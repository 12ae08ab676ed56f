"""Wording control and matcher stress (Appendix A.5) and the redo-probe wording study (A.3): the
tier-2 rewrite cache, the model raters, and their tables."""

from taskgate.lab.experiments.wording.raters import RaterConfig, rater_table, run_raters
from taskgate.lab.experiments.wording.rewrites import (
    RewriteConfig,
    ScriptedRewriter,
    build_rewrites,
    check_rewrites,
    read_cache,
)

__all__ = [
    "RaterConfig",
    "RewriteConfig",
    "ScriptedRewriter",
    "build_rewrites",
    "check_rewrites",
    "rater_table",
    "read_cache",
    "run_raters",
]
