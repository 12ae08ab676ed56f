"""A stand-in for PM-Bench's ``sim/run_todo_ledger.py``, written for taskgate's tests: NOT
PM-Bench. It takes the flags the adapter passes, keeps a to-do ledger the model rewrites in each
reply, calls the model through the openai SDK and writes the benchmark's log format.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("standin_pm_bench", ROOT / "sim" / "pm_bench.py")
assert _spec is not None and _spec.loader is not None
PM: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PM)

LEDGER = 'Keep a to-do ledger: add "ledger": [{"task": "...", "when": "..."}] to every reply.'


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="stand-in todo_ledger scaffold (not PM-Bench)")
    for flag in ("--scenario", "--log", "--out-dir", "--ledger-log", "--model", "--base-url"):
        p.add_argument(flag, required=flag in ("--scenario", "--log", "--model"))
    p.add_argument("--backend", default="sglang")
    p.add_argument("--api-key", default="None")
    p.add_argument("--temperature", type=float, default=0.0)
    return p.parse_args()


def _ask(client: Any, model: str, messages: list[dict[str, str]], temperature: float) -> Any:
    for _ in range(3):
        reply = client.chat.completions.create(
            model=model, messages=messages, temperature=temperature, max_tokens=256
        )
        try:
            return PM.parse_json_payload(reply.choices[0].message.content or "")
        except ValueError:
            continue
    raise SystemExit("stand-in scaffold: three replies without a JSON action")


def main() -> int:
    from openai import OpenAI

    args = _args()
    scenario = PM.load_scenario(args.scenario)
    client = OpenAI(base_url=args.base_url, api_key=args.api_key)
    channels = PM.list_state_channels(scenario)
    messages = [
        {"role": "system", "content": PM.build_llm_system_prompt(False, channels) + "\n" + LEDGER},
        {"role": "user", "content": "\n".join(PM.DAILY_TASK_HEADER_LINES)},
    ]
    rows = []
    for day in scenario["days"]:
        messages.append({"role": "user", "content": "\n".join([f"=== {day['name']} ==="])})
        states = {t["id"]: PM.init_task_state(t) for t in day["tasks"]}
        active = {t["id"] for t in day["tasks"] if t["encoding"] == "start"}
        for tid in active:
            states[tid]["active"] = True
        lures = PM.normalize_lure_catalog(day.get("lures", []))
        to_handle, _ = PM.build_day_handle_maps(states, lures, f"{day['name']}:handles")
        for idx, step in enumerate(day["steps"]):
            due = PM.compute_due_now(states, active, step, idx, 0, 0)
            entries, handle_to_id = PM.build_step_action_menu(
                states, active, lures, to_handle, day["name"], step["id"]
            )
            menu = PM.format_action_menu(entries, header="Step action menu")
            messages.append({"role": "user", "content": f"{step['text']}\n{menu}"})
            queries: dict[str, int] = {}
            while True:
                action = _ask(client, args.model, messages, args.temperature)
                messages.append({"role": "assistant", "content": json.dumps(action)})
                if action.get("action") == "choose":
                    break
                channel = action.get("channel", "clock")
                queries[channel] = queries.get(channel, 0) + 1
                messages.append({"role": "user", "content": f"State [{channel}]: (no updates)"})
            chosen = [handle_to_id[h] for h in PM.normalize_task_ids(action) if h in handle_to_id]
            PM.apply_runtime_completions(states, chosen, due, step, idx, 0, 0)
            rows.append(
                {
                    "day": day["name"], "step_id": step["id"], "choice": action.get("choice", "A"),
                    "task_ids": chosen, "check_time": queries.get("clock", 0),
                    "state_queries": queries, "ledger": action.get("ledger", []),
                }
            )  # fmt: skip
    with open(args.log, "w", encoding="utf-8") as f:
        f.write(json.dumps({"record_type": "run_metadata", "mode": "standin-ledger"}) + "\n")
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
