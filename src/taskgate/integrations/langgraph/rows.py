"""The gate's receipts ledger in LangGraph state: rows the gate writes, and reading back only those.

Anyone who can send the graph a ``Command`` can write ``taskgate_ledger``: an ``update`` goes
through the reducer, and ``{"__overwrite__": [...]}`` replaces the list outright. So the gate reads
back only the rows it can vouch for:

* with a ``secret``: the rows whose seals (an HMAC-SHA-256 chain, see
  :mod:`taskgate.core.ledger`) verify under it, whichever process wrote them;
* without one: the rows this middleware wrote (each carries a ``writer`` tag, an HMAC under a key
  drawn at random when the middleware was made) and the rows it adopted when it first read the
  thread. A process that has not seen a thread before (a restart) trusts its stored rows; give a
  secret to trust nothing but the gate, across processes too.

Each thread's chain starts from a seal drawn from its id, so rows copied from another thread never
fit. Rows it cannot vouch for are foreign: ignored (and logged), so a forged receipt never counts
and a garbage row never breaks the thread. Rows are put in order by their position (concurrent
tool calls may store them in any order) and the gate's ledger is the chain they form from the plan
on: a row edited in place ends it there. So what a state writer can do is roll the thread back to
an earlier state the gate wrote (as LangGraph's time travel does); it cannot add a receipt.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from taskgate.core.ledger import LedgerEntry, Sealer, genesis, ledger_key, same_seal, seal

_ENTRY: TypeAdapter[LedgerEntry] = TypeAdapter(LedgerEntry)
_ROW_KEYS = ("seq", "seal", "writer")


@dataclass(frozen=True)
class _Row:
    index: int  # where in the state's list
    seq: int
    seal: str
    writer: str | None
    entry: LedgerEntry
    canonical: bytes


@dataclass
class Read:
    """What :meth:`Rows.read` found: the gate's entries, in order, and the rows it ignored."""

    entries: list[LedgerEntry]
    seals: list[str]
    ignored: list[int] = field(default_factory=list)  # indices into the state's list


class Rows:
    """Seals the rows a gate writes and reads back the ones it wrote (see the module doc). Each
    thread's chain starts from a seal drawn from its id, so rows of one thread never fit
    another's."""

    def __init__(self, secret: bytes | str | None = None) -> None:
        self.secret = secret
        self._key = ledger_key(secret)
        self._writer = os.urandom(32)

    def sealer(self, thread: str) -> Sealer:
        return Sealer(self.secret, scope=thread)

    def tagged(self, rows: list[dict[str, Any]], thread: str) -> list[dict[str, Any]]:
        """The rows as the state gets them: with a ``writer`` tag when there is no secret."""
        if self.secret is not None:
            return rows
        return [{**r, "writer": self._tag(thread, r["seal"])} for r in rows]

    def _tag(self, thread: str, seal_: str) -> str:
        data = f"{thread}\n{seal_}".encode()
        return hmac.new(self._writer, data, hashlib.sha256).hexdigest()[:32]

    def stamp(self, thread: str, held: Mapping[str, Any]) -> str:
        """A tag for an operator's held change (an approval) of ``thread``: an HMAC under the
        secret, or without one under this middleware's own key (another process drops it)."""
        key = self._key if self._key is not None else self._writer
        fields = {k: held[k] for k in sorted(held) if k != "tag"}
        data = f"{thread}\n{json.dumps(fields, sort_keys=True)}".encode()
        return hmac.new(key, data, hashlib.sha256).hexdigest()

    def stamped(self, thread: str, held: object) -> bool:
        """Whether ``held`` carries this middleware's (or its secret's) tag for ``thread``."""
        if not isinstance(held, Mapping) or not isinstance(held.get("tag"), str):
            return False
        try:
            return hmac.compare_digest(held["tag"], self.stamp(thread, held))
        except (TypeError, ValueError):
            return False

    def read(self, rows: Sequence[Any], thread: str, adopted: frozenset[str] | None) -> Read:
        """The chain of rows the gate vouches for, in time linear in the rows. ``adopted``: the
        seals of rows this middleware took on trust for the thread, or ``None`` when it has not
        read the thread before."""
        parsed, ignored = _parse(rows)

        def vouched(r: _Row) -> bool:
            if self.secret is not None or adopted is None:
                return True  # the chain's HMAC decides; or a first read trusts what is stored
            tag = self._tag(thread, r.seal)
            return r.seal in adopted or (r.writer is not None and same_seal(r.writer, tag))

        by_seq: dict[int, list[_Row]] = defaultdict(list)
        for r in parsed:
            if vouched(r):
                by_seq[r.seq].append(r)
            else:
                ignored.append(r.index)
        chain: list[_Row] = []
        prev = genesis(thread)
        while True:
            fits = [r for r in by_seq.get(len(chain), []) if self._fits(prev, r)]
            if not fits:
                break
            chain.append(fits[0])
            prev = fits[0].seal
        taken = {r.seal for r in chain}
        ignored += [r.index for rs in by_seq.values() for r in rs if r.seal not in taken]
        return Read([r.entry for r in chain], [r.seal for r in chain], sorted(ignored))

    def _fits(self, prev: str, row: _Row) -> bool:
        return same_seal(row.seal, seal(prev, row.seq, row.canonical, self._key))


def state_entries(
    rows: Sequence[Any], thread: str, secret: bytes | str | None = None
) -> list[LedgerEntry]:
    """The receipts ledger in the state rows of ``thread`` (its ``thread_id``), read as a process
    that has not seen the thread reads it (with ``secret``: only rows sealed under it)."""
    return Rows(secret).read(rows, thread, None).entries


def _parse(rows: Sequence[Any]) -> tuple[list[_Row], list[int]]:
    parsed: list[_Row] = []
    ignored: list[int] = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            ignored.append(i)
            continue
        seq, seal_, writer = (row.get(k) for k in _ROW_KEYS)
        if type(seq) is not int or not isinstance(seal_, str) or not isinstance(writer, str | None):
            ignored.append(i)
            continue
        try:
            entry = _ENTRY.validate_python({k: v for k, v in row.items() if k not in _ROW_KEYS})
        except ValidationError:
            ignored.append(i)
            continue
        parsed.append(_Row(i, seq, seal_, writer, entry, _ENTRY.dump_json(entry)))
    return parsed, ignored
