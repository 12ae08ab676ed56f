"""``taskgate merge``: the run directories of a sharded grid, put together into one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from taskgate.cli.errors import warner, writable_dir
from taskgate.lab.runner.shards import merge_runs


def merge(
    out: Annotated[
        Path,
        typer.Argument(help="The merged run directory (new, or one to add to).", metavar="OUT"),
    ],
    sources: Annotated[
        list[Path],
        typer.Argument(help="The shards' run directories (from --shard I/N).", metavar="SHARD_DIR"),
    ],
) -> None:
    """Merge the run directories of a sharded run into OUT; `taskgate report OUT` prints its
    tables, the tables a single run of the whole grid prints."""
    writable_dir(out, "OUT")
    merged = merge_runs(out, sources, warner())
    dup = f"; {merged.duplicates} found twice, kept once" if merged.duplicates else ""
    typer.echo(
        f"merged {len(sources)} run directories into {out}: {merged.runs} episode-arms "
        f"({merged.added} added{dup}) over {merged.episodes} episodes"
    )
