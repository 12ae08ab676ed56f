"""The one-node testbed (Appendix J): standing one-shot commitments ("use Willow for my next hotel
booking, just this once") among concurrent requests.

An episode gives ``k`` commitments early, each for its own category of booking; later a
differently phrased request of that category triggers it (the commitment's vendor is owed once),
and after it more requests of the same category follow, on which the one-shot is consumed and the
category's default vendor is owed. Requests of categories without a commitment are controls.
Every request carries a work order; the agent books with one line: ``book VENDOR #W1234``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from taskgate.errors import GeneratorError


@dataclass(frozen=True, slots=True)
class Category:
    slug: str
    noun: str  # as the commitment names it: "my next {noun}"
    default: str  # the vendor the brief names
    requests: tuple[str, str, str]  # later requests of this category, phrased differently


CATEGORIES: tuple[Category, ...] = (
    Category(
        "hotel",
        "hotel booking",
        "Harbor Inns",
        (
            "I need somewhere to stay in Lyon on Friday night",
            "Please reserve a room for the offsite in Porto",
            "Get me accommodation near the venue for two nights",
        ),
    ),
    Category(
        "flight",
        "flight",
        "SkyJet",
        (
            "Book my seat to Berlin for Monday morning",
            "I have to fly to Madrid on the 14th",
            "Please get me on a plane to Oslo next week",
        ),
    ),
    Category(
        "car",
        "rental car",
        "RoadPal",
        (
            "I'll need wheels at the airport when I land",
            "Arrange something to drive for the site visit",
            "Reserve a vehicle for the weekend trip",
        ),
    ),
    Category(
        "table",
        "restaurant table",
        "Tablewise",
        (
            "Find us a place for dinner with the client on Thursday",
            "Reserve lunch for six near the office",
            "We need a table for the team celebration",
        ),
    ),
    Category(
        "taxi",
        "taxi",
        "CityCab",
        (
            "I need a ride to the station at 7",
            "Order a pickup from the hotel to the airport",
            "Get me a cab to the conference centre",
        ),
    ),
    Category(
        "train",
        "train ticket",
        "RailOne",
        (
            "Get me to Brussels by rail on Tuesday",
            "I'm taking the train to Zurich, please sort it out",
            "Book the rail leg from Paris to Lille",
        ),
    ),
    Category(
        "room",
        "meeting room",
        "DeskHub",
        (
            "We need a space for the workshop on Wednesday",
            "Reserve somewhere for the board review",
            "Find a room for the interviews next week",
        ),
    ),
    Category(
        "courier",
        "courier pickup",
        "ParcelPro",
        (
            "The signed contracts have to go out today",
            "Send the samples to the lab in Ghent",
            "Have the prototype picked up from reception",
        ),
    ),
    Category(
        "flowers",
        "flower order",
        "PetalPost",
        (
            "Send something nice to Ana for her promotion",
            "Order a bouquet for the reception desk",
            "We should send flowers to the client's opening",
        ),
    ),
    Category(
        "printing",
        "print job",
        "InkWorks",
        (
            "Get 200 brochures printed for the fair",
            "The posters for the launch need printing",
            "Print the handouts for Friday's training",
        ),
    ),
)
BY_SLUG = {c.slug: c for c in CATEGORIES}
VENDORS = ("Willow", "Juniper", "Alder", "Rowan", "Hazel", "Linden", "Aspen", "Sorrel")
FILLERS = (
    "Thanks, that all looks fine.",
    "FYI: the quarterly review moved to next month.",
    "Reminder: keep replies short, please.",
    "Good morning! Let's keep going.",
)

Role = Literal["commit", "trigger", "after", "control", "filler"]
_BOOK = re.compile(r"\bbook\s++([A-Za-z][A-Za-z ]{0,40}?)\s*+(#W[0-9]++)", re.IGNORECASE)


class Commitment(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    category: str
    vendor: str


class NodeTurn(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    role: Role
    message: str
    category: str | None = None
    work_order: str | None = None
    commitment: int | None = None  # the commitment a commit/trigger/after turn is about


class NodeEpisode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int
    commitments: tuple[Commitment, ...]
    turns: tuple[NodeTurn, ...]

    @property
    def id(self) -> str:
        return f"onenode-k{len(self.commitments)}-seed{self.seed}"


def brief() -> str:
    """The agent's system prompt: the defaults and the booking line."""
    lines = [f"- {c.noun}: {c.default}" for c in CATEGORIES]
    return (
        "You are a travel and office assistant. Book every request with its category's default "
        "vendor unless the user has told you otherwise:\n"
        + "\n".join(lines)
        + "\n\nA one-shot instruction ('just this once') applies to the next booking of its kind "
        "only; after that the default applies again.\nTo book, write one line: book VENDOR #W1234 "
        "(the request's work order). Book nothing for messages without a work order."
    )


def commitment_message(c: Commitment) -> str:
    return f"For my next {BY_SLUG[c.category].noun}, use {c.vendor} -- just this once."


def bookings(reply: str) -> list[tuple[str, str]]:
    """The (vendor, work order) of each booking line in a reply."""
    return [(m.group(1).strip(), m.group(2).upper()) for m in _BOOK.finditer(reply)]


def generate(seed: int, k: int = 4, after: int = 2, controls: int = 3) -> NodeEpisode:
    """One episode: ``k`` concurrent commitments, each triggered once and followed by ``after``
    requests of its category, among ``controls`` requests of other categories and fillers."""
    if not 1 <= k <= len(CATEGORIES) - 1:
        raise GeneratorError(f"commitments per episode must be 1-{len(CATEGORIES) - 1}, got {k}")
    rng = random.Random(f"taskgate/onenode/{k}/{after}/{controls}/{seed}")
    cats = rng.sample(CATEGORIES, k + 1)
    commits = tuple(Commitment(category=c.slug, vendor=rng.choice(VENDORS)) for c in cats[:k])
    head: list[tuple[Role, int | None]] = [("commit", i) for i in range(k)]
    rng.shuffle(head)
    tail: list[tuple[Role, int | None]] = []
    for i in range(k):  # each commitment's trigger precedes its after-requests
        slots: list[tuple[Role, int | None]] = [("trigger", i)]
        slots += [("after", i) for _ in range(after)]
        positions = sorted(rng.sample(range(len(tail) + len(slots)), len(slots)))
        for pos, item in zip(positions, slots, strict=True):
            tail.insert(pos, item)
    for _ in range(controls):
        tail.insert(rng.randrange(len(tail) + 1), ("control", None))
    for _ in range(k):
        tail.insert(rng.randrange(len(tail) + 1), ("filler", None))
    orders = iter(rng.sample(range(1000, 10000), len(head) + len(tail)))
    control_cat = cats[k]
    turns = []
    for index, (role, j) in enumerate([*head, *tail]):
        turns.append(_turn(rng, index, role, j, commits, control_cat, next(orders)))
    return NodeEpisode(seed=seed, commitments=commits, turns=tuple(turns))


def _turn(
    rng: random.Random,
    index: int,
    role: Role,
    i: int | None,
    commits: tuple[Commitment, ...],
    control: Category,
    order: int,
) -> NodeTurn:
    if role == "filler":
        return NodeTurn(index=index, role=role, message=rng.choice(FILLERS))
    if role == "commit":
        assert i is not None
        c = commits[i]
        return NodeTurn(
            index=index, role=role, message=commitment_message(c), category=c.category, commitment=i
        )
    cat = control if i is None else BY_SLUG[commits[i].category]
    wo = f"#W{order}"
    text = rng.choice(cat.requests)
    return NodeTurn(
        index=index,
        role=role,
        message=f"{text} ({wo}).",
        category=cat.slug,
        work_order=wo,
        commitment=i,
    )
