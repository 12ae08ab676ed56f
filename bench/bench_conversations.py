"""Conversations nobody here wrote, replayed through the gate's core: does a call run when the
user asked for it, and stop when they did not?

Corpus: the Schema-Guided Dialogue dataset (Rastogi et al., AAAI 2020; CC BY-SA 4.0), its train
and dev splits as stripped in ``../shared/data/sgd/`` (``--sgd DIR``); never its test split. Each
service's transactional intents (booking, buying, reserving, transferring, ...) are the steps of a
plan, worded by the schema's descriptions and marked repeatable (a user books a second table).
At every user turn the case is labelled from SGD's own dialogue acts (the rule is
:func:`cases`), then replayed: a fresh :class:`taskgate.GateSession` (with the step already done
when an earlier call of it succeeded), ``open_message(user turn, the reader, agent=the system
turn before it, earlier=the three turns before)``, then the call judged with its arguments.

* **asked**: the next system turn makes a transactional call (SGD's agents call only after the
  user says yes to a confirmation or a counter-offer). It should run.
* **unasked**: the user declined, changed the details, asked a question, asked for alternatives,
  closed, or searched; the call is the next transactional call of the turn's service (or the one
  already made). It should be stopped.
* **apart** (in neither target): the user asked for the transaction with details not yet
  confirmed (SGD's INFORM_INTENT, or AFFIRM_INTENT to an offer), turns that fill details while
  such a request is open, and requests SGD files under a search intent although their words ask
  for the transaction ("I want to book a rental car", "Can you book me a hotel?"); SGD's agents
  search and confirm first, the words ask for it, and the gate follows the words.

Two more corpora, the same split as stripped beside it: STAR (``--star DIR``, :func:`star_cases`)
and Taskmaster-4's coffee orders (``--tm4 DIR``, :func:`tm4_cases`: requests, several drinks in
one message, changes asked for, orders confirmed). Neither has an official split: their held-out
tenth is not in ``../shared/data`` and never read.

Prints the two shares overall, per user act and per service, and the decision's cost (p50, p99).
Run: .venv/bin/python bench/bench_conversations.py [--split dev|train] [--sgd DIR] [--star DIR]
[--tm4 DIR] [--namer embedding] [--show N]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import gzip
import json
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from taskgate.core.plan import Plan
from taskgate.gate.session import Call, GateSession
from taskgate.understanding import ConversationReader

SGD = Path(__file__).resolve().parents[2] / "shared" / "data" / "sgd"
#: the day "today" is in each corpus's dialogues (SGD's are all set on Friday, March 1st, 2019;
#: STAR's and TM-4's name no date: None, any day)
TODAY = {"SGD": datetime.date(2019, 3, 1)}
GROUNDING: Literal["ask", "off"] = "ask"  # --grounding


@dataclass(frozen=True)
class Case:
    label: str  # asked | unasked | apart
    context: str  # why: confirm, offer, done, details, browsing (see cases)
    act: str  # the user's act, from SGD's: confirm, decline, change, request, question, ...
    service: str
    agent: str  # the system turn before the user's
    user: str
    method: str  # the call
    args: dict[str, Any] = field(default_factory=dict)
    earlier: tuple[tuple[str, str], ...] = ()  # the turns before: (system turn, user turn)
    done: tuple[str, ...] = ()  # steps that ran before the user's turn (besides context "done")
    #: the calls the agent made for the same user turn before this one, in order (the first of
    #: two drinks ordered in one message)
    first: tuple[tuple[str, dict[str, Any]], ...] = ()
    #: what the conversation said before the user's turn, as a surface that keeps it would give
    #: the gate: (who said it, "user", "agent" or "tool" (a call's result as JSON), the text)
    heard: tuple[tuple[str, str], ...] = ()
    corpus: str = "SGD"


def _acts(turn: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(f["service"], a[0], tuple(a[1])) for f in turn["frames"] for a in f["acts"]]


def _names(turn: dict[str, Any] | None) -> set[str]:
    return {a[1] for a in _acts(turn)} if turn else set()


def user_act(names: set[str]) -> str:
    """The user's act, from SGD's acts."""
    if "AFFIRM" in names or "AFFIRM_INTENT" in names:
        return "confirm"
    if "NEGATE" in names and "INFORM" in names:
        return "change"
    if "NEGATE_INTENT" in names and "INFORM_INTENT" in names:
        return "request"
    if "NEGATE_INTENT" in names and "GOODBYE" not in names:
        return "decline"
    if "THANK_YOU" in names or "GOODBYE" in names:
        return "request" if "INFORM_INTENT" in names else "closing"
    if "NEGATE" in names:
        return "decline"
    for act, name in (("REQUEST_ALTS", "alternatives"), ("INFORM_INTENT", "request"),
                      ("SELECT", "select")):  # fmt: skip
        if act in names:
            return name
    if names == {"REQUEST"}:
        return "question"
    return "change" if names == {"INFORM"} else "other"


def load(split: str, root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if split not in ("train", "dev"):
        raise SystemExit("only the train and dev splits are read (the test split is kept apart)")
    with gzip.open(root / f"{split}.json.gz", "rt", encoding="utf-8") as fh:
        dialogues = json.load(fh)["dialogues"]
    schema = json.loads((root / f"{split}-schema.json").read_text(encoding="utf-8"))
    return dialogues, schema


def plans(schema: list[dict[str, Any]]) -> dict[str, Plan]:
    """Each service's transactional intents as a plan of repeatable steps."""
    out = {}
    for service in schema:
        steps = {
            it["name"]: {"tool": it["name"], "text": it["description"], "repeatable": True}
            for it in service["intents"]
            if it["is_transactional"]
        }
        if steps:
            out[service["service_name"]] = Plan.model_validate({"binding": "tool", "steps": steps})
    return out


def cases(dialogues: list[dict[str, Any]], schema: list[dict[str, Any]]) -> Iterator[Case]:
    """The replay cases of every user turn that has a transactional call in view."""
    transactional = {(s["service_name"], i["name"]) for s in schema for i in s["intents"]
                     if i["is_transactional"]}  # fmt: skip

    def calls(turn: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        return [(f["service"], f["call"]) for f in turn["frames"]
                if f.get("call") and (f["service"], f["call"]["method"]) in transactional]  # fmt: skip

    for dialogue in dialogues:
        turns, done = dialogue["turns"], {}
        for i, user in enumerate(turns):
            if user["speaker"] != "USER":
                continue
            before = turns[i - 1] if i else None
            after = turns[i + 1] if i + 1 < len(turns) else None
            said, names = _names(before), _names(user)
            asked_for = [(a[0], a[2][0]) for a in _acts(user)
                         if a[1] == "INFORM_INTENT" and (a[0], a[2][0]) in transactional]  # fmt: skip
            earlier = tuple(
                (turns[j - 1]["text"] if j else "", turns[j]["text"])
                for j in range(max(0, i - 6), i)
                if turns[j]["speaker"] == "USER"
            )
            heard = tuple(("user" if t["speaker"] == "USER" else "agent", t["text"])
                          for t in turns[:i])  # fmt: skip
            base = {"agent": before["text"] if before else "", "user": user["text"],
                    "act": user_act(names), "earlier": earlier, "heard": heard}  # fmt: skip
            proposal = "CONFIRM" in said or {"NOTIFY_FAILURE", "OFFER"} <= said
            offer = "OFFER_INTENT" in said and any(
                (a[0], a[2][0]) in transactional for a in _acts(before) if a[1] == "OFFER_INTENT"
            )  # fmt: skip
            services = {f["service"] for f in user["frames"]}
            later = [(s, c) for t in turns[i + 1 :] for s, c in calls(t) if s in services]
            now = calls(after) if after else []
            case = None
            if now:
                s, c = now[0]
                case = Case("asked", "confirm", service=s, method=c["method"], args=c["args"],
                            **base)  # fmt: skip
            else:
                label = "apart" if asked_for or ("AFFIRM_INTENT" in names and offer) else "unasked"
                context, pending = None, None
                if proposal:
                    context = "confirm"
                elif offer:
                    context = "offer"
                if context and later:
                    pending = later[0]
                if not context:
                    previous = [s for s in services if s in done]
                    if previous and not asked_for:
                        context, pending = "done", (previous[0], done[previous[0]])
                    elif later:
                        pending = later[0]
                        active = {f.get("active_intent") for f in user["frames"]}
                        context = "details" if pending[1]["method"] in active else "browsing"
                        if context == "details" or base["act"] == "request":
                            label = "apart"  # asked, in words SGD files under a search
                if pending:
                    s, c = pending
                    case = Case(label, context or "", service=s, method=c["method"],
                                args=c.get("args", {}), **base)  # fmt: skip
            if case is not None:
                yield case
            for s, c in now:
                if c.get("ok", True):
                    done[s] = c
            for s, _ in asked_for:
                done.pop(s, None)


# -- STAR (Mosig, Mehri, Kober 2020; MIT): Wizard-of-Oz dialogues, stripped in ../shared/data --
STAR = SGD.parent / "star"
_PROPOSALS = ("ask_confirm_booking", "inform_booking_available")


def _value(raw: object) -> str:
    """A STAR query argument's value: a JSON literal (``"\\"Book\\""``, ``2``) or an expression
    (``api.is_equal_to("Dr. Johnson")``), read as the text it names."""
    quoted = re.findall(r'"([^"]*)"', str(raw))
    inner = re.fullmatch(r"api\.\w+\((.*)\)", str(raw))  # api.is_at_most(19): 19
    return quoted[0] if quoted else inner.group(1) if inner else str(raw)


def _query(call: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """A wizard's query as (its API, its request type, its arguments; a repeated name's last)."""
    args = {str(name): _value(raw) for name, raw in call.get("args") or []}
    return str(call.get("api") or ""), str(args.pop("RequestType", "")), args


def _changed(proposed: dict[str, Any], asked: dict[str, Any]) -> bool:
    """Whether a query asks for other details than the proposal's (a person's name aside: a
    second booking for the user's child is not a change)."""
    return any(proposed.get(k) not in (None, v) for k, v in asked.items()
               if not k.endswith("Name") or k == "Name")  # fmt: skip


def star_cases(split: str, root: Path) -> tuple[list[Case], dict[str, Plan]]:
    """STAR's replies to the wizard's booking proposals ("Can I book the appointment for you?"):
    **asked** when the wizard's next action is the booking (its query is the call); **unasked**
    when it is a query of the same API for other details (the user changed them or asked for
    another option; the call is the booking of what was proposed). Replies the wizard answered
    in words first are left out: STAR has no user acts to tell a yes from the rest."""
    with gzip.open(root / f"{split}.json.gz", "rt", encoding="utf-8") as f:
        dialogues = json.load(f)["dialogues"]
    out: list[Case] = []
    apis: set[str] = set()
    for dialogue in dialogues:
        turns = dialogue["turns"]
        said: list[tuple[str, str]] = []  # (wizard's words, user's reply) so far
        heard: list[tuple[str, str]] = []  # every turn's words and the wizard's query results
        checked: dict[str, dict[str, Any]] = {}  # each API's last query: what was proposed
        last_api = ""  # the API of the last query: the one a proposal proposes
        wizard: dict[str, Any] | None = None
        for i, turn in enumerate(turns):
            if turn["speaker"] != "USER":
                for call in turn.get("calls") or []:
                    api, _, args = _query(call)
                    checked[api], last_api = args, api
                    heard.append(("tool", json.dumps(call.get("result"))))
                if turn.get("text") is not None:
                    wizard = turn
                    heard.append(("agent", str(turn["text"])))
                continue
            agent = str(wizard["text"]) if wizard else ""
            label = str(wizard.get("label") or "") if wizard else ""
            earlier = tuple(said[-3:])
            said.append((agent, turn["text"]))
            heard.append(("user", str(turn["text"])))
            wizard = None
            reply = turns[i + 1] if i + 1 < len(turns) else {}
            if not label.endswith(_PROPOSALS) or not reply.get("calls"):
                continue  # no proposal, or the wizard answered in words first
            api, kind, args = _query(reply["calls"][0])
            if api != last_api:
                continue
            if kind == "Book":
                case, booked = "asked", args
            elif _changed(checked[api], args):
                case, booked = "unasked", checked[api]  # what was proposed
            else:
                continue
            apis.add(api)
            out.append(Case(case, "confirm", "reply", api, agent, turn["text"], api, booked,
                            earlier, heard=tuple(heard[:-1]), corpus="STAR"))  # fmt: skip
    plans = {api: Plan.model_validate({"binding": "tool", "steps": {api: {
        "tool": api, "text": api.replace("_", " "), "repeatable": True}}}) for api in apis}  # fmt: skip
    return out, plans


# -- Taskmaster-4 (Byrne, Ganesh, Google 2024; CC BY 4.0): coffee orders, each call annotated --
TM4 = SGD.parent / "taskmaster"
#: the calls that change the order (the rest look the menu or the order up): each a step
_ORDERING = ("add_order_item", "update_order_item", "update_order", "finish_order")


def _tm4_calls(turn: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A user turn's calls that change the order, in order, with their arguments (a call whose
    arguments TM-4 wrote as broken JSON has none)."""
    return [(str(c["api"]), c["args"] if isinstance(c.get("args"), dict) else {})
            for c in turn.get("calls") or [] if c.get("api") in _ORDERING]  # fmt: skip


def tm4_act(calls: list[tuple[str, dict[str, Any]]], ordered: bool, user: str) -> str:
    """The kind of a user turn, from the calls TM-4's agent made on it: a request for a first
    drink, several drinks in one message, another drink after one was ordered, a change, a
    confirmation (the order sent), or none of them (a question, a greeting)."""
    methods = [m for m, _ in calls]
    if "finish_order" in methods:
        return "confirm"
    if "update_order_item" in methods or (
        "update_order" in methods and "add_order_item" not in methods
    ):
        return "change"
    adds = methods.count("add_order_item")
    if adds > 1:
        return "several"
    if adds:
        return "another" if ordered else "request"
    return "question" if "?" in user else "other"


def tm4_cases(split: str, root: Path) -> tuple[list[Case], dict[str, Plan]]:
    """Every call that changes an order, at the user turn TM-4 annotates it on (**asked**; the
    agent's turn before it and the three before are the context, the calls of the turn before
    it are judged first); and at each turn that does not send the order while a later one does,
    the sending of the order (**unasked**: the user asked a question, changed a drink, or
    ordered another), and at each turn that sends it, the last drink ordered again (**unasked**:
    a yes to the order is no second drink)."""
    with gzip.open(root / f"{split}.json.gz", "rt", encoding="utf-8") as f:
        dialogues = json.load(f)["dialogues"]
    out: list[Case] = []
    for dialogue in dialogues:
        turns = dialogue["turns"]
        said: list[tuple[str, str]] = []
        heard: list[tuple[str, str]] = []
        done: list[str] = []
        last_add: dict[str, Any] | None = None
        for i, turn in enumerate(turns):
            if turn["speaker"] != "USER":
                continue
            agent = turns[i - 1]["text"] if i and turns[i - 1]["speaker"] != "USER" else ""
            calls = _tm4_calls(turn)
            act = tm4_act(calls, last_add is not None, turn["text"])
            base = {"label": "asked", "context": "", "act": act, "service": "coffee", "corpus": "TM-4",
                    "agent": agent, "user": turn["text"], "earlier": tuple(said[-3:]),
                    "done": tuple(dict.fromkeys(done))}  # fmt: skip
            looked = list(heard)  # the lookups' results of the turn before each ordering call
            k = 0  # the ordering calls before this one
            for call in turn.get("calls") or []:
                if call.get("api") in _ORDERING:
                    method, args = calls[k]
                    out.append(Case(method=method, args=args, first=tuple(calls[:k]),
                                    heard=tuple(looked), **base))  # fmt: skip
                    k += 1
                looked.append(("tool", json.dumps(call.get("response"))))
            later = [c for t in turns[i + 1 :] if t["speaker"] == "USER"
                     for c in _tm4_calls(t) if c[0] == "finish_order"]  # fmt: skip
            methods = [m for m, _ in calls]
            if later and "finish_order" not in methods:
                out.append(Case(**{**base, "label": "unasked"}, method="finish_order",
                                args=later[0][1], first=tuple(calls), heard=tuple(looked)))  # fmt: skip
            if "finish_order" in methods and last_add is not None:
                out.append(Case(**{**base, "label": "unasked"}, method="add_order_item",
                                args=last_add, heard=tuple(heard)))  # fmt: skip
            said.append((agent, turn["text"]))
            heard += [("agent", agent), ("user", turn["text"]), *looked[len(heard) :]]
            done += methods
            last_add = next((a for m, a in reversed(calls) if m == "add_order_item"), last_add)
    steps = {m: {"tool": m, "text": m.replace("_", " "), "repeatable": m != "finish_order"}
             for m in _ORDERING}  # fmt: skip
    return out, {"coffee": Plan.model_validate({"binding": "tool", "steps": steps})}


def changed(found: list[Case], seed: int = 0) -> list[Case]:
    """For each asked-for call, the same call with one value changed to the value another call
    of the corpus gives the same argument (a swapped restaurant, another date, a count), which
    the user never agreed to: **changed** where the conversation never says the new value (a
    plain case-blind substring test, not the gate's), **changed-said** where it does (another
    option the agent listed, a city said before). Neither should run."""
    rng = random.Random(seed)
    seen: dict[str, list[str]] = defaultdict(list)
    for case in found:
        for key, value in case.args.items():
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                seen[key].append(str(value))
    out = []
    for case in found:
        if case.label != "asked":
            continue
        keys = [k for k, v in case.args.items() if isinstance(v, str | int | float)
                and not isinstance(v, bool) and len(set(seen[k]) - {str(v)}) > 0]  # fmt: skip
        if not keys:
            continue
        key = rng.choice(sorted(keys))
        value = rng.choice(sorted(set(seen[key]) - {str(case.args[key])}))
        if str(value).strip().lower() in ("", "true", "false", "dontcare"):
            continue
        said = " ".join([t for _, t in case.heard] + [case.agent, case.user]).lower()
        label = "changed-said" if str(value).lower() in said else "changed"
        args = {**case.args, key: type(case.args[key])(value) if isinstance(case.args[key], int
                | float) and value.lstrip("-").replace(".", "", 1).isdigit() else value}  # fmt: skip
        out.append(dataclasses.replace(case, label=label, args=args))
    return out


async def replay(case: Case, plan: Plan, reader: ConversationReader) -> tuple[str, float, str]:
    """What the gate does with the case's call, ``run``, ``asked`` (held, the person asked) or
    ``refused`` (without asking), and the decision's cost in seconds (reading the turn and
    judging the call, with the calls made for the turn before it), and why it was asked."""
    gate = GateSession(plan)
    gate.grounding = GROUNDING
    gate.today = lambda: TODAY.get(case.corpus)
    done = (case.method,) if case.context == "done" else case.done
    for step in done:  # an earlier call of the step succeeded
        gate.open_request(step)
        gate.finish(gate.begin(step), "ok")
    agent = ""
    for by, text in case.heard:  # what a surface that keeps the conversation gives the gate
        if by == "agent":
            agent = text
        elif by == "user":
            gate.hear_turn(agent, text)
            agent = ""
        else:
            gate.hear(text)
    start = time.perf_counter()
    await gate.open_message(case.user, reader, ask_back=False, agent=case.agent,
                            earlier=case.earlier)  # fmt: skip
    for method, args in case.first:  # the turn's calls before this one, as the gate judges them
        ticket = gate.judge([Call(method, arguments=args)])[0]
        if ticket.admitted:
            gate.finish(ticket, "ok")
    ticket = gate.judge([Call(case.method, arguments=case.args)])[0]
    spent = time.perf_counter() - start
    if ticket.ask is not None:  # answered as the dataset's user would: yes to what they asked
        answer = "approve" if case.label == "asked" else "reject"
        call = gate.answer(ticket.ask.id, answer, by="the dataset's user")
        assert (call is not None) == (answer == "approve")
        if call is not None:
            assert gate.judge([call])[0].admitted, "an approved held call did not run"
        return "asked", spent, ticket.ask.why
    return ("run" if ticket.admitted else "refused"), spent, ""


async def measure(
    cases: Iterable[Case],
    plans: dict[str, Plan],
    show: int = 0,
    reader: Any = None,
    asks: int = 0,
) -> tuple[dict[tuple[str, str, str], Counter[bool]], list[float]]:
    reader = reader or ConversationReader()
    results: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    wrong: dict[tuple[str, str], list[Case]] = defaultdict(list)
    held: dict[str, list[Case]] = defaultdict(list)  # asked-for calls asked, by why
    costs = []
    for case in cases:
        outcome, cost, why = await replay(case, plans[case.service], reader)
        costs.append(cost)
        if outcome == "asked" and case.label == "asked":
            held[why].append(case)
        results[(case.label, case.act, case.service)][outcome] += 1
        wrong_way = "refused" if case.label == "asked" else "run"
        if case.label != "apart" and outcome == wrong_way:
            wrong[(case.label, case.act)].append(case)
    if show:
        rng = random.Random(0)
        for key, bad in sorted(wrong.items(), key=lambda kv: -len(kv[1])):
            print(f"-- {key}: {len(bad)} wrong")
            for case in rng.sample(bad, min(show, len(bad))):
                print(f"   agent: {case.agent[:150]!r}\n   user:  {case.user[:150]!r}")
                if case.label.startswith("changed"):
                    print(f"   call:  {case.method} {json.dumps(case.args)[:200]}")
    if asks:
        _show_asks(held, asks)
    return results, costs


def _show_asks(held: dict[str, list[Case]], n: int) -> None:
    """Print ``n`` asked-for calls the gate asked about, for each of its reasons (commonest
    first): what to read on a train split, never on the split reported."""
    rng = random.Random(0)
    for why, asked in sorted(held.items(), key=lambda kv: -len(kv[1])):
        print(f"-- asked: {why}: {len(asked)}")
        for case in rng.sample(asked, min(n, len(asked))):
            print(
                f"   agent: {case.agent[-150:]!r}\n   user:  {case.user[:150]!r}\n"
                f"   call:  {case.method} {json.dumps(case.args)[:200]}"
            )


def share(results: dict[tuple[str, str, str], Counter[str]], label: str, outcome: str = "",
          **where: str) -> str:  # fmt: skip
    """The share of ``label``'s cases with ``outcome`` (default: the right one without asking:
    run for an asked-for call, stopped without asking for an unasked one)."""
    outcome = outcome or ("run" if label != "unasked" else "refused")
    total = _total(results, label, **where)
    n, good = sum(total.values()), total[outcome]
    return f"{good / n:.3f} ({good}/{n})" if n else "-"


def outcomes(results: dict[tuple[str, str, str], Counter[str]], label: str) -> str:
    return " / ".join(f"{o} {share(results, label, o)}" for o in ("run", "asked", "refused"))


def report(title: str, results: dict[tuple[str, str, str], Counter[str]],
           costs: list[float]) -> None:  # fmt: skip
    costs.sort()
    print(title)
    if not costs:
        print("  no cases (no dialogue with a call of the plan's steps was found)")
        return
    print(f"  asked-for calls   {outcomes(results, 'asked')}")
    print(f"     refused without asking {share(results, 'asked', 'refused')}   (target <= 0.01)")
    print(f"  unasked calls     {outcomes(results, 'unasked')}")
    print(f"     run without asking     {share(results, 'unasked', 'run')}   (no more than before)")
    print(f"  apart (in neither target) {outcomes(results, 'apart')}")
    print(
        f"  asked-for calls with one value changed to one nobody said: "
        f"{outcomes(results, 'changed')}   (target: run 0)"
    )
    print(
        f"    ... to one said in the conversation but not agreed to:    "
        f"{outcomes(results, 'changed-said')}"
    )
    print(
        "  (asked: held and the person asked, answered as the dataset's user would: approved "
        "when they had asked for the call, rejected otherwise)"
    )
    print(f"  decision p50 {costs[len(costs) // 2] * 1e3:.2f} ms, p99 "
          f"{costs[int(len(costs) * 0.99)] * 1e3:.2f} ms   (target <= 20 / 50 ms)")  # fmt: skip
    acts = sorted({k[1] for k in results})
    if len(acts) > 1:
        print("  per user act (asked-for: run / asked / refused | unasked: run / asked / refused):")
        for act in acts:
            print(f"    {act:<13} {_three(results, 'asked', act=act)} | "
                  f"{_three(results, 'unasked', act=act)}")  # fmt: skip
    print("  per service (asked-for: run / asked / refused | unasked: run / asked / refused):")
    for service in sorted({k[2] for k in results}):
        print(f"    {service:<20} {_three(results, 'asked', service=service)} | "
              f"{_three(results, 'unasked', service=service)}")  # fmt: skip


def _total(results: dict[tuple[str, str, str], Counter[str]], label: str,
           **where: str) -> Counter[str]:  # fmt: skip
    """The outcomes of ``label``'s cases, of one user act or service if ``where`` names it."""
    return sum((v for k, v in results.items() if k[0] == label
                and all(k[{"act": 1, "service": 2}[f]] == x for f, x in where.items())),
               Counter())  # fmt: skip


def _three(results: dict[tuple[str, str, str], Counter[str]], label: str, **where: str) -> str:
    total = _total(results, label, **where)
    n = sum(total.values())
    return f"{total['run']:>4} / {total['asked']:>4} / {total['refused']:>4}" if n else "   -"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="dev", choices=("dev", "train"))
    ap.add_argument("--sgd", type=Path, default=SGD, help="the stripped SGD splits' folder")
    ap.add_argument("--star", type=Path, default=STAR, help="the stripped STAR splits' folder")
    ap.add_argument("--tm4", type=Path, default=TM4, help="the stripped TM-4 splits' folder")
    ap.add_argument("--show", type=int, default=0, help="print N wrong cases of each kind")
    ap.add_argument(
        "--asks",
        type=int,
        default=0,
        help="print N asked-for calls asked, for each reason (read them on train)",
    )
    ap.add_argument("--namer", choices=("none", "embedding"), default="none",
                    help="the reader's namer: none (the default) or the bundled MiniLM")  # fmt: skip
    ap.add_argument("--grounding", choices=("ask", "off"), default="ask",
                    help="check every value of a confirmed call against the conversation")  # fmt: skip
    args = ap.parse_args()
    global GROUNDING
    GROUNDING = args.grounding
    reader, how = ConversationReader(), "ConversationReader, no model call"
    if args.namer == "embedding":
        from taskgate.matching.embedding import EmbeddingMatcher

        reader, how = ConversationReader(EmbeddingMatcher()), "ConversationReader + MiniLM namer"
    if (args.sgd / f"{args.split}.json.gz").exists():
        dialogues, schema = load(args.split, args.sgd)
        found = list(cases(dialogues, schema))
        results, costs = asyncio.run(measure(found + changed(found), plans(schema), args.show,
                                             reader, args.asks))  # fmt: skip
        report(f"SGD {args.split} replayed through the gate's core ({how})", results, costs)
    else:
        print(f"bench_conversations: SGD skipped: no {args.split} split in {args.sgd} "
              "(pass --sgd DIR)")  # fmt: skip
    for name, folder, loader in (("STAR", args.star, star_cases),
                                 ("Taskmaster-4", args.tm4, tm4_cases)):  # fmt: skip
        if not (folder / f"{args.split}.json.gz").exists():
            print(f"bench_conversations: {name} skipped: no {args.split} split in {folder} "
                  f"(pass --{'star' if name == 'STAR' else 'tm4'} DIR)")  # fmt: skip
            continue
        found, by_plan = loader(args.split, folder)
        results, costs = asyncio.run(measure(found + changed(found), by_plan, args.show, reader,
                                             args.asks))  # fmt: skip
        report(f"{name} {args.split} replayed the same way", results, costs)


if __name__ == "__main__":
    main()
