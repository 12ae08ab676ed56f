"""A run directory's card: a rerun under another configuration is refused with one line naming
each difference (a test per recorded field), the grid grows only with --extend, a directory with
runs and no card is refused, and the report names the configuration its tables come from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from taskgate.cli import app
from taskgate.errors import UsageError
from taskgate.lab.runcard import (
    CARD,
    FLAGS,
    GRID,
    SHOWN,
    RunCard,
    describe,
    load,
    settle,
    write,
)

BASE = RunCard(
    command="ladder", agent="llm", compiler="llm", matcher="llm",
    models={"agent": "m", "compiler": "m", "matcher": "m"},
    endpoints={"agent": ["http://a/v1"], "compiler": ["http://a/v1"], "matcher": ["http://a/v1"]},
    arms=["raw", "checklist"], steps=[5], densities=[0.15], episodes=2, first_seed=100,
    domain="procurement", brief="amended", schedule="paper",
)  # fmt: skip

#: each recorded field, changed
CHANGED: dict[str, Any] = {
    "command": "run", "agent": "scripted:perfect", "compiler": "scripted", "matcher": "embedding",
    "models": {"agent": "other", "compiler": "m", "matcher": "m"},
    "arms": ["raw"], "steps": [7], "densities": [0.3], "episodes": 1, "first_seed": 200,
    "episodes_file": "ab" * 32, "domain": "release", "brief": "original", "schedule": "v1",
    "para_tier": 1, "ambiguous_rate": 0.15, "rewrites": "cd" * 32, "corruption": [0.05],
    "repair": True,
    "bypass": False, "embedder": "hash", "think": True, "enable_thinking": False,
    "deepseek_thinking": True,
    "max_tokens": 64, "version": "0.0.1",
}  # fmt: skip


def test_every_field_of_the_card_is_checked() -> None:
    assert set(CHANGED) | set(SHOWN) == set(RunCard.model_fields) == set(FLAGS)


def test_the_order_of_a_list_is_not_a_difference(tmp_path: Path) -> None:
    """--arms checklist,raw is the run --arms raw,checklist made (a report orders arms itself)."""
    write(tmp_path, BASE)
    again = BASE.model_copy(update={"arms": ["checklist", "raw"]})
    assert settle(tmp_path, again, started=True).arms == BASE.arms


def test_endpoints_are_recorded_not_compared(tmp_path: Path) -> None:
    """The same model served from another host or by more replicas resumes the run."""
    write(tmp_path, BASE)
    moved = BASE.model_copy(update={"endpoints": {"agent": ["http://b/v1", "http://c/v1"],
                                                  "compiler": [], "matcher": []}})  # fmt: skip
    assert settle(tmp_path, moved, started=True).endpoints == moved.endpoints


def test_a_run_that_logged_nothing_does_not_hold_its_directory(tmp_path: Path) -> None:
    write(tmp_path, BASE)  # started, then every call failed: no log
    other = BASE.model_copy(update={"models": CHANGED["models"]})
    assert settle(tmp_path, other) == other


@pytest.mark.parametrize("field", sorted(CHANGED))
def test_a_rerun_with_one_field_changed_is_refused_naming_it(field: str, tmp_path: Path) -> None:
    base = BASE  # the embedder acts only on the memory arms
    if field == "embedder":
        base = BASE.model_copy(update={"arms": [*BASE.arms, "topk-replace"]})
    write(tmp_path, settle(tmp_path, base))
    other = base.model_copy(update={field: CHANGED[field]})
    with pytest.raises(UsageError) as err:
        settle(tmp_path, other, started=True)
    message = str(err.value)
    assert FLAGS[field] in message and "another --out directory" in message
    assert "\n" not in message
    assert load(tmp_path) == base  # nothing changed


def test_settings_that_cannot_act_on_the_run_are_not_differences(tmp_path: Path) -> None:
    """Decoding where no role calls a model, the embedder where no arm recalls from memory."""
    scripted = BASE.model_copy(
        update={"models": {"agent": "", "compiler": "", "matcher": ""}, "agent": "scripted:perfect"}
    )
    write(tmp_path, scripted)
    idle = {"think": True, "enable_thinking": False, "deepseek_thinking": True, "max_tokens": 64,
            "embedder": "hash"}  # fmt: skip
    assert settle(tmp_path, scripted.model_copy(update=idle), started=True) == scripted


def test_the_same_card_resumes(tmp_path: Path) -> None:
    write(tmp_path, BASE)
    assert settle(tmp_path, BASE.model_copy(), started=True) == BASE


def test_extend_grows_the_grid_and_nothing_else(tmp_path: Path) -> None:
    write(tmp_path, BASE)
    more = BASE.model_copy(update={"arms": ["raw", "checklist", "enforcement"], "steps": [5, 7],
                                   "episodes": 4})  # fmt: skip
    with pytest.raises(UsageError, match="add --extend"):
        settle(tmp_path, more, started=True)
    merged = settle(tmp_path, more, extend=True, started=True)
    assert load(tmp_path) == BASE  # nothing written until the run starts
    write(tmp_path, merged)
    assert merged.arms == ["raw", "checklist", "enforcement"] and merged.steps == [5, 7]
    assert load(tmp_path) == merged
    with pytest.raises(UsageError, match="the models"):  # not part of the grid
        settle(tmp_path, merged.model_copy(update={"models": CHANGED["models"]}), True, True)
    with pytest.raises(UsageError, match="--steps"):  # a grid that shrinks is another grid
        settle(tmp_path, merged.model_copy(update={"steps": [7]}), True, True)
    assert set(GRID) <= set(RunCard.model_fields)


def test_runs_without_a_card_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="configuration is unknown"):
        settle(tmp_path, BASE, started=True)
    assert not (tmp_path / CARD).exists()


def test_a_damaged_card_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / CARD).write_text(json.dumps({"command": "ladder"}), encoding="utf-8")
    with pytest.raises(Exception, match=f"{CARD}: agent"):
        settle(tmp_path, BASE)


def test_describe_names_the_models_and_grid() -> None:
    line = describe(BASE)
    assert "agent llm (m at http://a/v1)" in line and "steps 5" in line and "seed 100" in line


SCRIPTED = ["ladder", "--agent", "scripted:perfect", "--arms", "raw", "--steps", "5",
            "--episodes", "1"]  # fmt: skip


def test_the_ladder_refuses_a_mismatched_resume_and_extends_on_request(tmp_path: Path) -> None:
    out = ["--out", str(tmp_path / "run")]
    first = CliRunner().invoke(app, [*SCRIPTED, *out])
    assert first.exit_code == 0, first.output
    assert "configuration: taskgate ladder" in first.output
    seed = CliRunner().invoke(app, [*SCRIPTED, *out, "--seed", "7"])
    assert seed.exit_code == 2 and "--seed 100 (this run: 7)" in seed.output
    grown = [*SCRIPTED[:-2], "--episodes", "2", *out]
    refused = CliRunner().invoke(app, grown)
    assert refused.exit_code == 2 and "add --extend" in refused.output
    extended = CliRunner().invoke(app, [*grown, "--extend"])
    assert extended.exit_code == 0, extended.output
    assert load(tmp_path / "run").episodes == 2  # type: ignore[union-attr]
    report = CliRunner().invoke(app, ["report", str(tmp_path / "run")])
    assert report.exit_code == 0, report.output
    assert f"{tmp_path / 'run'}: taskgate ladder" in report.output  # the tables' configuration


def test_the_mem0_arms_model_is_recorded_under_a_scripted_agent() -> None:
    from taskgate.cli.model import card_roles
    from taskgate.cli.options import EndpointOptions

    opts = EndpointOptions(base_url=["http://a/v1"], model="qwen")
    models, urls = card_roles(opts, "scripted:perfect", "scripted", "scripted", memory=True)
    assert models == {"agent": "", "compiler": "", "matcher": "", "memory": "qwen"}
    assert urls["memory"] == ["http://a/v1"]
    card = BASE.model_copy(update={"models": models, "endpoints": urls})
    assert "memory mem0 (qwen at http://a/v1)" in describe(card)


def test_extend_takes_the_new_cards_settings_where_they_start_to_act(tmp_path: Path) -> None:
    """A run with no memory arm ignores --embedder; once --extend adds one, the card says which
    embedder it ran with, and a later resume with the other is refused."""
    write(tmp_path, BASE.model_copy(update={"embedder": "hash"}))
    more = BASE.model_copy(update={"arms": [*BASE.arms, "topk-replace"], "embedder": "minilm"})
    merged = settle(tmp_path, more, extend=True, started=True)
    assert merged.embedder == "minilm" and merged.arms == more.arms
    write(tmp_path, merged)
    with pytest.raises(UsageError, match="--embedder"):
        settle(tmp_path, more.model_copy(update={"embedder": "hash"}), started=True)
