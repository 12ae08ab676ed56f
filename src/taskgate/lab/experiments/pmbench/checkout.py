"""The user's PM-Bench checkout: found, checked and loaded, never copied.

PM-Bench has no licence, so nothing of it ships with taskgate or is downloaded. The adapter loads
``sim/pm_bench.py`` from the directory the user points to (``--pmbench PATH``) and calls its own
functions: the system prompt, the daily header, the handles and menus, the due sets, the state
queries, the runtime completions and the scorer, unchanged. A path that is not a checkout, a
module that fails to import or lacks a function the adapter calls, and a scenario that is not
PM-Bench's JSON each give one line naming what is wrong.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from taskgate.errors import TaskgateError

MODULE = Path("sim/pm_bench.py")
STANDIN = Path(__file__).parent / "standin"  # the tests' stand-in checkout (not PM-Bench)
WEEK = Path("data/synthetic_week_v9.json")
#: sha256 of the files the paper ran (PM-Bench at e1093c4); another version is used with a warning
PINNED = {
    MODULE: "d8ec27d8dcf4679d7a789c52fc305286df460844d47e9f116b81f2400ac254d8",
    WEEK: "94a45937da1363be19ccfdc2c188d132f23093041e30abd3ec22d64d70da8f24",
}
#: what the adapter calls in the checkout's module
REQUIRED = (
    "DAILY_TASK_HEADER_LINES",
    "MAX_ACTION_TASK_IDS",
    "apply_runtime_completions",
    "apply_task_update",
    "build_action_schema",
    "build_day_handle_maps",
    "build_day_start_minutes",
    "build_llm_system_prompt",
    "build_step_action_menu",
    "build_updates_by_day",
    "compute_due_now",
    "format_action_menu",
    "format_state_query_display",
    "init_task_state",
    "list_state_channels",
    "normalize_encoding",
    "normalize_lure_catalog",
    "normalize_state_channels",
    "normalize_state_visibility",
    "normalize_task_ids",
    "parse_json_payload",
    "resolve_state_query_items",
    "score_log",
    "time_to_minutes",
)


class PMBenchError(TaskgateError, ValueError):
    """A PM-Bench checkout or scenario that cannot be used (the message names it)."""


@dataclass(frozen=True)
class Checkout:
    root: Path
    pm: ModuleType  # the checkout's sim/pm_bench.py
    scenario: dict[str, Any]
    scenario_path: Path
    version: str  # "pinned" or the module's sha256 prefix
    warnings: tuple[str, ...] = ()

    @property
    def days(self) -> int:
        return len(self.scenario["days"])

    def first_days(self, n: int) -> Checkout:
        """The same checkout with the week cut to its first ``n`` days (run and scored so)."""
        cut = {**self.scenario, "days": self.scenario["days"][:n]}
        return replace(self, scenario=cut)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_checkout(root: Path, scenario: Path | None = None) -> Checkout:
    """Load the checkout at ``root`` and its week (``scenario``, default the released v9 week)."""
    if not root.is_dir():
        raise PMBenchError(f"--pmbench {root}: no such directory (a PM-Bench checkout is needed)")
    module_path = root / MODULE
    if not module_path.is_file():
        raise PMBenchError(f"--pmbench {root}: not a PM-Bench checkout (no {MODULE})")
    week = scenario if scenario is not None else root / WEEK
    if not week.is_file():
        raise PMBenchError(f"{week}: no such scenario file in the checkout")
    pm = _import(module_path)
    missing = [name for name in REQUIRED if not hasattr(pm, name)]
    if missing:
        raise PMBenchError(
            f"{module_path} lacks {', '.join(missing)}: not the PM-Bench version this adapter reads"
        )
    data = _scenario(pm, week)
    warned = []
    digest = sha256(module_path)
    if root.resolve() == STANDIN.resolve():
        warned.append(
            f"{root} is taskgate's stand-in checkout, not PM-Bench: its figures are not PM-Bench's"
        )
    elif digest != PINNED[MODULE]:
        warned.append(f"{module_path} differs from the PM-Bench version the paper ran (e1093c4)")
    if scenario is None and sha256(week) != PINNED[WEEK]:
        warned.append(f"{week} differs from the released v9 week the paper ran")
    version = "pinned" if digest == PINNED[MODULE] else f"sha256:{digest[:12]}"
    return Checkout(root, pm, data, week, version, tuple(warned))


def _import(path: Path) -> ModuleType:
    key = f"{path.resolve()}\0{sha256(path)}"  # a module edited since is loaded anew
    name = f"_taskgate_pm_bench_{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PMBenchError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # the user's code: any failure is theirs, one line
        raise PMBenchError(f"{path} failed to import: {type(exc).__name__}: {exc}") from None
    sys.modules[name] = module
    return module


def _scenario(pm: ModuleType, path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PMBenchError(f"{path}: not a PM-Bench scenario ({exc})") from None
    days = data.get("days") if isinstance(data, dict) else None
    if not isinstance(days, list) or not days:
        raise PMBenchError(f"{path}: not a PM-Bench scenario (no days)")
    for n, day in enumerate(days, 1):
        if not isinstance(day, dict) or not {"name", "tasks", "steps"} <= day.keys():
            raise PMBenchError(f"{path}: day {n} lacks a name, tasks or steps")
        for step in day["steps"]:
            if not isinstance(step, dict) or not {"id", "time", "text", "options"} <= step.keys():
                raise PMBenchError(
                    f"{path}: a step of {day['name']} lacks id, time, text or options"
                )
    validate = getattr(pm, "validate_scenario", None)
    if callable(validate):
        try:
            errors, _ = validate(data)
        except Exception as exc:  # the user's validator on the user's file
            raise PMBenchError(f"{path}: the checkout's validator failed: {exc}") from None
        if errors:
            raise PMBenchError(f"{path}: {len(errors)} validation error(s), first: {errors[0]}")
    return dict(data)
