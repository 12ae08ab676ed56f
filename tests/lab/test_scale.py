"""Grids beyond one process: --shard i/N with merge, and Ray tasks, give a local run's tables."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
from pathlib import Path

import pytest

from taskgate import ChatClient, Endpoint, FakeServer, protocol_responder
from taskgate.errors import LogFormatError, UsageError
from taskgate.lab import EpisodeParams, LadderConfig, generate_episode, run_ladder
from taskgate.lab.rundir import COMPILED, EPISODES, LOG, read_episodes, read_log, write_episodes
from taskgate.lab.runner.cluster import connect
from taskgate.lab.runner.shards import Shard, merge_runs
from taskgate.lab.scoring.index import score_run
from taskgate.lab.scoring.summary import summarize

ARMS = ("raw", "checklist", "directive", "enforcement")
CONFIG = LadderConfig(
    arms=ARMS, agent="llm", compiler="llm", matcher="llm", steps=(5,), episodes=5, concurrency=8
)


def ladder(url: str, out: Path, config: LadderConfig = CONFIG, **kw: object) -> None:
    async def go() -> None:
        async with ChatClient(Endpoint(base_url=url, model="fake")) as client:
            progress = await run_ladder(config, out, client=client, **kw)  # type: ignore[arg-type]
        assert progress.failed == 0

    asyncio.run(go())


def table(out: Path) -> list[dict[str, object]]:
    return [r.json_row() for r in summarize(score_run(out), ARMS)]


def test_a_shard_with_no_episodes_is_refused_before_anything_is_written(
    server: FakeServer, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="shard 6/6 holds no episodes: the grid has 5"):
        ladder(server.base_url, tmp_path / "s", shard=Shard(6, 6))
    assert not (tmp_path / "s" / EPISODES).exists()


@pytest.fixture(scope="module")
def server() -> object:
    with FakeServer(protocol_responder) as srv:
        yield srv


@pytest.fixture(scope="module")
def single(server: FakeServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("single")
    ladder(server.base_url, out)
    return out


def test_shard_parsing_and_range() -> None:
    assert Shard.parse(" 2/4 ") == Shard(2, 4) and str(Shard(2, 4)) == "2/4"
    assert Shard(1, 3).take(list(range(7))) == [0, 3, 6]
    for bad in ("0/3", "4/3", "1/0"):
        with pytest.raises(UsageError, match="out of range"):
            Shard.parse(bad)
    for bad in ("1", "a/b", "1/2/3", "-1/2", ""):
        with pytest.raises(UsageError, match="is not I/N"):
            Shard.parse(bad)


def test_shards_partition_the_grid_and_merge_into_the_single_runs_tables(
    server: FakeServer, single: Path, tmp_path: Path
) -> None:
    shards = [tmp_path / f"shard{i}" for i in (1, 2, 3)]
    for i, out in enumerate(shards, 1):
        ladder(server.base_url, out, shard=Shard(i, 3))
    ids = [[e.id for e in read_episodes(s / EPISODES)] for s in shards]
    assert sorted(i for shard_ids in ids for i in shard_ids) == sorted(
        e.id for e in read_episodes(single / EPISODES)
    )
    assert [len(i) for i in ids] == [2, 2, 1]
    merged = merge_runs(tmp_path / "all", shards)
    assert (merged.runs, merged.added, merged.duplicates, merged.episodes) == (20, 20, 0, 5)
    assert table(tmp_path / "all") == table(single)
    assert (tmp_path / "all" / COMPILED).read_text().count("\n") == 10  # a plan and a revision
    again = merge_runs(tmp_path / "all", shards[:1])  # merging a shard twice counts nothing twice
    assert (again.runs, again.added, again.duplicates) == (20, 0, 8)
    assert len(read_log(tmp_path / "all" / LOG)) == 20 and table(tmp_path / "all") == table(single)


def test_merge_refuses_runs_of_different_grids_and_what_is_not_a_run(
    server: FakeServer, single: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    (other).mkdir()
    first, *rest = (single / EPISODES).read_text().splitlines(keepends=True)
    changed = first.replace('"code":"RC-', '"code":"RC-1', 1)  # the same episode id, altered
    (other / EPISODES).write_text(changed + "".join(rest))
    with pytest.raises(LogFormatError, match="differs from another source"):
        merge_runs(tmp_path / "out", [single, other])
    assert not (tmp_path / "out").exists()  # nothing half-written
    with pytest.raises(LogFormatError, match="is not a run directory"):
        merge_runs(tmp_path / "out", [tmp_path / "nowhere"])
    v1 = tmp_path / "v1"  # the same grid on the other schedule
    v1.mkdir()
    eps = [generate_episode(EpisodeParams(seed=100, steps=5, schedule="v1"))]
    write_episodes(v1 / EPISODES, eps)
    (v1 / LOG).write_text("")
    with pytest.raises(LogFormatError, match="different episode schedules"):
        merge_runs(tmp_path / "out", [single, v1])
    assert not (tmp_path / "out").exists()


def test_a_ray_address_that_does_not_answer_is_a_clear_error() -> None:
    for address, why in [("127.0.0.1:9", "no Ray cluster answers"), ("nonsense", "not a Ray")]:
        with pytest.raises(UsageError, match=why):
            connect(address)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs the ray extra")
def test_a_ray_run_and_merged_shards_give_the_local_runs_tables(
    server: FakeServer, single: Path, tmp_path: Path
) -> None:
    import ray

    two_rates = dataclasses.replace(CONFIG, corruption=(0.0, 0.02))
    ladder(server.base_url, tmp_path / "local", two_rates)
    try:
        ladder(server.base_url, tmp_path / "ray", two_rates, ray="local")
        for i in (1, 2):
            ladder(server.base_url, tmp_path / f"shard{i}", two_rates, shard=Shard(i, 2))
        merge_runs(tmp_path / "merged", [tmp_path / "shard1", tmp_path / "shard2"])
        # one grid, three ways: a local run, a Ray run, two shards merged
        assert table(tmp_path / "ray") == table(tmp_path / "local") == table(tmp_path / "merged")
        runs = read_log(tmp_path / "ray" / LOG)
        assert len(runs) == 40 and all(len(r.turns) == 44 for r in runs.values())
        compiled = (tmp_path / "ray" / COMPILED).read_text().splitlines()
        assert len(compiled) == 10  # one plan and one revision per episode, for both rates
        # resume: a finished run is skipped whole, nothing is rerun or written twice
        before = (tmp_path / "ray" / LOG).read_bytes()
        ladder(server.base_url, tmp_path / "ray", two_rates, ray="local")
        assert (tmp_path / "ray" / LOG).read_bytes() == before
    finally:
        ray.shutdown()
