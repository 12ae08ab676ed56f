"""The state-block rung (the paper's "ledger" arm of Table 20): task state shown next to tool
results, writes unguarded. Named state block here because "ledger" means the receipts ledger.

After every successful read or write of a reservation or a user, a block computed from the
database follows the tool's result: the reservation's cabin, insurance, booking age and segment
statuses; the user's membership and the reservations that qualify for compensation; and, per WRITE
tool, which rules already fire on the current state, which depend on the request, and which are
clear. Nothing is refused: the agent reads the state and decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from taskgate.lab.experiments.tau2.facts import FACTS, NOW, DbView
from taskgate.lab.experiments.tau2.rules import Rule, Ruleset, parse_condition

RESERVATION_TOOLS = (
    "cancel_reservation",
    "update_reservation_flights",
    "update_reservation_baggages",
    "update_reservation_passengers",
)
USER_TOOLS = ("book_reservation", "send_certificate")
STATE_BLOCK_HEADER = "[TASK-STATE BLOCK]"


def _state_only(cond: str) -> bool:
    c = parse_condition(cond)
    return not c.fact.startswith("args.") and not (c.scale_fact or "").startswith("args.")


def classify_rules(
    ruleset: Ruleset, db: DbView, tool: str, args: Mapping[str, Any]
) -> dict[str, list[str]]:
    """Split the tool's rules into: fire now, depend on the request, clear."""
    out: dict[str, list[str]] = {"fires": [], "depends on the request": [], "clear": []}
    for rule in (r for r in ruleset.rule if r.tool == tool):
        out[_status(rule, db, args)].append(rule.id)
    return out


def _status(rule: Rule, db: DbView, args: Mapping[str, Any]) -> str:
    state = [c for c in rule.when if _state_only(c)]
    if not all(parse_condition(c).holds(db, args) for c in state):
        return "clear"
    return "fires" if len(state) == len(rule.when) else "depends on the request"


def _rules_line(ruleset: Ruleset, db: DbView, tool: str, args: Mapping[str, Any]) -> str:
    parts = [
        f"{k}: {', '.join(v)}" for k, v in classify_rules(ruleset, db, tool, args).items() if v
    ]
    return f"- {tool}: " + ("; ".join(parts) if parts else "no rules")


def reservation_block(ruleset: Ruleset, db: DbView, rid: str) -> list[str]:
    res = db.reservation(rid)
    if res is None:
        return []
    args = {"reservation_id": rid}
    created = datetime.fromisoformat(str(res["created_at"]))
    age_h = (NOW - created).total_seconds() / 3600
    segments = ", ".join(
        f"{f['flight_number']} {f['date']} {db.flight_status(f['flight_number'], f['date'])}"
        for f in res.get("flights", [])
    )
    lines = [
        f"reservation {rid}: cabin {res['cabin']}; insurance {res['insurance']}; "
        f"booked {age_h:.0f} h ago ({'within' if FACTS['reservation.booked_within_24h'](db, args) else 'not within'} 24 h); "
        f"status {res.get('status') or 'active'}; segments: {segments}"
    ]
    lines += [_rules_line(ruleset, db, tool, args) for tool in RESERVATION_TOOLS]
    return lines


def user_block(ruleset: Ruleset, db: DbView, uid: str) -> list[str]:
    user = db.user(uid)
    if user is None:
        return []
    qualifying = [
        rid
        for rid in user.get("reservations", [])
        if (r := db.reservation(rid)) is not None
        and (
            user.get("membership") in ("silver", "gold")
            or r.get("insurance") == "yes"
            or r.get("cabin") == "business"
        )
    ]
    args = {"user_id": uid}
    lines = [
        f"user {uid}: membership {user.get('membership')}; reservations that qualify for "
        f"compensation: {', '.join(qualifying) or 'none'}"
    ]
    lines += [_rules_line(ruleset, db, tool, args) for tool in USER_TOOLS]
    return lines


def state_block(
    ruleset: Ruleset, db: DbView, arguments: Mapping[str, Any], result: Any = None
) -> str | None:
    """The block for a tool call's entities (its arguments, or the reservation it returned)."""
    lines: list[str] = []
    rid = arguments.get("reservation_id") or (
        result.get("reservation_id") if isinstance(result, dict) else None
    )
    uid = arguments.get("user_id") or (result.get("user_id") if isinstance(result, dict) else None)
    if rid:
        lines += reservation_block(ruleset, db, str(rid))
    if uid:
        lines += user_block(ruleset, db, str(uid))
    if not lines:
        return None
    return "\n".join(
        [STATE_BLOCK_HEADER, *lines, "(writes are not checked: decide from this state)"]
    )
