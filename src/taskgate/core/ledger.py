"""The receipts ledger: the append-only record from which all task state is rebuilt.

Kinds of entry, in the order they happened:

* ``plan``: the plan the machine was built from (always the first entry);
* ``request``: a request was opened, with its work order, resolved step and redo flag (or,
  with no work order, the last request was closed);
* ``attempt``: a booking was judged, with the policy, verdict and reason;
* ``revision``: a revision (cancel, rewires, relax) was applied;
* ``approval``: a person approved one call of a step, whatever the state says;
* ``ask``: the gate held a call it could not tell the user agreed to, and asked the person (the
  exact call and the question shown);
* ``answer``: the person's answer to an ask (approve, edit, reject, or dropped unanswered): an
  approved or edited call is granted, once, with exactly the arguments shown or edited.

Only ``attempt`` entries with decision ``admit`` are receipts: they alone make a step DONE.

Serialized (:func:`dump_ledger`, :func:`sealed_rows`), the ledger is tamper-evident: each entry
carries its position ``seq`` and a ``seal``, the SHA-256 of the previous entry's seal and its own
canonical JSON (an HMAC-SHA-256 when a secret key is given). Loading re-computes the chain and
names the first entry that does not fit it, so an edited, dropped, inserted or reordered entry is
one clear :class:`~taskgate.errors.LedgerFormatError`. Without a key the chain catches edits made
without recomputing it; only a key stops a forger who recomputes it (so does replaying: every
admission is judged again against the plan, see :meth:`taskgate.TaskMachine.from_ledger`).
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
)

from taskgate.core.plan import Plan, Revision
from taskgate.core.verdict import Policy, Reason
from taskgate.errors import LedgerFormatError


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class PlanEntry(_Entry):
    kind: Literal["plan"] = "plan"
    plan: Plan
    lenient: bool = False


class RequestEntry(_Entry):
    """A request opened; ``work_order=None`` closes the last one (a turn that is no request)."""

    kind: Literal["request"] = "request"
    work_order: str | None
    step: str | None = None
    explicit_redo: bool = False


class AttemptEntry(_Entry):
    kind: Literal["attempt"] = "attempt"
    code: str
    tool: str | None = None  # a tool call (tool-bound plans); ``code`` is then empty
    work_order: str
    policy: Policy
    decision: Literal["admit", "refuse"]
    step: str | None = None
    reason: Reason | None = None
    missing: tuple[str, ...] = ()
    #: a receipt recorded after the state moved on (a new request or a revision while its tool
    #: ran): how many entries the ledger had when the call was judged, so a replay judges it there
    judged_at: int | None = None

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Serialized exactly as before tools existed: no ``tool`` key for a booking's attempt,
        no ``judged_at`` for one recorded where it was judged."""
        data: dict[str, Any] = handler(self)
        if self.tool is None:
            data.pop("tool", None)
        if self.judged_at is None:
            data.pop("judged_at", None)
        return data


class RevisionEntry(_Entry):
    kind: Literal["revision"] = "revision"
    revision: Revision


class ApprovalEntry(_Entry):
    """A person approved one call of ``step`` during the current request, whatever the state
    says (a refusal has an escalation path, and it is never silent): who, and why."""

    kind: Literal["approval"] = "approval"
    step: str
    by: str = Field(min_length=1)
    reason: str = ""


class AskEntry(_Entry):
    """The gate held a call of ``step`` and asked the person: the call exactly (``tool``, and
    ``arguments`` as canonical JSON), the ``question`` shown, under ``work_order``, at ``time``
    (seconds since the epoch). ``id`` names it for the answer; ``why`` is what the gate could not
    tell; ``channel`` where the question went (``""``: to the agent, which asks the user, whose
    next message answers it; else a surface's own channel, where the answer comes)."""

    kind: Literal["ask"] = "ask"
    id: str = Field(min_length=1, max_length=64)
    step: str
    tool: str
    arguments: str = "{}"
    question: str
    work_order: str
    why: str = ""
    time: float = 0.0
    channel: str = Field(default="", max_length=64)


class AnswerEntry(_Entry):
    """A person's answer to the ask ``ask``: ``approve`` grants the call shown, once; ``edit``
    grants the same tool with ``arguments`` (canonical JSON) instead; ``reject`` and ``dropped``
    (no answer came before the conversation moved on) grant nothing. ``by`` is who answered,
    ``channel`` how (an interrupt, an elicitation, the conversation, a callback)."""

    kind: Literal["answer"] = "answer"
    ask: str = Field(min_length=1, max_length=64)
    decision: Literal["approve", "edit", "reject", "dropped"]
    by: str = Field(min_length=1)
    channel: str = ""
    arguments: str | None = None
    time: float = 0.0


LedgerEntry = Annotated[
    PlanEntry
    | RequestEntry
    | AttemptEntry
    | RevisionEntry
    | ApprovalEntry
    | AskEntry
    | AnswerEntry,
    Field(discriminator="kind"),
]
#: built when first used (no schema is built on import)
_ENTRY: TypeAdapter[LedgerEntry] = TypeAdapter(LedgerEntry, config=ConfigDict(defer_build=True))


#: the seal the first entry is chained to, when the ledger has no scope
GENESIS = "0" * 64
#: the key of the last line of a dumped ledger: how many entries it has, sealed into the chain
END = "end"


def genesis(scope: str = "") -> str:
    """The seal a ledger's first entry is chained to: :data:`GENESIS`, or one drawn from
    ``scope`` (a conversation's id), so that the rows of one conversation do not fit another's."""
    if not scope:
        return GENESIS
    return hashlib.sha256(b"taskgate ledger scope\n" + scope.encode()).hexdigest()


def ledger_key(secret: bytes | str | None) -> bytes | None:
    """The HMAC key of a secret (``None``: plain SHA-256 seals)."""
    if secret is None:
        return None
    key = secret.encode() if isinstance(secret, str) else bytes(secret)
    if not key:
        raise LedgerFormatError("a ledger's secret key must not be empty")
    return key


def seal(prev: str, seq: int, canonical: bytes, key: bytes | None = None) -> str:
    """The seal of the entry at ``seq`` whose canonical JSON is ``canonical``, chained to
    ``prev`` (the previous entry's seal, or the ledger's :func:`genesis`)."""
    data = b"%s\n%d\n%s" % (prev.encode(), seq, canonical)
    if key is None:
        return hashlib.sha256(data).hexdigest()
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def same_seal(given: str, expected: str) -> bool:
    """Whether a seal read from outside is the one expected (constant time; any text)."""
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def _end_seal(prev: str, count: int, key: bytes | None) -> str:
    return seal(prev, count, END.encode(), key)


class Sealer:
    """The seals of a ledger that grows, each computed once: rows for new entries cost one seal
    each, not a pass over the whole ledger (what a gate that writes its rows one by one needs).
    Thread-safe."""

    def __init__(self, secret: bytes | str | None = None, scope: str = "") -> None:
        self.key = ledger_key(secret)
        self.scope = scope
        self.genesis = genesis(scope)
        self._seals: list[str] = []
        self._lock = threading.Lock()

    def rows(self, entries: Sequence[LedgerEntry], start: int, stop: int) -> list[dict[str, Any]]:
        """The sealed rows of ``entries[start:stop]`` (``entries`` is the ledger, or a longer
        version of the one given before: entries already sealed must not have changed)."""
        return [
            {**orjson.loads(canonical), "seq": seq, "seal": seal_}
            for seq, canonical, seal_ in self.sealed(entries, start, stop)
        ]

    def sealed(
        self, entries: Sequence[LedgerEntry], start: int, stop: int
    ) -> list[tuple[int, bytes, str]]:
        """``(seq, canonical JSON, seal)`` of ``entries[start:stop]``, each entry dumped once."""
        out: list[tuple[int, bytes, str]] = []
        with self._lock:
            seals = self._seals
            for seq in range(min(start, len(seals)), stop):
                canonical = _ENTRY.dump_json(entries[seq])
                if seq == len(seals):
                    prev = seals[-1] if seals else self.genesis
                    seals.append(seal(prev, seq, canonical, self.key))
                if seq >= start:
                    out.append((seq, canonical, seals[seq]))
            return out

    def last(self) -> str:
        with self._lock:
            return self._seals[-1] if self._seals else self.genesis


def sealed_rows(
    entries: Sequence[LedgerEntry], secret: bytes | str | None = None, scope: str = ""
) -> list[dict[str, Any]]:
    """The entries as JSON objects, each with its ``seq`` and ``seal`` (see the module doc)."""
    return Sealer(secret, scope).rows(entries, 0, len(entries))


def dump_ledger(
    entries: Sequence[LedgerEntry], secret: bytes | str | None = None, scope: str = ""
) -> str:
    """Serialize entries as JSON Lines, one sealed entry per line, then a sealed last line that
    says how many there are, so a ledger cut short is named too (see the module doc). Give the
    conversation's id as ``scope`` to tie the ledger to it."""
    sealer = Sealer(secret, scope)
    lines = [
        b'%s,"seq":%d,"seal":"%s"}\n' % (canonical[:-1], seq, seal_.encode())
        for seq, canonical, seal_ in sealer.sealed(entries, 0, len(entries))
    ]
    end = {END: len(entries), "seal": _end_seal(sealer.last(), len(entries), sealer.key)}
    return b"".join([*lines, orjson.dumps(end), b"\n"]).decode()


def load_ledger(text: str, secret: bytes | str | None = None, scope: str = "") -> list[LedgerEntry]:
    """Parse JSON Lines written by :func:`dump_ledger` and check their chain and their end;
    raise naming the first line that is not a valid entry or does not fit the chain, or saying
    that the ledger was cut short. Lines without seals (a ledger written before seals existed)
    load unchecked, but only when no ``secret`` is given and no line has one."""
    rows: list[Mapping[str, Any]] = []
    numbers: list[int] = []
    for n, line in enumerate(text.split("\n"), 1):  # only \n ends a line: JSON may hold U+2028
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise LedgerFormatError(f"ledger line {n} is not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise LedgerFormatError(f"ledger line {n} is not a JSON object")
        rows.append(row)
        numbers.append(n)
    end = rows.pop() if rows and END in rows[-1] else None
    entries, last = _unseal(
        rows, secret, scope, lambda i: f"ledger line {numbers[i]}", in_order=True
    )
    if last is None:  # no seals: a ledger from before them, with no end line either
        if end is not None:
            raise LedgerFormatError("the ledger has an end line but its entries have no seals")
        return entries
    key = ledger_key(secret)
    fits = (
        end is not None
        and end.get(END) == len(entries)
        and isinstance(end.get("seal"), str)
        and same_seal(end["seal"], _end_seal(last, len(entries), key))
    )
    if not fits:
        raise LedgerFormatError(
            f"the ledger's end line is missing or does not fit after its {len(entries)} entries: "
            "it was cut short, or entries after them were dropped"
        )
    return entries


def unseal_rows(
    rows: Sequence[Mapping[str, Any]], secret: bytes | str | None = None, scope: str = ""
) -> list[LedgerEntry]:
    """The entries of sealed rows (as :func:`sealed_rows` makes them, in any order: they are put
    in ``seq`` order), their chain checked; raise :class:`LedgerFormatError` naming the first
    row that is not a valid entry or does not fit. Rows without seals load unchecked only when
    no ``secret`` is given and no row has one. Rows have no end line: a list of rows cut short
    is not detected here."""
    return _unseal(rows, secret, scope, lambda i: f"ledger entry {i}")[0]


def _unseal(
    rows: Sequence[Mapping[str, Any]],
    secret: bytes | str | None,
    scope: str,
    where: Callable[[int], str],
    in_order: bool = False,
) -> tuple[list[LedgerEntry], str | None]:
    """The entries and the last seal (``None`` for rows without seals)."""
    key = ledger_key(secret)
    sealed = [r for r in rows if "seal" in r or "seq" in r]
    if not sealed and key is None:
        return [_entry(dict(r), where(i)) for i, r in enumerate(rows)], None
    if len(sealed) != len(rows):
        i = next(i for i, r in enumerate(rows) if "seal" not in r and "seq" not in r)
        raise LedgerFormatError(f"{where(i)} has no seal: the ledger was edited")
    bad = next((i for i, r in enumerate(rows) if type(r.get("seq")) is not int), None)
    if bad is not None:
        raise LedgerFormatError(f"{where(bad)}'s seq is missing or not a whole number")
    order = list(range(len(rows)))
    if not in_order:  # rows of concurrent calls may be stored in another order than sealed
        order.sort(key=lambda i: int(rows[i]["seq"]))
    out: list[LedgerEntry] = []
    prev = genesis(scope)
    for seq, i in enumerate(order):
        data = dict(rows[i])
        given, at = data.pop("seal", None), data.pop("seq", None)
        if at != seq:
            raise LedgerFormatError(
                f"{where(i)} is entry {at} of the ledger where entry {seq} should be: an entry was "
                "dropped, repeated or moved"
            )
        entry = _entry(data, where(i))
        prev = seal(prev, seq, _ENTRY.dump_json(entry), key)
        if not isinstance(given, str) or not same_seal(given, prev):
            raise LedgerFormatError(
                f"{where(i)} ({_describe(entry)}) does not fit the ledger's chain: it or an "
                f"entry before it was edited, dropped or reordered, or it belongs to another "
                f"conversation" + ("" if key is None else ", or it was sealed with another key")
            )
        out.append(entry)
    return out, prev


def _entry(data: dict[str, Any], where: str) -> LedgerEntry:
    try:
        return _ENTRY.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "the entry"
        raise LedgerFormatError(f"{where} is not a valid entry: {field}: {first['msg']}") from None


def _describe(entry: LedgerEntry) -> str:
    if isinstance(entry, AttemptEntry):
        what = entry.tool or entry.code or "?"
        return f"{entry.decision} of {what} under {entry.work_order}"
    return f"a {entry.kind} entry"


def receipts(entries: Sequence[LedgerEntry]) -> list[AttemptEntry]:
    """The admitted attempts, in order: the verified executions."""
    return [e for e in entries if isinstance(e, AttemptEntry) and e.decision == "admit"]
