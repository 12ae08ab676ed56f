"""Names a package exports from modules that need an extra, imported when first used.

A package's ``__init__`` lists them as ``{name: module}``; ``import taskgate`` then loads only the
light modules, and a name whose extra is missing fails when it is used, in one line naming it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy(package: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` that imports ``names[attr]`` and returns its ``attr``."""

    def __getattr__(attr: str) -> object:
        module = names.get(attr)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {attr!r}")
        return getattr(importlib.import_module(module), attr)

    return __getattr__
