"""The trap-turn probe (Appendix A.4): trap turns from a raw-transcript run, the variants, the
scripted oracles, resumption, the model's sampling settings, bad input and the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import fake_model
from taskgate.cli import app
from taskgate.core.machine import Status
from taskgate.errors import LogFormatError, UsageError
from taskgate.lab import LadderConfig, run_ladder
from taskgate.lab.experiments.probe import (
    VARIANTS,
    LLMProbeAgent,
    ProbeConfig,
    ScriptedProbeAgent,
    probe_table,
    probe_traps,
    read_probe,
    rebooks,
    run_probe,
)
from taskgate.lab.experiments.probe.records import PROBE
from taskgate.lab.scoring.summary import score_entries
from taskgate.llm.client import ChatClient
from taskgate.llm.endpoint import Endpoint
from taskgate.protocol.bookings import parse_bookings
from taskgate.protocol.render import render_checklist_line

runner = CliRunner()


@pytest.fixture(scope="module")
def raw_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A raw-transcript run whose agent books every request: every redo probe is a trap turn."""
    out = tmp_path_factory.mktemp("raw")
    config = LadderConfig(arms=("raw", "checklist"), agent="scripted:always-book", episodes=3)
    asyncio.run(run_ladder(config, out))
    return out


def test_the_trap_turns_are_the_realized_redo_probes_of_the_raw_arm(raw_run: Path) -> None:
    traps = probe_traps(raw_run)
    raw = [e for e in score_entries(raw_run) if e.scored.score.arm == "raw"]
    assert len(traps) == sum(e.scored.score.primary.labels["redo_probe"] for e in raw) > 0
    for t in traps:
        assert t.recorded  # the always-book agent booked each one again
        assert t.receipts and t.executed_at is not None


def test_the_recorded_prompt_is_what_the_agent_saw(raw_run: Path) -> None:
    (entry,) = [
        e for e in score_entries(raw_run) if e.scored.score.arm == "raw" and e.scored.seed == 100
    ]
    trap = next(t for t in probe_traps(raw_run) if t.episode == entry.scored.key[0])
    rec = next(r for r in entry.run.turns if r.index == trap.turn)
    assert trap.messages[0] == {"role": "system", "content": entry.episode.brief}
    assert trap.messages[-1] == {"role": "user", "content": rec.user}
    assert len(trap.messages) == 2 + 2 * trap.turn
    executed = trap.messages[trap.executed_at]
    assert executed["role"] == "assistant"
    assert [b.code for b in parse_bookings(executed["content"])] == [trap.code]


def test_each_variant_changes_one_thing(raw_run: Path) -> None:
    t = probe_traps(raw_run)[0]
    base = list(t.messages)
    request = base[-1]["content"]
    built = {name: v.build(t) for name, v in VARIANTS.items()}
    assert built["recorded"] == base
    for name in ("confirm", "status", "no-order", "checklist-user", "done-line", "directive-user"):
        assert built[name][:-1] == base[:-1], name
    assert (
        t.text in built["confirm"][-1]["content"] and t.work_order in built["status"][-1]["content"]
    )
    assert "#W" not in built["no-order"][-1]["content"]
    assert built["checklist-user"][-1]["content"] == f"{request}\n\n{t.checklist}"
    done_line = render_checklist_line(t.step, Status.DONE)
    assert done_line in t.checklist.splitlines()
    assert built["done-line"][-1]["content"] == f"{request}\n\n{done_line}"
    assert t.directive == (
        f"[TASK-STATE] step {t.step} is already DONE. Do not redo it; refer to the earlier "
        "completion without booking a new work order."
    )
    assert built["directive-user"][-1]["content"] == f"{request}\n\n{t.directive}"
    for name, text in (("checklist-system", t.checklist), ("directive-system", t.directive)):
        assert built[name][1:] == base[1:]
        assert built[name][0]["content"] == f"{base[0]['content']}\n\n{text}"
    at = t.executed_at
    assert at is not None
    for name in ("prose", "erased"):
        changed = [i for i, (a, b) in enumerate(zip(built[name], base, strict=True)) if a != b]
        assert changed == [at], name
    assert built["erased"][at]["content"] == ""
    prose = built["prose"][at]["content"]
    assert not parse_bookings(prose) and f"step {t.step}" in prose


def test_rebooking_is_a_booking_of_the_step_on_the_trap_requests_work_order() -> None:
    assert rebooks("ref RC-1111/#W2000", "RC-1111", "#W2000")
    assert not rebooks("Already done: ref RC-1111/#W1000", "RC-1111", "#W2000")  # a citation
    assert not rebooks("ref RC-1111/#W3333", "RC-1111", "#W2000")  # an order never issued
    assert not rebooks("ref RC-2222/#W2000", "RC-1111", "#W2000")


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_probe_oracle_reports_one_where_it_rebooks_and_zero_elsewhere(
    raw_run: Path, tmp_path: Path, variant: str
) -> None:
    config = ProbeConfig(samples=2, greedy=False)
    asyncio.run(run_probe(raw_run, tmp_path, ScriptedProbeAgent([variant]), config))
    table = probe_table([tmp_path])
    shares = {row[0]: row[1].split()[0] for row in table.body}
    for name, v in VARIANTS.items():
        assert shares[v.label] == ("1.00" if name == variant else "0.00"), name


def test_the_greedy_re_ask_and_its_reproduction_rate(raw_run: Path, tmp_path: Path) -> None:
    n = len(probe_traps(raw_run))
    config = ProbeConfig(samples=0)
    asyncio.run(run_probe(raw_run, tmp_path / "same", ScriptedProbeAgent(["recorded"]), config))
    asyncio.run(run_probe(raw_run, tmp_path / "other", ScriptedProbeAgent([]), config))
    body = {r[0]: r[1:] for r in probe_table([tmp_path / "same", tmp_path / "other"]).body}
    assert body["trap turns"] == (str(n), str(n))
    recorded = body[VARIANTS["recorded"].label]
    assert recorded == (f"--; greedy {n}/{n}", f"--; greedy 0/{n}")  # no samples asked
    assert body[VARIANTS["confirm"].label] == (f"--; greedy 0/{n}", f"--; greedy 0/{n}")
    assert body["greedy re-ask reproduces the recorded outcome"][0].startswith("1.00")
    assert body["greedy re-ask reproduces the recorded outcome"][1].startswith("0.00")


def test_a_probe_resumes_and_refuses_other_settings(raw_run: Path, tmp_path: Path) -> None:
    agent = ScriptedProbeAgent(["confirm"])
    config = ProbeConfig(samples=1, variants=("recorded", "confirm"))
    first = asyncio.run(run_probe(raw_run, tmp_path, agent, config))
    lines = (tmp_path / PROBE).read_text().splitlines()
    assert len(lines) == 1 + first.total
    # an interrupted write: the last line half-written is skipped and asked again
    (tmp_path / PROBE).write_text("\n".join([*lines[:-1], lines[-1][:20]]) + "\n")
    warnings: list[str] = []
    again = asyncio.run(run_probe(raw_run, tmp_path, agent, config, on_skip=warnings.append))
    assert again.skipped == first.total - 1 and len(warnings) == 1
    header, replies = read_probe(tmp_path, on_skip=warnings.append)
    assert len(warnings) == 2  # the half-written line is still in the file, and still skipped
    assert header is not None and len(replies) == first.total
    with pytest.raises(UsageError, match="samples 1 not 2"):
        asyncio.run(
            run_probe(raw_run, tmp_path, agent, ProbeConfig(samples=2), on_skip=warnings.append)
        )


def test_the_model_is_asked_at_the_sampling_settings(raw_run: Path, tmp_path: Path) -> None:
    server = fake_model()
    before = len(server.requests)
    server.keep_requests = True
    config = ProbeConfig(
        samples=2, temperature=0.6, top_p=0.9, seed=7, variants=("recorded",), max_traps=1
    )

    async def go() -> None:
        async with ChatClient(Endpoint(base_url=server.base_url, model="fake")) as client:
            await run_probe(raw_run, tmp_path, LLMProbeAgent(client), config)

    try:
        asyncio.run(go())
    finally:
        server.keep_requests = False
    bodies = server.requests[before:]
    sampling = sorted(
        (b["temperature"], b.get("top_p"), b.get("seed")) for b in bodies
    )  # fmt: skip
    assert sampling == [(0, None, None), (0.6, 0.9, 7), (0.6, 0.9, 8)]
    header, replies = read_probe(tmp_path)
    assert header is not None and {r.model for r in replies} == {"fake"}


def test_a_run_without_a_raw_arm_is_refused_with_what_it_holds(tmp_path: Path) -> None:
    config = LadderConfig(arms=("checklist",), agent="scripted:perfect", episodes=1, steps=(5,))
    asyncio.run(run_ladder(config, tmp_path / "run"))
    with pytest.raises(LogFormatError, match="is a run of the arms checklist"):
        probe_traps(tmp_path / "run")
    with pytest.raises(LogFormatError, match="not a directory"):
        probe_traps(tmp_path / "absent")
    with pytest.raises(LogFormatError, match="not a probe directory"):
        probe_table([tmp_path / "run"])


def test_the_probe_commands(raw_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "probe"
    args = ["probe", str(raw_run), "--out", str(out), "--agent", "scripted:rebook=status"]
    result = runner.invoke(app, [*args, "--samples", "1"])
    assert result.exit_code == 0, result.output
    assert '| "where do we stand on ...?" (same order) | 1.00' in result.output
    report = runner.invoke(app, ["probe-report", str(out), "--fmt", "latex"])
    assert report.exit_code == 0 and r"\begin{tabular}" in report.output
    bad = runner.invoke(app, [*args[:-1], "scripted:rebook=nope"])
    assert bad.exit_code == 2 and "unknown variant(s) nope" in bad.output
    lines = [json.loads(x) for x in (out / PROBE).read_text().splitlines()]
    assert lines[0]["kind"] == "probe" and lines[0]["agent"] == "scripted:rebook=status"


def test_a_run_of_several_cells_is_probed_one_cell_at_a_time(tmp_path: Path) -> None:
    config = LadderConfig(arms=("raw",), agent="scripted:always-book", steps=(5, 10), episodes=2)
    asyncio.run(run_ladder(config, tmp_path))
    with pytest.raises(UsageError, match=r"several cells \(S=5 rho=0.15, S=10 rho=0.15\)"):
        probe_traps(tmp_path)
    assert {t.episode.split("-")[1] for t in probe_traps(tmp_path, cell=(5, 0.15))} == {"S5"}
    with pytest.raises(UsageError, match="no raw-transcript episodes at S=15"):
        probe_traps(tmp_path, cell=(15, 0.15))
