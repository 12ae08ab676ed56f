"""The bench scripts, loaded as modules for the tests that replay their labelled samples."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def conversations() -> ModuleType:
    """``bench/bench_conversations.py`` as the module ``bench_conversations``."""
    spec = importlib.util.spec_from_file_location(
        "bench_conversations", ROOT / "bench" / "bench_conversations.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_conversations"] = module
    spec.loader.exec_module(module)
    return module
