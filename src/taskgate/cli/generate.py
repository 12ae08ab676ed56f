"""``taskgate generate``: write episodes as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from taskgate.cli.errors import writable_file
from taskgate.cli.options import ScheduleOpt, load_rewrites
from taskgate.errors import TaskgateError
from taskgate.lab.episodes.generator import generate_episode
from taskgate.lab.episodes.models import EpisodeParams
from taskgate.lab.runner.config import MAX_EPISODES


def generate(
    out: Annotated[Path, typer.Option("--out", "-o", help="JSON file to write.")],
    seed: Annotated[int, typer.Option(help="Seed of the first episode.")] = 100,
    episodes: Annotated[
        int, typer.Option(min=1, max=MAX_EPISODES, help="How many (seeds seed, seed+1, ...).")
    ] = 1,
    steps: Annotated[int, typer.Option(min=5, max=18, help="Steps S.")] = 10,
    density: Annotated[float, typer.Option(min=0.0, max=1.0, help="Extra-edge density.")] = 0.15,
    domain: Annotated[Literal["procurement", "release"], typer.Option()] = "procurement",
    brief: Annotated[Literal["amended", "original"], typer.Option()] = "amended",
    para_tier: Annotated[int, typer.Option(min=0, max=2, help="Paraphrase tier.")] = 0,
    rewrites: Annotated[Path | None, typer.Option(help="Rewrite cache (tier 2).")] = None,
    ambiguous_rate: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.0,
    schedule: ScheduleOpt = "paper",
) -> None:
    """Generate episodes: one as a JSON object, several as a JSON list."""
    writable_file(out, "--out")
    cache = load_rewrites(rewrites)
    try:
        eps = [
            generate_episode(
                EpisodeParams(
                    seed=s,
                    steps=steps,
                    density=density,
                    domain=domain,
                    brief=brief,
                    para_tier=para_tier,
                    ambiguous_rate=ambiguous_rate,
                    schedule=schedule,
                ),
                cache,
            )
            for s in range(seed, seed + episodes)
        ]
    except TaskgateError as exc:
        raise typer.BadParameter(str(exc)) from None
    data = (
        eps[0].model_dump(mode="json")
        if episodes == 1
        else [e.model_dump(mode="json") for e in eps]
    )
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    typer.echo(f"wrote {len(eps)} episode(s) to {out}")
