"""A scripted tau2 agent and user simulator, served by :class:`taskgate.llm.fake.FakeServer`.

For tests of the live runner without a model (shipped, like the fake server itself). One responder
plays both parties, telling them apart by the tool list only the agent's requests carry:

* the user names their user id, asks to cancel the reservation ``targets`` maps it to, and stops
  (``###STOP###``) once the agent has answered;
* the agent reads the reservation, cancels it, issues the identical cancellation once more if the
  first was refused, then reports what happened.

Ungated, the cancellation executes; behind the gate it is refused twice; under the advisory rung
the re-issue executes. On a task whose gold has no write, only the gated arm keeps the database
on the gold path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taskgate.lab.experiments.tau2.gate import REFUSAL_PREFIX
from taskgate.llm.fake import Reply, Responder, ToolCall


def cancelling_responder(targets: Mapping[str, str]) -> Responder:
    """``targets`` maps a user id (found in the user simulator's instructions) to a reservation."""

    def respond(body: dict[str, Any]) -> Reply:
        messages = body.get("messages", [])
        if body.get("tools"):
            return _agent(messages, targets)
        return _user(messages, targets)

    return respond


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else str(content)


def _user(messages: list[dict[str, Any]], targets: Mapping[str, str]) -> Reply:
    system = " ".join(_text(m) for m in messages if m.get("role") == "system")
    user_id = next((u for u in targets if u in system), None)
    if user_id is None:
        return Reply("###STOP###")
    spoken = sum(1 for m in messages if m.get("role") == "assistant")
    if spoken:
        return Reply("###STOP###")
    return Reply(f"Hi, my user id is {user_id}. Please cancel my reservation {targets[user_id]}.")


def _agent(messages: list[dict[str, Any]], targets: Mapping[str, str]) -> Reply:
    said = " ".join(_text(m) for m in messages if m.get("role") == "user")
    rid = next((r for r in targets.values() if r in said), None)
    if rid is None:
        return Reply("Which reservation would you like to cancel?")
    results = [_text(m) for m in messages if m.get("role") == "tool"]
    refused = bool(results) and results[-1].startswith(REFUSAL_PREFIX)
    if not results:
        return Reply("", tool_calls=(ToolCall("get_reservation_details", {"reservation_id": rid}),))
    if len(results) == 1 or (len(results) == 2 and refused):
        return Reply("", tool_calls=(ToolCall("cancel_reservation", {"reservation_id": rid}),))
    if refused:
        return Reply(f"I am sorry: reservation {rid} cannot be cancelled under our policy.")
    return Reply(f"Reservation {rid} is cancelled.")
