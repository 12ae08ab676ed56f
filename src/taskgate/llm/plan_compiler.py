"""A tool-bound plan compiled from what an ordinary agent already has: its instructions (the
system prompt, or the first user message) and its tools with their descriptions.

The model is asked for the steps (one per tool that does a piece of the work), their order and a
few words for each, and for the tools that only look things up; its reply is checked (JSON of the
right shape, every tool one the agent has and used once, every tool a step's or a lookup, every
prerequisite a step, no cycle) and, when it has defects, the model is asked
again with the defects, one line each, as the paper's compiler is re-asked. A reply still
defective after the last try is a :class:`~taskgate.PlanError` listing them: no plan is
half-made. The prompt is taskgate's own (the paper's compiler reads a brief, which an ordinary
agent does not have).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from taskgate.core.plan import Plan, StepSpec
from taskgate.core.validator import validate
from taskgate.errors import PlanError, ReplyFormatError, UsageError
from taskgate.llm.client import ChatClient, OnCall
from taskgate.llm.jsonreply import parse_reply
from taskgate.matching.wordings import ToolInfo, tool_infos

#: the longest tool description put in the prompt (a description is a sentence or two)
_DESCRIBED = 300
#: the most tools a plan is compiled over (a prompt, not a catalogue)
MAX_TOOLS = 64

PLAN_PROMPT = """\
You set up a task plan for an assistant. Read its instructions and its tools.

INSTRUCTIONS:
{task}

TOOLS:
{tools}

List the steps of the work the instructions describe: one step per tool whose call does a piece \
of that work. For each step give the tool, a few plain words for it, and the steps that must be \
done before it. List every other tool under "lookups": only tools that just look things up and \
change nothing. Every tool is a step's or a lookup. Reply with JSON only, in this form:
{{"steps": {{"s1": {{"tool": "first_tool", "text": "do the first thing", "deps": []}}, \
"s2": {{"tool": "second_tool", "text": "do the second thing", "deps": ["s1"]}}}}, \
"lookups": ["search_tool"]}}"""

RETRY = (
    "That plan cannot be used:\n{defects}\nReply again with the whole plan as JSON only, in the "
    "same form, fixing these."
)


class _StepReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    tool: str = Field(min_length=1)
    text: str = ""
    deps: list[str] = Field(default_factory=list)


class _PlanReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    steps: dict[str, _StepReply] = Field(min_length=1)
    #: the tools that only look things up: left unbound (they run ungated, as before)
    lookups: list[str] = Field(default_factory=list)


def plan_defects(reply: _PlanReply, tools: Sequence[ToolInfo]) -> tuple[Plan | None, list[str]]:
    """The plan a reply describes, and its defects (one line each; none means it is usable)."""
    names = {t.name for t in tools}
    defects: list[str] = []
    seen: dict[str, str] = {}
    ids = [sid.strip() for sid in reply.steps]
    defects += [
        f"step id {sid!r} is given twice" for sid in sorted({i for i in ids if ids.count(i) > 1})
    ]
    for sid, step in reply.steps.items():
        if step.tool not in names:
            defects.append(f"step {sid} names tool {step.tool!r}, which the assistant lacks")
        elif step.tool in seen:
            defects.append(f"steps {seen[step.tool]} and {sid} both use tool {step.tool!r}")
        else:
            seen[step.tool] = sid
        dup = sorted({d for d in step.deps if step.deps.count(d) > 1})
        defects += [f"step {sid} lists {d} twice in deps" for d in dup]
    steps = {
        sid.strip(): StepSpec(
            tool=s.tool.strip(),
            text=" ".join(s.text.split())[:200],
            deps=tuple(dict.fromkeys(s.deps)),
        )
        for sid, s in reply.steps.items()
    }
    try:
        plan = Plan(binding="tool", steps=steps)
    except ValueError as exc:  # a step id the plan refuses
        return None, [*defects, str(exc).splitlines()[0]]
    defects += [d.detail for d in validate(plan)]
    defects += _unplaced(reply, names, set(seen))
    return (None if defects else plan), defects


def _unplaced(reply: _PlanReply, names: set[str], stepped: set[str]) -> list[str]:
    """A tool in no step and not named a lookup: left out silently, it would run ungated as a
    tool no step is bound to, though it may do a piece of the work (fail closed: the model is
    asked again to place it)."""
    looked = set(reply.lookups)
    out = [f"tool {t!r} is in no step and not listed under lookups" for t in sorted(names)
           if t not in stepped and t not in looked]  # fmt: skip
    out += [f"lookups names tool {t!r}, which the assistant lacks" for t in sorted(looked - names)]
    out += [f"tool {t!r} is both a step's and a lookup" for t in sorted(looked & stepped)]
    return out


class PlanCompiler:
    """Compile a tool-bound plan with a model (``client``), asking at most ``attempts`` times."""

    def __init__(
        self, client: ChatClient, attempts: int = 2, on_call: OnCall | None = None
    ) -> None:
        if attempts < 1:
            raise UsageError("attempts must be at least 1")
        self._client, self._attempts, self._on_call = client, attempts, on_call

    async def compile(self, task: str, tools: Sequence[Any]) -> Plan:
        """The plan for ``task`` (the agent's instructions) over ``tools`` (see
        :func:`tool_infos`); a :class:`PlanError` naming every defect when the model's last
        reply still has some."""
        infos = tool_infos(tools)
        if not infos:
            raise PlanError("a plan is compiled over the agent's tools, and it has none")
        if len(infos) > MAX_TOOLS:
            raise PlanError(f"a plan is compiled over at most {MAX_TOOLS} tools, not {len(infos)}")
        listed = "\n".join(
            f"- {t.name}: {' '.join(t.description.split())[:_DESCRIBED]}" for t in infos
        )
        messages = [
            {"role": "user", "content": PLAN_PROMPT.format(task=task.strip(), tools=listed)}
        ]
        defects: list[str] = []
        for _ in range(self._attempts):
            reply = await self._client.complete(messages, "compiler", self._on_call)
            try:
                plan, defects = plan_defects(
                    parse_reply(reply.text, _PlanReply, unique=True), infos
                )
            except ReplyFormatError as exc:
                plan, defects = None, [f"the reply is not a plan: {exc}"]
            if plan is not None:
                return plan
            messages += [
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": RETRY.format(defects="\n".join(defects))},
            ]
        lines = "\n".join(f"  {d}" for d in defects)
        raise PlanError(
            f"the plan could not be compiled ({self._attempts} tries); the last reply's "
            f"defects:\n{lines}"
        )
