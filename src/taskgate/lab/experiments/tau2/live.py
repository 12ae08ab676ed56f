"""Live runs: tau2's own orchestrator, agent, user simulator and scoring, one rung per arm.

Each simulation is ``tau2.run.run_task`` unchanged. The arms differ only in the domain it is given:
``ungated`` runs the stock ``airline`` domain; ``state-block``, ``advisory`` and ``gated`` run the same
environment with :func:`.gate.gate_environment` installed at ``Environment.get_response``,
registered with tau2 under a domain name of their own. tau2's evaluator rebuilds the environment
from that name to replay the transcript, so the replay passes through the same rung and reproduces
the same tool results; the gold environment executes its actions directly and is never gated.

Arms are paired: every arm runs the same tasks under the same per-trial seeds (derived from one
seed as tau2's ``run_tasks`` does). Every finished simulation is one JSON line in
``OUT/<arm>.jsonl``, flushed as it lands, so an interrupted run resumes where it stopped; a
simulation that raises (an endpoint that stays down) is left unfinished and retried by a rerun.
``OUT/<arm>.json`` is the arm as a tau2 results file (what ``taskgate tau2 replay`` and tau2's own
viewer read), rewritten at the end of every run.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai

from taskgate.errors import LogFormatError, ModelError, TaskgateError
from taskgate.files import read_json, read_text
from taskgate.lab.experiments.tau2.gate import Mode, gate_environment, require_tau2
from taskgate.lab.experiments.tau2.rules import Ruleset
from taskgate.lab.progress import Progress
from taskgate.lab.rundir import SkippedLine, drop_torn_tail, warn_skipped
from taskgate.registry import Registry

#: what a model endpoint that fails raises through tau2 (litellm's errors are openai's); anything
#: else is a bug and stops the run
MODEL_ERRORS = (openai.APIError, ModelError)
#: Table 20's arms (the paper's names), with the ladder's names for the same couplings as aliases
ARMS: Registry[str] = Registry(
    "tau2 arm",
    (
        ("ungated", "the stock airline domain, nothing coupled"),
        ("state-block", "the state block shown at each call"),
        ("advisory", "the gate's verdict told, the call still executed"),
        ("gated", "refused calls do not execute"),
    ),
    aliases={"raw": "ungated", "checklist": "state-block", "directive": "advisory",
             "enforcement": "gated"},
)  # fmt: skip
_TRANSPORT = frozenset({"api_base", "api_key", "timeout", "num_retries"})
_MODES: dict[str, Mode] = {"state-block": "state-block", "advisory": "advisory", "gated": "gated"}


@dataclass(frozen=True)
class Role:
    """One simulated party's model, as litellm names it (``openai/<model>`` for any
    OpenAI-compatible endpoint) and the keyword arguments each completion gets."""

    model: str
    args: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def openai_compatible(
        cls,
        base_url: str,
        model: str,
        api_key: str = "EMPTY",
        *,
        timeout: float = 900.0,
        max_tokens: int | None = None,
        enable_thinking: bool | None = None,
        retries: int | None = None,
    ) -> Role:
        args: dict[str, Any] = {
            "api_base": base_url,
            "api_key": api_key,
            "temperature": 0.0,
            "timeout": timeout,
        }
        if retries is not None:  # litellm's own retries of a failed call
            args["num_retries"] = retries
        if max_tokens is not None:
            args["max_tokens"] = max_tokens
        if enable_thinking is not None:
            args["extra_body"] = {"chat_template_kwargs": {"enable_thinking": enable_thinking}}
        return cls(f"openai/{model}", args)

    def public(self) -> dict[str, Any]:
        """What the run records of this role: everything but the key."""
        return {"model": self.model, "args": {k: v for k, v in self.args.items() if k != "api_key"}}

    def identity(self) -> dict[str, Any]:
        """What makes two runs comparable: the model and its decoding, not where it is served
        (the embedded model gets a fresh port every run) or how long a call may wait."""
        args = {k: v for k, v in self.args.items() if k not in _TRANSPORT}
        return {"model": self.model, "args": args}


@dataclass(frozen=True)
class LiveConfig:
    agent: Role
    user: Role
    arms: tuple[str, ...] = tuple(ARMS)
    trials: int = 1
    seed: int = 300
    max_steps: int = 200
    max_errors: int = 10
    concurrency: int = 4

    def __post_init__(self) -> None:
        if not self.arms:
            raise TaskgateError(f"no arm to run: choose from {', '.join(ARMS)}")
        object.__setattr__(self, "arms", ARMS.choose_all(self.arms))  # the paper's names
        for name in ("trials", "max_steps", "max_errors", "concurrency"):
            if getattr(self, name) < 1:
                raise TaskgateError(f"{name} must be at least 1, got {getattr(self, name)}")

    def seeds(self) -> list[int]:
        """One seed per trial, shared by every arm and task (tau2's own derivation)."""
        rng = random.Random(self.seed)
        return [rng.randint(0, 1000000) for _ in range(self.trials)]


def ruleset_fingerprint(ruleset: Ruleset) -> str:
    return hashlib.sha256(ruleset.model_dump_json().encode()).hexdigest()[:12]


def arm_domain(arm: str, ruleset: Ruleset) -> str:
    """The tau2 domain name an arm runs under, registering its environment on first use."""
    require_tau2()
    if arm == "ungated":
        return "airline"
    from tau2.domains.airline.environment import get_environment
    from tau2.registry import registry

    mode = _MODES[arm]
    name = f"airline+taskgate-{arm}-{ruleset_fingerprint(ruleset)}"
    if name not in registry.get_domains():

        def make(solo_mode: bool = False) -> Any:
            env = get_environment(solo_mode=solo_mode)
            gate_environment(env, ruleset, mode)
            return env

        registry.register_domain(make, name)
    return name


def load_task_file(path: Path) -> list[Any]:
    """tau2 ``Task`` objects from a tasks.json, with a clear error for anything else."""
    require_tau2()
    from pydantic import ValidationError
    from tau2.data_model.tasks import Task

    try:
        data = read_json(path, "tau2 tasks file")
        if not isinstance(data, list):
            raise LogFormatError(f"{path}: expected a JSON list of tasks")
        return [Task.model_validate(t) for t in data]
    except (OSError, json.JSONDecodeError, ValidationError) as exc:
        detail = str(exc).splitlines()[0]
        raise LogFormatError(f"{path} is not a tau2 task file: {detail}") from None


def run_live(
    config: LiveConfig,
    tasks: Sequence[Any],
    ruleset: Ruleset,
    out: Path,
    progress: Progress | None = None,
) -> None:
    """Run every (arm, task, trial) not already in ``out``; write each arm's results file."""
    require_tau2()
    progress = progress or Progress()
    out.mkdir(parents=True, exist_ok=True)
    _check_config(out, config, tasks, ruleset)
    seeds = config.seeds()
    domains = {arm: arm_domain(arm, ruleset) for arm in config.arms}
    lock = threading.Lock()
    done = {
        arm: {(s["task_id"], s["trial"]) for s in read_simulations(out / f"{arm}.jsonl")}
        for arm in config.arms
    }
    jobs = []  # arms innermost, so that an interrupted run holds paired simulations
    for trial, seed in enumerate(seeds):
        for task in tasks:
            for arm in config.arms:
                if (task.id, trial) in done[arm]:
                    progress.skipped += 1
                else:
                    jobs.append((arm, task, trial, seed))
    progress.total = len(jobs)

    def one(job: tuple[str, Any, int, int]) -> None:
        arm, task, trial, seed = job
        try:
            sim = _simulate(config, domains[arm], task, seed)
        except MODEL_ERRORS as exc:  # an endpoint that stays down: leave it for a rerun
            with lock:
                progress.fail(f"{arm} task {task.id} trial {trial}: {type(exc).__name__}: {exc}")
            return
        sim.trial = trial
        line = sim.model_dump_json() + "\n"
        with lock:
            with (out / f"{arm}.jsonl").open("a", encoding="utf-8") as fh:
                fh.write(line)
            progress.advance()

    try:
        with ThreadPoolExecutor(max_workers=config.concurrency) as pool:
            list(pool.map(one, jobs))
    finally:  # interrupted too: the results files hold what finished
        info = _info(config)
        for arm in config.arms:
            write_results(out, arm, info, tasks)


def _simulate(config: LiveConfig, domain: str, task: Any, seed: int) -> Any:
    from tau2.run import run_task

    return run_task(
        domain=domain,
        task=task,
        agent="llm_agent",
        user="user_simulator",
        llm_agent=config.agent.model,
        llm_args_agent=dict(config.agent.args),
        llm_user=config.user.model,
        llm_args_user=dict(config.user.args),
        max_steps=config.max_steps,
        max_errors=config.max_errors,
        seed=seed,
    )


def read_simulations(path: Path) -> list[dict[str, Any]]:
    """The finished simulations of one arm; a torn last line (an interrupted write) is dropped,
    and a line that is not a simulation is skipped with a warning naming it (a rerun redoes it)."""
    if not path.exists():
        return []
    drop_torn_tail(path)
    sims = []
    for n, line in enumerate(read_text(path, "simulations file").split("\n"), 1):
        if not line.strip():
            continue
        try:
            sim = json.loads(line)
        except (ValueError, RecursionError):
            sim = None
        if isinstance(sim, dict) and {"task_id", "trial"} <= sim.keys():
            sims.append(sim)
        else:
            warn_skipped(SkippedLine(path, n, "not a simulation record"))
    return sims


def read_config(path: Path) -> dict[str, Any]:
    """A run directory's ``config.json``, or an error naming it."""
    config = read_json(path, "tau2 run configuration")
    if not isinstance(config, dict):
        raise LogFormatError(f"{path} is not a tau2 run configuration (expected a JSON object)")
    return config


def _info(config: LiveConfig) -> Any:
    from tau2.run import get_info

    return get_info(
        domain="airline",
        agent="llm_agent",
        user="user_simulator",
        llm_agent=config.agent.model,
        llm_args_agent=config.agent.public()["args"],
        llm_user=config.user.model,
        llm_args_user=config.user.public()["args"],
        num_trials=config.trials,
        max_steps=config.max_steps,
        max_errors=config.max_errors,
        seed=config.seed,
    )


def write_results(out: Path, arm: str, info: Any, tasks: Sequence[Any]) -> Path:
    """``OUT/<arm>.json``: the arm's simulations as a tau2 results file (``info``: tau2's
    run description)."""
    from tau2.data_model.simulation import Results, SimulationRun

    sims = [SimulationRun.model_validate(s) for s in read_simulations(out / f"{arm}.jsonl")]
    sims.sort(key=lambda s: (s.trial or 0, str(s.task_id)))
    results = Results(info=info, tasks=list(tasks), simulations=sims)
    path = out / f"{arm}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(results.model_dump_json(indent=1), encoding="utf-8")
    tmp.replace(path)
    return path


def _check_config(out: Path, config: LiveConfig, tasks: Sequence[Any], ruleset: Ruleset) -> None:
    """A run directory belongs to one configuration; resuming it under another is refused."""
    record = {
        "agent": config.agent.identity(),
        "user": config.user.identity(),
        "trials": config.trials,
        "seed": config.seed,
        "max_steps": config.max_steps,
        "max_errors": config.max_errors,
        "ruleset": ruleset_fingerprint(ruleset),
        "tasks": [str(t.id) for t in tasks],
    }
    path = out / "config.json"
    if path.exists():
        old = read_config(path)
        old_arms = old.pop("arms", [])
        # more trials extend a run: trial t's seed does not depend on how many trials there are
        record["trials"] = max(config.trials, old.get("trials", 0))
        changed = sorted(k for k in record.keys() | old.keys() if record.get(k) != old.get(k))
        if changed:
            raise TaskgateError(
                f"{out} holds a run with other settings ({', '.join(changed)}); "
                "use another --out or the same settings"
            )
        record["arms"] = [a for a in ARMS if a in old_arms or a in config.arms]
    else:
        record["arms"] = [a for a in ARMS if a in config.arms]
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
