"""The self-written ledger rung: PM-Bench's own ``todo_ledger`` scaffold, run unchanged.

The checkout's ``sim/run_todo_ledger.py`` runs in a subprocess against the agent's endpoint (its
``sglang`` backend: an OpenAI-compatible server at ``--base-url``), at the run's temperature,
writing its log under ``OUT/ledger/<run>/``; its rows are scored like every other run's. The
scaffold needs the ``openai`` package in the Python that runs taskgate.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from taskgate.errors import MissingExtraError, ModelError
from taskgate.lab.experiments.pmbench.checkout import Checkout, PMBenchError
from taskgate.lab.experiments.pmbench.experiment import LedgerRunner, RunSpec
from taskgate.llm.endpoint import Endpoint

SCAFFOLD = Path("sim/run_todo_ledger.py")


def ledger_runner(checkout: Checkout, endpoint: Endpoint) -> LedgerRunner:
    """The ledger rung's runs for ``checkout`` on ``endpoint``."""
    script = (checkout.root / SCAFFOLD).resolve()
    if not script.is_file():
        raise PMBenchError(f"{checkout.root}: no {SCAFFOLD} (the self-written ledger rung runs it)")
    if importlib.util.find_spec("openai") is None:
        raise MissingExtraError(
            "pmbench", "the self-written ledger rung (PM-Bench's own scaffold, on the openai SDK)"
        )

    async def run(spec: RunSpec, out: Path) -> list[dict[str, Any]]:
        where = out / "ledger" / spec.name
        where.mkdir(parents=True, exist_ok=True)
        log = where / "run.jsonl"
        log.unlink(missing_ok=True)
        week = where / "week.json"  # the week this run plays (cut to --days N when asked)
        week.write_text(json.dumps(checkout.scenario), encoding="utf-8")
        argv = [
            sys.executable, str(script),
            "--scenario", str(week.resolve()),
            "--log", str(log.resolve()),
            "--out-dir", str(where.resolve()),
            "--ledger-log", str((where / "ledger.jsonl").resolve()),
            "--model", endpoint.model,
            "--backend", "sglang",
            "--base-url", endpoint.base_url,
            "--api-key", endpoint.api_key,
            "--temperature", str(spec.temperature),
        ]  # fmt: skip
        with (where / "output.txt").open("wb") as output:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdout=output,
                stderr=asyncio.subprocess.STDOUT,
                cwd=str(checkout.root.resolve()),
            )
            rc = await proc.wait()
        if rc != 0 or not log.is_file():
            tail = _last_line(where / "output.txt")
            raise ModelError(f"PM-Bench's todo_ledger scaffold exited {rc}: {tail}")
        return read_rows(log)

    return run


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A benchmark log's step rows (its run_metadata line left out)."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PMBenchError(
                f"{path}:{n}: the scaffold's log is not JSON lines ({exc})"
            ) from None
        if isinstance(row, dict) and row.get("record_type") != "run_metadata":
            rows.append(row)
    return rows


def _last_line(path: Path) -> str:
    lines = [
        ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()
    ]
    return lines[-1][:300] if lines else "(no output)"
