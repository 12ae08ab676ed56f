"""``taskgate demo``: a small plan driven turn by turn through the enforcement gate."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from taskgate.core.machine import TaskMachine
from taskgate.core.plan import Plan, Revision, StepSpec
from taskgate.core.verdict import Policy
from taskgate.protocol.bookings import parse_bookings
from taskgate.protocol.render import render_checklist, render_directive, render_rejection

DEMO_PLAN = Plan(
    steps={
        "s1": StepSpec(text="collect the requirements", code="RC-4193"),
        "s2": StepSpec(text="draft the RFQ", deps=("s1",), code="RC-1463"),
        "s3": StepSpec(
            text="send the RFQ to the shortlisted vendors", deps=("s2",), code="RC-2790"
        ),
        "s4": StepSpec(text="set up the project budget code", code="RC-4808"),
        "s5": StepSpec(text="place the main equipment order", deps=("s3", "s4"), code="RC-5521"),
    }
)

# (request's step, explicit redo, the agent's reply; {wo} is the request's work order)
DEMO_TURNS: list[tuple[str | None, bool, str]] = [
    ("s1", False, "Requirements collected. ref RC-4193/{wo}"),
    ("s3", False, "Sending the RFQ now. **ref RC-2790/{wo}**"),
    ("s2", False, "Drafted. `ref RC-1463 / {wo}`."),
    ("s1", False, "Collecting the requirements again: ref RC-4193/{wo}"),
    (None, False, "REVISION"),
    ("s5", False, "Ordering. ref RC-5521/{wo}"),
    ("s4", False, "Budget code set up. Ref: rc-4808/{wo}"),
    ("s5", False, "Ordering now. ref RC-5521/{wo}"),
    ("s1", True, "Redoing the requirements as asked. ref RC-4193/{wo}"),
]


def demo(
    policy: Annotated[Policy, typer.Option(help="Enforcement policy of the gate.")] = (
        Policy.STATE_BOUND
    ),
    seed: Annotated[int, typer.Option(help="Seed for the work-order nonces.")] = 7,
) -> None:
    """Drive a five-step plan through the gate and print each verdict and the derived status."""
    console = Console(highlight=False)
    machine = TaskMachine(DEMO_PLAN, seed=seed)
    console.print(f"[bold]taskgate demo[/bold]: a five-step plan behind the {policy.value} gate\n")
    for n, (step, redo, reply) in enumerate(DEMO_TURNS, 1):
        if reply == "REVISION":
            machine.revise(Revision(cancel="s3", rewires={"s5": ("s4",)}))
            console.print(f"[bold]turn {n}[/bold]  revision: cancel s3; s5 now requires only s4")
        else:
            req = machine.open_request(step, explicit_redo=redo)
            redo_note = " (explicit redo)" if redo else ""
            console.print(f"[bold]turn {n}[/bold]  request for {step} {req.work_order}{redo_note}")
            console.print(f"  directive: {render_directive(machine)}", markup=False)
            text = reply.format(wo=req.work_order)
            console.print(f"  agent:     {text}", markup=False)
            for b in parse_bookings(text):
                v = machine.submit(b, policy)
                shown = f"admitted {b.line}" if v.admitted else render_rejection(v, b)
                console.print(f"  gate:      {shown}", markup=False)
        console.print(f"  status:    {_status(machine)}\n")
    console.print(render_checklist(machine), markup=False)


def _status(machine: TaskMachine) -> str:
    return " ".join(f"{s}:{st.value}" for s, st in machine.statuses().items())
