"""One scripted conversation through every gating surface, which must agree turn for turn.

The surfaces only translate their framework's events into the gate's core
(:class:`taskgate.GateSession`), so the same user turns, the same model calls and the same
operator's changes give the same verdicts, the same notices and the same receipts ledger on the
tool gate (``guard`` and a batch through ``judge``), the LangGraph middleware, the proxy in plan
mode, the MCP gate, the PydanticAI adapter and the OpenAI Agents SDK adapter: a blocked call, an unbound read, a batch holding a
prerequisite and its dependent, a finished step called again, an authorized redo, a cancelled
step, an unrequested side effect and an approved override. A new surface is one driver class here
and one entry in ``SURFACES``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from itertools import count
from typing import Any, Protocol

import httpx
import pytest

pytest.importorskip("langgraph", reason="needs the langgraph extra")
pytest.importorskip("langchain_openai", reason="needs langchain-openai (the dev extra)")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from taskgate import FakeServer, Plan, Reply, ToolGate
from taskgate.llm.fake import ToolCall

PLAN = Plan.model_validate({"binding": "tool", "steps": {
    "s1": {"tool": "collect_requirements", "text": "collect the requirements"},
    "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"]},
    "s3": {"tool": "send_rfq", "text": "send the RFQ", "deps": ["s2"]},
    "s4": {"tool": "select_vendor", "text": "select the vendor", "deps": ["s3"]},
    "s5": {"tool": "place_order", "text": "place the order", "deps": ["s4"]},
}})  # fmt: skip
SYSTEM = "You are a procurement assistant for ACME Corp: buy equipment with the tools."

#: the user's turns, and the calls the (careless) model makes on each, in one model turn
TURNS: list[tuple[str, tuple[str, ...]]] = [
    ("Please place the order for 40 laptops.", ("place_order",)),  # blocked
    ("Search the catalog for laptops.", ("search_catalog",)),  # unbound read: runs
    ("Collect the requirements: 40 laptops.", ("collect_requirements", "draft_rfq")),  # batch
    ("Collect the requirements.", ("collect_requirements",)),  # done already
    ("Redo the requirements, the count changed to 50.", ("collect_requirements",)),  # redo
    ("Draft the RFQ.", ("draft_rfq",)),  # runs
    ("Send the RFQ.", ("send_rfq",)),  # cancelled by the operator before this turn
    ("Thanks!", ("select_vendor",)),  # asked for nothing: refused
    ("Place the order now, it is approved.", ("place_order",)),  # approved before this turn
]
CANCEL_BEFORE, APPROVE_BEFORE = 6, 8
RAN_EXPECTED = [
    "search_catalog",
    "collect_requirements",
    "collect_requirements",
    "draft_rfq",
    "place_order",
]
#: what each turn's refused calls were told (the plain-words notices, by their first clause)
REFUSED_EXPECTED = [
    ["place_order was not run: it needs 'select the vendor' done first."],
    [],
    ["draft_rfq was not run: it needs 'collect the requirements' done first."],
    [
        "collect_requirements was not run: 'collect the requirements' is already done; it is done "
        "again only when the user asks for that."
    ],
    [],
    [],
    ["send_rfq was not run: 'send the RFQ' was cancelled."],
    ["select_vendor was not run: the user said thanks or goodbye and asked for nothing more."],
    [],
]
RAN: list[str] = []
_NOTICE = re.compile(r"[a-z_]+ was not run: [^\n]*?\.(?= Tell| |$|\n)")


def _function(name: str) -> Callable[..., str]:
    def run(note: str = "") -> str:
        RAN.append(name)
        return f"{name}: done"

    run.__name__ = name
    run.__doc__ = f"{name.replace('_', ' ').capitalize()}."
    return run


FUNCTIONS = {n: _function(n) for n in [*(s.tool for s in PLAN.steps.values()), "search_catalog"]}


def notices(texts: list[str]) -> list[str]:
    """The notices in what the model read, each cut to its first sentence (surfaces may add the
    advice to tell the user why)."""
    return sorted(m.group() for t in texts for m in _NOTICE.finditer(t))


def ledger_shape(entries: list[Any]) -> list[list[tuple[Any, ...]]]:
    """The receipts ledger, turn by turn (split at each request), each turn's entries sorted:
    concurrent calls of one turn may be recorded in either order, and work orders are drawn."""
    turns: list[list[tuple[Any, ...]]] = [[]]
    for e in entries:
        row = e if isinstance(e, dict) else e.model_dump(mode="json")
        kind = row["kind"]
        if kind == "request":
            turns.append([])
            turns[-1].append(("request", row.get("step"), row.get("explicit_redo", False)))
        elif kind == "attempt":
            turns[-1].append(("attempt", row["step"], row["decision"], row.get("reason")))
        elif kind == "revision":
            turns[-1].append(("revision", row["revision"].get("cancel")))
        elif kind == "approval":
            turns[-1].append(("approval", row["step"], row["by"]))
        else:
            turns[-1].append((kind,))
    return [sorted(t, key=repr) for t in turns]


class Surface(Protocol):
    def cancel(self, step: str) -> None: ...  # between turns, with the dependents inherited

    def approve(self, tool_name: str) -> None: ...  # between turns, for the next request

    def turn(self, message: str, calls: tuple[str, ...]) -> list[str]: ...  # what the model read

    def ledger(self) -> list[Any]: ...

    def restart(self) -> None: ...  # a new process on what the surface stored


class ToolGateSurface:
    """``guard`` around each tool; a model turn of several calls judged with ``judge``."""

    def __init__(self, plan: Plan = PLAN) -> None:
        self.gate = ToolGate(plan)
        self.tools = {n: self.gate.guard(f) for n, f in FUNCTIONS.items()}
        self.held: str | None = None

    def restart(self) -> None:  # the engineer saved the ledger and loads it again
        self.gate = ToolGate.from_ledger(self.gate.ledger)  # type: ignore[assignment]
        self.tools = {n: self.gate.guard(f) for n, f in FUNCTIONS.items()}

    def cancel(self, step: str) -> None:
        self.gate.cancel(step, inherit=True)

    def approve(self, tool_name: str) -> None:
        self.held = tool_name  # the engineer gives it when the next request opens

    def turn(self, message: str, calls: tuple[str, ...]) -> list[str]:
        self.gate.user_message(message)
        if self.held is not None:
            self.gate.approve(self.held, by="ops-lead")
            self.held = None
        if len(calls) == 1:
            return [str(self.tools[calls[0]](note=""))]
        read = []
        for name, ticket in zip(calls, self.gate.judge(calls), strict=True):
            if not ticket.admitted:
                read.append(ticket.notice)
                continue
            read.append(FUNCTIONS[name](note=""))
            self.gate.finish(ticket, "ok")
        return read

    def ledger(self) -> list[Any]:
        return list(self.gate.ledger)


def _script(
    turns: list[tuple[str, tuple[str, ...]]], start: int = 0, relays: dict[str, str] | None = None
) -> list[AIMessage | str]:
    """The model's replies: each turn's calls, then its words; after a held call it puts the
    gate's question to the user, as the call's answer tells it to (``relays``)."""
    ids = count(start)
    out: list[AIMessage | str] = []
    for message, calls in turns:
        out.append(AIMessage(content="", tool_calls=[
            {"name": n, "args": {"note": ""}, "id": f"c{next(ids)}"} for n in calls]))  # fmt: skip
        out.append((relays or {}).get(message, "Done."))
    return out


class MiddlewareSurface:
    """``create_agent`` with the middleware, a scripted chat model and a checkpointer."""

    def __init__(self, plan: Plan = PLAN, turns: list[tuple[str, tuple[str, ...]]] = TURNS) -> None:
        self.plan, self.turns, self.played, self.saver = plan, turns, 0, InMemorySaver()
        self.middleware, self.agent = self._agent(0)
        self.config: Any = {"configurable": {"thread_id": "parity"}}

    def _agent(self, played: int) -> tuple[Any, Any]:
        """The middleware and the agent, the model scripted from turn ``played`` on."""
        from taskgate.integrations.langgraph import ScriptedChatModel, TaskGateMiddleware

        tools = [tool(f) for f in FUNCTIONS.values()]
        middleware = TaskGateMiddleware(self.plan, tools=tools)
        start = sum(len(c) for _, c in self.turns[:played])
        relays = RELAYS if self.turns is ASKED_TURNS else None
        model = ScriptedChatModel(_script(self.turns[played:], start, relays))
        return middleware, create_agent(model, tools, system_prompt=SYSTEM,
                                        middleware=[middleware], checkpointer=self.saver)  # fmt: skip

    def restart(self) -> None:  # a new process on the same checkpointer
        self.middleware, self.agent = self._agent(self.played)

    def cancel(self, step: str) -> None:
        self.middleware.cancel(self.agent, self.config, step, inherit=True)

    def approve(self, tool_name: str) -> None:
        self.middleware.approve(self.agent, self.config, tool_name, by="ops-lead")

    def turn(self, message: str, calls: tuple[str, ...]) -> list[str]:
        before = len(self.agent.get_state(self.config).values.get("messages", []))
        out = self.agent.invoke({"messages": [HumanMessage(message)]}, self.config)
        self.played += 1
        new = out["messages"][before:]
        return [str(m.content) for m in new if isinstance(m, ToolMessage)]

    def ledger(self) -> list[Any]:
        from taskgate.integrations.langgraph import state_entries

        rows = self.agent.get_state(self.config).values["taskgate_ledger"]
        return list(state_entries(rows, "parity"))


class ProxySurface:
    """An ordinary LangGraph agent whose model is reached through the proxy in plan mode; the
    operator's changes through its endpoints."""

    def __init__(
        self, stack: list[Any], plan: Plan = PLAN, turns: list[tuple[str, tuple[str, ...]]] = TURNS
    ) -> None:
        from taskgate.proxy import ProxyConfig
        from taskgate.proxy.testing import ProxyServer

        ids = count()
        calls_for = dict(turns)

        #: what the model read in tool results, as the upstream got them: the proxy tells it
        #: of its refused calls there, not in the reply the user reads
        self.heard: list[str] = []

        def respond(body: dict[str, Any]) -> Reply:
            messages = body["messages"]
            if messages[-1]["role"] == "tool":
                last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
                self.heard += [str(m["content"]) for m in messages[last + 1 :]]
                return Reply("Done.")
            last = next(m for m in reversed(messages) if m["role"] == "user")
            names = calls_for[str(last["content"]).strip()]
            if not names:
                return Reply("Done.")
            return Reply("", tool_calls=tuple(
                ToolCall(n, {"note": ""}, id=f"call_{next(ids)}") for n in names))  # fmt: skip

        from taskgate.journal.store import MemoryStore

        upstream = FakeServer(respond).__enter__()
        stack.append(upstream)
        self.stack, self.store, self.saver = stack, MemoryStore(), InMemorySaver()
        self.config_ = ProxyConfig(upstream.base_url, plan=plan, status_token="ops")
        self.proxy = ProxyServer(self.config_, self.store)
        stack.append(self.proxy.__enter__())
        self.ops = httpx.Client(headers={"Authorization": "Bearer ops"})
        self.agent = self._agent()
        self.config: Any = {"configurable": {"thread_id": "parity"}}
        self.key = ""

    def _agent(self) -> Any:
        model = ChatOpenAI(base_url=self.proxy.base_url, api_key="sk-test", model="fake",  # type: ignore[arg-type]
                           max_retries=0)  # fmt: skip
        tools = [tool(f) for f in FUNCTIONS.values()]
        return create_agent(model, tools, system_prompt=SYSTEM, checkpointer=self.saver)

    def restart(self) -> None:  # a new proxy process on the same journal
        from taskgate.proxy.testing import ProxyServer

        self.stack.remove(self.proxy)
        self.proxy.__exit__(None, None, None)
        self.proxy = ProxyServer(self.config_, self.store)
        self.stack.append(self.proxy.__enter__())
        self.agent = self._agent()

    def _post(self, what: str, body: dict[str, Any]) -> None:
        url = f"{self.proxy.url}/taskgate/conversations/{self.key}/{what}"
        answer = self.ops.post(url, json=body)
        assert answer.status_code == 200, answer.text

    def cancel(self, step: str) -> None:
        self._post("revisions", {"cancel": step, "inherit": True})

    def approve(self, tool_name: str) -> None:
        self._post("approvals", {"step": tool_name, "by": "ops-lead"})

    def turn(self, message: str, calls: tuple[str, ...]) -> list[str]:
        before = len(self.agent.get_state(self.config).values.get("messages", []))
        heard = len(self.heard)
        out = self.agent.invoke({"messages": [HumanMessage(message)]}, self.config)
        if not self.key:
            listed = self.ops.get(f"{self.proxy.url}/taskgate/conversations").json()
            self.key = listed["conversations"][0]["id"]
        new = out["messages"][before:]
        shown = [str(m.content) for m in new if isinstance(m, AIMessage | ToolMessage)]
        assert not notices([str(m.content) for m in new if isinstance(m, AIMessage)]), shown
        return shown + self.heard[heard:]  # the notices reach the model, never the user

    def ledger(self) -> list[Any]:
        shown = self.ops.get(f"{self.proxy.url}/taskgate/conversations/{self.key}").json()
        return list(shown["ledger"])


class McpSurface:
    """The MCP gate in process: the application posts the user's messages, the client's calls
    are forwarded to the tools; a model turn's calls arrive while the first still runs."""

    def __init__(self, plan: Plan = PLAN) -> None:
        from taskgate.integrations.mcp import McpGate, McpGateConfig
        from taskgate.journal.store import MemoryStore

        self.config, self.store = McpGateConfig(plan=plan, requests="application"), MemoryStore()
        self.gate = McpGate(self.config, self.store)
        self.loop = asyncio.new_event_loop()
        self.key = "parity~local"

    def restart(self) -> None:  # a new gate process on the same journal
        from taskgate.integrations.mcp import McpGate

        self.gate = McpGate(self.config, self.store)

    def _run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def cancel(self, step: str) -> None:
        from taskgate.gate.session import cancelling
        from taskgate.journal.held import held_revision

        self._run(self.gate.hold(self.key, lambda conv, m: held_revision(
            m, cancelling(m, step, None, True))))  # fmt: skip

    def approve(self, tool_name: str) -> None:
        from taskgate.journal.held import held_approval

        self._run(self.gate.hold(self.key, lambda conv, m: held_approval(
            conv, m, tool_name, "ops-lead", "")))  # fmt: skip

    def turn(self, message: str, calls: tuple[str, ...]) -> list[str]:
        return list(self._run(self._turn(message, calls)))

    async def _turn(self, message: str, calls: tuple[str, ...]) -> list[str]:
        await self.gate.request(self.key, message)
        if not calls:
            return []
        started, release = asyncio.Event(), asyncio.Event()

        def forward(name: str, first: bool) -> Callable[[], Any]:
            async def run() -> str:
                if first and len(calls) > 1:  # the batch's other calls arrive while it runs
                    started.set()
                    await release.wait()
                return FUNCTIONS[name](note="")

            return run

        note = {"note": ""}
        first = asyncio.create_task(
            self.gate.call(self.key, calls[0], note, forward(calls[0], True), lambda r: True)
        )
        answers = []
        if len(calls) > 1:
            await started.wait()
            for name in calls[1:]:
                answers.append(await self.gate.call(self.key, name, {"note": ""},
                                                    forward(name, False), lambda r: True))  # fmt: skip
            release.set()
        answers.insert(0, await first)
        return [a.text if a.refused else str(a.result) for a in answers]

    def ledger(self) -> list[Any]:
        session = self._run(self.gate.session(self.key))
        return list(session.gate.ledger)


class _SdkSurface:
    """An SDK adapter's surface: a ``ToolGate`` the adapter wraps around the agent's tools; an
    operator's approval is given when the next user message opens its request."""

    EXTRA = ""  # the module the SDK's extra installs

    def __init__(self, plan: Plan = PLAN) -> None:
        pytest.importorskip(self.EXTRA, reason=f"needs the {self.EXTRA} extra")
        self.gate = ToolGate(plan)
        self.held: str | None = None

    def cancel(self, step: str) -> None:
        self.gate.cancel(step, inherit=True)

    def approve(self, tool_name: str) -> None:
        self.held = tool_name

    def restart(self) -> None:  # the engineer saved the ledger and loads it again
        self.gate = ToolGate.from_ledger(self.gate.ledger)  # type: ignore[assignment]

    def _open(self, message: str) -> None:
        self.gate.user_message(message)
        if self.held is not None:
            self.gate.approve(self.held, by="ops-lead")
            self.held = None

    def ledger(self) -> list[Any]:
        return list(self.gate.ledger)


class PydanticAiSurface(_SdkSurface):
    """A PydanticAI agent whose tools the ``TaskGate`` capability gates (a model turn's calls run
    concurrently, each judged as it arrives)."""

    EXTRA = "pydantic_ai"

    def turn(self, message: str, calls: tuple[str, ...]) -> list[str]:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        from taskgate.integrations.pydantic_ai import TaskGate

        self._open(message)
        read: list[str] = []
        if not calls:
            return read

        def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
            if len(messages) > 1:
                read.extend(str(getattr(p, "content", "")) for p in messages[-1].parts)
                return ModelResponse(parts=[TextPart("Done.")])
            return ModelResponse(parts=[ToolCallPart(n, {"note": ""}, tool_call_id=f"c{i}")
                                        for i, n in enumerate(calls)])  # fmt: skip

        agent = Agent(FunctionModel(model), tools=list(FUNCTIONS.values()),
                      capabilities=[TaskGate(self.gate)])  # fmt: skip
        asyncio.run(agent.run(message))
        return read


class OpenAiAgentsSurface(_SdkSurface):
    """An OpenAI Agents SDK agent (its real ``Runner``, a ``ScriptedModel``) whose function tools
    ``gated`` wraps; a model turn's calls run concurrently, each judged as it arrives."""

    EXTRA = "agents"

    def turn(self, message: str, calls: tuple[str, ...]) -> list[str]:
        from agents import Agent, Runner, function_tool
        from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

        from taskgate.integrations.openai_agents import gated

        self._open(message)
        if not calls:
            return []
        model = ScriptedModel([
            [function_call(n, {"note": ""}, call_id=f"c{i}") for i, n in enumerate(calls)],
            ModelStep.respond(lambda call: [assistant_message("Done.")]),
        ])  # fmt: skip
        agent = Agent(name="buyer", instructions=SYSTEM, model=model,
                      tools=[function_tool(f) for f in FUNCTIONS.values()])  # fmt: skip
        result = asyncio.run(Runner.run(gated(agent, self.gate), message))
        return [str(it.output) for it in result.new_items if it.type == "tool_call_output_item"]


Turns = list[tuple[str, tuple[str, ...]]]
SURFACES: dict[str, Callable[[list[Any], Plan, Turns], Surface]] = {
    "tool gate": lambda stack, plan, turns: ToolGateSurface(plan),
    "langgraph middleware": lambda stack, plan, turns: MiddlewareSurface(plan, turns),
    "proxy (plan mode)": ProxySurface,
    "mcp gate": lambda stack, plan, turns: McpSurface(plan),
    "pydantic-ai adapter": lambda stack, plan, turns: PydanticAiSurface(plan),
    "openai agents sdk adapter": lambda stack, plan, turns: OpenAiAgentsSurface(plan),
}


def play(surface: Surface) -> tuple[list[list[str]], list[str]]:
    """The conversation on one surface: what each turn's refused calls were told, and what ran."""
    RAN.clear()
    told = []
    for i, (message, calls) in enumerate(TURNS):
        if i == CANCEL_BEFORE:
            surface.cancel("s3")
        if i == APPROVE_BEFORE:
            surface.approve("place_order")
        told.append(notices(surface.turn(message, calls)))
    return told, list(RAN)


@pytest.fixture
def stack() -> Iterator[list[Any]]:
    held: list[Any] = []
    yield held
    for thing in reversed(held):
        thing.__exit__(None, None, None)


@pytest.mark.parametrize("name", list(SURFACES))
def test_every_surface_gives_the_same_verdicts_notices_and_ledger(
    name: str, stack: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    reference = ToolGateSurface()
    want_told, want_ran = play(reference)
    assert want_told == [sorted(t) for t in REFUSED_EXPECTED]
    assert want_ran == RAN_EXPECTED
    want_ledger = ledger_shape(reference.ledger())
    surface = SURFACES[name](stack, PLAN, TURNS)
    told, ran = play(surface)
    assert told == want_told, name
    assert ran == want_ran, name
    assert ledger_shape(surface.ledger()) == want_ledger, name


#: the same plan, where collecting the requirements and drafting the RFQ ask the person every time
ASKING = Plan.model_validate({"binding": "tool", "steps": {
    **{k: v.model_dump(exclude_defaults=True) for k, v in PLAN.steps.items()},
    "s1": {"tool": "collect_requirements", "text": "collect the requirements", "confirm": "always"},
    "s2": {"tool": "draft_rfq", "text": "draft the RFQ", "deps": ["s1"], "confirm": "always"},
}})  # fmt: skip
#: held calls asked back to the user (every surface's channel when none is configured): a yes
#: runs exactly the call shown, also after a restart between the ask and the answer; a no runs
#: nothing; a yes after the state moved on runs nothing
ASKED_TURNS: list[tuple[str, tuple[str, ...]]] = [
    ("Collect the requirements.", ("collect_requirements",)),  # held: the user is asked
    ("Yes, go ahead.", ("collect_requirements",)),  # the yes: it runs, once
    ("Draft the RFQ.", ("draft_rfq",)),  # held
    ("No, not yet.", ("draft_rfq",)),  # the no: it does not run
    ("Please draft the RFQ now.", ("draft_rfq",)),  # held again; cancelled before the answer
    ("Yes.", ("draft_rfq",)),  # a late yes: nothing runs
    ("Thanks, that is all.", ()),  # no call (the proxy commits the turn before on a request)
]
#: what the model says after a turn whose call the gate held: the gate's question, relayed
RELAYS = {
    "Collect the requirements.": "Shall I collect the requirements (note: )? Yes or no?",
    "Draft the RFQ.": "Shall I draft the RFQ (note: )? Yes or no?",
    "Please draft the RFQ now.": "Shall I draft the RFQ (note: )? Yes or no?",
}
ASKED_CANCEL_BEFORE = 5
ASKED_RESTART_BEFORE = 1  # between the first ask and its answer
_QUESTION = re.compile(r"Shall I [^?]*\? Yes or no\?")


def play_asked(surface: Surface) -> tuple[list[tuple[list[str], list[str]]], list[str]]:
    """The asked conversation on one surface: each turn's questions put to the user and refusal
    notices, and what ran."""
    RAN.clear()
    told = []
    for i, (message, calls) in enumerate(ASKED_TURNS):
        if i == ASKED_CANCEL_BEFORE:
            surface.cancel("s2")
        if i == ASKED_RESTART_BEFORE:
            surface.restart()
        read = surface.turn(message, calls)
        told.append((sorted({q for t in read for q in _QUESTION.findall(t)}), notices(read)))
    return told, list(RAN)


@pytest.mark.parametrize("name", list(SURFACES))
def test_every_surface_asks_held_calls_alike_and_runs_only_what_the_user_said_yes_to(
    name: str, stack: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    reference = ToolGateSurface(ASKING)
    want_told, want_ran = play_asked(reference)
    collect = "Shall I collect the requirements (note: )? Yes or no?"
    draft = "Shall I draft the RFQ (note: )? Yes or no?"
    assert [q for q, _ in want_told] == [[collect], [], [draft], [], [draft], [], []]
    assert want_ran == ["collect_requirements"]
    assert want_told[5][1] == ["draft_rfq was not run: 'draft the RFQ' was cancelled."]
    want_ledger = ledger_shape(reference.ledger())
    surface = SURFACES[name](stack, ASKING, ASKED_TURNS)
    told, ran = play_asked(surface)
    assert told == want_told, name
    assert ran == want_ran, name
    assert ledger_shape(surface.ledger()) == want_ledger, name


def test_a_call_that_never_answered_holds_its_step_on_every_surface_until_settled() -> None:
    """A crash mid-call (a cancelled tool, an upstream gone): the step is in doubt, not free, on
    the tool gate and the MCP gate alike, until a person settles it."""
    from taskgate.integrations.mcp import McpGate, McpGateConfig

    async def hang(note: str = "") -> str:
        await asyncio.Event().wait()  # never answers
        return "unreachable"

    async def via_tool_gate() -> list[str]:
        gate = ToolGate(PLAN)
        gate.open_request("s1")
        task = asyncio.create_task(gate.acall("collect_requirements", hang))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        again = gate.begin("collect_requirements")
        gate.settle("s1", ran=True)
        return [str(again.verdict.reason), sorted(gate.in_doubt()).__repr__(),
                str(gate.machine.status("s1"))]  # fmt: skip

    async def via_mcp_gate() -> list[str]:
        gate = McpGate(McpGateConfig(plan=PLAN, requests="application"))
        await gate.request("k~local", "Collect the requirements.")

        async def gone() -> str:
            raise ConnectionError("the upstream went away")

        with pytest.raises(ConnectionError):
            await gate.call("k~local", "collect_requirements", {}, gone, lambda r: True)
        again = await gate.call("k~local", "collect_requirements", {}, hang, lambda r: True)
        session = await gate.session("k~local")
        await gate.settle("k~local", "s1", ran=True)
        reason = next(e.reason for e in reversed(session.gate.ledger) if e.kind == "attempt"
                      and e.decision == "refuse")  # fmt: skip
        assert again.refused
        return [str(reason), sorted(session.gate.in_doubt()).__repr__(),
                str(session.gate.machine.status("s1"))]  # fmt: skip

    want = ["in-progress", "[]", "DONE"]
    assert asyncio.run(via_tool_gate()) == want
    assert asyncio.run(via_mcp_gate()) == want


def test_every_fold_of_stored_state_holds_the_unrequested_rule() -> None:
    """An admission made while the request named no step (edited into a refusal's place) is
    refused by every fold of stored state, as ``ToolGate.from_ledger`` refuses it: the proxy's and
    the MCP gate's journal fold, the MCP gate's default path, and the middleware's rebuild."""
    from taskgate import LedgerFormatError, sealed_rows
    from taskgate.integrations.langgraph import TaskGateMiddleware
    from taskgate.integrations.mcp import McpGate, McpGateConfig
    from taskgate.journal import Conversation, MemoryStore
    from taskgate.journal.events import LedgerEvent

    gate = ToolGate(PLAN, asks=False)
    gate.open_request(None)  # "thanks!"
    assert not gate.begin("collect_requirements").admitted
    forged = list(gate.ledger)
    forged[-1] = forged[-1].model_copy(update={"decision": "admit", "reason": None})
    events: list[Any] = [LedgerEvent(entry=e) for e in forged]
    with pytest.raises(LedgerFormatError, match="asked for no step"):
        ToolGate.from_ledger(forged)
    with pytest.raises(LedgerFormatError, match="asked for no step"):
        Conversation("k~anon", events, requested=True)  # the proxy's plan mode and the MCP gate
    assert Conversation("k~anon", events).machine.status("s1").value == "DONE"  # the paper's rule

    async def mcp_session() -> None:
        store = MemoryStore()
        await store.append("k~local", 0, events)
        await McpGate(McpGateConfig(plan=PLAN, requests="application"), store).session("k~local")

    with pytest.raises(LedgerFormatError, match="asked for no step"):
        asyncio.run(mcp_session())
    rows = sealed_rows(forged, scope="t")
    with pytest.raises(LedgerFormatError, match="asked for no step"):
        TaskGateMiddleware(PLAN).gate({"taskgate_ledger": rows}, sync=True, thread="t")


def test_the_proxy_refuses_an_unbound_tool_when_told_to() -> None:
    """``unbound`` is one rule on every surface, the proxy's plan mode included."""
    from taskgate import UsageError
    from taskgate.proxy import ProxyConfig
    from taskgate.proxy.gating import Judged, judge_calls, rung

    gate = ToolGate(PLAN)
    gate.open_request("s1")
    native = [{"id": "c1", "type": "function",
               "function": {"name": "search_catalog", "arguments": "{}"}}]  # fmt: skip
    for unbound, passed in (("run", 1), ("refuse", 0)):
        kept, refusals = judge_calls(gate.machine, rung("enforcement"), native, Judged(),
                                     planned=True, unbound=unbound)  # type: ignore[arg-type]  # fmt: skip
        assert len(kept) == passed
        assert refusals == ([] if passed else
                            ["search_catalog was not run: it is not one of this task's tools."])  # fmt: skip
    with pytest.raises(UsageError, match="unbound must be"):
        ProxyConfig("http://127.0.0.1:1/v1", plan=PLAN, unbound="maybe")  # type: ignore[arg-type]


def test_the_proxy_and_the_mcp_gate_show_a_conversation_in_one_status_json(
    stack: list[Any],
) -> None:
    """One operators' router and one status JSON: after the same conversation, the proxy's
    ``GET /taskgate/conversations/{id}`` and the MCP gate's ``/taskgate/sessions/{id}`` have the
    same keys (the proxy's rung aside) and the same plan, statuses, request and refusals."""
    from taskgate.integrations.mcp.operator import Operated

    proxy, mcp = ProxySurface(stack), McpSurface()
    play(proxy)
    play(mcp)
    via_proxy = proxy.ops.get(f"{proxy.proxy.url}/taskgate/conversations/{proxy.key}").json()
    via_mcp = mcp._run(Operated(mcp.gate).status(mcp.key))
    assert via_proxy.pop("rung") == "enforcement"
    assert set(via_proxy) == set(via_mcp)
    for key in ("plan", "statuses", "in_doubt", "running", "held"):
        assert via_proxy[key] == via_mcp[key], key
    assert via_proxy["request"]["step"] == via_mcp["request"]["step"] == "s5"
    assert [r["step"] for r in via_proxy["refusals"]] == [r["step"] for r in via_mcp["refusals"]]
    assert via_proxy["turns"] == via_mcp["turns"] == len(TURNS)  # each user message, on both
    rows = [proxy.ops.get(f"{proxy.proxy.url}/taskgate/conversations").json()["conversations"][0],
            mcp._run(Operated(mcp.gate).row(mcp.key))]  # fmt: skip
    for row in rows:  # listed by the first user message, its time and whose it is
        assert row["first"] == TURNS[0][0] and row["turns"] == len(TURNS)
        assert 0 < row["since"] <= row["last"]
    assert rows[0]["label"].startswith("key ") and rows[1]["label"] == "local"  # sk-test; stdio
