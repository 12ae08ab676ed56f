"""The PM-Bench study: every rung's runs into a run directory, resumable, scored by the
benchmark's own scorer.

Layout of ``OUT``::

    settings.json              the roles, the checkout's version and the week's hash
    runs/<rung>.<tag>.jsonl    a start line, one line per step (:class:`.loop.StepRecord`), and
                               an end line with the scorer's summary; ``tag`` is ``t0`` for the
                               run at temperature 0 and ``s<k>`` for the k-th sampled run
    logs/<rung>.<tag>.jsonl    the benchmark's own log of that run (``sim/pm_bench.py score``
                               reads it)

A run file without its end line is rerun from the start. The table is built from ``OUT`` alone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskgate.errors import LogFormatError, ModelError, UsageError
from taskgate.lab.experiments.pmbench.checkout import Checkout, PMBenchError, sha256
from taskgate.lab.experiments.pmbench.coupling import PMBENCH_RUNGS
from taskgate.lab.experiments.pmbench.loop import Limits, PMRoles, StepRecord, run_week
from taskgate.lab.experiments.pmbench.week import Week
from taskgate.lab.experiments.protocol import Header
from taskgate.lab.progress import Progress

SETTINGS = "settings.json"


class PMSettings(Header):
    kind: Literal["pmbench"] = "pmbench"
    agent: str
    compiler: str
    matcher: str
    version: str  # the checkout's module: "pinned" or its sha256 prefix
    scenario: str  # the week's sha256
    days: int  # the days run (all of the week's, or its first N)
    max_invalid: int
    max_queries: int
    temperature: float  # the sampled runs'
    seed: int  # the first sampled run's
    schema_form: str = "json_schema"
    request: dict[str, Any] = Field(default_factory=dict)  # what the agent's calls add


class RunStart(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["start"] = "start"
    rung: str
    temperature: float
    sample: int  # -1 for the run at temperature 0
    seed: int | None


class RunEnd(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["end"] = "end"
    summary: dict[str, int]  # the benchmark's scorer, unchanged
    steps: int


@dataclass(frozen=True)
class RunSpec:
    rung: str
    temperature: float
    sample: int  # -1: the greedy run
    seed: int | None

    @property
    def tag(self) -> str:
        return "t0" if self.sample < 0 else f"s{self.sample}"

    @property
    def name(self) -> str:
        return f"{self.rung}.{self.tag}"


@dataclass(frozen=True)
class PMConfig:
    rungs: tuple[str, ...] = tuple(PMBENCH_RUNGS)
    greedy: bool = True  # one run at temperature 0
    samples: int = 0  # runs at ``temperature``
    temperature: float = 0.7
    seed: int = 0
    concurrency: int = 4
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rungs", PMBENCH_RUNGS.choose_all(self.rungs))
        if not self.greedy and self.samples < 1:
            raise UsageError("nothing to run: no run at temperature 0 and no sampled runs")
        if self.samples < 0 or self.concurrency < 1 or not 0 < self.temperature <= 2:
            raise UsageError("samples must be >= 0, concurrency >= 1, temperature in (0, 2]")

    def runs(self) -> list[RunSpec]:
        out = []
        for rung in self.rungs:
            if self.greedy:
                out.append(RunSpec(rung, 0.0, -1, None))
            out += [RunSpec(rung, self.temperature, k, self.seed + k) for k in range(self.samples)]
        return out


#: builds a run's roles; the ledger rung runs the benchmark's own scaffold instead
RoleFactory = Callable[[RunSpec], PMRoles]
#: runs the benchmark's todo_ledger scaffold for one run; returns its log rows
LedgerRunner = Callable[[RunSpec, Path], Awaitable[list[dict[str, Any]]]]


def settings_of(checkout: Checkout, names: tuple[str, str, str], config: PMConfig) -> PMSettings:
    limits = config.limits
    return PMSettings(
        agent=names[0],
        compiler=names[1],
        matcher=names[2],
        version=checkout.version,
        scenario=sha256(checkout.scenario_path),
        days=checkout.days,
        max_invalid=limits.max_invalid,
        max_queries=limits.max_queries,
        schema_form=limits.schema,
        temperature=config.temperature,
        seed=config.seed,
        request=dict(limits.request),
    )


async def run_pmbench(
    checkout: Checkout,
    config: PMConfig,
    out: Path,
    roles: RoleFactory,
    names: tuple[str, str, str],
    ledger: LedgerRunner | None = None,
    progress: Progress | None = None,
) -> Progress:
    """Run every run of ``config`` not yet finished in ``out`` (rerunning resumes)."""
    settings = settings_of(checkout, names, config)
    old = read_settings(out)
    if old is not None and old != settings:
        raise UsageError(f"{out} holds a PM-Bench run of other settings; use another --out")
    if "self-ledger" in config.rungs and ledger is None:
        raise UsageError(
            "the self-written ledger rung is the benchmark's own todo_ledger scaffold: it needs a "
            "model endpoint (--agent llm)"
        )
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    if old is None:
        _atomic(out / SETTINGS, settings.model_dump_json(indent=1) + "\n")
    specs = config.runs()
    progress = progress or Progress()
    progress.total = len(specs)
    try:
        week = Week(checkout)
    except Exception as exc:  # the checkout's own code on its own week
        why = f"{type(exc).__name__}: {exc}"
        raise PMBenchError(
            f"{checkout.root}: the checkout failed to set up the week: {why}"
        ) from None
    pending = iter(specs)

    async def worker() -> None:
        for spec in pending:
            if finished(out, spec):
                progress.skipped += 1
                progress.advance()
                continue
            try:
                if spec.rung == "self-ledger":
                    assert ledger is not None
                    rows = await ledger(spec, out)
                    steps = [StepRecord(**_ledger_row(r)) for r in rows]
                else:
                    steps = []
                    await run_week(week, spec.rung, roles(spec), steps.append, config.limits)
                _write(out, spec, checkout, steps)
            except (ModelError, PMBenchError) as exc:
                progress.fail(f"{spec.name}: {exc}")
                continue
            except Exception as exc:  # the checkout's own code failed inside the run: one line
                progress.fail(f"{spec.name}: {type(exc).__name__}: {exc}")
                continue
            progress.advance()

    await asyncio.gather(*(worker() for _ in range(min(config.concurrency, len(specs)))))
    return progress


def _ledger_row(row: dict[str, Any]) -> dict[str, Any]:
    keep = ("day", "step_id", "choice", "task_ids", "check_time", "state_queries")
    got = {k: row[k] for k in keep if k in row}
    got["choice"] = str(got.get("choice", "NONE"))
    got["state_queries"] = dict(got.get("state_queries") or {})
    return got  # StepRecord validates the rest: a malformed row fails the run, named


def _write(out: Path, spec: RunSpec, checkout: Checkout, steps: list[StepRecord]) -> None:
    """Score the run with the benchmark's scorer, then write the benchmark's log and the run's
    file (last: it marks the run finished)."""
    rows = [s.row() for s in steps]
    try:
        summary, _, _ = checkout.pm.score_log(checkout.scenario, rows)
        counts = {str(k): int(v) for k, v in summary.items()}
    except Exception as exc:  # the checkout's scorer on our log: name it, keep nothing
        raise PMBenchError(f"the benchmark's scorer failed: {type(exc).__name__}: {exc}") from None
    start = RunStart(
        rung=spec.rung, temperature=spec.temperature, sample=spec.sample, seed=spec.seed
    )
    end = RunEnd(summary=counts, steps=len(steps))
    meta = {
        "record_type": "run_metadata",
        "mode": f"taskgate-{spec.rung}",
        "entry_count": len(rows),
    }
    log = "\n".join(json.dumps(r) for r in [meta, *rows]) + "\n"
    _atomic(out / "logs" / f"{spec.name}.jsonl", log)
    lines = [start.model_dump_json(), *(s.model_dump_json() for s in steps), end.model_dump_json()]
    _atomic(out / "runs" / f"{spec.name}.jsonl", "\n".join(lines) + "\n")


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(".part")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def finished(out: Path, spec: RunSpec) -> bool:
    got = read_run(out / "runs" / f"{spec.name}.jsonl")
    return got is not None and (got[0].temperature, got[0].seed) == (spec.temperature, spec.seed)


def read_settings(out: Path) -> PMSettings | None:
    path = out / SETTINGS
    if not path.exists():
        return None
    try:
        return PMSettings.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise LogFormatError(
            f"{path}: not a PM-Bench run's settings ({exc.errors()[0]['msg']})"
        ) from None


def read_run(path: Path) -> tuple[RunStart, list[StepRecord], RunEnd] | None:
    """A finished run's file, or None when it is absent or unfinished."""
    if not path.exists():
        return None
    try:
        lines = [ln for ln in path.read_bytes().splitlines() if ln.strip()]
        if len(lines) < 2:
            return None
        start = RunStart.model_validate_json(lines[0])
        end = RunEnd.model_validate_json(lines[-1])
        steps = [StepRecord.model_validate_json(ln) for ln in lines[1:-1]]
    except ValidationError:
        return None
    return start, steps, end
