"""A model for the PM-Bench adapter's tests, to serve from :class:`taskgate.llm.fake.FakeServer`:
it compiles nothing, announces nothing, and as the agent selects exactly the handles the
directive lines of its last message name (none where there are none), rewriting an empty ledger
when the ledger scaffold asks for one."""

from __future__ import annotations

import json
import re
from typing import Any

from taskgate.llm.fake import Reply

_NAMED = re.compile(r"^(?:DUE NOW|STILL DUE): (task_\d+)", re.MULTILINE)


def pmbench_responder(body: dict[str, Any]) -> Reply:
    messages = body.get("messages") or []
    last = str(messages[-1].get("content", "")) if messages else ""
    if "TEXT (" in last and '{"ops"' in last:
        return Reply('{"ops": []}')
    if "Action menu:" in last and '"resolve"' in last:
        return Reply('{"resolve": {}, "due": []}')
    action: dict[str, Any] = {
        "action": "choose",
        "choice": "A",
        "task_ids": sorted(set(_NAMED.findall(last))),
        "channel": "NONE",
    }
    system = str(messages[0].get("content", "")) if messages else ""
    if "ledger" in system.lower():
        action["ledger"] = []
    return Reply(json.dumps(action))


def curious_responder(body: dict[str, Any]) -> Reply:
    """An agent that, at every step, reads the clock, then queries the email channel, then
    selects the first handle of the step's menu: enough to exercise every message the
    benchmark's loop appends (for comparing two loops on the same week)."""
    messages = body.get("messages") or []
    last = str(messages[-1].get("content", "")) if messages else ""
    if last.startswith("State [clock]"):
        return Reply(json.dumps(_act("query_state", "NONE", [], "email")))
    if last.startswith("State ["):
        menu = next(
            (str(m["content"]) for m in reversed(messages) if "action menu:" in str(m["content"])),
            "",
        )
        handles = re.findall(r"^- (task_\d+):", menu, re.MULTILINE)[:1]
        return Reply(json.dumps(_act("choose", "B", handles, "NONE")))
    return Reply(json.dumps(_act("check_time", "NONE", [], "clock")))


def _act(action: str, choice: str, ids: list[str], channel: str) -> dict[str, Any]:
    return {"action": action, "choice": choice, "task_ids": ids, "channel": channel}
