"""A model for the PM-Bench adapter's tests, to serve from :class:`taskgate.llm.fake.FakeServer`:
it compiles nothing, announces nothing, and as the agent selects exactly the handles the
directive lines of its last message name (none where there are none), rewriting an empty ledger
when the ledger scaffold asks for one."""

from __future__ import annotations

import json
import re
from typing import Any

from ...llm.fake import Reply

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
