"""Regular expressions compiled when first used, not when their module is imported.

The readers' modules hold well over a hundred patterns; compiling them all at import cost about
45 ms of every ``import taskgate``. :func:`pattern` returns a stand-in that compiles its pattern on
first use and then behaves as the compiled one (``search``, ``match``, ``sub``, ...).
"""

from __future__ import annotations

import re
from typing import Any, cast


class _Deferred:
    """Compiles on first use, then holds the compiled pattern's methods as its own (a use costs
    what the compiled pattern's does)."""

    def __init__(self, source: str, flags: int) -> None:
        self._source, self._flags = source, flags

    def __getattr__(self, name: str) -> Any:  # only until compiled: then the methods are found
        compiled = re.compile(self._source, self._flags)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)


_METHODS = ("search", "match", "fullmatch", "sub", "subn", "split", "findall", "finditer")


def pattern(source: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(source, flags)``, compiled when first used."""
    return cast("re.Pattern[str]", _Deferred(source, flags))
