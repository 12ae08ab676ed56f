"""The arms the CLI accepts, by name."""

from __future__ import annotations

from taskgate.core.verdict import Policy
from taskgate.lab.arms.arm import Arm
from taskgate.lab.arms.memory import MemoryArm
from taskgate.registry import Registry

SB, RB = Policy.STATE_BOUND, Policy.REQUEST_BOUND

ARMS: Registry[Arm] = Registry(
    "arm",
    (
        (a.name, a)
        for a in (
            Arm("raw"),
            Arm("checklist", checklist="append"),
            Arm("checklist-replace", checklist="replace"),
            Arm("checklist-matched", checklist="replace", matched_line=True),
            Arm("self-ledger", self_ledger=True),
            Arm("directive", directive_role="user"),
            Arm("directive-system", directive_role="system"),
            Arm("enforcement", directive_role="user", policy=SB),
            Arm("enforcement-request", directive_role="user", policy=RB),
            Arm("enforcement-same-turn", directive_role="user", policy=SB, surface="same-turn"),
            # Appendix E.2's control: the directive in the system prompt (for that call only);
            # rejection notices stay in the next user turn, as the paper has them
            Arm("enforcement-system", directive_role="system", policy=SB),
            Arm("hybrid", directive_role="user", policy=SB, hybrid=True),
            # Appendix F's retrieval-memory baselines: text arms whose record is a recall block
            MemoryArm("topk-replace", memory="topk", mode="replace"),
            MemoryArm("topk-augment", memory="topk", mode="augment"),
            MemoryArm("mem0-replace", memory="mem0", mode="replace"),
            MemoryArm("mem0-augment", memory="mem0", mode="augment"),
        )
    ),
)

#: The paper's four-rung ladder, in order.
LADDER = ("raw", "checklist", "directive", "enforcement")
#: The real-tool harness's five arms (Appendix G), in order: raw transcript, text checklist,
#: directive gate, state-bound and request-bound enforcement.
TOOL_LADDER = ("raw", "checklist", "directive", "enforcement", "enforcement-request")
#: Appendix F's memory table: the memory arms, the self-ledger and the four rungs they sit among.
MEMORY_LADDER = (
    "raw",
    "topk-replace",
    "mem0-replace",
    "topk-augment",
    "mem0-augment",
    "self-ledger",
    "checklist",
    "directive",
    "enforcement",
)


def compiled_arm(name: str) -> bool:
    """Whether the arm of that name acts on a compiled state (an arm unknown here does not)."""
    arm = ARMS.get(name)
    return arm is not None and arm.compiled


def memory_kind(name: str) -> str | None:
    """The memory an arm of that name recalls from (``topk``, ``mem0``), or ``None``."""
    arm = ARMS.get(name)
    return arm.memory if isinstance(arm, MemoryArm) else None


def get_arm(name: str) -> Arm:
    """The arm of that name (one line naming the nearest and every choice when there is none)."""
    return ARMS.choose(name)
