"""What a message does in a conversation, read from its words: the agent's last message (does it
propose a call for the user to confirm, offer an action, ask for a detail, report work done?)
and the user's reply (a yes, a no, a question, a request for alternatives, a closing, a change of
details). Rules only, no model; each reader sees a bounded prefix (the user's) or suffix (the
agent's) of its text, so a megabyte message costs what its first kilobytes cost.

The patterns are ordinary English dialogue, written from the Schema-Guided Dialogue train split's
conversations (and checked on its dev split; see ``bench/bench_conversations.py``).
"""

from __future__ import annotations

import datetime
import itertools
import re
from dataclasses import dataclass

from taskgate.understanding.patterns import pattern

IC = re.IGNORECASE
#: how much of a message is read: the user's first characters, the agent's last ones
USER_CHARS = 2_000
AGENT_CHARS = 2_000

# -- the agent's message -----------------------------------------------------------------------
_ASK_CONFIRM = pattern(
    r"\b(?:please (?:confirm|verify|check)|(?:please )?give (?:me )?(?:your )?confirmation"
    r"(?! number| code| id)|so to confirm[,:]|to confirm[,:] (?=i'?ll|i will|you(?:'d| would)? "
    r"(?:like|want)|an? |\d)|kindly (?:ensure|confirm|verify)|let me know if (?:these|the|this|that|all|"
    r"everything) (?:details? )?(?:is|are) (?:confirmed|correct|right)|can you (?:please )?"
    r"confirm|(?:need|want|require) your (?:confirmation|approval|permission|go-ahead|ok)|"
    r"do i have (?:that|this|it|everything) right|confirm (?:the|these|this|that|your|for|to|a|an|"
    r"\d)|confirming|is (?:that|this|everything|it|all (?:of )?(?:that|this)) (?:correct|right|ok|"
    r"okay|alright|all right|fine|good|acceptable)|(?:have|take) a (?:\w+ )?look at (?:your|the|this) "
    r"order|look (?:over|at) (?:your|the|this|that) order|look (?:them|it) over|look over (?:them|it)|"
    r"with your permission|(?:may|can|shall) i (?:go ahead|proceed)|(?:does|would|will) "
    r"(?:that|this|it) (?:work|suit|be (?:ok|okay|fine|alright))(?: for you)?\s*\?)",
    IC,
)
_CONFIRM_CUE = pattern(
    r"\b(?:confirm(?:ing|ation)?\b(?!ed)|verify|to review|review (?:the|these)|recap|to make sure|"
    r"make sure|double[- ]check|just to clarify|to be clear|ensure that|with your approval|"
    r"approve|approval|(?:do|did) i (?:understand|get|have) (?:(?:that|this|it|you|everything) )?"
    r"(?:right|correctly)|if (?:that'?s|that is|this is) (?:fine|ok|okay|alright|correct|right)|"
    r"is (?:that|this) (?:it|what you want)\s*\?|is (?:that|this) what you want|(?:is|are) (?:that|this|these|it|everything|the details?) "
    r"(?:correct|right|ok|okay|accurate|good|fine)|(?:correct|right|ok|okay|accurate|alright|fine)\s*\?|"
    r"sound (?:good|right|ok|okay|alright|all right|correct)(?: to you)?\s*\?|re-?confirm|"
    r"re-?check|(?:does|do) (?:that|this|everything|it|these) (?:look|sound|seem|appear) (?:right|"
    r"correct|ok|okay|alright|all right|good|accurate)|did i get that right|(?:got|have) (?:this|that|everything|"
    r"it|all) (?:right|correct(?:ly)?|straight)|(?:does|do) (?:this|that|it|everything) match(?: up)?"
    r"\s*\?|let me know if|"
    # "is your order correct on the screen?", "does everything look right?", "is this the right one?"
    r"(?:is|are|does|do) (?:(?:your|the|my|our) (?:\w+ )?(?:order|booking|reservation|purchase|cart|"
    r"basket|request|details|selection|items?|drinks?)|everything) (?:\w+ ){0,2}(?:looks? |appears? |"
    r"seems? )?(?:correct(?:ly)?|right|accurate|ok|okay|good|fine|properly)\b|is (?:this|that|it) "
    r"(?:the|your) (?:correct|"
    r"right|complete|whole|entire|full)\b|"
    # "does this order look okay?", "is the order in front of you correct", "is this your order?"
    r"is (?:this|that|it) (?:the )?(?:appropriate|proper) (?:choice|one|option)\b|"
    r"(?:is|are|does|do) (?:this|that|these|it) (?:\w+ ){1,2}(?:looks?|appears?|seems?) (?:correct|"
    r"right|accurate|ok|okay|good|fine)\b|(?:is|are) (?:your|the) (?:\w+ )?(?:order|booking|reservation|"
    r"purchase|cart|basket|selection|drinks?)(?: \w+){0,4} (?:correct(?:ly)?|right|"
    r"accurate)\s*(?:\?|$)|is (?:this|that) (?:what you (?:ordered|wanted|asked for)|your order)\b|"
    r"(?:this|that|it) is (?:the|your) (?:correct|right) (?:order|item|drink|one)\b|"
    r"(?:do|did) you want (?:this|that|it)\s*\?|"
    r"do (?:i|we) have (?:your|the|it|that|this|everything) (?:\w+ ){0,2}(?:correct|right)\b|"
    r"if (?:the|your|it|this|that|everything) (?:\w+ ){0,2}(?:looks?|is|seems?) (?:correct|right|good|"
    r"ok|okay)\b|\b(?:check|look over|review)\b[^.?!]{0,60}\b(?:correct|right|okay)\b|"
    r"(?:tell me|let me know) if (?:this|that|it|everything|i have it|we have it|i've got it) (?:is )?"
    r"(?:the )?(?:right|correct)\b)",
    IC,
)
_ACTION = (
    r"(?:book|booking|reserve|reserving|reservation|purchase|purchasing|buy|buying|get you|"
    r"schedule|scheduling|set up|make (?:the|a|an|your)|play|playing|cast|casting|start|starting|"
    r"put|rent|change|switch|swap|modify|make (?:it|that|this|them|yours?)|"
    r"renting|transfer|transferring|send|sending|add|adding|set|setting|order|call (?:a|you)|"
    r"place (?:the|an?|your|my|it|that|this)|"
    r"try (?:to|again|booking|reserving|that|it|for|with)|rebook|proceed|go ahead|submit|create|"
    r"draft|file|pay|cancel|delete|update|issue|process|sign|register|request|visit|"
    r"played|transferred)\b"
)
#: the agent offering to act itself ("Shall I book it?", "I can reserve it for 2")
_TO_ACT = (
    r"\b(?:shall|should|can|may|could) (?:i|we) (?:go ahead and |now |then |also )?"
    + _ACTION
    + r"|\b(?:would|do|did|will) you (?:still )?(?:like|want|wish|need) (?:(?:for )?me )?(?:to )?(?:go ahead and |now "
    r"|then )?"
    + _ACTION
    + r"|\bi(?:'ll| will| am going to|'m going to) (?:go ahead and |now )?"
    + _ACTION
    + r"|\bi (?:can|could) (?:go ahead and |also )?"
    + _ACTION
)
_PROPOSE = pattern(
    _TO_ACT + r"|\bhow about (?:i|we|trying|booking|a|an|the|\d)|\bwould .{0,60}\bwork\b", IC
)
_PROPOSES_TO_ACT = pattern(_TO_ACT, IC)
#: "Would you like to watch Red Joan without subtitles?", "Do you want to hear Alone on the TV?":
#: playing something now, with how it plays (subtitles, a device); not an offer of a title found
#: ("I found 1 song. Would you like to listen to Curious from the album Expectations?")
_TO_PLAY = pattern(
    r"^(?:\w+, )?(?:would|do|did) you (?:still )?(?:like|want|wish) to (?:watch|listen to|hear|see) (?!(?:it|"
    r"that|this|them|one|some|any)\b).*\b(?:(?:with|without|no) (?:\w+ )?(?:subtitles|captions)|on (?:the|your|"
    r"my) (?:\w+ )?(?:tv|speaker|television|device|screen|laptop|phone))\b",
    IC,
)
_ACTS = pattern(r"\b" + _ACTION, IC)
#: the action put off: "hold off on booking", "Should I wait?", "I don't book it yet" ("before
#: I book it" puts nothing off: "Before I book it, is 7 pm right?")
_DEFER = pattern(
    r"\bhold off\b|\b(?:should|shall|can|could) (?:i|we) wait\b|\bwait (?:before|until|till) "
    r"(?:i|we)\b|\bpostpone|\bdelay (?:\w+ing|it|the)|\bput\b[^.?!]{0,80}\bon hold\b|\bskip \w+ing\b|"
    r"\binstead of \w+ing\b|\brather than (?:\w+ )?"
    + _ACTION
    + r"|\byourself\s*\?|\bkeep looking\b|"
    r"\bthink about it\b|\bwait (?:to|and) \w+|\b(?:rather|prefer) (?:i|we) (?:not|don'?t)\b|"
    r"\bwait (?:before|on|with) \w+ing\b|\b(?:don'?t|do not|not|won'?t|never) (?:\w+ )?"
    + _ACTION
    + r"\b.{0,60}\byet\b|\b(?:not|don'?t|do not) (?:\w+ )?"
    + _ACTION
    + r"\b.{0,40}\b(?:until|till|for now)\b(?! you (?:confirm|say|agree|approve|tell))",
    IC,
)
#: a question about something else than the action: the policy, the total, the user's allergies
_SIDE_QUESTION = pattern(
    r"\b(?:would|do|did) you (?:\w+ )?(?:like|want|wish|care|prefer) to (?:(?:hear|see)(?! (?:it|that|"
    r"this|them|one)\b)|know|review|read|check|look|go over|learn|get|find out)\b|\bdo you have (?:any|a|an|some)\b|\bhave you "
    r"(?:ever |already )?(?:been|tried|visited|used|eaten|stayed|seen|heard)\b|\bare you (?:allergic|"
    r"a member|vegetarian|vegan)\b|\bany (?:allergies|questions|dietary|special requests?)\b|"
    r"\bshall i (?:read|send) you\b|\b(?:would|do) you (?:\w+ )?(?:like|want|need) (?:me to send you|"
    r"directions|a receipt|parking|a high chair)\b|\bcan i (?:get|have) your (?:phone|number|name|"
    r"e-?mail|address)\b|\bwill anyone need\b|\bshall i check the (?:total|price|cost)\b",
    IC,
)
#: the agent restating what the user asked for, to be confirmed ("So a cab for 2 to ...?")
_RESTATE = pattern(
    r"(?<!\bdo )(?<!\bdid )(?<!\bwould )\b(?:you(?:'d| would)? (?:like|want|wish|need)|you(?:'re| are) (?:to|going|booking|"
    r"looking to|getting)|so (?:a|an|the|you|that|\d)|so \$[\d,.]+ (?:to|for|from)\b|that'?s (?:a|an|\d)|i(?:'ve| have) "
    r"(?:changed|updated|got you down)|let me make sure|the (?:following )?details|you have \d|"
    r"i have (?:a|an|\d+) (?:\w+ ){0,3}(?:for|on|at)\b)",
    IC,
)
#: the agent offering an item to choose, not an action ("How about Cirice?")
_ITEM = pattern(
    r"\b(?:how about|what about|perhaps|do you like|sounds? (?:good|great)\s*\?|is a (?:good|"
    r"nice|great) (?:choice|one)|you could go with|have you seen|would you (?:like|prefer) "
    r"(?!to\b)|i (?:found|have found)|there (?:is|are))\b",
    IC,
)
#: "How about 8:20 am for $29?": a counter-offer of details (a time, a price, a day), no item
#: a failure report that goes on to a counter-offer ("I found another seat at 2:50 pm")
_ALTERNATIVE_FOUND = pattern(
    r"\b(?:i (?:found|have|can (?:do|offer|get))|there(?:'s| is)) (?:another|an other|a different|"
    r"an alternative|one more|also|one)\b|\binstead\b|\b(?:you|we|i) (?:can|could|might)\b|"
    r"\b(?:another|an alternative|a different) (?:one|opening|slot|seat|table|room|bus|flight|"
    r"time|appointment|ticket)s?\b|"
    r"\bthere(?:'s| is| are) (?:a |an )?(?:\w+ )?(?:opening|slot|seat|table|room|bus|flight)s?\b",
    IC,
)
_DETAILS_ABOUT = pattern(
    r"\b(?:how|what) about ((?:[\s:$.,]|\d+(?:st|nd|rd|th)?\b|\b(?:am|pm|for|at|on|a|an|the|"
    r"trying|leaving|"
    r"departing|ticket|tickets|bus|seat|seats|one|instead|then|today|tomorrow|tonight|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|jan\w*|feb\w*|mar\w*|apr\w*|may|jun\w*|"
    r"jul\w*|aug\w*|sep\w*|oct\w*|nov\w*|dec\w*|st|nd|rd|th)\b)+)\??\s*$",
    IC,
)
_FAILED = pattern(
    r"\b(?:couldn'?t|could not|cannot|can'?t|was(?:n'?t| not) able|unable|failed|"
    r"did(?:n'?t| not) go through|unfortunately|no longer|not available|isn'?t available|"
    r"fail(?:ed)? to|sold out|sorry,? (?:\w+ ){0,3}(?:booked|full)|unavailable|unsuccessful|"
    r"(?:was|were|is|are)(?:n'?t| not) (?:available|successful)|"
    r"no (?:more )?(?:openings?|availability|seats|tickets|rooms|slots|vacanc(?:y|ies))|"
    r"something went wrong|(?:there(?:'s| is) )?nothing (?:is )?available|(?:all|fully|"
    r"completely) (?:booked|full)|booked up|no available|did(?:n'?t| not) (?:manage|purchase|"
    r"buy|book|reserve)(?![^.!?]{0,40}\byet\b)|not successfull?|"
    r"(?:there )?(?:was|were) (?:an? )?(?:issue|problem|error)|"
    r"(?:was|were)(?:n'?t| not) (?:made|completed|booked|processed|reserved|purchased)|"
    r"(?:did|does)(?:n'?t| not) work|there (?:are|were|is|was) no (?:more |other )?(?:\w+ )?(?:bus|buses|"
    r"tables?|seats?|tickets?|rooms?|flights?|cars?|appointments?|slots?|openings?|spots?|rides?|"
    r"times?|availability)|(?:aren'?t|are not|isn'?t|is not|weren'?t|were not) (?:any )?(?:\w+ ){0,3}"
    r"available|(?:doesn'?t|does not|don'?t|do not) have (?:any )?(?:\w+ )?(?:available|openings?|"
    r"seats?|tables?|tickets?|rooms?|availability))"
    r"\b",
    IC,
)
#: after a failure, an offer to tell more, not to act ("Would you like to hear the options first?")
_TELLS = pattern(
    r"\b(?:hear (?:about|the|more)|options\b|look into|tell you|get back to you|seat map|"
    r"first\s*\?)",
    IC,
)
#: after a failure, another option put forward ("What about 7 pm.", "Please try Dr. Brown")
_TRY_THIS = pattern(r"\b(?:how|what) about\b|\bplease try\b", IC)


def _after_failure(message: str) -> int:
    """How many details the agent's message states after its last word of failure (the
    alternative it goes on to: "I couldn't buy it. The bus will leave at 8:50 am, $25.")."""
    found = list(_FAILED.finditer(message))
    if not found:
        return 0
    last = found[-1]
    rest = message[last.end() :]
    # the failure's own clause states what failed ("I couldn't get it at 2:15 pm, but ...")
    cut = re.search(r"[.!?;,]\s|\s(?:but|however|though|instead)\b", rest, IC)
    # "at 11:10 am for $35": a time and an amount, each a detail however many digits it has
    return len(_DETAIL.findall(_WHOLE_NUMBER.sub(" 0 ", rest[cut.end() :]))) if cut else 0


_WHOLE_NUMBER = pattern(r"\d+(?:[:.,]\d+)*")


_DETAIL = pattern(
    r"\b(?:\d|one|two|three|four|five|six|seven|eight|nine|ten|today|tomorrow|tonight|monday|"
    r"tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|"
    r"july|august|september|october|november|december|am|pm|people|persons?|tickets?|seats?|"
    r"rooms?|nights?|days?)\b",
    IC,
)
_OFFER = pattern(
    r"\b(?:would|do|did|will) you (?:like|want|wish|wanna|need|be interested)|\bwanna\b|"
    r"\b(?:shall|should|can|may) i\b|\binterested in\b|\bwant (?:me )?to\b|"
    r"\b(?:are you|r u) (?:interested|looking to|ready)",
    IC,
)
_DONE = pattern(
    r"\b(?:is|are|was|were|has been|have been|'s been|now) (?:now |all |successfully )?(?:confirmed|"
    r"booked|reserved|made|scheduled|set|added|completed|successful|done|placed|purchased|bought|"
    r"sent|started|playing|on (?:the|its|their) way|effective|finalized|complete)\b|"
    r"\bi(?:'ve| have) (?:\w+ )?(?:booked|reserved|made|confirmed|scheduled|added|set|purchased|"
    r"bought|sent|started|transferred|played|put|arranged|placed|drafted|filed|created)\b|"
    r"(?<!not )(?<!n't )\bsuccessful(?:ly)?\b|\bnow playing\b|\b(?:enjoy|have fun)\b",
    IC,
)
_WH_QUESTION = pattern(
    r"(?:^|[.!?]\s+)(?:(?:ok(?:ay)?|sure|alright|great|and|so|also)[, ]+)?(?:how many|how much|"
    r"how long|what|when|where|which|who|at what|for how|from where|for which|for what|for when|"
    r"on which|on what|in which|in what|until when|(?:can|could) you (?:tell|give|let)|please "
    r"(?:tell|give|let(?! me know if\b)|provide)|tell me|let me know(?! if\b))\b[^.!?]{0,300}\?",
    IC,
)
#: the agent presenting what it found, to choose from
_FOUND = pattern(
    r"\b(?:there(?:'s| is| are| was)|i (?:found|have found|see)|i've found|found \d|\d+ (?:results|"
    r"options|matches)|one of the|you (?:will|might|may) (?:like|enjoy)|featuring|is playing|"
    r"what do you think|how'?s that|(?:is|are) (?:available|rated|located)|(?:have|has|\d+) (?:\w+ ){0,3}"
    r"available|rating)\b",
    IC,
)
#: the agent reporting how many things a search found (what follows is one to choose)
_RESULTS = pattern(
    r"\b(?:i(?:'ve)? (?:found|have|got)|there (?:are|were)|search revealed|i see) (?:[1-9]\d*|"
    r"several|many|a few|some|multiple)\b(?! (?:transfers?|stops?|layovers?|fares?|stars?|"
    r"people|persons?|tickets?|seats?|rooms?)\b)|\b\d+ (?:results|options|matches)\b",
    IC,
)
_LISTING = pattern(
    r"\b(?:there(?: is| are|'s| was)|i (?:found|have found|see|got)|i've found|found \d|"
    r"\d+ (?:results|options|matches)|rated|rating|costs?|price|priced|available|options?|"
    r"located|address|phone|number is|would you like to hear|interested in)\b",
    IC,
)


@dataclass(frozen=True)
class AgentAct:
    """What the agent's last message did."""

    proposes: bool = False  # it asks the user to confirm a concrete call (or a counter-offer)
    offers: bool = False  # it offers an action without its details ("Would you like to book?")
    asks: bool = False  # it asks the user for a detail (a wh-question)
    done: bool = False  # it reports work done
    failed: bool = False  # it reports a failure
    lists: bool = False  # it lists what it found (an offer to choose from, not a proposal)
    action: bool = False  # it names an action (book, play, send, ...), not only an item
    item: bool = False  # it offers an item to choose ("How about Cirice?")
    #: it ends with a question with no verb of its own ("Paris on the bedroom speaker?"), not
    #: one about the user ("Have you been there before?")
    yes_no: bool = False
    confirming: bool = False  # it asks to confirm or restates the user's wish ("You'd like ...")
    acts: bool = False  # it names an action verb (book, play, send, ...)
    #: it ends with a question that starts with a verb ("Is X still your favourite spot?")
    verb_question: bool = False
    #: a short recap without a verb ("boulevard march 8th", "checking $1,760 grace savings")
    terse: bool = False


#: words a sentence with a verb has (a recap without any is a list of the call's details)
_VERBISH = pattern(
    r"\b(?:is|are|was|were|be|been|am|will|would|can|could|should|shall|may|might|do|does|did|"
    r"have|has|had|i|you|we|they|he|she|it|there|please|let|want|like|need|found|got|sorry|"
    r"thanks?|hello|hi|welcome|okay|ok|sure|no|yes|not)\b|'(?:s|re|ll|ve|d|m)\b",
    IC,
)
#: a question that takes up the offer before it ("Would you like that?", "Shall I?")
_LIKE_THAT = pattern(
    r"\s*(?:(?:would|do) you (?:like|want) (?:that|me to(?: do that)?)|(?:shall|should) i(?: do "
    r"that)?|is that (?:ok|okay|alright|all right|fine))\s*\?\s*$",
    IC,
)
_CLOCK_AM = pattern(r"\d\s*am\b", IC)
_AUX_FIRST = pattern(
    r"\s*(?:have|has|had|did|do|does|are|is|was|were|can|could|will|would|should|shall|may|"
    r"might|am)\b",
    IC,
)


def asks_to_confirm(message: str) -> bool:
    """Whether the agent's message asks the user to confirm ("Please confirm: ...")."""
    return bool(_ASK_CONFIRM.search(message[-AGENT_CHARS:]))


def proposes_to_act(message: str) -> bool:
    """Whether the agent's message offers to act itself ("Shall I buy 3 tickets?")."""
    return bool(_PROPOSES_TO_ACT.search(message[-AGENT_CHARS:]))


def _aside(message: str) -> bool:
    """Whether the agent's last question is about something else than the action it names:
    the action put off ("Should I wait before booking?", "Would you prefer I don't book it
    yet?") or a question of its own ("I can book it, but first, do you have any allergies?",
    "Would you like to know your total before I place the order?", "Have you been there
    before?"); not a request to confirm ("Before I book it, is 7 pm right?"), nor a side question
    the agent goes on from to propose ("Do you have a preference, or shall I book it?", "Do you
    want to see Kate at 4 pm? I can book it.")."""
    questions = [s for s in _sentences(message) if s.rstrip().endswith("?")]
    last = questions[-1] if questions else _last_sentence(message)
    found = _SIDE_QUESTION.search(last) if questions else None
    after = _last_sentence(message)
    side = (
        found is not None
        and not _TO_PLAY.search(last)
        and not _PROPOSES_TO_ACT.search(last[found.start() :])
        and not (after.strip() != last.strip() and _PROPOSES_TO_ACT.search(after))
    )
    if _ASK_CONFIRM.search(last) or (_CONFIRM_CUE.search(last) and not side):
        return False
    return side or bool(_ACTS.search(message) and _DEFER.search(message))


def names_action(text: str) -> bool:
    """Whether ``text`` names an action (book, buy, send, play, ...)."""
    return bool(_ACTS.search(text))


def counter_offer(message: str) -> bool:
    """Whether the agent's message offers other details for what was asked ("How about 8:20 am
    for $29?"), as after a booking that could not be made: a time, a price or a day, and no
    word of something done."""
    m = message[-AGENT_CHARS:].strip()
    about = _DETAILS_ABOUT.search(_last_sentence(m))
    said = about is not None and bool(re.search(r"\d|day\b|tomorrow|tonight", about.group(1), IC))
    return said and not _DONE.search(m)


def _last_sentence(text: str) -> str:
    parts = re.split(r"(?<=[.!?])\s+", text)
    return parts[-1] if parts else text


def read_agent(message: str) -> AgentAct:
    """What the agent's last message did (its last :data:`AGENT_CHARS` characters read)."""
    m = message[-AGENT_CHARS:].strip()
    if not m:
        return AgentAct()
    if _aside(m):  # "Before I book it, do you want to hear the policy?": a yes books nothing
        return AgentAct(asks=True, verb_question=True)
    details = len(_DETAIL.findall(m))
    # "How about 2 pm on March 11th instead? Dr. Spence is busy.": other details, no item
    item = bool(_ITEM.search(m)) and not any(_DETAILS_ABOUT.search(s) for s in _sentences(m))
    to_play = bool(_TO_PLAY.search(_last_sentence(m))) and not (
        _RESULTS.search(m) or _FOUND.search(m)
    )
    action = (
        bool(_ACTS.search(m))
        or to_play
        or (not item and (bool(_RESTATE.search(m)) or details >= 2))
    )
    failed = bool(_FAILED.search(m))
    done = bool(_DONE.search(_FAILED.sub(" ", m) if failed else m))  # not "sorry, they're booked"
    asks = bool(_WH_QUESTION.search(m))
    proposes = False
    offers = False
    if _ASK_CONFIRM.search(m) or (
        _CONFIRM_CUE.search(m) and not (done and "?" not in m) and not (asks and details < 2)
    ):
        proposes = True
    elif failed and not done and not _TELLS.search(m) and (_PROPOSE.search(m) or _OFFER.search(m) or "?" in m
                                  or _TRY_THIS.search(m) or _after_failure(m) >= 2
                                  or (details >= 2 and _ALTERNATIVE_FOUND.search(m))):  # fmt: skip
        proposes = True  # a failure with a counter-offer
    elif m.endswith("?") and action and not _WH_QUESTION.search(_last_sentence(m)):
        # "Shall I book it?", "A table for 2 at 7 pm?"; not "Is X still your spot at 7 pm?"
        last = _last_sentence(m)
        # "I have booked it for 2 at 7 pm. Anything else?": the question is about something else
        stated = len(_DETAIL.findall(last)) if done else details
        proposes = (
            (stated >= 2 and not _AUX_FIRST.match(last)) or to_play or bool(_ACTS.search(last))
        )
        # "I can make it decaf for you. Would you like that?": the offer is the sentence before
        proposes = proposes or bool(_LIKE_THAT.match(last) and _PROPOSES_TO_ACT.search(m))
    elif _OFFER.search(m) and re.search(r"\b" + _ACTION, m, IC) and not asks:
        proposes, offers = details >= 3, details < 3
    elif not (done or asks) and _PROPOSE.search(m) and details >= 2 and action:
        proposes = True
    if proposes and _RESULTS.search(m) and not (_ASK_CONFIRM.search(m) or _PROPOSE.search(m)):
        proposes = False  # "I found 10 events. Amber Run is playing at 6:30 pm. How's that?"
    lists = bool(_FOUND.search(m)) and not proposes
    last = _last_sentence(m)
    verb_question = m.endswith("?") and bool(_AUX_FIRST.match(last))
    yes_no = m.endswith("?") and not (_WH_QUESTION.search(last) or verb_question)
    confirming = bool(_ASK_CONFIRM.search(m) or _CONFIRM_CUE.search(m) or _RESTATE.search(m))
    unverbed = _CLOCK_AM.sub(" ", m)  # "the bus at 11:40 am $68": "am" is no verb
    terse = (
        len(m) <= 120 and len(m.split()) <= 16 and "?" not in m and not _VERBISH.search(unverbed)
    )
    return AgentAct(proposes, offers, asks and not proposes, done, failed, lists, action, item,
                    yes_no, confirming, bool(_ACTS.search(m)), verb_question, terse)  # fmt: skip


# -- the user's message ------------------------------------------------------------------------
_YES_START = pattern(
    r"^(?:(?:oh|ok|okay|well|great|alright|all right|awesome|perfect|cool|wonderful|excellent|"
    r"good|terrific|nice|fine|sweet|fantastic|lovely|hi|hey|so|and|then|finally|totally)[,.! ]+){0,3}"
    r"(?:yes|yeah|yea|yep|yup|ya(?! know)|yah|sure|ok|okay|k|alright|all right|absolutely|"
    r"definitely|"
    r"of course|certainly|correct|exactly|perfect|great|good|fine|cool|awesome|excellent|"
    r"wonderful|terrific|fantastic|(?:sounds|seems|looks) (?:good|great|fine|perfect|right|nice|ok|okay|like a|"
    r"wonderful|excellent|awesome|lovely|amazing|fantastic|terrific|super|ideal)|"
    r"that(?:'?s|'?ll| is| would be| will be| will| would| should| seems| sounds| works| looks|"
    r" appears)"
    r"(?: (?!not\b|never\b|hardly\b)\w+){0,2} "
    r"(?:right|correct|fine|good|great|perfect|it|ok|okay|work|works|what|all|exactly|ideal|"
    r"nice|wonderful|awesome|excellent|amazing|lovely|brilliant|cool|confirmed|accurate|"
    r"fantastic|terrific|super|splendid|suitable|acceptable|the (?:place|spot))|that (?:would |will )?suits? me(?: (?:well|fine|perfectly))?"
    r"(?=[\s.!]*$)|"
    r"that(?: all)? works|(?:that|everything|it) all (?:sounds|looks|seems) (?:just |exactly )?(?:right|good|correct|"
    r"fine|great|perfect)|everything (?:sounds|looks|seems|is) (?:right|good|correct|fine|"
    r"great|perfect)|(?:the )?(?:details?|order) (?:is|are|looks?) (?:all )?(?:right|correct|"
    r"accurate|good|fine|perfect)|"
    r"sounds? (?:just|exactly|about) right|"
    r"you(?:'ve| have)? (?:got |have )?(?:it|that|this|everything|all)(?: \w+){0,2} "
    r"(?:right|correct)|this (?:is|works|sounds) (?:right|correct|fine|"
    r"good|great|perfect|ok|okay)|it(?:'?s| is| does| works| sounds| would| will)(?: \w+)? (?:fine|"
    r"good|ok|okay|perfect|correct|right|great|work|nice)|works|please do|do it|go ahead|go for it|"
    r"please (?:try|check|do|get|book)(?: it| that| this)?(?: one)?(?: for me)?(?=[\s.!]*$)|"
    r"i want (?:this|that|it)(?: one)?(?=\s*[,.!]|\s*$)|"
    r"(?:that'?s |it'?s )?(?:much )?better now(?=[\s.!]*$)|"
    r"no (?:subtitles|changes?|rush|preference) (?:is|are|would be|will be) (?:fine|ok|okay|good)|"
    r"proceed|confirm(?:ed)?|affirmative|"
    r"indeed|i (?:do|am|would|will)(?= *(?:[.!,]|$))|i'd like that|i agree|i confirm|agreed|sure thing|by all means|"
    r"yes please|let'?s do it|let'?s go|"
    r"i(?:'ll| will) (?:take|try)|i like|this one|"
    r"that one|you got it|you bet|(?:that'?s|that is) (?:just )?the ticket|that(?:'ll| will) "
    r"do|sounds about right|(?:that )?(?:will )?fits? the bill|on point|very much so|"
    r"(?:permission )?(?:granted|allowed)|ye[sp]|"
    r"(?:nice|super|superb|splendid|rad|right)(?=\s*[.!]|\s*$)|"
    r"(?:that(?:'?s| is)|this is|it(?:'s| is)) (?:the|my|what i) (?:(?:initial |original )?plan|"
    r"request|asked for|wanted|said|was trying to do|meant)|that was (?:my request|what i (?:said|"
    r"asked for|wanted|was trying to do))|i'?m (?:good|fine|ok|okay|happy) with (?:that|it|this)|"
    r"my request is (?:that|this)|you nailed it|(?:just|exactly) what i (?:asked for|wanted|ordered)|(?:your|you'?re) recap is (?:spotless|right|"
    r"correct|perfect)|amazing|prefect|impeccable|suitable|right on|righty?[- ]?oh?|"
    r"you(?:'re| are) (?:right|correct|impeccable|spot on)|that right|"
    r"(?:that|it|this) (?:should|could|would|will|can) (?:also )?(?:do|work)(?: (?:also|too|"
    r"for me|for us|fine|great|well|perfectly))?(?=[\s.!]*$|\s*[.!]\s+(?!i'?ll let)\w)|"
    r"you(?:'ve| have)? (?:nailed|got) (?:it|that|this|every detail|each detail|all)|"
    r"you (?:have|heard) (?:every|each|all|it|that|everything)\b(?: \w+){0,2} (?:right|"
    r"perfectly|correctly|detail)|i'?m down(?: (?:with|for) (?:that|it|this))?(?=[\s.!]*$)|"
    r"i affirm(?=[\s.!]*$| (?:that|this|the|your) (?:option|order|choice|request|details?|transfer|"
    r"booking|reservation)[\s.!]*$)|"
    r"(?:(?:that|it)(?:'s| is) (?:the deal|what) i (?:want|need)|(?:that|this) is what i (?:want|"
    r"need))(?=[\s.!]*$|\s*[.!,])|"
    r"(?:you have )?my permission(?: to (?:reserve|book|buy|proceed|go ahead|transfer|send|pay|"
    r"order|place|do (?:it|that)|rent|purchase)(?: (?:it|that|this|the \w+))?)?(?=[\s.!]*$)|"
    r"please (?:continue|go on)(?=[\s.!]*$)|i would like that(?=[\s,.!]*(?:thanks?|thank you)?[\s.!]*$)|"
    r"(?:make the switch|fire (?:it|him|her|them) up|start (?:it )?already|set it up)(?=[\s.!]*$)|"
    r"si(?=[,.!]|$))\b(?! (?:question|point|grief|lord|god)\b)",
    IC,
)
#: a word of assent counts anywhere only in a short sentence ("That works, thanks."), not in a
#: story ("my friend said the Old Towne inn is really good, lets stay there")
_YES_WORDS = 14
_YES_ANY = pattern(
    r"\b(?:yes|yeah|yep|yup|(?<!make )(?<!be )sure|ok|okay|alright|absolutely|definitely|certainly|correct|"
    r"exactly|(?:perfect|great|good|fine)(?! (?:question|point|grief|lord|god)\b)|works|suits|go ahead|please do|do it|do that|proceed|"
    r"confirm(?:ed)?|agreed?|by all means|go for it|sounds like a plan|that'?s (?:it|the one|right"
    r"|correct|fine)|let'?s do|accept(?:ed)?|that'?s what i (?:need|want|wanted|needed|said)|"
    r"(?:that|this|it)(?:'s| is) (?:the )?exact(?:ly)?(?: thing)?(?: what)? i (?:want|need)"
    r"(?=[\s.!]*$)|"
    r"that was my order|that(?:'?s| is) (?:my|the right|the correct) order|spot[- ]on|"
    r"(?:will|would|should) work|(?:you|i) got (?:it|that|this) right|ideal|lock it in|"
    r"you(?:'ve| have)? figured it out|"
    r"(?:book|reserve|grab|schedule|confirm|buy|order) (?:it|that|this|them)\b(?! for\b)|"
    r"(?:book|reserve|grab|schedule|confirm|buy|order|take|get) the (?:reservation|booking|room|"
    r"table|ride|appointment|tickets?)\b(?! for\b)|"
    r"i'?m (?:good|fine|ok|okay|happy) with (?:that|it|this)|granted|assent|approved?)\b",
    IC,
)
#: an order to go ahead, as a whole clause ("Make the purchase.", "Sure, get it done!", "I hear
#: it's a dump, but I'll take it."; not "Make the purchase when I say.", "My sister might take
#: that room.")
_GO_AHEAD = pattern(
    r"^\s*(?:(?:yes|yeah|ok|okay|sure|great|please|then|so)[,!. ]+)*(?:please )?(?:i'?d like to )?"
    r"(?:make the (?:purchase|booking|reservation|transfer|payment)|get it done|make it happen|"
    r"(?:take|book|get) (?:that|this) (?:one|appointment|time|slot|ticket|bus|room|table|ride|"
    r"seat)|let'?s go with (?:that|it|this|them)|i'?ll take it)(?: please| then| now)?[\s.!]*$",
    IC,
)
_CLAUSES = pattern(r"[,;]\s*(?:but\s+|and\s+|so\s+)?")
#: a plain yes that leads a question ("Yes, what is the address?"): the yes still stands
_YES_LEAD = pattern(
    r"^(?:(?:oh|well|wow)[,.! ]+)?(?:(?:yes|yeah|yep|yup|yes please)\b\s*[,.!]?|(?:sure|perfect|"
    r"great|good|fine|cool|awesome|excellent|wonderful|"
    r"correct|approved|confirmed|i accept|i agree|i confirm|sounds (?:good|great|perfect)|that(?:'?s| is| sounds| would be| will "
    r"be)? (?:great|good|perfect|fine|correct|right))\s*[,.!])\s*\w",
    IC,
)
#: a yes only as the whole reply ("Please!", "You can, thanks.", "Deal.", "Sweet.")
_WHOLE_YES = pattern(
    r"^\s*(?:please|you (?:can|may)|deal|(?:finally[,!]? )?you(?:'ve| have)? got it(?: right)?|"
    r"sweet|si|nailed it|i affirm|right on|much better|mhm+|uh-?huh|totally|why not|\U0001f44d|y|ye+s+|"
    r"lgtm|(?:no changes?|nothing to change)[,.]? (?:go ahead|proceed|please proceed))"
    r"(?:[\s,.!]*(?:thanks?|thank you|please))?[\s.!]*$",
    IC,
)
_SHORT_YES = pattern(
    r"^\s*(?:it|that|this|they|both|all|everything)(?: (?:all|both))?,? (?:is|are|does|do|will|"
    r"would|has|was|looks?|seems?)(?: it| so| to me| indeed)?(?:(?: all)? (?:right|correct|"
    r"accurate|good|fine|great|perfect|okay|ok))?(?: now)?\s*[.!]*\s*(?:,?\s*(?:thanks?|thank you)"
    r"[.!]*\s*)?$",
    IC,
)
_NO_START = pattern(
    r"^(?:(?:oh|um|uh|hmm|well|actually|sorry|wait|hold on|oops|hi|hey|please)[,.! ]+){0,3}"
    r"(?:no(?! (?:subtitles|changes?|rush|preference) (?:is|are|would be|will be) (?:fine|ok|okay|"
    r"good)\b| problem\b| changes?[,.]? (?:go ahead|proceed|please proceed)\b|"
    r" worries\b)|nope|nah|not|negative|never ?mind|don'?t|do not|i don'?t|i do not|i'?m not|"
    r"i am not|maybe (?:later|another time|not)|perhaps (?:later|not|another)|i'?ll pass|pass|"
    r"(?:that|it)(?:'s| is)? not|that (?:won'?t|will not|doesn'?t|does not)|wrong|incorrect|"
    r"i(?:'d| would) rather not|i changed my mind|leave it|skip it|hold off|stop)\b",
    IC,
)
_NO_ANY = pattern(
    r"\b(?:not (?:now|yet|right now|at (?:the|this) (?:moment|time)|today|really|interested)|"
    r"don'?t (?:want|need|wanna|bother)|do not (?:want|need)|no need|maybe later|"
    r"not looking to|rather not|i'?m not (?:ready|sure|interested)|hold off|not ready|"
    r"some other time|another time|won'?t work|doesn'?t work|not (?:correct|right)|incorrect|"
    r"wrong|(?:a|the) mistake)\b",
    IC,
)
#: a decline wherever it stands: "Absolutely not.", "Fine, forget it.", "ok, cancel that"
_NO_STRONG = pattern(
    r"\b(?:absolutely|definitely|certainly|of course|sure|yes|yeah)\s+not\b|\bno way\b|"
    r"\b(?:cancel|forget|scrap|drop|stop|hold off on)\s+(?:it|that|this|them|everything|the)\b|"
    r"\bforget (?:about )?it\b|\bdon'?t (?:do|book|buy|send|pay|order|go ahead|proceed|bother|"
    r"reserve|schedule|place|submit)\b|\bdo not (?:do|book|buy|send|pay|order|proceed)\b|"
    r"\b(?:too (?:expensive|pricey|much|late|early|far)|very (?:expensive|pricey|late|early|far))\b"
    r"(?![^.!?]{0,200}\?)|\bbut not\b|\bnot (?:now|today|"
    r"yet|this time)\b|\b(?:didn'?t|don'?t|do not) want(?: (?:it|that|this|them|to (?:book|buy|reserve|"
    r"go ahead|proceed|do (?:it|that)|pay|order|schedule|send|confirm))\b| *(?:[.!,;]|$))|\bnever ?mind\b|\bi'?ll pass\b|"
    r"\bi (?:never|didn'?t|did not) (?:say|ask)|\bi said no\b|\bunder no circumstances\b|"
    r"\bmust ?n(?:o|')t\b|\brefrain from\b|\bnot what i (?:said|asked)\b|\bbut no\b|"
    r"\bi guess not\b|\bsuper (?:expensive|pricey)\b|"
    r"\b(?:don'?t|do not) need (?:\w+ ){0,3}(?:yet|now|right now|at the moment|for now)\b|"
    r"\b(?:let me|i need to|i'?ll have to|i have to) (?:check|think|ask|talk|discuss)\b|"
    r"\b(?:do|book|buy|reserve|handle|get|take care of|make) (?:it|that|this|them)(?: \w+){0,3}? "
    r"myself\b|\btake it from here\b|"
    r"\bi'?m (?:good|fine|ok|okay|all set)\b(?! with)(?=[\s.!,]*(?:thanks?|thank you)?[\s.!]*$)|"
    # a yes taken back at the end ("Amazing. Not.", "Si, pero no.", "Prefect. Cancel please.")
    r"(?:^|[,.!?]\s*|\b(?:but|pero)\s+)(?:no|not|nope|nah)(?:,? thanks?|,? thank you)?[\s.!]*$|"
    r"\bno,? thanks?\b(?! (?:necessary|needed|required))|\bno thank you\b|(?<=[.!?] )(?:no|nope),? (?:it|that|this) (?:is|was|does|"
    r"did)(?:n'?t| not)\b|(?:^|[,.!?]\s*)(?:but |now |please |just |then )?cancel\b|"
    r"\bshould(?:n'?t| not) (?:do|go|book|buy|send|transfer|pay|order|proceed)\b|"
    r"\b(?:(?:don'?t|do not) have enough (?:money|funds|cash)|(?:can'?t|cannot) afford (?:it|this|that|"
    r"the)\b)|\bfor (?:nobody|no one)\b|"
    r"\b(?:rip-?off|scam|fraud(?:ulent)?)\b|\b(?:abort|stop|scratch that|don'?t)(?=[\s.!]*$)|"
    r"\bi mean no\b|\bin theory\b|\bsaid no one\b|\bif only\b|(?<=[.!] )or not(?=[\s.!]*$)|"
    r"\bget back to you\b|\bask me again\b|"
    # a yes in jest: "Yeah right.", "Sure, when pigs fly.", "Yeah no.", "just kidding"
    r"^\s*yeah,? no[\s.!]*$|^\s*yeah right[\s.!]*$|\bwhen pigs fly\b|\b(?:sure|yeah),? like i'?d "
    r"(?:ever )?(?:pay|do|book|buy|want)\b|\band i'?m the (?:queen|king|pope|president)\b|\(not\)|"
    r"\bif (?:only )?i had the (?:money|cash|funds)\b|\b(?:just )?(?:kidding|joking)\b(?! about)|\bj/?k\b|"
    r"(?:^|\s)/s\b|\bpigs (?:can|will|might) fly\b|\bin your dreams\b|\bwhen hell freezes\b|"
    r"\bover my dead body\b|\bbecause i love (?:wasting|paying|losing)\b|^\s*yeah,? right[\s.!]*$|"
    r"\bi'?ve got it from here\b|\bi'?ll (?:just )?walk in\b|\bi'?ll (?:reserve|book|order) (?:it )?(?:on|"
    r"through|via) [a-z]+\b|"
    r"\b(?:lol|haha|lmao),? no[\s.!]*$|"
    r"\bjust joking\b|"
    # the user doing it themselves: "I'll call them myself", "I'll book it on their website"
    r"\bi'?ll (?:book|reserve|order|buy|do|handle|arrange|schedule|confirm|transfer|send|"
    r"pay for) (?:\w+ ){0,3}(?:myself|on (?:their|the|its) (?:website|site|app|page)|online|(?:from|"
    r"in|through|via) the app|by (?:e-?mail|phone))\b|(?:^|[,.!]\s*)i'?ll (?:handle|take care of) "
    r"(?:it|that|this)[\s.!]*$|\bi'?ll (?:call|ring|phone) (?:them|the \w+)(?: myself| instead| "
    r"directly)?[\s.!]*$|\b(?:that'?s|that is) (?:all|everything) i needed to know\b|\bavoid "
    r"(?:booking|reserving|buying|paying|sending|ordering|doing (?:it|that)|a duplicate)\b",
    IC,
)
#: a request taken back as a joke: "Could you book another one? Just kidding."
IN_JEST = pattern(
    r"\bjust (?:kidding|joking)\b(?! about)|\bj/?k\b|\b(?:lol|haha|lmao),? no[\s.!]*$", IC
)
#: after the agent offered another one: one is enough ("I'm good with one.", "One is plenty.")
_ONE_ENOUGH = pattern(
    r"\b(?:just |only )?(?:one|1)(?: \w+)? (?:is|was|will be|would be) (?:enough|plenty|fine|good|"
    r"sufficient|all i need)\b|\b(?:i'?m|we'?re|i am|we are) (?:good|fine|ok|okay|happy) with (?:just )?"
    r"(?:one|1|the one)\b|\b(?:one|1) \w+ only\b|\bonly (?:need |want )?(?:one|1)\b(?! more)|"
    r"\bthat'?s (?:it|all) for (?:now|today)\b",
    IC,
)
_ANOTHER = pattern(r"\b(?:another|one more|a second|an additional|a further)\b", IC)
#: after a report of it done: "one transfer only"
_ONE_ONLY = pattern(r"\b(?:one|1) \w+ only\b|\bjust (?:the )?one\b(?! more)", IC)
#: the rest of the message asks for something to go on ("I'm good with one, send it.")
_GO_ON = pattern(r"\b(?:send|place|submit|book|go ahead|proceed|finish|check ?out|pay|order)\b", IC)
#: a yes that is not the user's own: reported ("My wife said yes."), quoted ('I typed "yes" by
#: mistake'), or would-be ("I'd say yes if it were cheaper.")
_NOT_MINE = pattern(
    r"\b(?:my|our|his|her|their) (?:\w+ ){0,2}(?:said|says|told|confirmed|agreed|approved|thinks)\b|"
    r"\b(?:he|she|they|someone|somebody|everybody|everyone|nobody)(?: \w+)?(?:'d| would)? (?:said|says|"
    r"say|told|confirmed|agreed)\b|\btold me to say\b|\bby mistake\b|\b(?:i'?d|i would) have said\b|"
    r"\b(?:i'?d|i would) say (?:yes|so|ok|okay),? (?:if|but|except|only|were)\b|\byou'?d think\b|"
    r"\bwhat i'?d say\b|^\W*(?:the |my )?(?!(?:i|you|we|it|that|this)\b)[a-z]+ (?:says|said|replied|"
    r"texted|answered|is saying)\b|"
    r"\b(?:is|are) saying (?:yes|ok|okay|it'?s)\b|\b(?:i'?d|i would) (?:probably|maybe|likely) say\b|"
    r"\bi might say\b|\bi'?d love to say\b|\bi want to say\b|\bi wish i could\b|\bsays my\b|"
    r"\baccording to\b|\bfrom my [a-z]+\b|\b[a-z]+'s answer\b|\bmy [a-z]+: \w+|\beveryone agrees\b|"
    r"\bmy [a-z]+ is (?:ok|okay|fine|happy) with\b|\bif it were\b|\bmaybe yes\b",
    IC,
)
#: a yes said to be another's wherever it stands: "Yes, according to my wife.", "Yes (my wife's
#: answer)."
_OTHERS_YES = pattern(
    r"\baccording to\b|\bsays my\b|\b[a-z]+'s answer\b|\bfrom my [a-z]+[\s.!)]*$|\bon behalf of my\b",
    IC,
)
#: the user's own yes beside another's: "My wife says yes, and so do I."
_MINE_TOO = pattern(
    r"\b(?:and|so) (?:do|am|would|will) i\b|\bme too\b|\bi agree\b|\bi (?:say|said) yes\b", IC
)
_CHANGE = pattern(
    r"\b(?!(?:change|switch|move|make) (?:it|that|this) (?:to |for |till |until )?(?:that|this|then|"
    r"it)\b)(?:(?<!that )(?<!this )(?<!that one )(?<!this one )instead|change|changed|switch|rather|actually|make (?:it|that|the|them|this) (?:\d|\$|"
    r"for|on|at|a|an|the|in|to (?!my|the|our|his|her|their|your)|\w+ people)|only need|i meant|correction|(?:should|needs to) be"
    r"(?! (?:good|great|fine|ok|okay|perfect|alright|all right|right|correct|enough|nice)\b)|"
    r"not \w+ but|different (?:time|date|day)|move (?:it|that))\b",
    IC,
)
#: "just 1 person": a change when the agent said another number
_JUST = pattern(
    r"\b(?:just|only) (\d+|one|two|three|four|five|six|seven|eight|nine|ten) (?:people|persons?|"
    r"of us|guests?|tickets?|seats?|rooms?|nights?)\b",
    IC,
)
_ALTERNATIVES = pattern(
    r"\b(?:what else|something else|any ?(?:other|others|more)\b(?! help| questions?)|(?<!the )other "
    r"(?:options?|choices?|ones?)|(?:find|show|give|suggest|recommend|get|search|look for) (?:me )?"
    r"(?:some(?:thing)? )?(?:an)?other|different (?:one|options?)|more options|(?:are|is) there "
    r"(?:any )?(?:other|more|another)|(?:got|have you got|do you have) any(?:thing)? (?:other|else|"
    r"more)|(?:find|show|get|suggest|recommend) me (?:another|a different|something))",
    IC,
)
#: a word that is a yes only alone ("Nice."), not leading a comma ("Right, as if I'd pay that.")
_WEAK_YES = pattern(
    r"^\s*(?:nice|super|superb|splendid|rad|right|amazing|impeccable|prefect|perfect|great|"
    r"wonderful|fantastic|brilliant)\s*,(?!\s*(?:yes|yeah|sure|ok|okay|please|thanks?|thank you|go "
    r"ahead|that|it|this|sounds?|looks?|you(?:'ve| have)? (?:got|nailed|have)|you'?re|i|let'?s|do it|"
    r"book|just)\b)",
    IC,
)
#: a thanks, then a question about what was confirmed ("Thanks, what's the address?")
_THANKS_ASKING = pattern(
    r"^\s*(?:thanks?|thank you)[,.!]?\s+(?:what|what's|how|when|where|which|who|is|are|do|does|"
    r"can|could|will|would)\b[^.!]*\?\s*$",
    IC,
)
#: a question after a thanks that doubts the proposal or looks for another one
_NOT_QUITE = pattern(
    r"\b(?:but|however|though|instead|cancel|wait|hold on|cheaper|other|else|different|another|"
    r"alternatives?|better|earlier|later|change|rather|sure|really)\b",
    IC,
)
_THANKS_ONLY = pattern(
    r"^\s*(?:thanks?|thank you|thx|cheers)(?: (?:so|very) much| a lot| a bunch)?"
    r"(?: for (?:confirming|that|this))?\s*[.!]*\s*$",
    IC,
)
#: the agent's offer to act, as its last question ("Can I book it for you now?")
_BOOKING = (
    r"(?:book|reserve|purchase|buy|schedule|rent|transfer|pay|order|play|confirm)(?: (?:it|that|"
    r"this|them|the|your|a|an|\d|\$))"
)
_OFFERED = pattern(r"\b(?:shall|should|can|may) i (?:go ahead and )?" + _BOOKING, IC)
#: the agent saying what it will do next ("Okay, I will book Dr. Durr on March 9th at 4 pm.")
_INTENDED = pattern(r"\bi(?:'ll| will) (?:now |go ahead and )?" + _BOOKING, IC)
_THANKS = pattern(r"\b(?:thanks?|thank you|thx|appreciate (?:it|that|your)|cheers)\b", IC)
_BYE = pattern(
    r"\b(?:that'?s (?:all|it|everything)|that is (?:all|it|everything)|that(?:'ll| will) be all|"
    r"that(?:'s| is| will be| would be) (?:all|everything)|nothing (?:else|more|further)|"
    r"no more|i'?m (?:all )?(?:set|done|good)(?! with)|i am (?:all )?(?:set|done|good)(?! with)|all (?:set|good)|"
    r"good ?bye|bye|see you|have a (?:good|great|nice)|take care|all for (?:now|today)|"
    r"don'?t need (?:anything|any more|any other|more|further)|need nothing)\b",
    IC,
)
_QUESTION_START = pattern(
    r"^\s*(?:what|which|who|whom|whose|when|where|why|how|is|are|am|was|were|do|does|did|can|"
    r"could|will|would|should|shall|may|might|has|have|had|any idea|what'?s|where'?s|how'?s|"
    r"when'?s|who'?s)\b",
    IC,
)
_POLITE = pattern(
    r"^\s*(?:(?:ok(?:ay)?|so|and|then|hi|hey)[,.! ]+)?(?:can|could|would|will) you (?:please )?"
    r"(?!tell|let me know|say|explain|check (?:if|whether)|confirm (?:if|whether)|find out)\w+",
    IC,
)
_ASKS_FOR = pattern(
    r"\b(?:i (?:want|need|would like|'d like|wanna|wish|will need|'ll need|'ll take|will take)|"
    r"i'd (?:like|love|want)|we (?:want|need|would like|'d like)|(?:can|could|would|will) (?:you|u) "
    r"(?:please )?\w+|(?:can|could|may) (?:i|we) (?:please )?(?:change|switch|swap|modify|"
    r"update)\b|please|let'?s|help me|go ahead|^\s*(?:\w+[,.!]\s+)?[a-z]+ (?:it|that|this|"
    r"them|the|a|an|my|our|me|us)\b)",
    IC,
)
_NEED = pattern(
    r"\b(?:i|we) (?:need|require|want|are looking for|'re looking for|am looking for|'m looking "
    r"for|would like|'d like)\b|\b(?:our|my) (?:budget|requirement|deadline)\b|\bbudget (?:is|of)\b",
    IC,
)
#: an order of a thing: a verb of taking, or a request form, before a thing counted or named
_A_THING = r"(?:a|an|one|two|three|four|five|six|some|another|\d+)\b"
_ORDERS = pattern(
    r"\b(?:(?:i|we)(?:'ll| will| wanna| want to)|let me|lemme|let'?s|(?:i'm|i am|we're|we are) "
    r"(?:going to|gonna)) (?:just |please |also |go ahead and )?(?:take|have|get|order|grab|go with|go for|try|"
    r"buy|do)\b(?! (?:to|there|back|home|in|out|off|on|up|it|that|this|them)\b)|"
    r"\b(?:can|could|may) (?:i|we) (?:please |just |also |go ahead and )?(?:get|have|order|grab)\b(?! (?:a |an |some )?"
    r"(?:minute|moment|second|sec|recommendation|suggestion|menu|list|look|idea)s?\b)|"
    r"\b(?:would|will) (?:i|we) be able to (?:order|get|have)\b|"
    r"\b(?:(?:i|we) (?:gotta|got to|have to|need to) order|all (?:i|we) (?:want|need) is|(?:(?:i|we) (?:was|were|am|are)|i'm|we're) looking to (?:order|get|buy)) "
    + _A_THING
    + "|"
    r"\b(?:i|we) (?:will|'ll) like to (?:order|get|have)|\b(?:i|we)(?:'m| am|'re| are) going to need "
    + _A_THING
    + r"|\bdo you (?:guys |all )?(?:have|do|make|sell) "
    + _A_THING
    + r"[^.?!]{0,80}\bplease\b|"
    r"\b(?:i|we)(?:'d| would)? (?:really |just |also )?(?:like|love) (?:for )?(?:to (?:please )?(?:order|get|have|try|buy|grab|"
    r"take|place an order for),? )?(?:just )?"
    r"(?:the\b|"
    + _A_THING
    + ")"
    # "I would like cortado with oat milk", not "I'd like mine hot" or "I'd like to know"
    + r"|\b(?:i|we)(?:'d| would) (?:really )?like (?:to (?:please )?(?:order|get|have) )?"
    r"(?!(?:to|it|that|this|them|those|these|mine|you|him|her|us|some\w*|any\w*|no\w*|more|"
    r"less|what|which|if|when|how|for|in|on|at|very|so|too)\b)[a-z]{3,}(?=[^.?!]{0,60}(?:,? please|"
    r"\bwith\b|[.!]|$))"
    + r"|\b(?:i|we) (?:just |really |only )?(?:want|need) (?:to (?:order|get|have) )?(?:just )?"
    + _A_THING
    + "|"
    r"\b(?:give|get|bring|make) me " + _A_THING + r"|\bgimme\b|"
    r"\b(?:can|could|would|will) you (?:please |just )?(?:grab|get|make|bring|fix) (?:me|us) "
    + _A_THING
    + r"|\b(?:i'?m|i am|we'?re|we are) (?:down|up) for "
    + _A_THING
    + "|"
    r"\b(?:i|we) (?:could|would) (?:really )?go for " + _A_THING + "|"
    r"\b(?:and also|also|plus)\s+" + _A_THING + "|"
    r"^\s*(?:(?:hi|hello|hey)(?: there)?[,.!]*\s*)?" + _A_THING + r"[^.?!,]{1,60},? please\b|"
    # "Can I add vanilla?", "I'd like to add hazelnut to my order", "Add vanilla to that please"
    r"\b(?:(?:can|could|may|will|would) (?:i|you|we) (?:please |just |also )?|(?:i'?d|i would|we'?d|"
    r"we would) (?:like|love) to (?:please )?|(?:i|we) (?:want|need|wanna) to |let'?s |lemme |let me |"
    r"(?:i|we)'?ll "
    r"(?:just |also )?)add\b(?! (?:it|that|this|them|up|on|nothing|none|no)\b)|"
    r"^\s*(?:(?:ok(?:ay)?|o+h?|so|yes|yeah|sure|great|and|also|then|hi|hello|hey|well|actually|"
    r"alright)[,.!]*\s+){0,3}(?:please |just |also )?add\b(?! (?:it|that|this|them|up|on|nothing|"
    r"none|no)\b)",
    IC,
)
#: the agent asks what the user would like ("What can I get for you?", "Anything else?")
_ASKS_WHAT = pattern(
    r"\bwhat (?:can|could|may|shall) (?:i|we) (?:get|make|bring|start|do)|\bwhat (?:would|will|do|"
    r"can) (?:you|ya) (?:like|want|have|need|order|get)|\bwhat(?:'s| is| will it be| will you have)"
    r"(?: your order| it going to be| it gonna be)?\s*(?:today|for you|this morning)?\s*\?|"
    r"\b(?:anything|something) else|\bwhat else|\bhow can i help|\bready to order",
    IC,
)


def asks_what(agent: str) -> bool:
    """Whether the agent's message asks what the user would like ("What can I get you?")."""
    return bool(_ASKS_WHAT.search(agent[-AGENT_CHARS:]))


#: a word of assent before an order ("Sounds good, and can I have their address?")
_YES_WORD = pattern(
    r"\b(?:yes|yeah|yea|yep|yup|sure|ok|okay|correct|right|perfect|fine|good|great|works)\b", IC
)
_HOLD = pattern(
    r"\b(?:hold on|hang on|(?:^|(?<=[.!?,] ))wait\b|(?<!can't )(?<!cant )(?<!cannot )\bwait(?=\s*[,.!-]|\s+a (?:sec|second|minute|"
    r"moment|bit)\b)|not (?:so |too |quite )?sure|unsure|"
    r"not certain|let me think|on second thought|hold (?:it|that|them|off)|not yet|"
    r"(?:don'?t|do not|never) (?:\w+ ){0,2}(?:send|submit|finish|place|complete|process|charge|pay|"
    r"book|order|start)|(?:i'?ll|i will) (?:tell|let) you (?:know )?when|but (?:let me|i want|i'?m "
    r"still|i need to (?:think|check|double|confirm|wait|ask|see)|give me|please wait|stop|take|remove|"
    r"add|leave|keep)|keep it open|leave it open|still deciding|give me a (?:minute|sec|second|moment)|"
    r"(?:one|a|just a) sec|pause|wait for me|stop there|double[- ]?check|apart from|(?:mostly|"
    r"almost)(?=\W*$)|all but|minus|remove|take (?:(?!off\b)\w+ ){1,2}off|take off (?:the|a|an|my|one|\d)|as soon as|when i (?:get|arrive)|"
    r"once i|in an? (?:hour|minute|while)|after (?:i|my|we)|please don'?t|oh and(?! (?:how|what|"
    r"where|when|which|who|why|is|are|does|do|can|could|will|would)\b)|hold,? please|"
    r"before you (?:send|submit|place|finish|book|order)|i guess\?|hmm+(?=\W*$)|"
    r"before (?:sending|submitting|placing|booking|ordering|paying|buying|transferring)|except|"
    r"(?:i'?ll|let me|i need to|i have to|i want to) (?:think|sleep on|reconsider|decide)|"
    r"i'?ll let you know|(?:have(?:n'?t| not)|not) (?:yet )?decided|reconsider|maybe(?=[\s.!?]*$)|"
    r"(?:^|(?<=[,.!] ))(?:later|tomorrow|tonight|next week|luego|ma\u00f1ana)\b(?=[\s.!]*$)|"
    r"after payday|when i say|pero (?:luego|despu\u00e9s|no)\b|(?:^|(?<=[,.!] ))later\b|\b(?:it|that|this|them) (?:later|next (?:week|month|year|time))|"
    # something to be done first: "but first tell me the price", "after you check the reviews"
    # (a condition on facts, "as long as the driver isn't Gary", is the agent's to check)
    r"pending|wait for my (?:signal|go|ok|okay|word)|once (?:my|our) \w+ (?:gets?|arrives?|is|are|comes?)|once (?:i|we|he|she|they) (?:get|arrive|"
    r"am|are|is|come)s?\b(?! seated)|once you (?:check|confirm|find|verify|tell|look)|"
    r"if my \w+ (?:agrees|says|approves|is ok)|if (?:he|she|"
    r"they) (?:agree|agrees|say|says)|confirm (?:it )?later|not (?:done|finished) (?:ordering|yet)|"
    r"hang tight|(?:^|(?<=[,.;!] )|(?<=but ))after (?:lunch|dinner|breakfast|work|school|the meeting)|"
    r"(?:i'?m|we'?re|i am|we are|still) waiting (?:on|for) (?:my|one "
    r"more|another|someone|somebody|him|her|them|a friend)|not ready|"
    r"find my (?:wallet|card|purse)|(?:i'?ll|let me) pay (?:\w+ ){0,3}first|in (?:a few|\d+|two|three|"
    r"five|ten|fifteen|twenty|thirty) (?:minutes?|mins?|hours?)|oh,? and(?! (?:how|what|where|when|which|"
    r"who|why|is|are|does|do|can|could|will|would|thanks?|thank you|have a)\b)|(?:with|and) one more "
    r"(?!(?:question|thing|detail|query|request|time)s?\b)|, and (?:i'?d like to add|i want to add|i'?ll "
    r"(?:have|take) (?:a|an|one|two)|(?:please )?add (?:a|an|one|two|another|some))\b|"
    r"but (?:first|before)|first (?:tell|check|let me|show|find|confirm)|(?:check|tell "
    r"me|find out|confirm|verify) [^.?!]{0,40}\bfirst|after (?:you|we) (?:check|tell|find|confirm|"
    r"look|verify))\b",
    IC,
)
#: what a request form may ask for that is no thing to order ("their address", "a phone number")
_SERVICE_AFTER = pattern(
    r"\s*(?:[\w']+ ){0,3}?(?:address|number|phone|time|price|cost|charge|fare|contact|email|"
    r"details|info|information|directions|hours|receipt|refund|wait|rating|request|note|"
    r"comment|instruction)s?\b",
    IC,
)
_WH = pattern(r"\b(?:which|what|how|why|when|where|whether)\b", IC)
#: a thing and nothing else, named in a few words ("Mocha, please.", "Just a mocha, thanks")
_SHORT_THING = pattern(
    r"\s*(?:just |only )?(?:(?:a|an|one|two|three) )?[a-z][\w%-]*(?: [a-z][\w%-]*){0,3}[,.]?"
    r"(?: (?:please|thanks|thank you))?[.!]?\s*$",
    IC,
)
_QUOTED = pattern(r'"[^"]{0,400}"|\u201c[^\u201d]{0,400}\u201d')
_BARE_THING = pattern(r"\s*" + _A_THING + r"[^.?!]{1,80}[.!]?\s*$", IC)
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"])}  # fmt: skip
_VALUE = pattern(
    r"\b(?:\d+(?::\d+)?(?:st|nd|rd|th)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
    r"twelve|half|quarter|noon|midnight|morning|afternoon|evening|tonight|today|tomorrow|monday|"
    r"tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|june|july|"
    r"august|september|october|november|december)\b",
    IC,
)


_GLUED = pattern(r"(\d)(?=(?:am|pm|a\.m|p\.m)\b)")


def values(text: str) -> set[str]:
    """The numbers, dates and times a text states, normalized ("two" is "2", "6th" is "6",
    "9pm" is "9")."""
    out = set()
    for v in _VALUE.findall(_GLUED.sub(r"\1 ", text.lower())):
        v = _NUMBER_WORDS.get(v, v)
        out.add(re.sub(r"(?:st|nd|rd|th)$", "", v) if v[:1].isdigit() else v)
    return out


@dataclass(frozen=True)
class UserAct:
    """What the user's message does, as flags (several may hold)."""

    yes: bool = False
    no: bool = False
    question: bool = False
    alternatives: bool = False
    closing: bool = False
    change: bool = False  # details that differ from what the agent said
    asks: bool = False  # a request form ("I want", "can you", an imperative)
    declines: bool = False  # an outright no ("absolutely not", "forget it", "not today")
    need: bool = False  # a statement of need ("we need 40 laptops")
    orders: bool = False  # it orders a thing ("I'll take a mocha", "can I get a latte?")
    held: bool = False  # a yes held back: a condition or a wait ("Yes, as long as it's quiet")


def _sentences(text: str) -> list[str]:
    return [p for p in re.split(r"(?<=[.!?])\s+", text) if p.strip()]


_NAME = pattern(r"(?<=[^\W_] )[^\W\d_a-z][\w'&-]*(?: [^\W\d_a-z][\w'&-]*)*")
#: a choice named after a verb of choosing ("I'll take the Old Town Inn", "go with Hilton")
_CHOICE = pattern(
    r"\b(?:take|try|go with|going with|book|prefer|rather have|rather stay at|stay at|switch to|"
    r"instead of|choose|pick)\s+(?:the\s+|a\s+|an\s+)?"
    r"((?-i:[^\W\d_a-z])[\w'&-]*(?:\s+[^\W\d_][\w'&-]*){0,3})",
    IC,
)
#: words after a verb of choosing that name no other item
_PLAIN_CHOICE = frozenset({
    "it", "that", "this", "them", "one", "those", "these", "room", "table", "ticket", "tickets",
    "ride", "seat", "seats", "appointment", "reservation", "booking", "car", "time", "slot",
    "option", "offer", "please", "now", "then", "for", "at", "on", "in", "with", "and", "instead",
    "too", "also", "same", "first", "second", "last", "other", "another",
})  # fmt: skip
_NOT_NAMES = frozenset(["i", "i'm", "i'd", "i'll", "i've", "ok", "okay", "yes", "no", "thanks"])


def _unsaid(words: list[str], said: set[str]) -> bool:
    return any(len(w) >= 3 and w not in said for w in words)


def _agent_words(agent: str) -> set[str]:
    return set(re.findall(r"[^\W_][\w']*", agent[-AGENT_CHARS:].lower()))


#: what follows a yes to amend it: "but", "though", "plus", a bracket, "P.S.", "oh, and"
_AMEND = pattern(
    r"\b(?:but|though|although|plus|except)\b|\(|;|\s-\s|\bp\.?\s?s\b|\boh,? and\b|"
    # "Yes, with Maria.", "Yes, the one in Palo Alto.", "Sure, for a week."
    r"^\W*(?:yes|yeah|yep|yup|sure|ok|okay|correct|right)\b[,!.]?\s*(?=(?:(?:send|put|move) it |the "
    r"one )?(?:with|at|to|from|into|for|in|on)\b)",
    IC,
)
#: other details said otherwise than by a number: "tonight", "an hour later", "a week", "half"
_RELATIVE_CHANGE = pattern(
    r"\b(?:tonight|tomorrow|next (?:week|month|day)|(?:an?|one|two|\d+) (?:hours?|days?|weeks?) "
    r"(?:later|earlier|sooner)|(?:later|earlier)(?=[\s.!]*$)|for a (?:week|month|day|night)|(?:only )?"
    r"half (?:of (?:it|that|the amount)|that)|double (?:it|that)|(?:one|two|"
    r"\d+) more (?:person|people|guests?|tickets?|seats?|rooms?|nights?)|with(?:out)? subtitles|"
    r"(?:a|the) (?:private|shared|small|large|medium|later|earlier|cheaper) one)\b",
    IC,
)
_CONDITIONAL = pattern(r"\W*(?:only )?if\b", IC)
#: an amendment's words that change nothing ("but thanks", "but that's fine", "plus tip")
_NO_AMENDS = pattern(
    r"^\W*(?:thanks?|thank you|that'?s (?:fine|ok|okay|great|good)|no worries|please|quickly|"
    r"asap|hurry)\b",
    IC,
)


def _amends(plain: str, message: str, agent: str, said: set[str], new: set[str]) -> bool:
    """Whether a yes comes with other details than the agent's: a new number, date or time
    stated anywhere ("Yes. Oh, and it's 3 of us."), a name the agent did not say ("Yes, with
    Maria."), or an amendment after "but", a bracket or "P.S." that is no question ("Yes, but
    tonight.", "Yes (but 8:30 pm)")."""
    amend = _AMEND.search(plain)
    if amend is None:
        return False
    rest = plain[amend.end() :]
    if "?" in rest or _NO_AMENDS.match(rest) or _CONDITIONAL.match(rest):
        return False
    told = agent[-AGENT_CHARS:]
    rest = _PHONE.sub(" ", _OCCASION.sub(" ", rest))  # "my 30th birthday", "555-1234"
    relative = _RELATIVE_CHANGE.search(rest)
    return bool(
        values(rest) - values(told) - {"half", "quarter"}  # "half of us are vegetarian"
        or (
            relative and relative.group(0).lower() not in told.lower()
        )  # "for tonight" after "tonight"
        or (  # "Yes, with Maria."; not "Yes, with my wife Maria.", "in the name of Johnson"
            agent
            and len(rest.split()) <= 5
            and not _WHO_FOR.search(rest)
            and _new_names(_OCCASION.sub(" ", message[amend.end() :]), said | _possessed(said))
        )
    )


_PHONE = pattern(r"\+?\d[\d ().-]{6,}\d")
#: names of who it is for, not of what was recapped
_WHO_FOR = pattern(r"\b(?:my|me|name|behalf|bringing|our|i'?m|'s)\b|'s\b", IC)
#: an occasion, no detail of a call: "my 30th birthday", "Valentine's Day"
_OCCASION = pattern(
    r"\b(?:\d+(?:st|nd|rd|th)? )?(?:birthday|anniversary|wedding|reunion|graduation)\b|"
    r"\b(?:valentine'?s|mother'?s|father'?s|new year'?s|christmas|thanksgiving|easter)(?: day| eve)?\b",
    IC,
)


def _possessed(said: set[str]) -> set[str]:
    """The agent's words less a possessive ("diego's": diego)."""
    return {w[:-2] for w in itertools.islice(said, 4096) if w.endswith("'s")}


def _new_names(message: str, said: set[str]) -> bool:
    """Whether the user's message names something the agent's (its words ``said``) did not
    ("Old Town Inn" after "the Shadyside Inn ... can I book this room?"): a capitalized name
    inside a sentence with a word the agent's message does not have."""
    for m in _NAME.finditer(message[:USER_CHARS]):
        words = [w.strip("'") for w in m.group().lower().split() if w not in _NOT_NAMES]
        if _unsaid(words, said):
            return True
    return False


def _new_choice(message: str, said: set[str]) -> bool:
    """Whether the user chooses something the agent's message (its words ``said``) did not offer
    ("Sure, I'll take the Old Town Inn", "let's go with Hilton"): a yes that comes with it is for
    that choice."""
    for m in _CHOICE.finditer(message[:USER_CHARS]):
        words = []
        for w in m.group(1).lower().split():
            if w.strip("'") in _PLAIN_CHOICE:
                break
            words.append(w.strip("'"))
        if _unsaid(words, said):
            return True
    return False


_CLAUSE = pattern(r"[,;]|\s-+\s|\s\u2014\s|\s\.|(?<=[a-z])\.(?=[a-z]{2})")
_JOINED = pattern(r"\sand\s")
#: what, after "and" or "but", doubts the clause before it ("Fine and what if I don't go?")
_DOUBT = pattern(r"\bif\b|n't\b|\b(?:dont|wont|cant|isnt|doesnt|didnt|wouldnt)\b|\bnot\b|\bcancel|\binstead\b|\bcheaper\b|\bother\b|"
                    r"\belse\b|\bsure\b|\breally\b|\b(?:what|how) about\b|\b(?:can|could|will|would|"
                    r"shall|should) (?:you|we)\b(?! (?:also )?(?:please )?(?:tell|give|let me know|"
                    r"provide|share)\b(?![^?]*\b(?:if|whether)\b))|\bwhy\b|\bcatch\b|\bscam\b|\blegal\b|\bwait|\bhold|"
                    r"\blater\b|\bnext\b|\buntil\b|\brisks?\b|\bsafe\b|\blegal\b|\btrust|\benough\b|"
                    r"\bfirst\b|\bless\b|\btomorrow\b", IC)  # fmt: skip


def _lead_clause(sentence: str) -> str:
    """A sentence's first clause: up to a comma or a dash, or to an "and" or "but" that goes
    on to something other than a doubt ("That is correct and what is the cost?" opens with
    "That is correct"; "Fine and what if I don't go?" is all one clause)."""
    head = _CLAUSE.split(sentence, maxsplit=1)[0]
    joined = _JOINED.search(head)
    if joined and not _DOUBT.search(head[joined.end() :]):
        return head[: joined.start()]
    asked = _ASKED_ON.search(head)
    if (
        asked
        and _YES_START.fullmatch(head[: asked.start()])
        and not _DOUBT.search(head, asked.start())
    ):
        return head[: asked.start()]  # "That is correct what is the cost?": a yes, a question
    return head


#: a question that goes on, with no comma, from the yes before it ("That is good what is cost?")
_ASKED_ON = pattern(r"\s+(?:what|where|when|which|who|how)\b(?=[^.!?]*\?\s*$)", IC)


_BUT = pattern(r"\b(?:but|however|though)\b", IC)


def _doubted(sentence: str) -> bool:
    """Whether a sentence goes on from its yes to a question that doubts it ("Sounds good, but
    can it be cheaper?", "Yes, but is it really safe?"; not "Yes, but I don't need John to
    drive.")."""
    but = _BUT.search(sentence)
    asks = sentence.rstrip().endswith("?")
    return asks and but is not None and bool(_DOUBT.search(sentence, but.end()))


def _offers_to_act(agent: str) -> bool:
    """Whether the agent's message ends by offering to book ("Can I book it for you now?") or
    says it will ("Okay, I will book Dr. Durr on March 9th."), with no failure reported."""
    said = agent[-AGENT_CHARS:].strip()
    if _FAILED.search(said):
        return False
    if said.endswith("?"):
        return bool(_OFFERED.search(_last_sentence(said)))
    return bool(_INTENDED.search(said))


#: a detail said in the negative ("I don't want it hot", "but not too sweet"): no decline
_NOT_SO = pattern(
    r"\b(?:but )?(?:(?:i )?(?:don'?t|do not) (?:want|like) (?:it|them|mine) (?:too |very |so |"
    r"extra )?|not (?:too|very|so|extra) )(?:hot|cold|iced|icy|warm|sweet|strong|bitter|foamy|milky|"
    r"sugary|big|large|small|much \w+)\b"
)


def opens_with_yes(message: str) -> bool:
    """Whether a message opens with a plain yes ("Yes, book that - then ..."): whatever it says
    after, it is no clear no."""
    return bool(_YES_LEAD.match(message.strip()[:200]))


def read_user(message: str, agent: str = "") -> UserAct:
    """What the user's message does, read against the agent's message before it."""
    t = message[:USER_CHARS].strip().replace("\u2019", "'")
    low = t.lower()
    plain = _NOT_SO.sub(" ", low)  # "I don't want it hot", "not too hot": a detail, no "no"
    first = re.split(r"[.!?;]|\s-\s|,\s*but\b|\bbut\b", plain, maxsplit=1)[0]
    declines = bool(_NO_STRONG.search(plain))
    no = bool(_NO_START.search(plain) or _NO_ANY.search(first)) or declines
    sentences = _sentences(low)
    said = [s for s in sentences if not s.rstrip().endswith("?")]  # a question says no yes
    head = _lead_clause(sentences[0]) if sentences else ""
    opening = "" if head.rstrip().endswith("?") or _QUESTION_START.match(head) else head
    weak = _WEAK_YES.match(low)  # "Nice, another hidden fee.": no yes by that word
    yes = (
        not no
        and not (sentences and _doubted(sentences[0]))
        and (
            bool(opening and not weak and _YES_START.match(opening))
            or bool(_SHORT_YES.match(low))
            or bool(_WHOLE_YES.match(low))
            or bool(sentences and _YES_LEAD.match(sentences[0]))
            or any(_YES_ANY.search(s) for s in said if len(s.split()) <= _YES_WORDS)
            or any(_GO_AHEAD.match(c) for s in said for c in _CLAUSES.split(s))
        )
    )
    if (
        yes
        and (
            _OTHERS_YES.search(low)
            or (
                not (opening and _YES_START.match(opening) and not _NOT_MINE.search(opening))
                and _NOT_MINE.search(_QUOTED.sub(" said ", low))
            )
        )
        and not _MINE_TOO.search(low)
    ):
        yes = False  # "My wife said yes.", 'I typed "yes" by mistake.': not the user's own yes
    if yes and _QUOTED.search(low):
        yes = read_user(_QUOTED.sub(" ", t), agent).yes  # 'The text says "confirmed".'
    told = agent[-AGENT_CHARS:]
    if _ANOTHER.search(told):  # "Shall I book another?": "I'm good with one."
        enough = _ONE_ENOUGH.search(low)
    else:  # "I've transferred it.": "one transfer only"
        enough = _ONE_ONLY.search(low) if _DONE.search(told) else None
    if enough and not _GO_ON.search(low):
        declines = no = True  # "Shall I book another table?" "I'm good with one."
        yes = False
    held = yes and bool(_HOLD.search(low))
    if held:
        yes = False  # "Yes, that's correct, but hold on", "yes? I'm not sure"
    unquoted = _QUOTED.sub(" ", low)
    ordered = _ORDERS.search(unquoted)
    if (
        yes
        and ordered
        and not _YES_WORD.search(unquoted[: ordered.start()])
        and not _SERVICE_AFTER.match(unquoted, ordered.end())  # "May I have their address?"
    ):
        yes = False  # "I'll take a mocha": an order, not a yes to the recap before it
    said_words = _agent_words(agent) if agent else set()
    renamed = bool(agent) and _new_names(t, said_words)
    if agent and _new_choice(t, said_words):
        yes, renamed = False, True  # "Sure, I'll take Old Town Inn": another choice
    stated = " ".join(s for s in _sentences(t) if not s.rstrip().endswith("?"))
    new = values(stated) - values(agent[-AGENT_CHARS:]) - {"1"} if stated else set()
    first_new = set() if first.strip() not in stated.lower() else (
        values(first) - values(agent[-AGENT_CHARS:]) - {"1"})  # fmt: skip
    just = _JUST.search(low)
    # "Yes, but at 8 pm.", "Yes (but 8:30 pm).", "Yes, with Maria.": a yes with other details
    amended = yes and _amends(plain, t, agent, said_words, new)
    change = (
        amended
        or bool(_CHANGE.search(low))
        or (renamed and not yes)
        or bool(first_new)
        or (bool(new) and not yes)
        or bool(just and values(just.group(1)) - values(agent[-AGENT_CHARS:]))
    )
    alternatives = bool(_ALTERNATIVES.search(low)) and not re.search(
        r"\b(?:need|want) (?:anything|something) else\b|\b(?:anything|something) else\s*(?:\?|$)",
        low,
    )
    asks = bool(_ASKS_FOR.search(low))
    # an order, or at the start a thing and nothing else ("A vanilla macchiato with almond milk")
    bare = unquoted  # what is quoted is no order of the user's
    orders = any(  # not in a question asking which, what or how ("a mocha or a latte, which?")
        _ORDERS.search(p) and not (p.rstrip().endswith("?") and _WH.search(p))
        for p in itertools.islice(_sentences(bare), 16)
    ) or bool(
        (not agent.strip() and _BARE_THING.match(bare))
        or (asks_what(agent) and (_BARE_THING.match(bare) or _SHORT_THING.match(bare)))
    )
    closing = bool(_BYE.search(low) and not orders) or (
        bool(_THANKS.search(low)) and not values(low) and not orders and not _ASKS_FOR.search(
            low.replace("please", ""))
    )  # fmt: skip
    thanked = (
        bool(_THANKS_ONLY.match(low))
        or (  # "Thanks. How long will it take?"
            len(sentences) > 1
            and bool(_THANKS_ONLY.match(sentences[0]))
            and all(x.rstrip().endswith("?") for x in sentences[1:])
            and not _NOT_QUITE.search(low)
        )
        or bool(_THANKS_ASKING.match(low) and not _NOT_QUITE.search(low))
    )
    if (
        not (yes or no)
        and thanked
        and (
            _ASK_CONFIRM.search(agent[-AGENT_CHARS:])
            or (_THANKS_ONLY.match(low) and _offers_to_act(agent))
        )
    ):
        # a thanks, and nothing else, for details the agent asked to be confirmed, or for its
        # offer to act, accepts them ("Please confirm a table for 2 at 7 pm." "Thank you!";
        # "Can I book it for you now?" "Thanks!")
        yes, closing = True, False
    polite = bool(_POLITE.match(low))  # "can you send it?" asks for something to be done
    question = not polite and ("?" in t or bool(_QUESTION_START.search(low)))
    return UserAct(
        yes=yes,
        no=no,
        question=question,
        alternatives=alternatives,
        closing=closing,
        change=change,
        asks=asks,
        need=bool(_NEED.search(low)),
        declines=declines,
        orders=orders,
        held=held,
    )


_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_ISO_DATE = pattern(r"(\d{4})-(\d{2})-(\d{2})")
_CLOCK = pattern(r"(\d{1,2}):(\d{2})")


#: a day said relative to today: "tomorrow", "next Monday", "on the 2nd"
_TODAY = pattern(r"\b(?:today|tonight|tomorrow|day after tomorrow)\b")
_WEEKDAY = pattern(r"\b(mon|tues|wednes|thurs|fri|satur|sun)day\b")
_NTH = pattern(r"\bthe (\d{1,2})(?:st|nd|rd|th)\b(?=\s*(?:[.,!?;]|$|at\b|for\b|in\b|with\b))")
_WEEKDAYS = ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")


def said_relative(text: str, value: str) -> bool | None:
    """Whether ``text`` says the ISO date ``value`` relative to today: a weekday it falls on
    ("next Tuesday"), its day of the month ("on the 5th"), or, naming no weekday and no day,
    "today", "tomorrow" or "the day after tomorrow" (which no date can contradict without
    knowing today). ``False``: only weekdays or days that are not the date's (another date);
    ``None``: no day said relative to today."""
    m = _ISO_DATE.fullmatch(value.strip()[:10])
    try:
        day = datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None
    except ValueError:
        day = None
    if day is None:
        return None
    t = text.lower()
    weekdays = {w.group(1) for w in _WEEKDAY.finditer(t)}
    days = {int(n.group(1)) for n in _NTH.finditer(t)}
    if _WEEKDAYS[day.weekday()] in weekdays or day.day in days or _TODAY.search(t):
        return True
    return False if weekdays or days else None


def stray_days(text: str, values: list[str]) -> bool:
    """Whether ``text`` says a weekday or a day of the month that none of the ISO dates among
    ``values`` falls on (another date than any of the call's; a call with no ISO date: no)."""
    said: list[datetime.date] = []
    for value in values:
        m = _ISO_DATE.fullmatch(value.strip()[:10])
        try:
            said += [datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))] if m else []
        except ValueError:
            continue
    if not said:
        return False
    t = text.lower()
    weekdays = {w.group(1) for w in _WEEKDAY.finditer(t)}
    days = {int(n.group(1)) for n in _NTH.finditer(t)}
    return bool(weekdays - {_WEEKDAYS[d.weekday()] for d in said}) or bool(
        days - {d.day for d in said}
    )


def relative_days(text: str) -> int:
    """How many days ``text`` says relative to today (each can state one date of a call)."""
    t = text.lower()
    return sum(len(p.findall(t)) for p in (_TODAY, _WEEKDAY, _NTH))


def spoken_forms(value: str) -> list[re.Pattern[str]]:
    """How an argument value may be said in a message: an ISO date as "March 2nd" or "2nd of
    March" (a day said relative to today is :func:`said_relative`'s), a 24-hour time as
    "6:30 pm", a count as a digit or a word, any other text as itself."""
    v = value.strip().lower()[:200]
    if v in ("", "true", "false", "dontcare", "none", "null"):
        return []
    if m := _ISO_DATE.fullmatch(v):
        month, day = int(m.group(2)), int(m.group(3))
        if not (1 <= month <= 12):
            return [pattern(re.escape(v))]
        name = _MONTHS[month - 1]
        return [pattern(rf"\b{name} {day}(?:st|nd|rd|th)?\b|\b{day}(?:st|nd|rd|th)? of {name}\b"
                           rf"|\b{re.escape(v)}\b")]  # fmt: skip
    if m := _CLOCK.fullmatch(v):
        hour, minute = int(m.group(1)), m.group(2)
        h12 = hour % 12 or 12
        said = f"{h12}:{minute}" if minute != "00" else f"{h12}(?::00)?"
        # 19:20 is "7:20 pm", not "7:20 am"; "7 o'clock" may be either
        half = (
            r"pm|p\.m|in the (?:afternoon|evening)|at night"
            if hour >= 12
            else r"am|a\.m|in the morning"
        )
        noon = {"12:00": r"|\bnoon\b|\bmidday\b", "00:00": r"|\bmidnight\b"}.get(
            f"{hour:02}:{minute}", ""
        )
        other = r"am|a\.m" if hour >= 12 else r"pm|p\.m"
        return [pattern(rf"\b{said}\s*(?:{half}|o'?clock)|\b{hour}:{minute}\b(?!\s*(?:{other}))"
                        rf"{noon}")]  # fmt: skip
    if re.fullmatch(r"\d{1,12}\.0+", v):
        v = v.split(".")[0]  # 50.00 is said "50"
    if v.isascii() and v.isdigit():  # "³" is a digit to isdigit, not to int
        n = int(v)
        word = [k for k, d in _NUMBER_WORDS.items() if d == str(n)]
        grouped = f"{n:,}"  # 1290 is said "1,290" too
        said = f"{n}|{re.escape(grouped)}" if grouped != str(n) else str(n)
        return [pattern(rf"\b(?:{said}{'|' + word[0] if word else ''})\b")]
    if len(v) < 2:  # a letter says nothing about which call was meant
        return []
    return [pattern(r"(?<!\w)" + re.escape(v) + r"(?!\w)")]
