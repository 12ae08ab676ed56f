"""Parsing helpers shared by the subcommands."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import typer

T = TypeVar("T")


def split_list(value: str, convert: Callable[[str], T], flag: str) -> list[T]:
    """``"10,15"`` -> ``[10, 15]``, or a usage error naming the flag and the bad item."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise typer.BadParameter(f"{flag} needs at least one value", param_hint=flag)
    out = []
    for item in items:
        try:
            out.append(convert(item))
        except ValueError:
            raise typer.BadParameter(f"{item!r} is not a valid value", param_hint=flag) from None
    return out


def load_rewrites(path: Path | None) -> dict[str, list[str]] | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc}", param_hint="--rewrites") from None
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in data.values()
    ):
        raise typer.BadParameter(
            f"{path} must map template slugs to lists of wordings", param_hint="--rewrites"
        )
    return data


def check_names(names: Sequence[str], known: Sequence[str], flag: str) -> None:
    for name in names:
        if name not in known:
            raise typer.BadParameter(
                f"unknown name {name!r}; choose from: {', '.join(known)}", param_hint=flag
            )
