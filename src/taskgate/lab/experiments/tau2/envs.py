"""Fresh airline environments for the offline replays, without re-reading db.json each time.

The database is parsed once and kept as a snapshot; unpickling the snapshot is faster than
validating the 7 MB file again. An environment whose database no WRITE reached is handed out again
as it is: READ tools do not change the database.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from taskgate.errors import LogFormatError
from taskgate.lab.experiments.tau2.gate import require_tau2


class FreshEnvironments:
    def __init__(self, db_path: Path) -> None:
        require_tau2()
        from tau2.domains.airline.data_model import FlightDB

        try:
            db = FlightDB.load(str(db_path))
        except ValueError as exc:  # not JSON, or JSON that is not an airline database
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise LogFormatError(f"{db_path}: not a tau2 airline database: {first}") from None
        self._snapshot = pickle.dumps(db, pickle.HIGHEST_PROTOCOL)
        self._env: Any = None

    def get(self) -> Any:
        """An environment on the pristine database."""
        if self._env is None:
            from tau2.domains.airline.environment import get_environment

            self._env = get_environment(db=pickle.loads(self._snapshot))
        return self._env

    def written(self) -> None:
        """The current environment's database is (or may be) changed: the next one is fresh."""
        self._env = None
