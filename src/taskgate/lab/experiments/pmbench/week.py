"""PM-Bench's week, stepped with the checkout's own functions (its ``single_baseline`` loop).

:class:`Week` builds the system prompt and the daily header; :class:`Day` holds one day's task
states, handles, update schedule and query cursors, and gives each step's prompt (vignette,
options, step menu), its due set (the benchmark's truth, for scoring-side diagnostics and
scripted roles only), the answers to state queries and the runtime completions after a choice.
Every string the agent sees comes from the checkout, so the raw rung's prompts are the
benchmark's to the byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from taskgate.lab.experiments.pmbench.checkout import Checkout


@dataclass
class Step:
    index: int
    id: str
    text: str
    prompt: str  # the benchmark's step prompt: vignette, options, step menu
    menu: dict[str, str]  # handle -> action text, in menu order
    handle_to_id: dict[str, str]
    due: frozenset[str]  # task ids due now (the benchmark's truth)
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


class Week:
    def __init__(self, checkout: Checkout) -> None:
        self.checkout = checkout
        self.pm = checkout.pm
        self.scenario = checkout.scenario
        self.channels: list[str] = list(self.pm.list_state_channels(self.scenario))
        self._visibility = self.pm.normalize_state_visibility(self.scenario)
        self._configs = self.pm.normalize_state_channels(self.scenario)
        self._updates = self.pm.build_updates_by_day(self.scenario)

    def system_prompt(self) -> str:
        return str(self.pm.build_llm_system_prompt(False, self.channels))

    def daily_header(self) -> str:
        return "\n".join(self.pm.DAILY_TASK_HEADER_LINES)

    @property
    def clock_visible(self) -> bool:
        return bool(self._visibility.get("clock", False))

    def days(self) -> list[Day]:
        return [Day(self, d) for d in self.scenario["days"]]

    def schema(self, handles: list[str]) -> dict[str, Any]:
        return dict(self.pm.build_action_schema(handles, self.channels))


class Day:
    def __init__(self, week: Week, day: dict[str, Any]) -> None:
        pm = self.pm = week.pm
        self.week = week
        self.name: str = day["name"]
        self.data = day
        self.start = pm.build_day_start_minutes(day)
        self.lures = pm.normalize_lure_catalog(day.get("lures", []))
        self.updates = week._updates.get(self.name, {"pre": [], "by_step": {}})
        self.states: dict[str, Any] = {t["id"]: pm.init_task_state(t) for t in day["tasks"]}
        self.active: set[str] = set()
        for task in day["tasks"]:
            if pm.normalize_encoding(task["encoding"])[0] == "start":
                self.active.add(task["id"])
                self.states[task["id"]]["active"] = True
        for update in self.updates.get("pre", []):
            self._update(update)
        self.id_to_handle, _ = pm.build_day_handle_maps(
            self.states, self.lures, seed_key=f"{self.name}:handles"
        )
        self._last_query: dict[str, int] = {}
        self._last_snapshot: dict[str, Any] = {}

    def header(self) -> str:
        return "\n".join([f"=== {self.name} ===", *self.data.get("start_instructions", [])])

    def labels(self) -> dict[str, str]:
        return {tid: s["task"].get("label") or tid for tid, s in self.states.items()}

    def _update(self, update: dict[str, Any]) -> None:
        state = self.states.get(update.get("task_id", ""))
        if state is not None:
            self.pm.apply_task_update(state, update, task_states=self.states)

    def enter(self, index: int) -> Step:
        """Step ``index`` begins: its updates apply, its tasks activate, its due set and menu."""
        pm, step = self.pm, self.data["steps"][index]
        for update in self.updates.get("by_step", {}).get(step["id"], []):
            self._update(update)
        for task in self.data["tasks"]:
            kind, at = pm.normalize_encoding(task["encoding"])
            if kind == "step" and at == step["id"]:
                self.active.add(task["id"])
                self.states[task["id"]]["active"] = True
        minutes = pm.time_to_minutes(step["time"])
        due = pm.compute_due_now(self.states, self.active, step, index, minutes, self.start)
        entries, handle_to_id = pm.build_step_action_menu(
            self.states, self.active, self.lures, self.id_to_handle, self.name, step["id"]
        )
        menu_text = pm.format_action_menu(entries, header="Step action menu")
        time_line = ""
        if self.week.clock_visible:
            time_line = f"\nTime: {step['time']} | Stopwatch: {minutes - self.start} min"
        prompt = f"{step['text']}\n" + "\n".join(step["options"]) + "\n" + menu_text + "\n"
        return Step(
            index=index,
            id=step["id"],
            text=step["text"],
            prompt=prompt + time_line,
            menu={e["handle"]: e["action_text"] for e in entries},
            handle_to_id=dict(handle_to_id),
            due=frozenset(due),
            raw=step,
        )

    def query(self, step: Step, channel: str) -> str:
        """The state response line for a query of ``channel`` at this step."""
        items = self.pm.resolve_state_query_items(
            channel,
            self.data["steps"],
            step.index,
            self.name,
            self.start,
            self.week._configs,
            self._last_query,
            self._last_snapshot,
        )
        return str(self.pm.format_state_query_display(channel, items))

    def complete(self, step: Step, task_ids: list[str]) -> None:
        """The benchmark's runtime completions after a choice (hits and lates leave the menu)."""
        minutes = self.pm.time_to_minutes(step.raw["time"])
        self.pm.apply_runtime_completions(
            self.states, task_ids, set(step.due), step.raw, step.index, minutes, self.start
        )

    @property
    def steps(self) -> int:
        return len(self.data["steps"])
