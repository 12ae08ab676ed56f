"""A stand-in for PM-Bench's ``sim/pm_bench.py``, written for taskgate's tests: NOT PM-Bench.

PM-Bench has no licence, so nothing of it ships with taskgate. This module offers the functions
the adapter calls, with the benchmark's documented behaviour simplified (event, time and
channel cues; cancel and reschedule updates; day handles; step menus with lures; delta state
channels; hits, lates, misses, false alarms, update violations and Set-F1 counts), so the
adapter can be tested without a checkout. Its prompts are taskgate's own words. Point
``--pmbench`` at a real checkout for the benchmark itself.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

State = dict[str, Any]
MAX_ACTION_TASK_IDS = 8
DAILY_TASK_HEADER_LINES = ["Every day:", "- Take the pill at breakfast."]
LATE_MINUTES = 60
LATE_STEPS = 1


def time_to_minutes(value: str) -> int:
    hours, minutes = value.split(":")
    return int(hours) * 60 + int(minutes)


def load_scenario(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def list_state_channels(scenario: dict[str, Any]) -> list[str]:
    return sorted({"clock", *(scenario.get("state_visibility") or {})})


def normalize_state_visibility(scenario: dict[str, Any]) -> dict[str, bool]:
    shown = scenario.get("state_visibility") or {}
    return {c: bool(shown.get(c, False)) for c in list_state_channels(scenario)}


def normalize_state_channels(scenario: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c: {"mode": "delta"} for c in list_state_channels(scenario)}


def build_llm_system_prompt(show_task_legend: bool, state_channels: list[str]) -> str:
    return (
        "(stand-in, not PM-Bench) Each step is a vignette with options A, B, C and a menu of "
        "task_N actions. Perform the actions that are due now.\n"
        f"Hidden state channels: {', '.join(state_channels)}.\n"
        'Reply with JSON: {"action":"choose","choice":"A","task_ids":[],"channel":"NONE"} or '
        '{"action":"query_state","choice":"NONE","task_ids":[],"channel":"clock"}.'
    )


def build_action_schema(allowed_task_ids: list[str], allowed_channels: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["choose", "check_time", "query_state"]},
            "choice": {"type": "string", "enum": ["A", "B", "C", "NONE"]},
            "task_ids": {"type": "array", "items": {"type": "string", "enum": allowed_task_ids}},
            "channel": {"type": "string", "enum": sorted({*allowed_channels, "NONE"})},
        },
        "required": ["action", "choice", "task_ids", "channel"],
        "additionalProperties": False,
    }


def normalize_encoding(value: str) -> tuple[str, str | None]:
    if value == "start":
        return ("start", None)
    if value.startswith("step:"):
        return ("step", value[5:])
    raise ValueError(f"unknown encoding {value!r}")


def build_updates_by_day(scenario: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {
        d["name"]: {"pre": [], "by_step": {}} for d in scenario["days"]
    }
    for day in scenario["days"]:
        for step in day["steps"]:
            for update in step.get("updates", []):
                target = update.get("target_day", day["name"])
                if target == day["name"]:
                    out[target]["by_step"].setdefault(step["id"], []).append(update)
                elif target in out:
                    out[target]["pre"].append(update)
    return out


def init_task_state(task: dict[str, Any]) -> State:
    current = {k: task.get(k) for k in ("type", "cue_id", "target_time", "label", "action_text")}
    current["cue_channel"] = task.get("cue_channel", "narrative")
    return {
        "task": task, "current": current, "active": False, "completed": False,
        "canceled": False, "updated": False, "cue_step_idx": None, "result": None,
    }  # fmt: skip


def apply_task_update(
    state: State, update: dict[str, Any], task_states: dict[str, State] | None = None
) -> None:
    if state["completed"]:
        return
    if update.get("action") == "cancel":
        state["canceled"], state["result"] = True, "canceled"
        return
    state["updated"] = True
    for key, field in (("new_target_time", "target_time"), ("new_cue_id", "cue_id")):
        if update.get(key):
            state["current"][field] = update[key]
            state["cue_step_idx"] = None


def build_day_start_minutes(day: dict[str, Any]) -> int:
    return time_to_minutes(day["steps"][0]["time"]) if day["steps"] else 0


def normalize_lure_catalog(lures: list[Any]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for lure in lures:
        item = lure if isinstance(lure, dict) else {"id": lure}
        text = item.get("action_text") or str(item["id"]).replace("_", " ").capitalize() + "."
        if all(o["id"] != item["id"] for o in out):
            out.append({"id": str(item["id"]), "action_text": str(text)})
    return out


def build_day_handle_maps(
    task_states: dict[str, State], lure_catalog: list[dict[str, str]], seed_key: str
) -> tuple[dict[str, str], dict[str, str]]:
    ids = sorted({*task_states, *(lure["id"] for lure in lure_catalog)})
    random.Random(seed_key).shuffle(ids)
    to_handle = {item: f"task_{n}" for n, item in enumerate(ids, 1)}
    return to_handle, {h: i for i, h in to_handle.items()}


def _cue_now(current: dict[str, Any], step: dict[str, Any]) -> bool:
    if current["type"] == "time":
        return bool(step["time"] == current["target_time"])
    channel = current.get("cue_channel", "narrative")
    if channel == "narrative":
        return current["cue_id"] in step.get("cues", [])
    events = step.get("state_events", {}).get(channel, [])
    return any((e if isinstance(e, str) else e.get("id")) == current["cue_id"] for e in events)


def compute_due_now(
    task_states: dict[str, State], active_task_ids: set[str], step: dict[str, Any],
    step_idx: int, step_minutes: int, day_start_minutes: int,
) -> set[str]:  # fmt: skip
    due = set()
    for tid in active_task_ids:
        s = task_states[tid]
        if s["completed"] or s["canceled"] or not s["active"] or not _cue_now(s["current"], step):
            continue
        if s["cue_step_idx"] is None:
            s["cue_step_idx"] = step_idx
        due.add(tid)
    return due


def _late(s: State, step: dict[str, Any], step_idx: int) -> bool:
    if s["current"]["type"] == "time":
        delta = time_to_minutes(step["time"]) - time_to_minutes(s["current"]["target_time"])
        return 0 < delta <= LATE_MINUTES
    return s["cue_step_idx"] is not None and 0 < step_idx - s["cue_step_idx"] <= LATE_STEPS


def apply_runtime_completions(
    task_states: dict[str, State], chosen_task_ids: list[str], due_now: set[str],
    step: dict[str, Any], step_idx: int, step_minutes: int, day_start_minutes: int,
) -> None:  # fmt: skip
    for tid in chosen_task_ids:
        s = task_states.get(tid)
        if s is None or s["completed"] or s["canceled"] or not s["active"]:
            continue
        if tid in due_now:
            s["completed"], s["result"] = True, "hit"
        elif _late(s, step, step_idx):
            s["completed"], s["result"] = True, "late"


def build_step_action_menu(
    task_states: dict[str, State], active_task_ids: set[str], lure_catalog: list[dict[str, str]],
    id_to_handle: dict[str, str], day_name: str, step_id: str, lure_count: int = 2,
) -> tuple[list[dict[str, str]], dict[str, str]]:  # fmt: skip
    entries = [
        {
            "id": t,
            "handle": id_to_handle[t],
            "action_text": task_states[t]["current"]["action_text"],
        }
        for t in sorted(active_task_ids)
        if task_states[t]["active"] and not task_states[t]["completed"]
    ]
    rng = random.Random(f"{day_name}:{step_id}")
    lures = rng.sample(lure_catalog, k=min(lure_count, len(lure_catalog)))
    entries += [{"id": x["id"], "handle": id_to_handle[x["id"]], **x} for x in lures]
    rng.shuffle(entries)
    return entries, {e["handle"]: e["id"] for e in entries}


def format_action_menu(menu_entries: list[dict[str, str]], header: str = "Menu") -> str:
    if not menu_entries:
        return f"\n{header}: (none)"
    return "\n".join(
        [f"\n{header}:", *(f"- {e['handle']}: {e['action_text']}" for e in menu_entries)]
    )


def resolve_state_query_items(
    channel: str, steps: list[dict[str, Any]], step_idx: int, day_name: str,
    day_start_minutes: int, state_channels: dict[str, Any], last_query_step_by_channel: dict[str, int],
    last_snapshot_item_by_channel: dict[str, Any],
) -> list[dict[str, Any]]:  # fmt: skip
    first = last_query_step_by_channel.get(channel, -1) + 1
    last_query_step_by_channel[channel] = step_idx
    if channel == "clock":
        return [{"id": "clock", "text": f"Time {steps[step_idx]['time']}"}]
    items = []
    for step in steps[first : step_idx + 1]:
        for e in step.get("state_events", {}).get(channel, []):
            items.append({"id": e, "text": e} if isinstance(e, str) else e)
    return items


def format_state_query_display(channel: str, items: list[dict[str, Any]]) -> str:
    texts = [str(i.get("text") or i.get("id")) for i in items]
    return f"State [{channel}]: " + (" | ".join(texts) if texts else "(no updates)")


def normalize_task_ids(action: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for tid in action.get("task_ids") or []:
        if tid and tid not in out:
            out.append(tid)
    return out


def parse_json_payload(raw_text: str) -> Any:
    text = re.sub(r"<think>.*?</think>", "", raw_text or "", flags=re.DOTALL).strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object in the reply")
    return json.loads(text[start : end + 1])


COUNTERS = (
    "hit", "late", "miss", "false_alarm", "commission", "update_violation", "update_total",
    "canceled_total", "check_time_calls", "state_query_calls", "set_tp", "set_fp", "set_fn",
)  # fmt: skip


def _score_choice(s: State | None, tid: str, due: set[str], step: dict[str, Any], idx: int) -> str:
    if s is None or not s["active"] or s["canceled"]:
        return "false_alarm"
    if s["completed"]:
        return "commission"
    if tid in due:
        return "hit"
    return "late" if _late(s, step, idx) else "false_alarm"


def _score_day(
    day: dict[str, Any], rows: list[dict[str, Any]], updates: dict[str, Any]
) -> dict[str, int]:
    if len(rows) != len(day["steps"]):
        raise ValueError(f"{day['name']}: {len(rows)} log rows for {len(day['steps'])} steps")
    m = dict.fromkeys(COUNTERS, 0)
    states = {t["id"]: init_task_state(t) for t in day["tasks"]}
    active = {t["id"] for t in day["tasks"] if t["encoding"] == "start"}
    for tid in active:
        states[tid]["active"] = True
    for update in updates["pre"]:
        if update["task_id"] in states:
            apply_task_update(states[update["task_id"]], update)
    for idx, (step, row) in enumerate(zip(day["steps"], rows, strict=True)):
        for update in updates["by_step"].get(step["id"], []):
            if update["task_id"] in states:
                apply_task_update(states[update["task_id"]], update)
                m["update_total"] += update.get("action") != "cancel"
        for t in day["tasks"]:
            if t["encoding"] == f"step:{step['id']}":
                active.add(t["id"])
                states[t["id"]]["active"] = True
        due = compute_due_now(states, active, step, idx, 0, 0)
        chosen = normalize_task_ids(row)
        m["set_tp"] += len(due & set(chosen))
        m["set_fp"] += len(set(chosen) - due)
        m["set_fn"] += len(due - set(chosen))
        for tid in chosen:
            s = states.get(tid)
            outcome = _score_choice(s, tid, due, step, idx)
            m[outcome] += 1
            if s is not None and (s["canceled"] or (s["updated"] and tid not in due)):
                m["update_violation"] += 1
            if s is not None and outcome in ("hit", "late"):
                s["completed"] = True
        queries = row.get("state_queries") or {"clock": row.get("check_time", 0)}
        m["state_query_calls"] += sum(queries.values())
        m["check_time_calls"] += queries.get("clock", 0)
    m["canceled_total"] = sum(s["canceled"] for s in states.values())
    m["miss"] = sum(not s["completed"] and not s["canceled"] for s in states.values())
    return m


def score_log(
    scenario: dict[str, Any], log_entries: list[dict[str, Any]]
) -> tuple[dict[str, int], dict[str, Any], int]:
    by_day: dict[str, list[dict[str, Any]]] = {d["name"]: [] for d in scenario["days"]}
    for entry in log_entries:
        by_day[entry["day"]].append(entry)
    updates = build_updates_by_day(scenario)
    summary = dict.fromkeys(COUNTERS, 0)
    per_day = {}
    for day in scenario["days"]:
        m = _score_day(day, by_day[day["name"]], updates[day["name"]])
        per_day[day["name"]] = {"metrics": m}
        for key in summary:
            summary[key] += m[key]
    return summary, per_day, sum(len(d["steps"]) for d in scenario["days"])


def validate_scenario(scenario: dict[str, Any]) -> tuple[list[str], list[str]]:
    errors = []
    for day in scenario.get("days", []):
        times = {s["time"] for s in day["steps"]}
        for task in day["tasks"]:
            if task.get("type") == "time" and task.get("target_time") not in times:
                errors.append(f"{day['name']}: {task['id']}'s time is no step's time")
        for step in day["steps"]:
            if len(step.get("options", [])) != 3:
                errors.append(f"{day['name']} {step['id']}: a step needs three options")
    return errors, []
