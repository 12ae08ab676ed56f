from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from taskgate import Plan, StepSpec

#: the OpenAI Agents SDK exports traces to OpenAI by default: never from a test
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared(*parts: str) -> Path:
    """A path under ``../shared`` (the paper and the tau2 airline data, beside the repository).

    Every test reaches ``shared/`` through here: where it is missing, the test is skipped with a
    reason that names the missing path (CI always has it).
    """
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs {path}: shared/ (the paper and test data) must sit beside the repo")
    return path


class SharedDir:
    """A folder under ``../shared``, resolved when a test uses it: ``TAU2_DATA / "db.json"``."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    def __truediv__(self, name: str) -> Path:
        return shared(*self.parts, name)


TAU2_DATA = SharedDir("data", "tau2-airline")


def paper_text() -> str:
    return shared("paper", "state-coupling-ladder.tex").read_text(encoding="utf-8")


def paper_verbatim_after(marker: str) -> str:
    """The first Verbatim block after ``marker`` in the paper: the protocol strings' source."""
    tex = paper_text()
    at = tex.index(marker)
    start = tex.index("\\begin{Verbatim}", at)
    start = tex.index("\n", start) + 1
    end = tex.index("\\end{Verbatim}", start)
    return tex[start:end].rstrip("\n")


@pytest.fixture
def plan5() -> Plan:
    """The plan of the paper's Appendix B.1 example (seed 100, S=5)."""
    return Plan(
        steps={
            "s1": StepSpec(
                text="obtain the insurance certificate for the delivery", code="RC-8304"
            ),
            "s2": StepSpec(text="sign the master service agreement", deps=("s4",), code="RC-8053"),
            "s3": StepSpec(text="negotiate final pricing with the selected vendor", code="RC-8617"),
            "s4": StepSpec(
                text="set up the project budget code in the finance system", code="RC-4107"
            ),
            "s5": StepSpec(text="place the main equipment order", code="RC-1903"),
        }
    )


@pytest.fixture
def chain() -> Plan:
    """s1 <- s2 <- s3, and s4 free."""
    return Plan(
        steps={
            "s1": StepSpec(code="RC-1001"),
            "s2": StepSpec(deps=("s1",), code="RC-1002"),
            "s3": StepSpec(deps=("s2",), code="RC-1003"),
            "s4": StepSpec(code="RC-1004"),
        }
    )


@pytest.fixture(scope="session")
def postgres() -> Any:
    """A real PostgreSQL server (pgserver's wheel) for this test process; its URI."""
    try:
        import pgserver  # type: ignore[import-untyped]
    except ImportError:
        pytest.skip("no PostgreSQL: pgserver is not installed (pip install 'taskgate[dev]')")
    folder = tempfile.mkdtemp(prefix="taskgate-pg-")
    try:
        server = pgserver.get_server(folder, cleanup_mode="stop")
    except Exception as exc:  # the wheel's server could not start on this machine
        pytest.skip(f"no PostgreSQL: pgserver could not start a server: {exc}")
    yield server.get_uri()
    server.cleanup()
