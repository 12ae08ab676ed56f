from __future__ import annotations

from pathlib import Path

import pytest

from taskgate import Plan, StepSpec

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
PAPER = SHARED / "paper" / "state-coupling-ladder.tex"


def paper_verbatim_after(marker: str) -> str:
    """The first Verbatim block after ``marker`` in the paper: the protocol strings' source."""
    tex = PAPER.read_text(encoding="utf-8")
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
