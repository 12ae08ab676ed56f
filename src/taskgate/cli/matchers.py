"""``taskgate matchers``: agreement of matchers with the scripted step, per wording tier and label."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from taskgate.cli.common import run_with_progress
from taskgate.cli.errors import writable_file
from taskgate.cli.options import EndpointOptions, command, load_rewrites, split_list
from taskgate.lab.agents.base import Oracle
from taskgate.lab.episodes.models import Episode
from taskgate.lab.progress import Progress
from taskgate.lab.runner.roles import ROLES, Clients, RoleContext
from taskgate.lab.scoring.agreement import Agreement, evaluate, probes
from taskgate.lab.scoring.report import agreement_table, share
from taskgate.llm.calls import CallInfo
from taskgate.llm.client import OnCall
from taskgate.roles import Matcher

TIERS = ("0", "1", "2", "heldout")


@command
def matchers(
    endpoint: EndpointOptions,
    matcher: Annotated[
        str,
        typer.Option(help=f"Comma-separated matchers: {', '.join(ROLES.names('matcher'))}."),
    ] = "embedding",
    tiers: Annotated[
        str,
        typer.Option(help="Comma-separated wording tiers: 0, 1, 2 (needs --rewrites), heldout."),
    ] = "0,1,heldout",
    rewrites: Annotated[Path | None, typer.Option(help="Rewrite cache (tier 2).")] = None,
    domain: Annotated[Literal["both", "procurement", "release"], typer.Option()] = "both",
    episodes: Annotated[int, typer.Option(min=1, max=1024, help="Episodes per domain.")] = 64,
    seed: Annotated[int, typer.Option(help="First seed.")] = 100,
    steps: Annotated[int, typer.Option(min=5, max=18)] = 15,
    ambiguous_rate: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.15,
    fmt: Annotated[Literal["md", "latex"], typer.Option(help="Table format.")] = "md",
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the counts as JSON here.")
    ] = None,
) -> None:
    """Score matchers against the scripted step on generated episodes' requests (no agent).

    Tiers 0 and 1 are the generator's paraphrases (what the embedding matcher's thresholds were
    calibrated on); ``heldout`` is a set of wordings written for evaluation only. For llm and
    cascade, the model flags say where the matcher's model is; the model calls are counted.
    """
    names = split_list(matcher, str, "--matcher")
    for name in names:
        if name not in ROLES.names("matcher"):
            raise typer.BadParameter(
                f"unknown matcher {name!r}; choose from: {', '.join(ROLES.names('matcher'))}",
                param_hint="--matcher",
            )
    tier_list = split_list(tiers, str, "--tiers")
    for t in tier_list:
        if t not in TIERS:
            raise typer.BadParameter(
                f"{t!r} is not one of {', '.join(TIERS)}", param_hint="--tiers"
            )
    if "2" in tier_list and rewrites is None:
        raise typer.BadParameter("tier 2 needs --rewrites FILE", param_hint="--rewrites")
    writable_file(json_out, "--json")
    cache = load_rewrites(rewrites)
    domains = ["procurement", "release"] if domain == "both" else [domain]
    seeds = range(seed, seed + episodes)
    items = list(probes(tier_list, domains, seeds, steps, ambiguous_rate, cache))
    results: list[Agreement] = []
    calls: dict[str, int] = {}
    uses_model = any(ROLES.needs_model("matcher", n) for n in names)

    async def work(progress: Progress, clients: Clients) -> None:
        progress.total = len(names)
        for name in names:
            counted = [0]

            def on_call(info: CallInfo, counted: list[int] = counted) -> None:
                counted[0] += 1
                progress.count_call(info)

            def build(ep: Episode, name: str = name, on: OnCall = on_call) -> Matcher:
                return ROLES.matcher(name, RoleContext(Oracle(ep), clients, on))

            results.append(await evaluate(name, build, items))
            calls[name] = counted[0]
            progress.advance()

    run_with_progress("matchers", work, uses_model, endpoint, unit="matcher")
    typer.echo(f"{len(items)} requests per matcher, {len(domains)} domain(s), S={steps}\n")
    typer.echo(agreement_table(results, fmt))
    for res in results:
        tp, fp, fn = (res.redo[k] for k in ("tp", "fp", "fn"))
        line = f"\n{res.matcher}: explicit redo precision {share(tp, tp + fp)}, recall "
        line += share(tp, tp + fn)
        if ROLES.needs_model("matcher", res.matcher):
            line += f"; model calls {calls[res.matcher]} for {len(items)} requests"
        typer.echo(line)
    if json_out is not None:
        data = [{**r.as_json(), "model_calls": calls[r.matcher]} for r in results]
        json_out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
