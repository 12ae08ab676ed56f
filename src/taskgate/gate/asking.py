"""Run, refuse or ask: what the gate shows a person about a call it holds, and how it reads
their answer.

A call the state allows but the user's words do not clearly authorize (the reader unsure, the
call's details not those agreed, a step whose plan says ``confirm = "always"``) is neither run nor
refused: it is **held**, and the person is asked, with the exact call in plain words. The ask and
its answer are receipts-ledger entries (:class:`~taskgate.core.ledger.AskEntry`,
:class:`~taskgate.core.ledger.AnswerEntry`); a yes grants that call, once, with exactly the
arguments shown (:class:`~taskgate.core.machine.Grant`).

Each surface asks on its own human-in-the-loop channel (a LangGraph interrupt, an MCP
elicitation, an SDK's tool approval, a callback); where none is configured, the held call's
answer to the agent is the question to put to the user (the *ask-back*), and the user's next
message is read against the gate's own question (:func:`answer_of`).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import orjson

from taskgate.core.ledger import AskEntry
from taskgate.errors import UsageError
from taskgate.understanding.acts import USER_CHARS, read_user

#: what a person may answer to an ask
Decision = Literal["approve", "edit", "reject"]
#: a step's confirmation policy in the plan: ask when unsure (the default), ask every time, or
#: never ask (the state alone decides)
Confirm = Literal["auto", "always", "never"]
#: at most this many characters of one value are shown in a question (a longer one says how many
#: more it has: a person is never shown a part as the whole)
VALUE_CHARS = 1000


@dataclass(frozen=True, slots=True)
class Ask:
    """A call the gate holds until a person answers: ``id`` (for the answer), the ``step``,
    the call exactly (``tool``, ``arguments``), the ``question`` shown, ``why`` it asked, and the
    ``channel`` it asked on."""

    id: str
    step: str
    tool: str
    arguments: dict[str, object]
    question: str
    why: str = ""
    time: float = 0.0
    #: where the question went: "" to the agent (the ask-back), else a surface's own channel
    channel: str = ""

    @classmethod
    def of(cls, entry: AskEntry) -> Ask:
        args = orjson.loads(entry.arguments)
        return cls(entry.id, entry.step, entry.tool, args if isinstance(args, dict) else {},
                   entry.question, entry.why, entry.time, entry.channel)  # fmt: skip


def canonical(arguments: Mapping[str, object] | None) -> str:
    """The arguments as canonical JSON (sorted keys): the bytes a yes grants."""
    return orjson.dumps(dict(arguments or {}), option=orjson.OPT_SORT_KEYS, default=str).decode()


def new_id() -> str:
    """A fresh ask id, not guessable from the ones before it (64 bits from the system's
    random source, as ``secrets`` draws them)."""
    return "ask-" + os.urandom(8).hex()


def _shown(value: object) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif value is None:
        text = "none"
    elif isinstance(value, list | tuple):
        text = ", ".join(_shown(v) for v in value) or "none"
    elif isinstance(value, Mapping):
        text = "; ".join(f"{_label(k)} {_shown(v)}" for k, v in value.items()) or "none"
    else:
        text = str(value)
    text = _visible(" ".join(text.split()))
    if len(text) <= VALUE_CHARS:
        return text
    return f"{text[:VALUE_CHARS]} [and {len(text) - VALUE_CHARS} more characters not shown here]"


#: characters a person does not see, or sees as a blank: the format, control, private and
#: unassigned ones (zero-width, direction overrides, tags), variation selectors and the blank
#: letters (Hangul fillers, the braille blank): a question shows each as its code, so what is
#: shown is what runs
_BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5")


def _unseen(ch: str) -> bool:
    code = ord(ch)
    return (
        unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
        or ch in _BLANKS
        or 0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF
        or 0x180B <= code <= 0x180F
    )


def _visible(text: str) -> str:
    return "".join(f"<U+{ord(c):04X}>" if _unseen(c) else c for c in text)


def _label(key: object) -> str:
    return _visible(re.sub(r"[_\s]+", " ", str(key)).strip())


def action_words(tool: str, wording: str = "") -> str:
    """What the call does, in words: the step's text or its tool's description (first
    sentence), else the tool's name as words."""
    first = (
        re.split(r"(?<=[.!?])\s", wording.strip(), maxsplit=1)[0].rstrip(".!?") if wording else ""
    )
    if first:
        return first[0].lower() + first[1:] if not first[:2].isupper() else first
    return _label(tool)


def question(tool: str, arguments: Mapping[str, object] | None, wording: str = "") -> str:
    """The question put to the person about one held call: the action and every argument."""
    what = action_words(tool, wording)
    details = "; ".join(f"{_label(k)}: {_shown(v)}" for k, v in (arguments or {}).items())
    return (f"Shall I {what} ({details})?" if details else f"Shall I {what}?") + " Yes or no?"


def questions(asks: list[Ask]) -> str:
    """One question for several held calls (one model turn's): a yes runs them all."""
    if len(asks) == 1:
        return asks[0].question
    items = " ".join(f"{i}. {a.question.removesuffix(' Yes or no?')}" for i, a in
                     enumerate(asks, 1))  # fmt: skip
    return f"{items} Shall I do all of these? Yes or no?"


def relayed(asks: list[Ask], agent: str, given: bool = True) -> list[Ask]:
    """The held calls whose question the agent's message put to the user, as the last thing it
    asked: the message holds the gate's question (whatever the case and spacing) and asks
    nothing after it ("... Or would you rather I book 40?" asks something else). Several calls
    are put to the user only by the gate's question for them all; two calls whose questions read
    alike (``2`` and ``"2"``), never. With no agent's message known (``given`` false), the one
    call waiting, if one alone waits; an agent's message with no words put nothing to the user."""
    if not given:
        return asks if len(asks) == 1 else []
    said = _plain(agent)
    if not said:
        return []
    if len(asks) > 1 and _asked_last(said, questions(asks)):
        alike = len({a.question for a in asks}) < len(asks)
        return [] if alike else asks
    found = [a for a in asks if _asked_last(said, a.question)]
    if len(found) != 1 or sum(a.question == found[0].question for a in asks) != 1:
        return []
    others = [a for a in asks if a is not found[0]]
    if any(_plain(a.question.removesuffix(" Yes or no?")) in said for a in others):
        return []  # "Shall I book the table? Or the tickets?": a yes picks neither
    return found


def quotes_any(asks: list[Ask], agent: str) -> bool:
    """Whether the agent's message holds any of the gate's questions about ``asks`` (then a
    reply that answers none of them plainly is read with no proposal: the questions are the
    gate's, not the agent's offer)."""
    said = _plain(agent)
    return any(_plain(a.question.removesuffix(" Yes or no?")) in said for a in asks)


def _plain(text: str) -> str:
    return " ".join(text.lower().split())


def _asked_last(said: str, asked: str) -> bool:
    """Whether ``said`` holds the question ``asked`` and asks nothing after it."""
    core = _plain(asked.removesuffix(" Yes or no?"))
    at = said.rfind(core)
    if at < 0:
        return False
    after = said[at + len(core) :].removeprefix("?").strip().removeprefix("yes or no?")
    return "?" not in after


def notice(tool: str, why: str, ask: str) -> str:
    """What the agent reads for a held call, where no channel asks the person: why it was held,
    and the question to put to the user."""
    return (
        f'"{tool}" was not run yet: {why}. Ask the user exactly this, and make no other call '
        f'until they answer: "{ask}" If they say yes, make the same call again, with exactly the '
        "same arguments."
    )


#: the only words a plain yes may carry ("Yes, please go ahead, thanks!"): anything else is a change
_COURTESY = frozenset(
    [
        "yes",
        "yeah",
        "yea",
        "yep",
        "yup",
        "ya",
        "yah",
        "sure",
        "ok",
        "okay",
        "k",
        "alright",
        "right",
        "correct",
        "exactly",
        "absolutely",
        "definitely",
        "certainly",
        "indeed",
        "please",
        "pls",
        "thanks",
        "thank",
        "you",
        "go",
        "ahead",
        "do",
        "it",
        "that",
        "that's",
        "thats",
        "is",
        "it's",
        "its",
        "sounds",
        "looks",
        "good",
        "great",
        "perfect",
        "fine",
        "cool",
        "awesome",
        "excellent",
        "wonderful",
        "lovely",
        "nice",
        "of",
        "course",
        "and",
        "so",
        "just",
        "confirm",
        "confirmed",
        "proceed",
        "i",
        "agree",
        "would",
        "like",
        "be",
        "very",
        "much",
        "a",
        "the",
        "to",
        "for",
        "me",
        "oh",
        "well",
    ]
)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def answer_of(message: str, asked: str) -> Literal["yes", "no"] | None:
    """The user's answer to the gate's own question ``asked``, read narrowly: a plain yes, a
    plain no, or neither (a change, a question, anything else: the held call is dropped and the
    message read as any other). A yes is plain only when every other word it says is a courtesy:
    "Yes, for 4 instead of 2.", "Yes please, but at 9 pm" and "Yes, party size 19" are changes,
    never a yes to the call shown (a yes that restates the call is asked again)."""
    if len(message) > USER_CHARS:  # what is past what is read could be a change
        return None
    act = read_user(message, asked)
    if act.yes and not act.no:
        words = _WORD.findall(_visible(message).lower())
        return None if any(w not in _COURTESY for w in words) else "yes"
    if act.no and not act.yes:
        return "no"
    return None


def decision_of(value: object) -> Decision:
    """A decision given by a surface's caller, checked (one clear line when it is none)."""
    if value in ("approve", "edit", "reject"):
        return value
    raise UsageError(f"an answer to an ask is 'approve', 'edit' or 'reject', not {value!r}")
