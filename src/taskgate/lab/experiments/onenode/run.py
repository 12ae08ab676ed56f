"""The one-node case's arms and episode loop, logged to ``onenode.jsonl`` (resumable).

Arms: ``transcript`` (the commitment stays in the transcript, nothing else), ``manifest`` (every
one-shot instruction given so far listed in the system prompt every turn: a prompt manifest),
``trigger`` (each instruction compiled into a guarded trigger; a request that fires it gets a
one-shot directive for that call, the trigger is consumed, and the transcript's trace of the
consumed instruction is sanitized) and ``trigger-raw`` (the same trigger without sanitization).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from taskgate.errors import LogFormatError, ModelError, UsageError
from taskgate.lab.experiments.onenode.roles import Pending, TriggerCompiler, TriggerMatcher
from taskgate.lab.experiments.onenode.testbed import BY_SLUG, NodeEpisode, NodeTurn, brief, generate
from taskgate.lab.experiments.protocol import ExperimentFile, Header
from taskgate.lab.progress import Progress
from taskgate.registry import Registry
from taskgate.roles import ChatMessage

#: the one-node arms (Appendix J's names), with the ladder's names for the same couplings as aliases
ARMS: Registry[str] = Registry(
    "one-node arm",
    (
        ("transcript", "the commitments in the transcript only"),
        ("manifest", "the commitments listed in a prompt manifest"),
        ("trigger", "compiled guarded triggers, the consumed one-shot sanitized"),
        ("trigger-raw", "compiled guarded triggers, the transcript left as it was"),
    ),
    aliases={"raw": "transcript", "checklist": "manifest", "enforcement": "trigger"},
)
LOG = "onenode.jsonl"
SANITIZED_USER = "(A one-shot instruction given here has been carried out; it no longer applies.)"
SANITIZED_REPLY = "Noted."


def directive(vendor: str, noun: str) -> str:
    return (
        f"[ONE-SHOT] This request triggers a standing one-shot instruction for your next {noun}: "
        f"book it with {vendor}. The instruction is consumed with this booking."
    )


class NodeAgent(Protocol):
    turn: NodeTurn | None

    async def reply(self, messages: Sequence[ChatMessage]) -> str: ...


@dataclass
class NodeRoles:
    agent: NodeAgent
    compiler: TriggerCompiler
    matcher: TriggerMatcher


class NodeHeader(Header):
    kind: Literal["onenode"] = "onenode"
    k: int
    after: int
    controls: int
    agent: str
    compiler: str
    matcher: str


#: the one-node run's file: its settings, then each finished episode-arm's records
NODE_FILE = ExperimentFile(LOG, NodeHeader, "a one-node run")


class NodeTurnRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["turn"] = "turn"
    episode: int  # the seed
    arm: str
    index: int
    fired: int | None = None  # the trigger the matcher fired (trigger arms)
    compiled: bool | None = None  # a commit turn of a trigger arm: whether it compiled
    reply: str


class NodeMark(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["start", "end"]
    episode: int
    arm: str


@dataclass
class _State:
    history: list[ChatMessage] = field(default_factory=list)
    given: list[str] = field(default_factory=list)  # the manifest: instructions so far
    pending: Pending = field(default_factory=dict)
    commit_at: dict[int, int] = field(default_factory=dict)  # trigger -> its history position


async def run_node_episode(
    episode: NodeEpisode, arm: str, roles: NodeRoles, sink: Callable[[BaseModel], None]
) -> None:
    """One episode under one arm; every turn's record goes to ``sink`` as it happens."""
    if arm not in ARMS:
        raise UsageError(ARMS.unknown(arm))
    arm = ARMS.canonical(arm)
    sink(NodeMark(kind="start", episode=episode.seed, arm=arm))
    state = _State()
    for turn in episode.turns:
        sink(await _turn(episode, arm, roles, state, turn))
    sink(NodeMark(kind="end", episode=episode.seed, arm=arm))


async def _turn(
    episode: NodeEpisode, arm: str, roles: NodeRoles, state: _State, turn: NodeTurn
) -> NodeTurnRecord:
    gated = arm.startswith("trigger")
    compiled: bool | None = None
    fired: int | None = None
    if turn.role == "commit":
        state.given.append(turn.message)
        if gated:
            c = await roles.compiler.compile(turn.message, turn)
            compiled = c is not None
            if c is not None:
                assert turn.commitment is not None
                state.pending[turn.commitment] = c
                state.commit_at[turn.commitment] = len(state.history)
    elif gated and turn.work_order is not None:
        fired = await roles.matcher.fires(turn.message, dict(state.pending), turn)
    system = brief()
    if arm == "manifest" and state.given:
        system += "\n\nStanding one-shot instructions from the user:\n" + "\n".join(
            f"- {g}" for g in state.given
        )
    user = turn.message
    if fired is not None:
        c = state.pending[fired]
        user += "\n\n" + directive(c.vendor, BY_SLUG[c.category].noun)
    roles.agent.turn = turn
    reply = await roles.agent.reply(
        [{"role": "system", "content": system}, *state.history, {"role": "user", "content": user}]
    )
    state.history += [
        {"role": "user", "content": turn.message},
        {"role": "assistant", "content": reply},
    ]
    if fired is not None:  # consumed: with sanitization, its instruction leaves the transcript
        state.pending.pop(fired)
        at = state.commit_at.pop(fired)
        if arm == "trigger":
            state.history[at] = {"role": "user", "content": SANITIZED_USER}
            state.history[at + 1] = {"role": "assistant", "content": SANITIZED_REPLY}
    return NodeTurnRecord(
        episode=episode.seed, arm=arm, index=turn.index, fired=fired, compiled=compiled, reply=reply
    )


@dataclass(frozen=True)
class NodeConfig:
    arms: tuple[str, ...] = tuple(ARMS)
    episodes: int = 25
    first_seed: int = 100
    k: int = 4
    after: int = 2
    controls: int = 3
    concurrency: int = 8

    def __post_init__(self) -> None:
        object.__setattr__(self, "arms", ARMS.choose_all(self.arms))  # Appendix J's names
        if not 1 <= self.k <= 9:
            raise UsageError(f"commitments per episode must be 1-9, got {self.k}")
        if self.episodes < 1 or self.after < 1 or self.controls < 0 or self.concurrency < 1:
            raise UsageError("episodes, after-requests and concurrency must be at least 1")

    def episode(self, seed: int) -> NodeEpisode:
        return generate(seed, self.k, self.after, self.controls)

    def header(self, agent: str, compiler: str, matcher: str) -> NodeHeader:
        return NodeHeader(
            k=self.k,
            after=self.after,
            controls=self.controls,
            agent=agent,
            compiler=compiler,
            matcher=matcher,
        )


RoleFactory = Callable[[NodeEpisode], NodeRoles]


async def run_one_node(
    config: NodeConfig,
    out: Path,
    roles: RoleFactory,
    names: tuple[str, str, str],
    progress: Progress | None = None,
) -> Progress:
    """Run every (episode, arm) not yet finished in ``out`` (rerunning resumes)."""
    header = config.header(*names)
    old, finished = read_node_log(out)
    NODE_FILE.check(out, old, header)
    seeds = range(config.first_seed, config.first_seed + config.episodes)
    jobs = [(s, a) for s in seeds for a in config.arms]
    progress = progress or Progress()
    progress.total = len(jobs)
    with NODE_FILE.appending(out, header, old is None) as sink:
        pending = iter(jobs)

        async def worker() -> None:
            for seed, arm in pending:
                if (seed, arm) in finished:
                    progress.skipped += 1
                    progress.advance()
                    continue
                ep = config.episode(seed)
                kept: list[BaseModel] = []
                try:
                    await run_node_episode(ep, arm, roles(ep), kept.append)
                except ModelError as exc:
                    progress.fail(f"{ep.id} / {arm}: {exc}")
                    continue
                for record in kept:  # an episode-arm's lines go out together, once it finished
                    sink(record)
                progress.advance()

        await asyncio.gather(*(worker() for _ in range(min(config.concurrency, len(jobs)))))
    return progress


def read_node_log(
    out: Path,
) -> tuple[NodeHeader | None, dict[tuple[int, str], list[NodeTurnRecord]]]:
    """The header and every finished episode-arm's turns (unfinished ones are left out)."""
    path = out / LOG
    if not path.exists():
        return None, {}
    header: NodeHeader | None = None
    open_: dict[tuple[int, str], list[NodeTurnRecord]] = {}
    done: dict[tuple[int, str], list[NodeTurnRecord]] = {}
    with path.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                data: Any = orjson.loads(line)
                kind = data.get("kind") if isinstance(data, dict) else None
                if n == 1:
                    header = NodeHeader.model_validate(data)
                elif kind == "turn":
                    rec = NodeTurnRecord.model_validate(data)
                    open_.setdefault((rec.episode, rec.arm), []).append(rec)
                else:
                    mark = NodeMark.model_validate(data)
                    key = (mark.episode, mark.arm)
                    if mark.kind == "start":
                        open_[key] = []
                    elif key in open_:
                        done[key] = open_.pop(key)
            except (orjson.JSONDecodeError, ValidationError) as exc:
                if n == 1:
                    raise LogFormatError(f"{path}:1: not a one-node log header") from exc
                continue  # a half-written last line: its episode-arm has no end and reruns
    if header is not None:  # an episode-arm whose turns do not add up is not finished: it reruns
        sizes: dict[int, int] = {}
        for seed, arm in list(done):
            if seed not in sizes:
                sizes[seed] = len(generate(seed, header.k, header.after, header.controls).turns)
            turns = done[(seed, arm)]
            if [t.index for t in turns] != list(range(sizes[seed])):
                del done[(seed, arm)]
    return header, done
