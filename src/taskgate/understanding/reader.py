"""What the user's latest message authorizes, read with the agent's message before it.

:class:`ConversationReader` is the gate's default reading, with no model call. It answers a
:class:`Reading`: the kind of message (a request naming steps, a statement of need, a confirmation
of the agent's proposal, a decline, a change of details, a question, a request for alternatives,
a closing), the steps it authorizes, the explicit-redo flag, the candidates to ask back about when
the gate cannot tell, and the steps it is about without authorizing them (declined, changed).

* **A request** names steps by their words (each step's text, else its tool's description or
  name): a step counts as named when the message has a word of the step that no other step
  matched shares, so "Draft and send the RFQ." names both steps and "the RFQ" alone names neither
  (it is unclear between them: ask back).
* **A statement of need** ("we need 40 laptops, budget about $50k") authorizes the steps that
  record what is needed (a step worded with requirements, needs, details, collect, record, ...).
* **An order of a thing** ("I'll take a mocha", "Can I get a latte with oat milk?") authorizes the
  plan's one step that adds or buys (its wording starts with add, order, buy or purchase), for
  calls of that thing only, and the steps that change things, for calls carrying a word the user
  said; a change asked for after the agent's recap ("No, I'd like it decaf") authorizes the
  latter.
* **A confirmation** ("yes", "sounds good -- is it expensive?") authorizes what the agent's message
  proposed: the step it names, or, when it names none, the call whose arguments the proposal
  states (judged when the call comes, :meth:`Reading.confirms`).
* **A change of details** ("no, make it 3 people") authorizes nothing until confirmed; **a decline,
  a question, a request for alternatives, a closing or thanks** authorize nothing, even when they
  name the action ("no, I don't want to buy the tickets yet").
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from taskgate.core.plan import Plan
from taskgate.matching.askback import step_wording
from taskgate.matching.redo import explicit_redo
from taskgate.roles import Match, Matcher
from taskgate.understanding.acts import (
    _LIKE_THAT,
    AGENT_CHARS,
    IN_JEST,
    USER_CHARS,
    AgentAct,
    UserAct,
    asks_to_confirm,
    asks_what,
    counter_offer,
    names_action,
    proposes_to_act,
    read_agent,
    read_user,
    relative_days,
    said_relative,
    spoken_forms,
    stray_days,
)
from taskgate.understanding.calls import (
    _ARGUMENTS,
    _COUNT,
    _COUNT_KEY,
    _EVERY,
    _ITEM_KEY,
    _NOTE_KEY,
    _REMOVING,
    _SWITCH_VALUE,
    _flat,
    _item_values,
    _item_words,
    _leaves,
    _plain,
    _removes,
    _repeats,
    _Spelling,
    _tables,
    _too_many,
    _unsaid_option,
    _unsaid_terms,
    _zeroed,
    by_id,
    sets_item,
)
from taskgate.understanding.directions import turned_round
from taskgate.understanding.finishing import _ID_KEY, _finishing, _ids_said, _judges, _of_step
from taskgate.understanding.patterns import pattern
from taskgate.understanding.values import canonical, key_words, switch_turned, unheard
from taskgate.understanding.words import _SENTENCE_END, _STOP, _WORD, _stem

Kind = Literal[
    "request",
    "need",
    "confirm",
    "change",
    "decline",
    "question",
    "alternatives",
    "closing",
    "unclear",
    "held",
    "other",
]

#: ordinary verbs that name the same action
_SAME = {
    "book": "reserve", "booking": "reserve", "reservation": "reserve", "reserve": "reserve",
    "reserving": "reserve", "schedule": "reserve", "appointment": "reserve",
    "buy": "purchase", "purchase": "purchase", "buying": "purchase", "order": "purchase",
    "send": "send", "sending": "send", "email": "send", "mail": "send", "transfer": "send",
    "pay": "pay", "payment": "pay", "create": "make", "make": "make", "add": "make",
    "requirements": "requirement", "requirement": "requirement", "needs": "requirement",
    "specs": "requirement", "specifications": "requirement",
}  # fmt: skip
#: a proposal to hear a song proposes to play it (a request to hear one is no request to play)
_HEARD = {"hear": "play", "listen": "play"}
_VERBS = frozenset(_SAME.values()) - {"requirement"}
#: a step that records what the user needs: a statement of need authorizes it
_RECORDS = frozenset(
    [
        "requirement",
        "collect",
        "gather",
        "record",
        "capture",
        "intake",
        "note",
        "log",
        "details",
        "information",
        "info",
    ]
)
_NEGATION = pattern(
    r"\b(?:don'?t|do not|doesn'?t|not|never|no need to|without|won'?t|wouldn'?t|shouldn'?t|"
    r"can'?t|cannot|no)\b[^.!?;,]{0,40}$",
    re.IGNORECASE,
)
#: a choice left open between the steps named: ask which
_EITHER = pattern(r"\b(?:either|whichever)\b", re.IGNORECASE)
_OR = pattern(r"\bor (?:(?:the|to|just|else|maybe|perhaps|rather) )?([a-z]+)", re.IGNORECASE)
_SEARCH = pattern(
    r"\b(?:find|search|look(?:ing)? (?:for|up|into)|show me|recommend|suggest|browse|"
    r"what (?:are|is)|is there|are there)\b",
    re.IGNORECASE,
)
#: "one" standing for a thing, not a count ("I have one departing at 5 pm", "another one")
_PRONOUN_ONE = pattern(
    r"\bone (?=(?:departing|leaving|arriving|that|which|available|at|in|on|for)\b)|"
    r"\b(?:another|this|that|the other|a different|a new|an earlier|a later) one\b|"
    r"\bthe\s+(?:[\w:$.]+\s+){0,3}one\b(?!\s+(?:tickets?|seats?|persons?|people|rooms?|nights?)\b)",
    re.I,
)
#: a number that counts something no call states ("0 transfers", "a 4.3 rating")
_NOT_A_COUNT = pattern(r"\b\d+(?:\.\d+)? (?:transfers?|stops?|layovers?|stars?|rating)\b", re.I)
_NUMBER = pattern(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten)\b", re.I)
#: an amount of money: "$1,290", "50 dollars" (a match starts only where a number does)
_MONEY = pattern(
    r"[$\u00a3\u20ac]\s?\d{1,3}(?:,\d{3})*(?:\.\d+)?|[$\u00a3\u20ac]\s?\d+(?:\.\d+)?|"
    r"(?<![\d,.])\d+(?:,\d{3})*(?:\.\d+)? (?:dollars|usd|euros?|pounds)\b",
    re.I,
)
#: a check for a place to book, after a failure: the booking tried again
_RETRY = pattern(
    r"\bsee (?:if|whether) there(?:'s| is| are) (?:an? |any )?(?:open |available |free )?(?:seat|"
    r"table|room|slot|opening|ticket|appointment|spot|ride|reservation)s?\b",
    re.I,
)
#: an argument that is an amount of money
_MONEY_KEY = pattern(r"amount|price|cost|fee|total|fare|sum|pay|balance|money", re.I)
_CLOCK = pattern(r"\d{1,2}:\d{2}")
_ISO = pattern(r"\d{4}-\d{2}-\d{2}")
_TIME = pattern(
    r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.?|p\.m\.?|o'?clock)|\b\d{1,2}:\d{2}\b", re.I
)
_DATE = pattern(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?\b|"
    r"\b\d{1,2}(?:st|nd|rd|th)?(?: of)? (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*"
    r"|\b\d{4}-\d{2}-\d{2}\b",
    re.I,
)
#: a value that is a number, a date or a clock time, not a name
_PLAIN_VALUE = pattern(r"[\d\s:.,$%/-]*", re.I)
#: a proposal that looks something up rather than acting
_LOOKUP = pattern(
    r"\b(?:check (?:the |your |on )?(?:balance|availability|status|weather)|look (?:up|into|for)|"
    r"search|find|see (?:if|whether)(?! (?:i|we)(?:'ve)? (?:got|have|understood)\b| (?:it|that|this|"
    r"everything) (?:is|was|'s) (?:right|correct))|(?:see|view|check) your (?:balance|"
    r"transactions|account|statement)|show (?:you|me)|recent transactions|"
    # "No buses are left. Want me to check tomorrow?": a search for another, not this one
    r"(?:check|try|look)(?: again)? (?:for )?(?:tomorrow|later|another (?:day|time|date)|next "
    r"(?:week|day|time)|other (?:days|times|dates)))\b",
    re.I,
)


def _asked_for(text: str) -> str:
    """``text`` less its questions about the item ("How long is the ride?"); a question that
    speaks of an action stays ("Before you buy, how much is it?", "Could you transfer $50?")."""
    return " ".join(
        p
        for p in _SENTENCE_END.split(text)
        if not p.rstrip().endswith("?") or names_action(p) or _HESITATES.search(p)
    )


def _hesitates(text: str) -> bool:
    """Whether a message asks a question that is still deciding."""
    return any(
        p.rstrip().endswith("?") and _HESITATES.search(p)
        for p in itertools.islice(_SENTENCE_END.split(text), 16)
    )


#: a question still deciding ("Should I get them or drive?", "Before I commit, how much?")
_HESITATES = pattern(
    r"\b(?:should i|do i (?:really|want|need)|before|really|wait|or|recommend|worth|commit|sure|but|"
    r"instead|rather|"
    r"better|hmm+|hold on)\b",
    re.I,
)


#: what a value that says a day and nothing else is made of ("Friday", "on Sunday.")
_DAY_WORDS = pattern(
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|\b(?:the|on|at|in|for|next|this|until|by)\b|"
    r"\d{1,2}(?:st|nd|rd|th)",
    re.I,
)


def _unnamed(said: str, arguments: Sequence[tuple[str, object]]) -> str:
    """``said`` less the names among the call's values ("4 tickets to Taking Back Sunday next
    Friday": the day said is Friday)."""
    for _, value in arguments:
        if (
            isinstance(value, str)
            and not _PLAIN_VALUE.fullmatch(value)
            and _DAY_WORDS.sub("", value.lower()).strip(" .,!?")
        ):
            for form in spoken_forms(value):
                said = form.sub(" ", said)
    return said


def _uncounted(arguments: Sequence[tuple[str, object]], heard: str) -> bool:
    """Whether a count among the call's values (tickets, seats, guests) is said
    nowhere in ``heard`` as a number of its own (not in a time or an amount), or is no plain
    number ("forty", "40 adults")."""
    numbers = _TIME.sub(" ", _MONEY.sub(" ", heard))
    for key, value in arguments:
        if not _COUNT_KEY.search(str(key)) or isinstance(value, bool):
            continue
        text = str(value).strip().lower()
        if text in ("", "0", "none", "dontcare"):
            continue
        if not _COUNT.fullmatch(text) or not any(f.search(numbers) for f in spoken_forms(text)):
            return True  # never said, or no number a proposal could be checked against
    return False


def _switch(value: object) -> bool:
    """Whether an argument is a yes-or-no switch (True, "False")."""
    return isinstance(value, bool) or (
        isinstance(value, str) and value.lower() in ("true", "false")
    )


def _words(text: str) -> list[str]:
    low = _MAKE_SURE.sub(" ", text.lower())  # "make sure it is right" makes nothing
    low = _PLACE.sub("finish order", low)  # "place the order": finish it
    return [_SAME.get(w, w) for w in _WORD.findall(low) if w not in _STOP]


_MAKE_SURE = pattern(r"\bmake (?:sure|certain)\b")
_PLACE = pattern(
    r"\b(?:place|submit|send|put through) (?:the|your|my|this) order\b(?! for\b)|\bcheck ?out\b"
)


@dataclass(frozen=True)
class Reading:
    """What the gate understood of the user's latest message."""

    kind: Kind
    steps: tuple[str, ...] = ()  # the steps it authorizes, in the plan's order
    explicit_redo: bool = False
    candidates: tuple[str, ...] = ()  # unclear between these: ask the user
    about: tuple[str, ...] = ()  # steps it speaks of without authorizing (declined, changed)
    proposal: str = ""  # a confirmed proposal naming no step: its text, for the call's arguments
    cue: bool = False  # the confirmed proposal asked to be confirmed ("please confirm: ...")
    bare: bool = False  # the proposal names no action ("Paris on the bedroom speaker?")
    #: the proposals this one revised, with the user's changes to them ("no, make it Friday"):
    #: the details the new proposal did not repeat
    earlier: str = ""
    #: the agent reported the call done ("I have reserved 3 tickets in Phoenix."): the yes
    #: confirms it only where the gate has no receipt of the step (the session checks)
    claimed: bool = False
    #: the turns before (for a count the proposal does not repeat)
    heard: str = ""
    #: the agent's message was longer than is read: what came before may have proposed another
    #: action, so no finishing step is confirmed by it
    cut: bool = False
    #: the user's order of a thing ("I'll take a mocha"): it authorizes calls of that thing only
    thing: str = ""
    #: what the gate ran for this message's order: work order -> (the thing's place among
    #: :meth:`counts`, how many). The one mutable part: a surface that carries the reading from
    #: reply to reply carries it, and a surface that lost it (a restart) runs no further thing
    taken: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False, repr=False)
    #: the confirmed proposal is of a change ("Should I change your latte to decaf?"): its calls
    #: set what it changes to and nothing else (``thing``: those words, "decaf")
    changes: bool = False
    #: the confirmed proposal named its thing by a pronoun ("Shall I add it?"): ``thing`` is the
    #: user's message that named it before, and a call must be of that thing
    named_before: bool = False

    @classmethod
    def of(cls, match: Match) -> Reading:
        """A plain matcher's answer as a reading (the message read alone)."""
        if match.step is not None:
            return cls("request", (match.step,), match.explicit_redo)
        if match.candidates:
            return cls("unclear", candidates=tuple(match.candidates))
        return cls("other")

    @property
    def either(self) -> bool:
        """Whether a confirmed proposal offered one thing or another ("Shall I add a latte or a
        mocha?", "a latte, or just the mocha?"): a yes takes one of them, not each."""
        return self.kind == "confirm" and bool(_OR.search(self.thing))

    @property
    def match(self) -> Match:
        """The reading as a matcher's answer (the first step authorized)."""
        return Match(self.steps[0] if self.steps else None, self.explicit_redo, self.candidates)

    def confirms(self, arguments: Mapping[str, object] | None, wording: str = "") -> bool:
        """Whether a call with ``arguments`` (of the step worded ``wording``) is the one the
        confirmed proposal described. No number, amount or time among its arguments may differ
        from the proposal's (a proposal "for 2 at 7 pm" is not a call for 40 at 21:30, "$50" is
        not 5000); then two of its values must be stated in the proposal (each as a whole word or
        number, a date or a time as it is said), or, when the agent asked to confirm or restated
        the user's wish, one named value (not a number, a date or a time) with the step's action
        ("playing" for "Play a movie") or as the call's only value. A proposal that looks
        something up ("Do you want me to check your balance?") confirms no call that it does not
        name the action of ("I'll find buses ... Is that right?" confirms no purchase), unless it
        checks for a place again after a booking failed ("I couldn't book it. Shall I see if
        there's a table at 6:30?"). Values of the
        proposal this one revised (:attr:`earlier`) count only when the new one states one of
        the call's own. A proposal that names no action and asks no confirmation ("Dodie plays
        The Van Buren on March 6th at 6:30 pm.") confirms no call whose count (tickets, seats,
        guests, ...) neither it nor the turns before it (:attr:`heard`) said: it is an item
        found, liked, not a booking recapped. A day said relative to today ("next Friday") may
        state any one of the call's dates; one that none of them falls on, or a date said
        plainly that none of them is, states another date."""
        if not self.proposal or not arguments or len(arguments) > _ARGUMENTS:
            return False  # a call of more arguments than are read is not the one proposed
        arguments = {k: canonical(v) for k, v in arguments.items()}  # "7:20 pm" as 19:20
        said, before = self.proposal.lower(), self.earlier.lower()
        if self.places(arguments, wording):
            return True  # "Is this order correct?" "Yes.": the order placed, by its identifier
        if turned_round(arguments, f"{said} {before}"):
            return False  # "the bus from Anaheim to Las Vegas" goes no other way
        words = _words(wording)
        action = {_stem(w) for w in words[:1] + [w for w in words if w in _VERBS]}
        acted = bool(action & {_stem(_HEARD.get(w, w)) for w in _words(said)})
        # "see if there's a table at 6:30?" after a booking failed: the booking tried again
        hit, carried, stated, named_value = 0, 0, 0, False
        # each day said relative to today states one date of the call, where no date is said
        relative = relative_days(said)
        given = list(arguments.items())
        isos = [v for _, v in given if isinstance(v, str) and _ISO.fullmatch(v.strip())]
        unsaid = [v for v in isos if not any(f.search(said) for f in spoken_forms(v))]
        if relative and unsaid and stray_days(_unnamed(said, given), isos):
            return False  # "next Tuesday" for a Thursday: another date
        rest = said  # the proposal less the values the call states
        numbers = _TIME.sub(" ", _MONEY.sub(" ", said))  # "5:20 pm" and "$20" count nothing
        plain: list[tuple[str, str]] = []
        for key, value in given:
            if _switch(value):  # "without subtitles" states subtitles=False: a value said
                if switch_turned(key, value, said):
                    return False  # "without subtitles" is no call with subtitles
                hit += any(w in said for w in key_words(key))
                continue
            if value is None:
                continue
            if not isinstance(value, str | int | float):
                return False  # a list or a table of values: details the proposal cannot state
            forms = spoken_forms(str(value))
            if not forms:
                continue
            text = str(value).strip()
            stated += 1
            # a count is said as a number of its own, not inside "5:20 pm" or "$20"
            where = numbers if _COUNT.fullmatch(text) and not _MONEY_KEY.search(key) else said
            if any(f.search(where) for f in forms):
                hit += 1
                named_value |= not _PLAIN_VALUE.fullmatch(text)
                for f in forms:  # a value said is no count or time of its own ("659 Main St")
                    rest = f.sub(" ", rest)
            elif relative and said_relative(said, text):  # the day said is this date's
                hit += 1
                relative -= 1
                plain.append((str(key), text))  # unless another date is said plainly
            else:
                plain.append((str(key), text))
                if before and any(f.search(before) for f in forms):
                    carried += 1  # stated in the proposal this one revised
                    named_value |= not _PLAIN_VALUE.fullmatch(text)
        if carried and not hit:
            return False  # the new proposal states nothing of this call: another proposal's
        # what it proposes to do, less the call's values ("play Find Me" finds nothing)
        looks = {m.group(0) for m in itertools.islice(_LOOKUP.finditer(rest), 8)}
        retried = (
            bool(before)
            and looks <= {"see if", "see whether"}
            and bool(_RETRY.search(said))
            and read_agent(said).failed
        )
        if looks and not acted and not retried:
            return False  # a search, not the call
        money = bool(_MONEY.search(rest))
        times = bool(_TIME.search(rest))
        dates = bool(_DATE.search(rest))
        counted = _NOT_A_COUNT.sub(" ", _DATE.sub(" ", _TIME.sub(" ", _MONEY.sub(" ", rest))))
        counted = _PRONOUN_ONE.sub(" ", counted)
        counts = bool(_NUMBER.search(counted))
        for key, text in plain:
            if _COUNT.fullmatch(text) and (counts or (money and _MONEY_KEY.search(key))):
                return False  # a count or an amount the proposal states otherwise
            if times and _CLOCK.fullmatch(text):
                return False  # a time the proposal states otherwise
            if dates and _ISO.fullmatch(text):
                return False  # a date the proposal states otherwise
        hit += carried
        if _uncounted(given, f"{said} {self.heard.lower()}") and not (
            acted or asks_to_confirm(said) or proposes_to_act(said)
        ):
            return False  # "Dodie plays The Van Buren on March 6th": how many was never said
        if unheard(given, f"{said} {before} {self.heard} {self.thing}".lower()):
            return False  # a value nobody said: another recipient, a tenfold amount, a note
        if hit >= 2:
            return True
        one = hit == 1 and named_value and (acted or stated == 1)
        return not self.bare and self.cue and one

    def places(self, arguments: Mapping[str, object], wording: str) -> bool:
        """Whether the confirmed proposal asked the user to check what was shown and the call
        (of the step worded ``wording``) completes it by its identifier ("Is this order
        correct?" "Yes.": ``finish_order(order_id=...)``; see :mod:`.finishing`)."""
        said = self.proposal.lower()
        return (
            _finishing(wording, arguments)
            and not self.cut
            and (self.cue or asks_to_confirm(said) or proposes_to_act(said) or _judges(said))
            # "Is the order correct?", not "Is your email correct?"
            and _of_step(said, wording, self.heard)
            and _ids_said(said, arguments)  # "Is your order number 5 correct?": order 5 only
        )

    def contradicted(self, arguments: Mapping[str, object] | None, wording: str = "") -> bool:
        """Whether the confirmed proposal states a count, an amount, a time or a date that the
        call's differs from ("Shall I book a table for 2 at 7 pm?" is no table for 40 at 21:30).
        A proposal that states none contradicts nothing. Where it offered things of their own
        counts to add and the call names an item ("Shall I add two lattes and a mocha?"), the
        call's count is the thing's, read by :meth:`things_of` (``wording``: the step's)."""
        if not self.proposal or not arguments:
            return False
        arguments = {k: canonical(v) for k, v in itertools.islice(arguments.items(), _ARGUMENTS)}
        if turned_round(arguments, f"{self.proposal[-AGENT_CHARS:]} {self.earlier}"):
            return True  # "Shall I buy a ticket from Anaheim to Las Vegas?": not the other way
        heard = f"{self.proposal[-AGENT_CHARS:]} {self.earlier} {self.heard} {self.thing}"
        if unheard(itertools.islice(arguments.items(), _ARGUMENTS), heard.lower()):
            return True  # "$12,100" for "transfer $1,210", a note nobody said
        counts = not (
            self.thing
            and sets_item(arguments)
            and any(n < _ARGUMENTS for n in self.counts(wording))
        )
        said = self.proposal.lower()
        rest, plain = said, []
        numbers = _TIME.sub(" ", _MONEY.sub(" ", said))
        relative = relative_days(said)
        for key, value in itertools.islice(arguments.items(), _ARGUMENTS):
            if _switch(value) and switch_turned(key, value, said):
                return True  # "without subtitles": not with them
            if (
                value is None
                or isinstance(value, bool)
                or not isinstance(value, str | int | float)
                or _ID_KEY.search(str(key))  # "order_id": "38056" is no count
            ):
                continue
            forms = spoken_forms(str(value))
            text = str(value).strip()
            where = numbers if _COUNT.fullmatch(text) and not _MONEY_KEY.search(key) else said
            if any(f.search(where) for f in forms):
                for f in forms:
                    rest = f.sub(" ", rest)
            elif not (relative and said_relative(said, text)):
                plain.append((str(key), text))
        money, times, dates = (
            bool(_MONEY.search(rest)),
            bool(_TIME.search(rest)),
            bool(_DATE.search(rest)),
        )
        counted = _PRONOUN_ONE.sub(
            " ", _NOT_A_COUNT.sub(" ", _DATE.sub(" ", _TIME.sub(" ", _MONEY.sub(" ", rest))))
        )
        counts = counts and bool(_NUMBER.search(counted))
        return any(
            (_COUNT.fullmatch(text) and (counts or (money and _MONEY_KEY.search(key))))
            or (times and _CLOCK.fullmatch(text))
            or (dates and _ISO.fullmatch(text))
            for key, text in plain
        )

    def of_thing(self, arguments: Mapping[str, object] | None, wording: str = "") -> bool:
        """Whether a call is of a thing the user ordered, and no more of it than they counted
        (:meth:`thing_of`). True when the reading ordered nothing."""
        return not self.thing or bool(self.things_of(arguments, wording))

    def notes_said(self, arguments: Mapping[str, object] | None) -> bool:
        """Whether every word of the call's free-text fields (a note, instructions, ...) was
        said in the proposal or the message that named its thing ("Shall I add it?" adds no
        "extra shots" to "A latte, please.")."""
        said = {_stem(w) for w in _WORD.findall(f"{self.thing} {self.proposal}".lower())}
        return all(
            {_stem(w) for w in _WORD.findall(str(v).lower()[:200])} <= said | _STOP
            for k, v in _leaves(arguments or {})[0]
            if _NOTE_KEY.search(k)
        )

    def counts(self, wording: str = "") -> tuple[int, ...]:
        """How many of each thing the order counted, in the order's order ("a latte and two
        mochas": (1, 2)); empty when it ordered nothing. A confirmed proposal's thing of the
        kind the step's ``wording`` names ("2 tickets for your event") counts what the proposal
        states (:meth:`contradicted`), not what its words are read as."""
        if not self.thing:
            return ()
        kind = _kind(wording) if self.kind == "confirm" else set()
        return tuple(_ARGUMENTS if words & kind else count
                     for words, _, count in _things(self.thing))  # fmt: skip

    def things_of(
        self, arguments: Mapping[str, object] | None, wording: str = "", counted: bool = True
    ) -> tuple[int, ...]:
        """Which things of the order a call may be of (their places among :meth:`counts`), the
        closest first ("an oat latte and an almond latte": a latte with almond milk is of the
        second, then the first); none when it is of none of them. The thing is sought in the
        values of the call's item fields (an id, an item, a product, a name, ...; every value
        but a note's where it has none): one value holds half the thing's words, its last word
        or two of them, and is made of the user's words, numbers aside ("mocha-2211" for "a
        mocha"; not "mocha-gift-card-500", not "gold-bar" with a flavour of mocha). No count
        among the call's values (quantity, tickets, ...) is more than the order counted of that
        thing ("a mocha": one; "a dozen donuts": 12; no count said: one; not read without
        ``counted``), and no price, discount or code is one the user did not say. "I need a
        rental car" orders no bus ticket. A thing that is the kind the step's ``wording`` names
        ("two tickets" for "Buy tickets for an event") is of an item made of the user's words
        ("Mets game" for "two tickets for the Mets game"). For a confirmed proposal (a yes to
        "Shall I add a latte?"), the words said are the proposal's and the turns before it, and
        its dates and times are checked by :meth:`contradicted`."""
        heard = self._said(arguments, whole=True)
        if heard is None:
            return ()
        args, (spoken, spelled) = arguments or {}, heard
        have = spelled({_stem(w) for v in _flat(args) for w in _WORD.findall(v.lower())})
        items = [spelled(_item_words(v, spoken)) for v in _item_values(args)]
        have.update(*items)
        kind, confirm = _kind(wording), self.kind == "confirm"
        found: list[tuple[int, int]] = []
        for place, (words, head, count) in enumerate(_things(self.thing)):
            hit = words & have
            if confirm and words & kind:  # "2 tickets for your event": the item said before,
                named, count = any(items), 0  # its count the proposal's (contradicted)
            elif words <= kind:  # "two tickets" for "Buy tickets": the item is the user's words
                named = any(items)
            else:  # half its words, its last word or two of them, in an item
                named = (
                    len(hit) * 2 >= len(words)
                    and (head in have or len(hit) >= 2)
                    and any(item & words for item in items)
                )
            if named and not (counted and count and _too_many(args, count)):
                found.append((-len(hit), place))
        places = tuple(place for _, place in sorted(found))
        if len([item for item in items if item]) > 1 and places and not confirm:
            things = _things(self.thing)
            of = {min((p for p in places if item & things[p][0]), default=-1) for item in items}
            if len(of - {-1}) > 1:
                return ()  # one call of several things ordered: one call, one thing
        return places

    def offered(self, arguments: Mapping[str, object] | None, wording: str = "") -> bool:
        """Whether a call of the step a confirmed proposal named sets items and options of the
        words of its proposing sentence (:attr:`thing`, less what it sets aside, "not a mocha",
        and the details after "with") or the turns before it only, no item of the step's own
        words alone ("order"), no more than the proposal counted (:meth:`within`), and no price
        or code they did not say ("3 tickets to your event": the event named before; no
        "venti" for "a latte"; "Your order is a latte. Shall I add a muffin?" adds no latte).
        The rule for a call of no thing the proposal named (:meth:`things_of`)."""
        if self.kind != "confirm" or not self.within(arguments, wording) or by_id(arguments):
            return False  # more than was counted; "menu_item_id": "12345", which says nothing
        kind = _kind(wording)
        items = [{_stem(w) for w in _WORD.findall(v.lower()) if not w.isdigit()}
                 for v in _item_values(arguments or {})]  # fmt: skip
        if any(item and item <= kind for item in items):
            return False  # "menu_item_id": "order" for "Shall I add a latte to your order?"
        plain = _NOT_THIS.sub(" , ", _WITH.sub(" , ", self.thing[:USER_CHARS].lower()))
        return replace(self, thing=plain)._said(arguments, whole=False) is not None

    def within(self, arguments: Mapping[str, object] | None, wording: str = "") -> bool:
        """Whether a call of a confirmed proposal counts no more than the proposal's things
        counted, the most of any of them ("Shall I add a latte?": one; "2 tickets for your
        event": the proposal's own count, :meth:`contradicted`)."""
        counts = self.counts(wording)
        return not counts or not _too_many(arguments or {}, max(counts))

    def _said(
        self, arguments: Mapping[str, object] | None, whole: bool
    ) -> tuple[list[str], _Spelling] | None:
        """The words said (as spoken, and their spelling), or None where the call's items,
        options, prices or codes are not of them, or nothing was ordered. A confirmed
        proposal's words are its ``whole`` text's, or its thing's, and the turns before."""
        if not self.thing:
            return None
        args = arguments or {}
        text = _plain(self.thing[:USER_CHARS].lower())
        spoken = _WORD.findall(text)
        confirm = self.kind == "confirm"
        if confirm:  # a yes to "A large one with oat milk. Shall I add a latte?"; "3 tickets
            # to your event": the event named in the turns before
            text = f"{self.proposal[-AGENT_CHARS:] if whole else ''} {self.heard}".lower()
            spoken += _WORD.findall(text)
            text = f"{self.thing[:USER_CHARS]} {text}".lower()
        said = {_stem(w) for w in spoken}
        # the thing's words may be anywhere in the call, a note's too ("double shot"); the item
        # must still be of the user's words
        spelled = _Spelling(said)
        items = [spelled(_item_words(v, spoken)) for v in _item_values(args)]
        if (
            _unsaid_terms(args, text)
            # an item of the call is not of the user's words ("mocha-gift-card-500")
            or not all(item <= said for item in items if item)
            # "size": "venti", "option": "Decaf" for "a latte"
            or _unsaid_option(args, said, spelled, _EVERY if confirm else None)
        ):
            return None
        return spoken, spelled

    def mentions(self, arguments: Mapping[str, object] | None) -> bool:
        """Whether a change carries what the user said, and no count they did not: a value
        that is a word of the user's or a run of their words ("Decaf" for "No, I'd like it
        decaf", "Togo" for "to go"; not a note's words), and no count more than the user's ("make
        it two"; none said: one). "Make it snappy" changes nothing. What the user set aside ("not
        caramel") is not said; a count of none removes and is said only with words of removing.
        Every item it names ("menu_item_id") and every option it sets ("option": "Decaf") is
        the user's words, an identifier, or a plain switch ("ADD"): "Can I add vanilla?" sets no
        size and swaps no drink. True when the reading ordered or changed nothing."""
        if not self.thing:
            return True
        args = arguments or {}
        text = self.thing[:USER_CHARS].lower()
        words = _WORD.findall(_plain(_NOT_THIS.sub(" , ", text)))
        said = {_stem(w) for w in words if len(w) >= 2 and w not in _STOP
                and w not in _ORDER_WORDS and w not in _CHANGE_WORDS}  # fmt: skip
        runs = {"".join(words[i : i + n]) for n in (2, 3) for i in range(len(words) - n + 1)}
        most = max((c for _, _, c in _things(self.thing)), default=1)
        if _too_many(args, most) or _unsaid_terms(args, text):
            return False
        if (_zeroed(args) or _removes(args)) and not _REMOVING.search(text):
            return False  # a count of none, "remove_item": "yes", "status": "cancelled"

        starts = {w[:n] for w in itertools.islice(said, 512) for n in range(4, min(len(w), 12) + 1)}

        def spoken(value: str) -> bool:  # "Decaf" for "decaffeinated": the start of a word said
            stems = {_stem(w) for w in _WORD.findall(value.lower())}
            return bool((said | starts) & stems) or "".join(_WORD.findall(value.lower())) in runs

        def wholly(value: str) -> bool:  # "Oat milk" for "to oat milk", not "whole milk"
            stems = {_stem(w) for w in _WORD.findall(value.lower()) if not w.isdigit()} - _STOP
            return (bool(stems) and stems <= (said | starts)) or (spoken(value) and len(stems) <= 1)

        heard = said | {"".join(words[i : i + n]) for n in (2, 3) for i in range(len(words))}
        if _unsaid_option(args, heard, _Spelling(heard)) or _repeats(args) > most:
            return False  # "size": "venti", "menu_item_id": "gold-bar", vanilla twelve times
        if self.changes:  # a yes to "Should I change it to decaf?": decaf and nothing else
            values = _changed_values(args)
            hits = sum(1 for v in values if wholly(v))
            return hits == len(values) > 0 and (hits == 1 or not _OR.search(text))
        return any(spoken(v) for v in _flat(args, notes=False))

    def understood(self, plan: Plan) -> str:
        """What the gate understood, in plain words, for a refusal's notice."""
        about = " and ".join(f"'{step_wording(plan, s)}'" for s in self.about if s in plan.steps)
        match self.kind:
            case "decline":
                return f"the user declined {about}" if about else "the user said no"
            case "change":
                return "the user changed the details and has not confirmed the new ones yet"
            case "question":
                return "the user asked a question and asked for nothing to be done"
            case "alternatives":
                return "the user asked for other options"
            case "closing":
                return "the user said thanks or goodbye and asked for nothing more"
            case "held":
                return (
                    "the user's yes came with a condition or asked you to wait: do what they "
                    "asked first, then ask them to confirm"
                )
            case "unclear":
                names = " or ".join(
                    f"'{step_wording(plan, s)}'" for s in self.candidates if s in plan.steps
                )
                return f"the gate could not tell which step the user wants ({names})"
            case _:
                return "the user's last message does not ask for this"


def _kind(wording: str) -> set[str]:
    """The words of a step's wording, as stems: the kind of thing it adds ("tickets")."""
    return {_stem(w) for w in _WORD.findall(wording.lower()[:400])}


class Reader(Protocol):
    """Reads a user's message with the agent's message before it (the gate's interface for the
    decision; a plain :class:`~taskgate.roles.Matcher` reads the message alone)."""

    async def match(self, plan: Plan, message: str) -> Match: ...

    async def aread(
        self, plan: Plan, message: str, agent: str = "", earlier: Sequence[Turn] = ()
    ) -> Reading: ...


class ConversationReader:
    """The gate's reading of a user's message in its context, with no model call (see the
    module). It is also a :class:`~taskgate.roles.Matcher` (the message alone).

    ``namer`` (optional) names the step of a request the rules could not resolve: a message that
    names no step by its words, or several only through shared words ("get the RFQ written"),
    and is no question, no, closing or reply to the agent's proposal, is put to it, and the step it names (or the candidates it offers) is
    the reading's. The embedding matcher on the bundled MiniLM is the namer to use
    (``ConversationReader(EmbeddingMatcher())``, the proxy's ``--matcher
    conversation:embedding``): paraphrases of a step's wording are then named as a model would,
    with no model call."""

    def __init__(self, namer: Matcher | None = None) -> None:
        self.namer = namer

    async def match(self, plan: Plan, message: str) -> Match:
        return (await self.aread(plan, message)).match

    async def aread(
        self, plan: Plan, message: str, agent: str = "", earlier: Sequence[Turn] = ()
    ) -> Reading:
        reading = self.read(plan, message, agent, earlier)
        if self.namer is None or reading.kind not in ("other", "unclear"):
            return reading
        said = agent[-AGENT_CHARS:]
        u, a = read_user(message[:USER_CHARS], said), read_agent(said)
        if u.question or u.closing or u.no or u.alternatives or a.proposes or a.offers:
            return reading  # not a request in its own right: nothing to name
        named = await self.namer.match(plan, message[:USER_CHARS])
        if named.step is not None and named.step in plan.steps:
            return Reading("request", (named.step,), reading.explicit_redo or named.explicit_redo)
        asked = tuple(c for c in named.candidates if c in plan.steps)
        return Reading("unclear", candidates=asked) if asked else reading

    def read(
        self, plan: Plan, message: str, agent: str = "", earlier: Sequence[Turn] = ()
    ) -> Reading:
        """The reading of ``message`` after the agent's ``agent``; ``earlier`` are the turns
        before them, oldest first, each (the agent's message, the user's reply): a confirmed
        proposal that revised an earlier one is read with it (see :func:`revised`)."""
        reading = self._read(plan, message, agent)
        if reading.kind == "confirm" and len(agent) > AGENT_CHARS:
            reading = replace(reading, cut=True)
        if reading.kind == "confirm" and reading.proposal:
            heard = " ".join(
                f"{a[-AGENT_CHARS:]} {u[:USER_CHARS]}" for a, u in list(earlier)[-REVISIONS:]
            )
            reading = replace(reading, heard=heard)
            if reading.steps and not reading.changes and _ADD_IT.search(reading.proposal):
                before = reading.thing or _thing_before(plan, reading, earlier)
                reading = replace(reading, thing=before, named_before=bool(before))
        if reading.kind == "confirm" and reading.bare and not _restated(agent, earlier):
            return Reading("other")  # "mets vs braves citi field march 13th": found, not recapped
        if reading.kind == "confirm" and reading.proposal and earlier:
            return revised(self, plan, reading, earlier)
        return reading

    def _read(self, plan: Plan, message: str, agent: str) -> Reading:
        user = message[:USER_CHARS]
        said = agent[-AGENT_CHARS:]
        u, a = read_user(user, said), read_agent(said)
        named, unclear = _named(plan, user, loose=explicit_redo(user))
        negated = tuple(s for s in named if _negated(plan, s, user))
        named = tuple(s for s in named if s not in negated)
        proposed, _ = _named(plan, said, agent=True) if (a.proposes or a.offers) else ((), ())
        redo = explicit_redo(user)  # "another" or "also" is a new request, not a redo
        if IN_JEST.search(user):  # "Could you book another one? Just kidding."
            return Reading("decline", about=named)
        changers = _related(plan, _first_word(plan, _CHANGERS), said)
        changing, placing = _change_offered(said) if (a.proposes or a.offers) and changers else (
            "", False)  # fmt: skip
        if changing and placing and u.yes:  # "Should I change it to decaf? Then I'll place the
            return Reading("unclear", candidates=changers)  # order." "Yes.": which of them?
        if changing:
            proposed = changers  # "Should I change your latte to decaf?": a change proposed
            if u.yes and _says_more(user, said):  # "Yes, oat milk.": a change of their own
                return Reading("change", changers, about=proposed, thing=user)
        if (a.proposes or a.offers) and u.declines:
            return Reading("decline", about=negated or proposed)
        if (
            changers
            and (a.proposes or a.offers or a.confirming or a.acts or a.done)  # something to change
            and (u.change or (u.no and (u.asks or u.orders)) or _CHANGING.search(user))
            and not (u.declines or u.closing or u.alternatives or negated or _KEEP.search(user))
            # "Add vanilla? No.", "maybe add vanilla"; not "No, wait. Let's change it to decaf."
            and not _NOT_AN_ORDER.search(_WAIT_FIRST.sub("", user, count=1))
            and not (u.orders and asks_what(said))  # "What would you like?" "Actually, a latte"
            and (u.asks or u.orders or not u.question)
        ):  # "No, I'd like it decaf": a change asked for, the plan's steps that change things
            return Reading("change", changers, about=proposed, thing=user)
        if changers and _picks(user, said) and not (u.no or u.closing or u.question):
            # "We have vanilla, hazelnut or caramel." "Hazelnut, please.": a choice among the
            # options the agent listed, for the steps that change what was added
            return Reading("change", changers, thing=user)
        if ((a.proposes or a.offers or a.confirming) and _ALSO.search(user)) or (
            u.orders and asks_what(said)
        ):  # "Yes, and also a mocha"; "What can I get for you?" "I'll take a mocha."
            ordered = _order(plan, user, said, u, a, named, changers)
            if ordered is not None:
                return ordered
        if a.proposes or a.offers:
            if u.yes and not (u.change or u.no or u.alternatives or negated):
                if len(proposed) > 1:
                    return Reading("unclear", candidates=proposed)
                either = _either_asked(said)
                if either and not _picked(user):  # "$100 or $1,210?" "Yes.": which?
                    return Reading("unclear", candidates=proposed)
                thing = _proposed_thing(plan, proposed, said) if proposed else ""
                if either and thing:  # "A latte or a mocha?" "Yes, the mocha.": the user's pick
                    return Reading("confirm", proposed, redo, proposal=said, cue=a.confirming,
                                   thing=user)  # fmt: skip
                if either:  # "$100 or $1,210?" "Yes, $100.": to be proposed again, with it
                    return Reading("change", about=proposed)
                if changing:
                    return Reading("confirm", proposed, redo, proposal=said, cue=a.confirming,
                                   thing=changing, changes=True)  # fmt: skip
                if proposed:
                    thing = _proposed_thing(plan, proposed, said)
                    if thing and _TAKEN_BACK.search(said[said.rfind(thing) + len(thing) :]):
                        # "Shall I add a latte and a mocha? Actually, scratch the mocha."
                        return Reading("unclear", candidates=proposed)
                    return Reading("confirm", proposed, redo, proposal=said, cue=a.confirming,
                                   thing=thing)  # fmt: skip
                return Reading("confirm", proposal=said, cue=a.confirming,
                               claimed=_claims(said, a.done))  # fmt: skip
            if (  # "book it, please"
                a.proposes
                and named
                and u.asks
                and not (u.change or u.no or u.question)
                and (not proposed or set(named) & set(proposed))
            ):
                return Reading("confirm", named, redo)
            if u.held:  # "Yes, but first tell me the price": held back, not new details
                return Reading("held", about=proposed)
            if (
                a.proposes
                and not u.closing
                and (u.change or ((u.asks or named) and not u.no and not u.question))
            ):  # new details, to be proposed again
                return Reading("change", about=proposed)
        if u.no or negated:
            if named and u.asks and not u.question:  # "no, send it instead"
                return Reading("request", named, redo)
            if u.closing:
                return Reading("closing")
            if u.alternatives:
                return Reading("alternatives", about=proposed)
            return Reading("decline", about=negated or proposed)
        if u.alternatives:
            return Reading("alternatives", about=proposed)
        if (
            u.yes
            and (
                a.acts
                or a.confirming
                or (a.action and not a.verb_question)  # not "Is X your favourite spot at 7?"
                or (a.yes_no and not a.item)
                or a.terse  # "boulevard march 8th": the call's details, for a yes
            )
            # a failure report proposes nothing; "Can you tell me if this is right?" asks a yes
            and not ((a.asks and not a.confirming) or a.lists or a.failed)
            and not _UNDONE.search(said)  # "the transfer got voided": news, not a recap
            and not _hesitates(user)  # "Right. Should I get them or drive?": still deciding
            and (not a.done or _own_claim(said, a.confirming))
            # the same action (what the user's questions name is asked about, not asked for)
            and set(_named(plan, _asked_for(user))[0]) <= set(_named(plan, said, agent=True)[0])
            and said
        ):
            # a yes to details the agent stated: the call they describe
            return Reading("confirm", proposal=said, cue=a.confirming, bare=not a.action,
                           claimed=_claims(said, a.done))  # fmt: skip
        ordered = _order(plan, user, said, u, a, named, changers)
        if ordered is not None:
            return ordered
        if named and (u.asks or not u.question) and not (u.closing and not u.asks):
            if len(named) > 1 and _either(plan, named, user):  # "A or B, whichever you think"
                return Reading("unclear", candidates=named)
            return Reading("request", named, redo)
        if unclear and (u.asks or u.need) and not u.question:
            return Reading("unclear", candidates=unclear)
        if u.need and not u.question:
            records = _records(plan)
            if records:
                return Reading("need", records)
        if u.closing:
            return Reading("closing")
        if u.held:  # "Yes, but hold on": not a yes the gate can act on
            return Reading("held", about=proposed)
        if u.question:
            return Reading("question")
        return Reading("other")


#: one earlier turn of the conversation: the agent's message and the user's reply to it
Turn = tuple[str, str]
#: how many earlier turns a revised proposal is read with
REVISIONS = 3


def turns(said: Sequence[tuple[bool, str]]) -> tuple[Turn, ...]:
    """The earlier turns of a conversation whose messages, oldest first, are ``said`` (each: from
    the user?, its text): for each user message before the last one, the agent's last words
    before it and the message; the last :data:`REVISIONS` turns."""
    users = [i for i, (user, _) in enumerate(said) if user]
    out: list[Turn] = []
    agent = ""
    for user, text in said[: users[-1]] if users else ():
        if user:
            out.append((agent, text))
            agent = ""
        elif text:
            agent = text
    return tuple(out[-REVISIONS:])


def revised(
    rules: ConversationReader, plan: Plan, reading: Reading, earlier: Sequence[Turn]
) -> Reading:
    """``reading`` (a confirmed proposal) with the proposals it revised: the earlier turns, back
    from the latest, in which the user changed the details of the agent's proposal ("no, make it
    next Friday") and the agent proposed again, or, when the agent's new proposal follows a
    failure ("I couldn't book it; how about 6:20 pm?"), confirmed the proposal that failed. Their details count for the call only where the
    new proposal states nothing else of the kind (:meth:`Reading.confirms`)."""
    parts: list[str] = []
    again = read_agent(reading.proposal).failed or counter_offer(reading.proposal)
    kinds = {"change", "confirm"} if again else {"change"}
    for agent, user in list(earlier)[-REVISIONS:][::-1]:
        if rules._read(plan, user, agent).kind not in kinds:
            break
        parts[:0] = [agent[-AGENT_CHARS:], user[:USER_CHARS]]
    return replace(reading, earlier=" ".join(parts)) if parts else reading


_AGAIN = pattern(
    r"\b(?:another|again|more|second|third|additional|extra|also|new|else|instead|too|as well|"
    r"re-?book\w*)\b",
    re.I,
)


def says_again(proposal: str) -> bool:
    """Whether a proposal is for another one of what was done ("Shall I book another table?",
    "3 more tickets", "the 6 pm bus instead"): a confirmation of it may run a step again."""
    return bool(_AGAIN.search(proposal))


def _own_claim(said: str, confirming: bool) -> bool:
    """Whether a report of work done is the agent's own claim to have just done it, to be read
    as a recap for a yes ("Okay. I have reserved 3 tickets in Phoenix."): said in the first
    person or the present perfect, of no one else's work, nothing undone or in the past, and
    ending with no question other than one asking to confirm ("I have booked it. Anything
    else?" is asked something else)."""
    return (
        bool(_OWN_CLAIM.search(said))
        and not _NOT_OWN.search(said)
        and (confirming or "?" not in _LAST.split(said.strip())[-1])
    )


def _claims(said: str, done: bool) -> bool:
    """Whether an agent's message says the work is done, in any words (a yes to it then runs
    nothing the gate holds a receipt of)."""
    return done or bool(_SAYS_DONE.search(said))


_LAST = pattern(r"(?<=[.!])\s+")
_CLAIMED = (
    r"(?:booked|reserved|bought|purchased|scheduled|made|placed|ordered|confirmed|set up|"
    r"arranged)"
)
#: the agent's own claim to have just done it
_OWN_CLAIM = pattern(
    r"\bi(?:'ve| have)(?: just| now| already)? (?:\w+ )?" + _CLAIMED + r"\b|"
    r"\b(?:has|have) been (?:\w+ )?" + _CLAIMED + r"\b|\b(?:is|are) (?:now )?" + _CLAIMED + r"\b",
    re.I,
)
#: someone else's work, work undone, or work in the past
#: (read after :data:`_UNDONE`, which already refuses undone and past work)
_NOT_OWN = pattern(
    r"\b(?:cancel\w*|revers\w*|refund\w*|undo\w*|earlier|previous\w*|before|already|was|were|"
    r"had|got|by \w+|in (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*)\b",
    re.I,
)
#: work undone, refused or past: news to acknowledge, no recap
_UNDONE = pattern(
    r"\b(?:cancell?ed|cancellation|reversed|refunded|voided|bounced|released|declined|rejected|"
    r"undone|expired|last (?:week|month|year|time|night)|yesterday|ago)\b",
    re.I,
)
#: work said done, in other words than :func:`read_agent`'s
_SAYS_DONE = pattern(
    r"\bi (?:just )?(?:booked|bought|purchased|reserved|got you|scheduled|made|sent|"
    r"transferred|ordered|placed|paid)\b|\b(?:done|all set|complete|completed|finished)\b",
    re.I,
)


def _restated(agent: str, earlier: Sequence[Turn]) -> bool:
    """Whether a recap without a verb ("boulevard march 8th") restates what the conversation
    already said (the item chosen, the user's details), not something just found: each of its
    words is in the earlier turns (numbers and dates aside). Any other agent message: True."""
    said = agent[-AGENT_CHARS:]
    if not read_agent(said).terse:
        return True
    words = {w for w in _words(said) if len(w) > 2 and not w[0].isdigit() and w not in _STOP
             and w != "rating" and not _DATE.fullmatch(f"{w} 1")}  # fmt: skip
    before = {w for a, u in list(earlier)[-REVISIONS:] for w in _words(f"{a} {u}")}
    return bool(words) and words <= before


def _step_words(plan: Plan) -> dict[str, set[str]]:
    return {sid: set(_words(step_wording(plan, sid))) for sid in plan.steps}


def _actions(plan: Plan) -> dict[str, set[str]]:
    """Each step's action words: its wording's first word and the verbs of :data:`_SAME`."""
    out = {}
    for sid in plan.steps:
        words = _words(step_wording(plan, sid))
        out[sid] = {w for w in words if w in _VERBS} | set(words[:1])
    return out


def _named(
    plan: Plan, text: str, *, loose: bool = False, agent: bool = False
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The steps ``text`` names (a word of the step no other matched step shares, and at least a
    fifth of the step's words, its action among them unless ``loose``: "redo the requirements"
    names the action by "redo"), and the steps it matches only through shared words. In the
    ``agent``'s words, a step that changes, undoes, finishes or charges is named by its own verb
    only ("Is your email correct?" proposes no "change account email")."""
    said = set(_words(text))
    raw = {_stem(w) for w in _WORD.findall(text.lower())}
    words, actions = _step_words(plan), _actions(plan)
    verbs = {s: _stem(_first(step_wording(plan, s))) for s in plan.steps} if agent else {}
    mute = {s for s, v in verbs.items() if v in _OWN_VERB and not _family(v) & raw}
    matched = {s: w & said for s, w in words.items() if w and len(w & said) * 5 >= len(w)}
    loose = loose or not _SEARCH.search(text)  # a search names the object, not the step
    matched = {
        s: hit
        for s, hit in matched.items()
        if hit
        and (
            hit & actions[s]
            or (
                loose
                and (len(hit) >= 2 or len(hit) * 2 >= len(words[s]))
                and not actions[s] & _ALTERS  # "Is your email correct?" changes no email
            )
        )
    }
    named: list[str] = []
    shared: list[str] = []
    for sid, hit in matched.items():
        others = set().union(*(words[o] for o in matched if o != sid))
        if sid not in mute:  # its words still make others' shared
            (named if hit - others else shared).append(sid)
    return tuple(named), tuple(shared) if len(shared) > 1 else ()


def _first(wording: str) -> str:
    """A step wording's first word that is no stop word (its verb)."""
    return next((w for w in _WORD.findall(wording.lower()[:200]) if w not in _STOP), "")


#: the actions that change or undo what was done: a step of them is named by its action only
_ALTERS = frozenset(
    [
        "update",
        "change",
        "modify",
        "edit",
        "amend",
        "adjust",
        "alter",
        "delete",
        "remove",
        "cancel",
        "close",
        "refund",
        "void",
        "revoke",
        "reset",
        "replace",
        "deactivate",
        "terminate",
    ]
)


_FINISHING = frozenset(
    _stem(w) for w in ["finish", "submit", "place", "complete", "finalize", "checkout"]
)
_OWN_VERB = frozenset(_stem(w) for w in _ALTERS | {"process", "charge", "pay"}) | _FINISHING


def _family(verb: str) -> frozenset[str]:
    """The verbs that name a step of ``verb``'s: finishing is said in any of its words."""
    return _FINISHING if verb in _FINISHING else frozenset([verb])


def _negated(plan: Plan, step: str, text: str) -> bool:
    """Whether a word of the step comes, in ``text``, right after a negation in its clause."""
    low, words = text.lower(), _step_words(plan)[step]
    for hit in _WORD.finditer(low):
        if _SAME.get(hit.group(), hit.group()) in words and _NEGATION.search(
            low[max(0, hit.start() - 60) : hit.start()]
        ):
            return True
    return False


def proposed_steps(plan: Plan, text: str) -> tuple[str, ...]:
    """The steps an agent's proposal speaks of: those with a word of their wording in it."""
    said = {_stem(w) for w in _words(text[-AGENT_CHARS:])}
    return tuple(s for s, w in _step_words(plan).items() if {_stem(x) for x in w} & said)


def _either(plan: Plan, named: tuple[str, ...], text: str) -> bool:
    """Whether ``text`` leaves the choice between the ``named`` steps open: "either" or
    "whichever", or an "or" right before a word of one of them ("draft it or place the order";
    not "send it to Acme or Globex")."""
    if _EITHER.search(text):
        return True
    words = _step_words(plan)
    return any(
        _SAME.get(m.group(1).lower(), m.group(1).lower()) in words[s]
        for m in _OR.finditer(text)
        for s in named
    )


_ANOTHER = pattern(r"\banother\b", re.I)
_ALSO = pattern(r"\b(?:also|too|as well|another|one more|and a|plus)\b", re.I)
#: the first words of a step that adds or buys a thing, and of one that changes what was done
_TAKERS = frozenset(["add", "order", "buy", "purchase"])
_CHANGERS = frozenset(["update", "change", "modify", "edit", "amend", "adjust", "alter"])
#: the agent proposing to change something ("Should I change your latte to decaf?")
_CHANGE_OFFERED = pattern(
    r"\b(?:shall|should|can|may|could) (?:i|we) (?:go ahead and )?(?:change|switch|swap|modify|update|"
    r"make (?:it|that|this|them|yours?)\b)|\b(?:would|do) you (?:like|want) (?:me )?to (?:change|"
    r"switch|swap|modify|make (?:it|that|this|them|yours?)\b)|\bi (?:can|could) (?:change|switch|"
    r"swap|modify|make (?:it|that|this|them|yours?)\b)",
    re.I,
)


def _change_offered(said: str) -> tuple[str, bool]:
    """What the agent's question offers to change to ("Should I change your latte to decaf?":
    "decaf"; "I can make it decaf for you. Would you like that?": "decaf for you"), and whether
    the last two sentences also speak of placing the order ("... Let me know and I'll place the
    order."). Empty where the question offers no change (a change offered in passing, "I could
    make it decaf, but it costs more. Shall I place the order?", is not what is asked) or
    offers to add something."""
    sentences = _SENTENCE_END.split(said.strip())[-2:]
    asked = [i for i, x in enumerate(sentences) if x.rstrip().endswith("?")]
    if not asked:
        return "", False
    at = asked[-1]
    question = sentences[at]
    offer = _CHANGE_OFFERED.search(question)
    if offer is None and at and _LIKE_THAT.match(question):  # "... Would you like that?"
        question = sentences[at - 1]
        offer = _CHANGE_OFFERED.search(question)
    if offer is None or _ADD_OFFERED.search(question):
        return "", False
    marks = list(itertools.islice(_CHANGE_TO.finditer(question, offer.start()), 16))
    to = [m for m in marks if m.group(1)]  # "from whole milk to oat milk": the last "to"
    target = to[-1] if to else (marks[0] if marks else None)
    new = question[target.end() :] if target else question[offer.end() :]
    new = _REASON.split(new, maxsplit=1)[0]  # "to decaf, since regular is out": decaf
    return new.strip(" ?.!") or question, bool(_PLACE_OFFERED.search(" ".join(sentences)))


_ADD_OFFERED = pattern(r"\b(?:add|adding|another|one more|also get)\b", re.I)
#: where a proposed change says what it changes to ("to decaf", "for whole milk", "make it ...")
_CHANGE_TO = pattern(
    r"\b(?:(to|into)|for|with)\b(?! (?:you|me|us|them|him|her)\b)|\bmake (?:it|that|this|them|"
    r"yours?)\b",
    re.I,
)
#: where what a change is to ends: a reason or a comparison after it
_REASON = pattern(
    r"[,;(]|\s-\s|\b(?:since|because|as|now that|like|so|if|but|which|while|given|instead of|"
    r"rather than|unless|though)\b",
    re.I,
)
_PLACE_OFFERED = pattern(
    r"\b(?:place|send|submit|finish|complete|put (?:in|through)|ring up) (?:the|your|it|my|this)?\s*"
    r"(?:order|in)?\b",
    re.I,
)
#: a user's words that change something ("can I change it to decaf", "make it a large")
_CHANGING = pattern(
    r"\b(?:change|switch|swap|modify|instead|make (?:it|that|this|them|mine|the)|actually)\b", re.I
)


def _order(
    plan: Plan,
    user: str,
    said: str,
    u: UserAct,
    a: AgentAct,
    named: tuple[str, ...],
    changers: tuple[str, ...],
) -> Reading | None:
    """The reading of an order of a thing ("I'll take a mocha"): the plan's one step that adds or
    buys (several: ask which), with the steps that change the order ("to go"), each for calls of
    what the user said only (:meth:`Reading.of_thing`, :meth:`Reading.mentions`); None when the
    message orders nothing the gate can read as an order."""
    takers = _first_word(plan, _TAKERS)
    user = _REDONE.split(user[:USER_CHARS])[-1]  # "A latte... actually make that a mocha."
    things = _things(user)
    if not (
        takers
        and u.orders
        and len(user) < USER_CHARS  # a message read in part: what follows may take it back
        # "Can I get a latte? Make it to go.": it names the adding step at most
        and not (set(named) - set(takers + changers) or u.no or u.closing)
        and not _SEARCH.search(user)
        and not _NOT_AN_ORDER.search(user)  # quoted, reported, taken back, not now
        and not (things and things[0][0] & _SERVICES)  # "can I get a refund?"
        # in reply to details to confirm, an order is a change of them ("I'd like 2
        # tickets."), unless it is one more thing ("Can I also get a muffin?")
        and not (
            (a.proposes or a.offers or a.confirming or a.acts or (u.change and said))
            and not (_ALSO.search(user) or asks_what(said))
        )
        # "another event" after one shown: others like it (not after a recap: one more)
        and not (said and _ANOTHER.search(user) and not (a.done or a.confirming or a.proposes))
    ):
        return None
    if len(takers) > 1:
        return Reading("unclear", candidates=takers)
    return Reading("need", takers + changers, thing=user)


#: "wait" said first, before what the user asks for ("No, wait. Let's change it to decaf.")
_WAIT_FIRST = pattern(r"^\s*(?:(?:no|oh|um|uh|oops|sorry)[,.!]*\s+)?wait[,.!]+\s+(?=\S)", re.I)
#: what makes words that order something no order: quoted or reported speech, a condition, another
#: day, words taking it back
_NOT_AN_ORDER = pattern(
    r"\b(?:said|says|say|saying|told|tell me|translate|repeat after|spell|quote|wrote|"
    r"sign|what if|only if|unless|tomorrow|yesterday|next time|last time|on second thought|"
    r"never ?mind|scratch that|kidding|jk|lol|no wait|wait|hold on|hang on|forget (?:it|that)|"
    r"cancel (?:it|that)|changed my mind|no one|nobody|not now|later|or maybe|or perhaps|maybe|"
    r"might|not sure|usually|should i|if i|"
    r"or possibly)\b|\bbut (?:i'?m|i am|i was|"
    r"they|it'?s|that'?s)\b|[?.!]\s*(?:\w+[,.]?\s+){0,2}(?:no|nope|nah)(?:,? thanks?|,? thank "
    r"you)?[.!\s]*$|\b(?:just asking|asking for a friend|are you crazy|or don'?t|psych|in case|"
    r"pending|if (?:it'?s|it is|she|he|they|you(?! (?:can|could|have (?:it|one|that|them|any)|don'?t "
    r"mind|please)\b)|there)|haha|no thanks|make that just)\b",
    re.I,
)
#: what a request form may ask for that is no thing to add or buy
_SERVICES = frozenset(
    [
        "address",
        "number",
        "phone",
        "contact",
        "email",
        "refund",
        "price",
        "cost",
        "receipt",
        "moment",
        "minute",
        "second",
        "think",
        "look",
        "recommendation",
        "suggestion",
        "menu",
        "wifi",
        "password",
        "help",
        "question",
        "manager",
        "word",
        "idea",
        "list",
        "option",
        "information",
        "info",
        "request",
        "note",
        "comment",
        "instruction",
    ]
)
#: "don't change it", "keep it as it is": no change asked for
_KEEP = pattern(
    r"\b(?:don'?t|do not|never|no need to|not|nothing to) (?:\w+ ){0,3}(?:change|modify|edit|"
    r"switch|swap|touch|alter)\b|\b(?:keep|leave) (?:it|that|everything|them)\b",
    re.I,
)


#: the words of an order that name no thing ("I'd love to get one, please")
_ORDER_WORDS = frozenset(
    [
        "take",
        "have",
        "get",
        "order",
        "grab",
        "like",
        "love",
        "want",
        "need",
        "please",
        "hello",
        "hey",
        "there",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "some",
        "another",
        "give",
        "bring",
        "make",
        "try",
        "thanks",
        "thank",
        "today",
        "drink",
        "drinks",
        "add",
    ]
)


#: where the name of a thing ends: a preposition, "and", a stop
_THING_END = pattern(
    r"[,.;:!?()]|\s(?:for|in|at|with|without|to|from|on|near|by|and|or|but|please|now|too|also|"
    r"as well|instead|that|which|who|if|under|called|named|made|about|(?:flavou?red|served|topped|"
    r"prepared|brewed|sweetened)(?=\s+(?:with|in|at|on|by|as|extra)\b))\b",
    re.I,
)
_THING_START = pattern(
    r"\b(?:(?:half )?a dozen|a couple(?: of)?|a pair of|a few|\d+\s?x|a|an|one|two|three|four|"
    r"five|six|seven|eight|nine|ten|twelve|some|another|the|\d+(?!\s*(?:oz|ounces?|ml|%|percent|g|"
    r"kg|lbs?|shots?|pumps?|inch(?:es)?|cm|l|liters?|litres?)\b))\s+(?:more\s+|of\s+(?:the|those|"
    r"these)\s+)?|\b(?:get|take|have|order|want|need|like|gimme|grab|do|add)\s+(?:me\s+|us\s+)?"
    r"(?=[a-z])",
    re.I,
)


def _things(text: str, loose: bool = True) -> list[tuple[frozenset[str], str, int]]:
    """The things an order names, each as its words' stems, its last word's and how many of it
    were counted ("I'll take a Mocha and two chai lattes with oat milk": ({mocha}, mocha, 1),
    ({chai, latte}, latte, 2); "mocha x2": 2; no count said: 1); the first 16. A thing refused
    or set aside ("not a latte", "instead of a latte") is none. A thing said again, with no other
    details ("A latte. A latte, please.", "a latte, I mean a latte with oat milk"), is one thing;
    "a latte with oat milk and a latte with almond milk" are two, and so is "a latte and another".
    ``loose``: a few words and nothing else are a thing ("Mocha, please."); not in an agent's
    proposal ("Shall I add it?")."""
    out: list[tuple[frozenset[str], str, int]] = []
    details: list[set[str]] = []  # the words after each thing, up to the next ("with oat milk")
    again: list[bool] = []  # "another", "one more": one more of the thing before, never merged
    said = _NOT_THIS.sub(" , ", _POSSESSIVE.sub(r"\1s", _plain(text[:USER_CHARS].lower())))
    said = _REDONE.split(said)[-1]  # "A latte... actually make that a mocha.": the mocha only
    if _ADD.search(said):  # "add vanilla to the latte": the latte is where, not a thing
        said = _DESTINATION.sub(" , ", said)
    for part in itertools.islice(_THING_END.split(said), 64):
        if out and _ONE_MORE.fullmatch(part.strip()):  # "a mocha with oat milk and another"
            out.append((out[-1][0], out[-1][1], 1))
            details.append(set())
            again.append(True)
            continue
        start = _THING_START.search(part)
        if start is None:
            if details:
                details[-1].update(_stem(w) for w in _WORD.findall(part) if w not in _STOP)
            continue
        nxt = _THING_START.match(part, start.end())
        while nxt is not None and nxt.end() > start.end():  # "like two lattes": the count's
            start, nxt = nxt, _THING_START.match(part, nxt.end())
        rest = part[start.end() :]
        times = _TIMES.search(rest)  # "mocha x2"
        kept = [_stem(w) for w in _WORD.findall(_TIMES.sub(" ", rest))
                if w not in _STOP and w not in _ORDER_WORDS]  # fmt: skip
        if kept and len(set(kept)) <= 6:
            count = int(times.group(1)[:6]) if times else _count(start.group(0))
            out.append((frozenset(kept), kept[-1], count))
            details.append(set())
            again.append(False)
        if len(out) >= 16:
            break
    out = _once(_headed(out), details, again, bool(_CORRECTION.search(said)))
    if not out and loose:  # "Mocha, please.": a few words and nothing else
        kept = [_stem(w) for w in _WORD.findall(_THING_END.split(said, maxsplit=1)[0])
                if w not in _STOP and w not in _ORDER_WORDS and w not in _AFFIX]  # fmt: skip
        if 0 < len(kept) <= 4:
            out.append((frozenset(kept), kept[-1], 1))
    low = text[:USER_CHARS].lower()
    gone = {_stem(m.group(1)) for m in itertools.islice(_RETRACTED.finditer(low), 16)}
    only = {_stem(m.group(1)) for m in itertools.islice(_ONLY.finditer(low), 16)}
    return [t for t in out if t[1] not in gone and (not only or t[1] in only)]


#: words that say which kind of a thing, never the thing itself ("one decaf and one regular")
_KINDS = frozenset(
    _stem(w)
    for w in [
        "regular",
        "normal",
        "decaf",
        "decaffeinated",
        "caffeinated",
        "iced",
        "hot",
        "cold",
        "warm",
        "small",
        "medium",
        "large",
        "tall",
        "grande",
        "venti",
        "short",
        "single",
        "double",
        "triple",
        "quad",
        "skim",
        "nonfat",
        "whole",
    ]
)


def _headed(
    things: list[tuple[frozenset[str], str, int]],
) -> list[tuple[frozenset[str], str, int]]:
    """The things with one said by its kind alone taking the thing of its neighbour ("one decaf
    latte and one regular": a regular latte; "one decaf and one regular mocha": a decaf
    mocha): the next one's where it comes first, else the one's before it where that one was
    counted once ("Two lattes, one decaf and one regular" are two lattes, not four)."""
    out = list(things)
    for i, (words, _, count) in enumerate(things):
        if not words <= _KINDS:
            continue
        heads = [t for t in (things[i + 1 :] if i == 0 else things[i - 1 :: -1])
                 if not t[0] <= _KINDS]  # fmt: skip
        if heads and (i == 0 or heads[0][2] == 1):
            out[i] = (words | {heads[0][1]}, heads[0][1], count)
    return out


def _once(
    things: list[tuple[frozenset[str], str, int]],
    details: list[set[str]],
    again: list[bool],
    corrected: bool,
) -> list[tuple[frozenset[str], str, int]]:
    """The things with each one said again merged into its first saying (the larger count, or
    the later where the user corrected themselves: "two lattes, I mean one latte")."""
    out: list[tuple[frozenset[str], str, int]] = []
    kept: list[set[str]] = []
    for (words, head, count), more, new in zip(things, details, again, strict=True):
        same = next((i for i, (w, _, _) in enumerate(out) if not new and w == words
                     and (kept[i] <= more or more <= kept[i])), None)  # fmt: skip
        if same is None:
            out.append((words, head, count))
            kept.append(more)
        else:
            first = out[same][2]
            out[same] = (words, head, count if corrected else max(first, count))
            kept[same] |= more
    return out


#: a thing taken back ("scratch the mocha", "forget the latte")
_RETRACTED = pattern(
    r"\b(?:scratch|forget|drop|cancel|skip|never ?mind)\s+(?:the\s+|that\s+|my\s+)?([a-z]+)"
)
#: the only thing kept ("make that just a latte")
_ONLY = pattern(r"\bmake (?:that|it) (?:just|only) (?:a |an |one )?([a-z]+)")
#: words correcting what was just said
_CORRECTION = pattern(r"\b(?:i mean|sorry|actually|make that|make it|rather|correction)\b")
_ADD = pattern(r"\badd\b")
#: where something added goes ("to the latte", "into my order")
_DESTINATION = pattern(
    r"\b(?:to|into|onto|in|on|with) (?:the|my|that|this|your|our|it|them|each|both|all|one|his|her)"
    r"\b[^.?!,;]*"
)
#: a plural written with an apostrophe ("two latte's")
_POSSESSIVE = pattern(r"(\w)['\u2019]s\b")
#: one more of the thing before ("a mocha with oat milk and another with almond milk")
_ONE_MORE = pattern(r"(?:another|one more)(?: one)?", re.I)
#: the words around a thing named alone ("Just a mocha, thanks")
_AFFIX = frozenset(["just", "only", "thanks", "thank", "you"])
_TIMES = pattern(r"\bx\s?(\d{1,6})\b", re.I)
_COUNT_WORDS = {"a": 1, "an": 1, "one": 1, "another": 1, "the": 1, "two": 2, "three": 3, "four": 4,
                "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "twelve": 12,
                "dozen": 12, "couple": 2, "pair": 2, "few": 3}  # fmt: skip


def _count(start: str) -> int:
    """How many an order's words before a thing count ("two": 2, "half a dozen": 6, "3x": 3,
    "some" or a verb: 1)."""
    low = start.lower().split()
    if low[:2] == ["half", "a"]:
        return 6
    digits = re.match(r"\d{1,6}", low[0])
    if digits:
        return int(digits.group(0))
    return max((_COUNT_WORDS.get(w, 0) for w in low[:3]), default=0) or 1


#: an order said again otherwise, the first taken back: "A latte... actually make that a mocha.",
#: "I'll have a latte. Hmm, no, a mocha.", "a latte, oh wait, no, make it a mocha"
_REDONE = pattern(
    r"[.,;!?\u2026]\s*(?:(?:hmm+|oh|um+|uh+|wait|oh wait)[,.!]*\s+){0,3}(?:no|nope)[,.!]*\s+(?:make "
    r"(?:that|it)\s+)?(?=(?:a|an|one|two|the)\s)|\bactually,?\s+make (?:that|it)\b",
    re.I,
)
#: a thing refused or set aside ("not a latte", "instead of a latte", "no sugar")
_NOT_THIS = pattern(
    r"\b(?:not|no|instead of|rather than|except(?: for)?|without|never|had|was|were|skip|hold|"
    r"minus|zero|hate|allergic to|take out|remove|keep|don'?t (?:put|add|want|use|include)|scratch|"
    r"no more|lose|avoid|less|swap out|none of|nothing else(?: like)?|anything but|out of)\s+"
    r"(?:(?:a|an|the|any|one|two|"
    r"three|some|my|your)\s+)?[\w%-]+(?:\s+(?!(?:or|and|nor)\b)[\w%-]+){0,2}(?:\s*,\s*[\w%-]+"
    r"(?:\s+(?!(?:or|and|nor)\b)[\w%-]+)?){0,4}(?:,?\s+(?:or|and|nor)\s+[\w%-]+(?:\s+[\w%-]+)?)?",
    re.I,
)
#: the words of a change asked for that name nothing changed
_CHANGE_WORDS = frozenset(
    [
        "change",
        "switch",
        "swap",
        "modify",
        "instead",
        "actually",
        "make",
        "yes",
        "no",
        "nope",
        "please",
        "want",
        "like",
        "could",
        "can",
        "would",
        "it",
        "that",
        "this",
        "mine",
    ]
)


def _picks(user: str, said: str) -> bool:
    """Whether ``user`` picks one of the options ``said`` lists ("We have Vanilla, Hazelnut,
    Caramel." "Hazelnut, please."): the agent names three or more in a row, and the user's few
    words of substance are all among them."""
    low = said.lower()[-AGENT_CHARS:]
    if low.count(",") < 2:
        return False
    words = {w for w in _WORD.findall(user.lower()[:200]) if w not in _STOP
             and w not in _ORDER_WORDS and w not in _AFFIX and w not in _FILLER}  # fmt: skip
    options = set()  # the words of the list's short parts ("Sugar Free Vanilla", "and Honey")
    for part in itertools.islice(_LIST_PART.split(low), 64):
        found = _WORD.findall(part)
        if len(found) <= 4:
            options.update(found)
    return 0 < len(words) <= 4 and words <= options


_LIST_PART = pattern(r"[,;:.!?]|\b(?:and|or)\b")
#: words around a pick that pick nothing ("I'll take vanilla actually", "but make mine hazelnut"),
#: nor does a yes ("Yeah, sure, no problem. Can you confirm it's correct?" "Sure is.")
_FILLER = frozenset([
    "ll", "actually", "okay", "ok", "sound", "sounds", "good", "great", "fine", "nice", "but",
    "mine", "they", "all", "think", "guess", "go", "with", "then", "correct", "right", "sure",
    "look", "looks", "yes", "yeah", "yep", "accurate", "true", "exactly", "perfect", "is", "it",
    "that", "this",
])  # fmt: skip


def _related(plan: Plan, changers: tuple[str, ...], said: str) -> tuple[str, ...]:
    """The ``changers`` that change what the plan adds or buys, or what the agent's message
    speaks of: a word of their wording, their verb aside, is one of those steps' or the
    message's ("update order item" beside "add order item"; not "change account email")."""
    takers = _first_word(plan, _TAKERS)
    near = {_stem(w) for s in takers for w in _WORD.findall(step_wording(plan, s).lower())[1:]
            if len(w) >= 3 and w not in _STOP} | {_stem(w) for w in _words(said) if len(w) >= 3}  # fmt: skip
    return tuple(
        c for c in changers
        if {_stem(w) for w in _WORD.findall(step_wording(plan, c).lower())[1:]
            if len(w) >= 3 and w not in _STOP} & near
    )  # fmt: skip


#: the details of a thing offered ("a latte with mocha sauce": the sauce is no thing to add)
_WITH = pattern(r"\b(?:with|without)\b[^,.;:!?]*")
#: a proposal taking back part of itself after it was made ("Actually, scratch the mocha.")
_TAKEN_BACK = pattern(
    r"\b(?:scratch|forget|drop|cancel|skip|never ?mind|actually|no,? wait|wait|instead|rather|"
    r"just the|only the|i mean|sorry)\b",
    re.I,
)


def _proposed_thing(plan: Plan, proposed: tuple[str, ...], said: str) -> str:
    """What a proposal of the adding step offers to add, for a yes to it ("Shall I add a latte
    to your order?": a latte; the calls it authorizes are of that thing, as an order of it
    would): the last sentence proposing the step, where it names a thing ("Your order is a
    mocha. Shall I add a muffin?": a muffin), else the whole proposal ("A large latte. Shall I
    add it?"); empty when it names none, or proposes another step."""
    if len(proposed) != 1 or proposed[0] not in _first_word(plan, _TAKERS):
        return ""
    sentences = _SENTENCE_END.split(said[-AGENT_CHARS:])[-16:]
    naming = [s for s in sentences if proposed[0] in _named(plan, s, agent=True)[0]]
    asking = [s for s in naming if s.rstrip().endswith("?")]  # the offer, not "we can't add"
    for sentence in (asking or naming)[-1:]:
        if _things(sentence, loose=False):
            return sentence
    things = _things(said, loose=False)
    if len(things) > 1 and not _ADD_THEM.search(said):
        return ""  # "A latte? Sorry, I meant a mocha. Shall I add it?": which one is "it"?
    return said if things else ""


#: a question offering one thing or another: two amounts or times ("$100 or $1,210?", "7 pm or
#: 8 pm?"), or two things each with an article ("a latte or a mocha?", "the 7:20 am bus or the
#: 9 am bus?"); not "cancel or change", "1 or 2 business days", "decaf or oat milk"
_EITHER_ASKED = pattern(
    r"(?<![\w$,.:])(?:[$\u00a3\u20ac]\d[\d,]*+(?:\.\d+)?|\d{1,2}(?::\d{2})?\s*[ap]\.?m\.?)\s*,?\s+or\s+"
    r"(?:[$\u00a3\u20ac]\d|\d{1,2}(?::\d{2})?\s*[ap]\.?m)|\b(?:a|an|the)\s+(?:[\w:]+\s+){0,3}?[\w:]+,?\s+or\s+"
    r"(?:a|an|the)\s+\w",
    re.IGNORECASE,
)
#: a yes that picks one ("Yes, $100.", "Yes, the mocha.", "Yes, the latter.", "Yes, Maria.")
_PICK = pattern(
    r"^\W*(?:yes|yeah|yep|yup|sure|ok|okay|please)\b[\s,.!]*(?:please[\s,.!]*)?(?:\w|\$)", re.I
)


def _either_asked(said: str) -> bool:
    """Whether the agent's last question offers one thing or another."""
    questions = [p for p in _SENTENCE_END.split(said[-AGENT_CHARS:]) if p.rstrip().endswith("?")]
    return bool(questions) and bool(_EITHER_ASKED.search(questions[-1]))


def _picked(user: str) -> bool:
    """Whether a yes goes on to pick one ("Yes, the mocha."), not to thank ("Yes, thanks.")."""
    return bool(_PICK.match(user[:USER_CHARS])) and not re.match(
        r"^\W*\w+\W+(?:thanks?|thank you|please|that'?s|it|sounds?|looks?|correct|right|go|do|of "
        r"course|sure|absolutely|definitely|i|let'?s)\b",
        user[:USER_CHARS],
        re.I,
    )


def _changed_values(arguments: Mapping[str, object]) -> list[str]:
    """What a change call sets, in words: every value with letters but an identifier's
    ("order_item_id": "49692"; "attribute_id": "caffeine" names the field "option" sets), a
    note's too, and a switched thing's identifier ("addon_id": "oat-milk" beside "option":
    "ADD") and an item's ("menu_item_id": "latte-grande-0001")."""
    out: list[str] = []
    for fields in _tables(arguments):
        switched = any(_SWITCH_VALUE.fullmatch(v) for _, v in fields)
        out += [v for k, v in fields if not _SWITCH_VALUE.fullmatch(v)
                and not (_ID_KEY.search(k) and not switched and not _ITEM_KEY.search(k))]  # fmt: skip
    return out


def _says_more(user: str, said: str) -> bool:
    """Whether the user's yes says words of substance the agent's message does not ("Yes, oat
    milk." to "Should I change your latte to decaf?")."""
    heard = set(_WORD.findall(said.lower()[-AGENT_CHARS:]))
    words = {w for w in _WORD.findall(user.lower()[:200]) if w not in _STOP and w not in _FILLER
             and w not in _AFFIX and w not in _CHAT}  # fmt: skip
    return bool(words - heard)


#: words of talk around a yes, never a detail ("Yes, that'd be great!", "Yeah, why not.")
_CHAT = frozenset(
    [
        "great",
        "love",
        "like",
        "likes",
        "loved",
        "works",
        "work",
        "working",
        "fine",
        "why",
        "not",
        "let",
        "lets",
        "do",
        "doing",
        "be",
        "would",
        "should",
        "could",
        "will",
        "d",
        "ll",
        "s",
        "re",
        "ve",
        "m",
        "me",
        "my",
        "mine",
        "with",
        "for",
        "good",
        "perfect",
        "awesome",
        "wonderful",
        "nice",
        "excellent",
        "brilliant",
        "really",
        "much",
        "very",
        "so",
        "just",
        "go",
        "going",
        "sounds",
        "sound",
        "looks",
        "look",
        "seems",
        "happy",
        "glad",
        "want",
        "wanted",
        "need",
        "think",
        "guess",
        "agree",
        "right",
        "correct",
        "exactly",
        "definitely",
        "course",
        "indeed",
        "true",
        "done",
        "deal",
        "cool",
        "best",
        "better",
        "ideal",
        "perfectly",
        "totally",
        "now",
        "then",
        "also",
        "too",
        "though",
        "anyway",
        "idea",
        "plan",
        "choice",
        "option",
        "one",
        "it",
        "this",
        "these",
        "those",
        "what",
        "asked",
        "said",
        "i",
        "you",
        "we",
        "they",
        "them",
        "us",
        "our",
        "your",
        "their",
        "yes",
        "yeah",
        "yep",
        "sure",
        "ok",
        "okay",
        "please",
        "alright",
        "get",
        "make",
        "have",
        "take",
        "use",
        "see",
        "try",
        "all",
        "any",
        "no",
        "there",
        "here",
        "is",
        "are",
        "was",
        "were",
        "been",
        "am",
        "an",
        "a",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "in",
        "on",
        "to",
        "from",
        "by",
        "as",
        "at",
        "id",
        "im",
        "ill",
        "ive",
        "wow",
        "lovely",
        "fantastic",
        "amazing",
        "super",
        "nope",
        "hey",
        "hi",
        "hello",
        "oh",
        "ahead",
        "thanks",
        "thank",
        "absolutely",
        "yup",
        "yea",
    ]
)


_ADD_IT = pattern(
    r"\b(?:add|order|buy|purchase|get|put|ring up) (?:(?:it|that|this|them|those|these|one)"
    r"(?=\s*(?:[?.!,]|$|(?:to|for|in|on|now|too|as well|then|please)\b))|(?:your|the|that|this) "
    r"(?:drink|item|coffee|beverage|one))\b[^.!?]*\?\s*$",
    re.I,
)
_ADD_THEM = pattern(
    r"\b(?:add|order|buy|purchase|get|put|ring up) (?:them|those|these)\b[^.!?]*\?\s*$", re.I
)


def _thing_before(plan: Plan, reading: Reading, earlier: Sequence[Turn]) -> str:
    """What a proposal of the adding step that names its thing by a pronoun ("Shall I add it?",
    "Shall I add your drink?") offers: the user's reply just before, where it names one thing
    ("A latte, please."; "No mocha. A latte.": a latte), one of it for "it"; else the question's
    words ("add it?"), which name none: the user named nothing, several things or took one back ("Mocha.
    No, latte."), or the agent spoke of things itself ("We have mochas. Shall I add one?"), and
    the gate cannot tell which. Empty for a proposal of another step."""
    proposal = reading.proposal[-AGENT_CHARS:]
    asked = _ADD_IT.search(proposal)
    if len(reading.steps) != 1 or reading.steps[0] not in _first_word(plan, _TAKERS) or not asked:
        return ""
    question = asked.group(0)  # "add it?": it names no thing
    if not earlier or _OFFERS_OWN.search(proposal) or _things(proposal, loose=False):
        return question  # nothing named before, or the agent's own things: which is "it"?
    user = earlier[-1][1][:USER_CHARS]
    things = _things(user)
    plural = bool(_ADD_THEM.search(proposal))
    if len(things) == 1 and (plural or things[0][2] == 1) and not _TAKES_BACK.search(user):
        return user
    return question


#: the agent speaking of things of its own before asking ("Our special is the mocha.")
_OFFERS_OWN = pattern(
    r"\b(?:we (?:have|'ve got|got|also have|only have)|there (?:is|are)|our \w+ (?:is|are)|"
    r"special|how about|what about|try|recommend|instead|out of|sold out|ran out)\b",
    re.I,
)
#: a reply that takes back a thing it named ("Mocha. No, latte.", "a latte, I mean a mocha")
_TAKES_BACK = pattern(
    r"[.,;!?]\s*(?:no|nope|wait|actually|sorry|i mean|make that|scratch that|rather)\b|"
    r"\b(?:i mean|make that|scratch that|correction)\b",
    re.I,
)


def _first_word(plan: Plan, verbs: frozenset[str]) -> tuple[str, ...]:
    """The steps whose wording starts with one of ``verbs`` ("Add ...", "Update ...")."""
    out = []
    for sid in plan.steps:
        first = next((w for w in _WORD.findall(step_wording(plan, sid).lower()) if w not in _STOP
                      or w in verbs), "")  # fmt: skip
        if first in verbs:
            out.append(sid)
    return tuple(out)


def _records(plan: Plan) -> tuple[str, ...]:
    return tuple(s for s, w in _step_words(plan).items() if w & _RECORDS)
