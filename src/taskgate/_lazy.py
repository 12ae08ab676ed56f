"""Names a package exports from modules that need an extra, imported when first used.

A package's ``__init__`` lists them as ``{name: module}``; ``import taskgate`` then loads only the
light modules, and a name whose extra is missing fails when it is used, in one line naming it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.util import find_spec

from taskgate.errors import MissingExtraError


def lazy(package: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` that imports ``names[attr]`` and returns its ``attr``."""

    def __getattr__(attr: str) -> object:
        module = names.get(attr)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {attr!r}")
        return getattr(importlib.import_module(module), attr)

    return __getattr__


def require(extra: str, what: str, modules: tuple[str, ...]) -> None:
    """Raise :class:`~taskgate.errors.MissingExtraError` naming ``extra`` when any of ``modules``
    (the extra's packages) is not installed."""
    missing = [m for m in modules if find_spec(m) is None]
    if missing:
        raise MissingExtraError(extra, what, missing[0])
