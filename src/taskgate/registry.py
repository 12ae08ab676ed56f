"""Names chosen on the command line or in a config, each mapped to its entry.

One :class:`Registry` type holds every such choice: the rungs (:data:`taskgate.rungs.RUNGS`), the
lab's arms, the role factories (agents, matchers, compilers), and each experiment's arms. An
**alias** maps another name for the same thing onto an entry: the ladder's names for a testbed's
own (``enforcement`` for tau2's ``gated``), or an old name kept for old scripts. Asking for a name
that is not there is one :class:`~taskgate.errors.UnknownNameError` naming the nearest choice and
every choice.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from typing import Generic, TypeVar

from taskgate.errors import UnknownNameError, UsageError

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """An ordered name -> entry mapping with aliases. As a ``Mapping`` it lists, iterates and
    counts its own names only; ``registry[alias]`` and ``alias in registry`` resolve aliases."""

    def __init__(
        self, kind: str, entries: Iterable[tuple[str, T]] = (), aliases: Mapping[str, str] = {}
    ) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        for name, entry in entries:
            self.register(name, entry)
        for alias, name in aliases.items():
            self.alias(alias, name)

    def register(self, name: str, entry: T) -> T:
        """Add ``entry`` under ``name`` (a name taken already is a usage mistake: raise)."""
        if name in self._entries or name in self._aliases:
            raise UsageError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def alias(self, alias: str, name: str) -> None:
        """Let ``alias`` stand for the registered ``name``."""
        if name not in self._entries:
            raise UsageError(f"alias {alias!r} names no {self.kind}: {name!r}")
        if alias in self._entries:
            raise UsageError(f"alias {alias!r} is already a {self.kind} of its own")
        self._aliases[alias] = name

    def canonical(self, name: str) -> str:
        """The registered name ``name`` stands for (raise :class:`UnknownNameError` if none)."""
        if name in self._entries:
            return name
        if name in self._aliases:
            return self._aliases[name]
        raise UnknownNameError(self.unknown(name))

    def choose(self, name: str) -> T:
        """The entry of ``name`` or of the name it is an alias of."""
        return self._entries[self.canonical(name)]

    def choose_all(self, names: Iterable[str]) -> tuple[str, ...]:
        """Each name's registered name, in order, each once (the first unknown one raises)."""
        return tuple(dict.fromkeys(self.canonical(n) for n in names))

    def unknown(self, name: str) -> str:
        """The one line that says ``name`` is not a choice: the nearest one, then all."""
        close = difflib.get_close_matches(name, [*self._entries, *self._aliases], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        also = f" (or {', '.join(self._aliases)})" if self._aliases else ""
        return f"unknown {self.kind} {name!r}{hint}; choose from: {', '.join(self._entries)}{also}"

    def choices(self) -> str:
        """The names and, in brackets, the aliases: for a flag's help."""
        also = f" (or {', '.join(self._aliases)})" if self._aliases else ""
        return ", ".join(self._entries) + also

    @property
    def aliases(self) -> Mapping[str, str]:
        return dict(self._aliases)

    def __getitem__(self, name: str) -> T:
        if name in self._entries:
            return self._entries[name]
        if name in self._aliases:
            return self._entries[self._aliases[name]]
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._aliases

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self._entries)!r})"
