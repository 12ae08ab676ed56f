"""One registry type for everything chosen by name: aliases, the nearest name, Mapping behaviour."""

from __future__ import annotations

import pytest

from taskgate import RUNGS, UnknownNameError, UsageError, get_rung
from taskgate.registry import Registry


def colours() -> Registry[int]:
    return Registry("colour", [("red", 1), ("green", 2)], aliases={"crimson": "red"})


def test_an_alias_resolves_to_its_entry_and_lists_as_nothing_of_its_own() -> None:
    reg = colours()
    assert reg["crimson"] == reg.choose("crimson") == 1 and "crimson" in reg
    assert list(reg) == ["red", "green"] and len(reg) == 2
    assert reg.canonical("crimson") == "red"
    assert reg.choose_all(["crimson", "green", "red"]) == ("red", "green")  # each once, in order


def test_an_unknown_name_is_one_line_with_the_nearest_and_every_choice() -> None:
    with pytest.raises(UnknownNameError) as caught:
        colours().choose("gren")
    assert str(caught.value) == (
        "unknown colour 'gren' (did you mean 'green'?); choose from: red, green (or crimson)"
    )
    assert colours().get("nope") is None  # the Mapping protocol still answers None
    with pytest.raises(KeyError):
        _ = colours()["nope"]


def test_a_name_or_alias_cannot_be_taken_twice() -> None:
    reg = colours()
    with pytest.raises(UsageError, match="registered twice"):
        reg.register("crimson", 3)
    with pytest.raises(UsageError, match="names no colour"):
        reg.alias("teal", "blue")
    with pytest.raises(UsageError, match="of its own"):
        reg.alias("green", "red")


def test_the_rungs_are_a_registry() -> None:
    assert isinstance(RUNGS, Registry) and next(iter(RUNGS)) == "raw"
    with pytest.raises(UnknownNameError, match="did you mean 'enforcement'"):
        get_rung("enforcment")
