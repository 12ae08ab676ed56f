"""What a report's columns mean, for readers outside the paper: a tooltip per column in the HTML
page and a legend under each printed table. Keyed by the column's header as the tables print it."""

from __future__ import annotations

from collections.abc import Sequence

GLOSSARY: dict[str, str] = {
    "cell": "the grid cell: S = the plan's steps, rho = the prerequisite graph's extra-edge "
    "density, eps (when shown) = the rate at which the gate's state is corrupted per step-turn",
    "arm": "the rung of the ladder (raw transcript, text checklist, self-ledger, directive gate, "
    "enforcement gate) or a control",
    "strict": "strict episode success: the share of episodes with no error on any channel",
    "Re-exec": "re-execution: a finished step executed again with no redo asked; the redo-probe "
    "turns of the schedule on which one ran, over the schedule's redo-probe turns (k/n, the "
    "paper's fixed denominator; each turn once)",
    "Superseded": "a cancelled step executed; the superseded-cue turns on which one ran, over the "
    "schedule's superseded-cue turns (k/n)",
    "Premature": "a step executed while it was blocked (a prerequisite without its receipt, or "
    "cancelled); the premature-ask turns on which one ran, over the schedule's premature asks "
    "(k/n)",
    "Omission": "a requested step the state allows, not executed; the ask turns on which it "
    "happened, over the schedule's ask turns (k/n)",
    "Refused redo": "an explicitly asked redo not executed (also where an earlier omission left "
    "the step undone); over the schedule's explicit-redo turns (k/n)",
    "Unreq. (count)": "executions of a step that no request asked for (a count over the cell)",
    "Unreq./128 ep": "the unrequested count per 128 episodes",
    "refused": "bookings the gate refused (a count)",
    "all errors (re-exec / superseded / premature / omission / refused redo)": "each channel's "
    "errors wherever they fell, on any turn (executions; omissions and refused redos are turns)",
    "false compl.": "false completions: the share of refused bookings whose reply says nothing of "
    "a refusal, so that a reader would take the step as done",
    "agreement": "the matcher's agreement with the step the generator wrote the request for",
    "redo P": "explicit-redo precision: of the requests read as a redo, the share that asked one",
    "redo R": "explicit-redo recall: of the requests that asked a redo, the share read as one",
    "contrast": "the two adjacent rungs compared (lower -> upper)",
    "discordant": "episodes only the lower rung succeeded on, and only the upper (shared seeds)",
    "exact McNemar p": "two-sided exact McNemar test on the discordant pairs",
    "Holm p": "the McNemar p adjusted by Holm's method over the table's family (named under it)",
    "Dep": "compile accuracy: the share of steps whose whole prerequisite set was compiled right",
    "agent calls": "the agent's model calls per episode",
    "x raw": "total agent tokens relative to the raw transcript's",
    "prefix share": "the share of an agent prompt that repeats its previous prompt from the "
    "start (what a server's prefix cache reuses)",
}


def legend(header: Sequence[str]) -> str:
    """One line per column of ``header`` that the glossary explains."""
    return "\n".join(f"  {h}: {GLOSSARY[h]}" for h in header if h in GLOSSARY)
