"""The ladder with llm roles over a real HTTP server on loopback, with and without faults."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from taskgate import ChatClient, Endpoint, FakeServer, Fault, protocol_responder
from taskgate.lab import LadderConfig, run_ladder
from taskgate.lab.rundir import LOG, read_log
from taskgate.lab.runner.ladder import Progress
from taskgate.lab.scoring.index import score_run
from taskgate.lab.scoring.summary import summarize
from taskgate.llm.fake import NOT_REPLIES

ARMS = ("raw", "checklist", "directive", "enforcement")


def ladder(srv: FakeServer, out: Path, concurrency: int = 4, **kw: object) -> Progress:
    config = LadderConfig(
        arms=ARMS, agent="llm", compiler="llm", matcher="llm", steps=(5,), episodes=2,
        concurrency=concurrency,
    )  # fmt: skip

    async def go() -> Progress:
        client = ChatClient(Endpoint(base_url=srv.base_url, model="fake", backoff=0.0, **kw))  # type: ignore[arg-type]
        try:
            return await run_ladder(config, out, client=client)
        finally:
            await client.close()

    return asyncio.run(go())


def rows(out: Path) -> list[dict[str, object]]:
    return [r.json_row() for r in summarize(score_run(out), ARMS)]


def test_llm_roles_through_http(tmp_path: Path) -> None:
    with FakeServer(protocol_responder) as srv:
        ladder(srv, tmp_path)
    runs = read_log(tmp_path / LOG)
    assert len(runs) == 8
    for (_, arm), run in runs.items():
        assert [t.index for t in run.turns] == list(range(44))  # no turn lost or duplicated
        agent_calls = [c for c in run.calls if c.purpose == "agent"]
        assert len(agent_calls) == 44 + sum(len(t.replies) - 1 for t in run.turns)
        matcher_calls = [c for c in run.calls if c.purpose == "matcher"]
        gated = arm in ("directive", "enforcement")
        assert len(matcher_calls) == (sum(t.matched is not None for t in run.turns) if gated else 0)
        assert all(c.prompt_tokens > 0 for c in run.calls)
    # one compile per (episode, compiler): graph + revision, shared by the two gate arms (the arm
    # that did not make the calls logs copies of them, so each shows the compile's cost)
    compiles = [c for r in runs.values() for c in r.calls if c.purpose == "compiler"]
    assert len([c for c in compiles if not c.shared]) == 2 * 2
    assert len([c for c in compiles if c.shared]) == 2 * 2
    got = {r["arm"]: r["rate"] for r in rows(tmp_path)}
    assert got["enforcement"] == 1.0 and got["directive"] == 1.0


def test_faults_change_nothing(tmp_path: Path) -> None:
    with FakeServer(protocol_responder) as srv:
        ladder(srv, tmp_path / "clean")
    ok = Fault.none()
    faults = [
        Fault.error(500),
        ok,
        Fault.error(429),
        ok,
        Fault.drop(),
        ok,
        Fault.malformed(),
        ok,
    ] * 6
    with FakeServer(protocol_responder, faults=faults) as srv:
        ladder(srv, tmp_path / "faulty", concurrency=1)  # one call at a time: faults alternate
    assert rows(tmp_path / "clean") == rows(tmp_path / "faulty")
    retried = [
        c for r in read_log(tmp_path / "faulty" / LOG).values() for c in r.calls if c.attempts > 1
    ]
    assert retried and all(c.error is None for c in retried)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A fault-free run and how many requests it made."""
    out = tmp_path_factory.mktemp("clean")
    with FakeServer(protocol_responder) as srv:
        ladder(srv, out)
    return out, len(srv.requests)


def transcripts(out: Path) -> dict[tuple[str, str], list[object]]:
    return {k: [r.header, *r.turns] for k, r in read_log(out / LOG).items()}


@pytest.mark.parametrize("kind", NOT_REPLIES)
def test_each_200_that_is_not_a_reply_at_a_20_percent_rate_changes_nothing(
    tmp_path: Path, clean: tuple[Path, int], kind: str
) -> None:
    clean_out, requests = clean
    fault, ok = Fault(kind), Fault.none()
    faults = [ok, ok, ok, ok, fault] * (requests // 4 + 1)  # covers every request, retries too
    with FakeServer(protocol_responder, faults=faults) as srv:
        progress = ladder(srv, tmp_path, concurrency=1)  # one call at a time: every fifth fails
    assert progress.failed == 0 and progress.call_errors == 0
    served = len(srv.requests) - requests
    assert served == len(srv.requests) // 5  # the fault came every fifth request
    assert rows(tmp_path) == rows(clean_out)
    assert transcripts(tmp_path) == transcripts(clean_out)  # the same replies, no omission
    retried = [
        c
        for r in read_log(tmp_path / LOG).values()
        for c in r.calls
        if c.attempts > 1 and not c.shared
    ]
    assert sum(c.attempts - 1 for c in retried) == served
    assert all(e.startswith("retry after MalformedReply") for c in retried for e in c.events)


def test_replies_that_are_not_replies_fail_the_episode_arm_and_a_rerun_retries_it(
    tmp_path: Path, clean: tuple[Path, int]
) -> None:
    faults = [f for f in Fault.not_replies() for _ in range(8)]
    with FakeServer(protocol_responder, faults=faults) as srv:
        progress = ladder(srv, tmp_path, attempts=2)
    assert progress.failed and len(read_log(tmp_path / LOG)) == 8 - progress.failed
    for failure in progress.failures:
        assert "\n" not in failure and "call failed: MalformedReply: a " in failure
    with FakeServer(protocol_responder) as srv:
        again = ladder(srv, tmp_path)
    assert again.failed == 0 and again.skipped == 8 - progress.failed
    assert rows(tmp_path) == rows(clean[0])


def test_a_dead_endpoint_leaves_runs_unfinished_and_a_rerun_completes(tmp_path: Path) -> None:
    with FakeServer(protocol_responder, faults=[Fault.error(500)] * 40) as srv:
        ladder(srv, tmp_path, attempts=2)
    assert len(read_log(tmp_path / LOG)) < 8
    with FakeServer(protocol_responder) as srv:
        ladder(srv, tmp_path)
    assert len(read_log(tmp_path / LOG)) == 8
    with FakeServer(protocol_responder) as srv:
        ladder(srv, tmp_path / "fresh")
    assert rows(tmp_path) == rows(tmp_path / "fresh")


@pytest.mark.parametrize("flag", ["--base-url"])
def test_cli_runs_against_any_endpoint(tmp_path: Path, flag: str) -> None:
    from typer.testing import CliRunner

    from taskgate.cli import app

    with FakeServer(protocol_responder) as srv:
        out = tmp_path / "rows.json"
        result = CliRunner().invoke(
            app,
            ["ladder", flag, srv.base_url, "--model", "fake", "--steps", "5", "--episodes", "2",
             "--json", str(out), "--out", str(tmp_path / "run")],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Overhead per episode" in result.output and "Compile accuracy" in result.output
    assert "| S=5, rho=0.15 | 2 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 |" in result.output
    data = json.loads(out.read_text())["rows"]
    assert {r["arm"] for r in data} == set(ARMS)
