"""The command line's option sets, each defined once, and the parsing helpers they share.

An option set is a frozen dataclass whose fields carry their ``typer.Option``; a command takes the
whole set as one parameter and :func:`command` expands it into the individual flags::

    @command
    def ladder(endpoint: EndpointOptions, cell: CellOptions, ...) -> None:
        endpoint.base_url, cell.arms, ...

so that ``taskgate ladder``, ``taskgate run`` and ``taskgate tau2 run`` spell every shared switch
the same way and a new option is added in one place.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_type_hints

import typer

from taskgate.errors import MissingExtraError, TaskgateError
from taskgate.lab.arms.registry import ARMS, LADDER, TOOL_LADDER
from taskgate.lab.experiments.probe import VARIANTS, ProbeConfig
from taskgate.lab.runner.cluster import check_address
from taskgate.lab.runner.roles import ROLES
from taskgate.lab.runner.shards import Shard
from taskgate.registry import Registry

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


# -- the option sets -------------------------------------------------------------------------------
ThinkOpt = Annotated[bool, typer.Option(help="The thinking regime's reply budgets (Appendix B.4).")]
JsonOpt = Annotated[
    Path | None, typer.Option("--json", help="Also write the results as JSON to this file.")
]


ScheduleOpt = Annotated[
    Literal["paper", "original", "v1"],
    typer.Option(
        help="paper: the paper's revised schedule, S+6 scored turns (its amended-brief grid); "
        "original: its original grid's, the redo probes drawn before the redo target "
        "(Appendix E); v1: taskgate's first, S+5."
    ),
]


@dataclass(frozen=True, kw_only=True)
class EndpointOptions:
    """Where the model is, and how to call it (``ladder``, ``run``, ``tau2 run``)."""

    base_url: Annotated[
        list[str] | None,
        typer.Option(
            help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else the embedded model); "
            "repeat it to spread the calls over several servers of the model.",
            show_default=False,
            metavar="URL",
        ),
    ] = None
    endpoints: Annotated[
        Path | None,
        typer.Option(
            help="A file of endpoints for the agent (and, unless given their own, the matcher "
            "and compiler): one base URL per line, optionally followed by its concurrency limit.",
        ),
    ] = None
    matcher_base_url: Annotated[
        list[str] | None,
        typer.Option(
            help="The matcher's own endpoint(s) (repeatable).", show_default=False, metavar="URL"
        ),
    ] = None
    compiler_base_url: Annotated[
        list[str] | None,
        typer.Option(
            help="The compiler's own endpoint(s) (repeatable).", show_default=False, metavar="URL"
        ),
    ] = None
    matcher_model: Annotated[
        str | None,
        typer.Option(help="The matcher's model name (default: the agent's).", show_default=False),
    ] = None
    compiler_model: Annotated[
        str | None,
        typer.Option(
            help="The compiler's model name (default: the agent's), e.g. a no-think model that "
            "compiles for both regimes, as in the paper.",
            show_default=False,
        ),
    ] = None
    model: Annotated[str | None, typer.Option(help="Model name (default: $TASKGATE_MODEL).")] = None
    thinking: Annotated[
        bool | None,
        typer.Option(
            "--enable-thinking/--disable-thinking",
            help="Send chat_template_kwargs.enable_thinking (models with a thinking switch, such as Qwen3; default: send nothing).",
        ),
    ] = None
    deepseek_thinking: Annotated[
        bool | None,
        typer.Option(
            "--deepseek-thinking/--no-deepseek-thinking",
            help='Send DeepSeek\'s thinking switch, thinking: {"type": "enabled" | "disabled"} (DeepSeek\'s API; default: send nothing).',
        ),
    ] = None
    timeout: Annotated[float, typer.Option(min=1.0, help="Request timeout in seconds.")] = 900.0
    max_tokens: Annotated[
        int | None,
        typer.Option(min=16, help="Cap every reply budget (default: the paper's budgets)."),
    ] = None
    concurrency: Annotated[
        int,
        typer.Option(
            min=1,
            help="Episode-arms (or simulations) in flight at once, and each endpoint's limit of "
            "requests in flight (an --endpoints file may set its own).",
        ),
    ] = 8
    retries: Annotated[
        int,
        typer.Option(
            min=0,
            max=20,
            help="Retries of a failed model call, with exponential backoff (1 s, 2 s, ...).",
        ),
    ] = 5


@dataclass(frozen=True, kw_only=True)
class CellOptions:
    """The arms, roles and conditions of a cell (``ladder``, ``run``)."""

    arms: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated arms, lowest rung first (default: the command's ladder: "
            f"{','.join(LADDER)}; for tools {','.join(TOOL_LADDER)}): {', '.join(ARMS)}.",
            show_default=False,
        ),
    ] = None
    agent: Annotated[str, typer.Option(help=f"The agent: {', '.join(ROLES.names('agent'))}.")] = (
        "llm"
    )
    compiler: Annotated[
        str,
        typer.Option(
            help=f"The gate's compiler: {', '.join(ROLES.names('compiler'))}; "
            "auto = llm with a model agent, else scripted."
        ),
    ] = "auto"
    matcher: Annotated[
        str,
        typer.Option(
            help=f"The matcher: {', '.join(ROLES.names('matcher'))}; "
            "auto = llm with a model agent, else scripted."
        ),
    ] = "auto"
    think: ThinkOpt = False
    corruption: Annotated[
        str,
        typer.Option(help="Comma-separated corruption rates of the gate's state, per step-turn."),
    ] = "0"
    repair: Annotated[
        bool, typer.Option(help="Rebuild the gate's completions from its receipts every turn.")
    ] = False
    bypass: Annotated[
        bool, typer.Option(help="Filler and revision turns skip the matcher (schedule metadata).")
    ] = True
    embedder: Annotated[
        Literal["minilm", "hash"],
        typer.Option(
            help="The memory arms' sentence embedder: all-MiniLM-L6-v2 on the CPU (needs "
            "taskgate[memory]), or hash, a deterministic fake with no model."
        ),
    ] = "minilm"

    def arm_list(
        self, default: Sequence[str] = LADDER, allowed: Sequence[str] | Registry[Any] = ARMS
    ) -> list[str]:
        if self.arms is None:
            return list(default)
        return check_names(split_list(self.arms, str, "--arms"), allowed, "--arms", "arm")

    def conditions(self) -> dict[str, Any]:
        """The run conditions it sets, as :class:`~taskgate.lab.LadderConfig` fields."""
        return {
            "corruption": self.rates(),
            "repair": self.repair,
            "bypass": self.bypass,
            "embedder": self.embedder,
            "think": self.think,
        }

    def rates(self) -> list[float]:
        rates = split_list(self.corruption, float, "--corruption")
        for r in rates:
            if not 0.0 <= r <= 1.0:
                raise typer.BadParameter(f"{r} is not a rate in [0, 1]", param_hint="--corruption")
        return rates

    def roles(self) -> tuple[str, str, str]:
        """(agent, compiler, matcher), checked, with ``auto`` resolved."""
        check_names([self.agent], ROLES.names("agent"), "--agent")
        default = "llm" if ROLES.needs_model("agent", self.agent) else "scripted"
        compiler = default if self.compiler == "auto" else self.compiler
        matcher = default if self.matcher == "auto" else self.matcher
        check_names([compiler], ROLES.names("compiler"), "--compiler")
        check_names([matcher], ROLES.names("matcher"), "--matcher")
        return self.agent, compiler, matcher


@dataclass(frozen=True, kw_only=True)
class ReportOptions:
    """How tables are printed and where the JSON rows go (``ladder``, ``report``, ``score``)."""

    fmt: Annotated[Literal["md", "latex"], typer.Option(help="Table format.")] = "md"
    json: JsonOpt = None


@dataclass(frozen=True, kw_only=True)
class ScaleOptions:
    """Grids beyond one process (``ladder``, ``run``, ``tools``)."""

    shard: Annotated[
        str | None,
        typer.Option(
            help="Run shard I of N only (I/N, from 1/N to N/N): every N-th episode with all its "
            "arms. Give each shard its own --out, then `taskgate merge` them.",
            show_default=False,
            metavar="I/N",
        ),
    ] = None
    ray: Annotated[
        str | None,
        typer.Option(
            help="Play the episode-arms as Ray tasks: local (a one-machine Ray instance), auto, "
            "HOST:PORT or ray://HOST:PORT (the ray extra). Without it nothing of Ray runs.",
            show_default=False,
            metavar="ADDRESS",
        ),
    ] = None

    def checked(self) -> tuple[Shard | None, str | None]:
        """(the shard, the Ray address), checked before any work starts."""
        text = self.shard
        shard = usage("--shard", lambda: Shard.parse(text)) if text is not None else None
        if self.ray is not None:
            usage("--ray", lambda: check_address(self.ray or ""))
        return shard, self.ray


@dataclass(frozen=True, kw_only=True)
class ProbeOptions:
    """What the trap-turn probe asks and how (``probe``, ``probe-tools``)."""

    samples: Annotated[int, typer.Option(min=0, help="Samples per variant and trap turn.")] = 8
    temperature: Annotated[float, typer.Option(min=0.0, max=2.0)] = 0.7
    top_p: Annotated[float, typer.Option(min=0.0, max=1.0, help="0: not sent.")] = 0.8
    top_k: Annotated[int, typer.Option(min=0, help="0: not sent.")] = 0
    sample_seed: Annotated[int, typer.Option(help="Sample i is asked with this seed+i.")] = 0
    variants: Annotated[
        str | None,
        typer.Option(help=f"Comma-separated variants (default all): {', '.join(VARIANTS)}."),
    ] = None
    greedy: Annotated[bool, typer.Option(help="Also re-ask each variant once greedily.")] = True
    max_traps: Annotated[
        int | None, typer.Option(min=1, help="Probe the first N trap turns only.")
    ] = None

    def config(
        self,
        concurrency: int,
        cell: tuple[int, float] | None = None,
        smoke: int = 0,
    ) -> ProbeConfig:
        """The probe's settings; ``smoke`` (the embedded model's run): 2 trap turns and at most
        that many samples per variant."""
        names = tuple(split_list(self.variants, str, "--variants")) if self.variants else None
        return usage(
            "--variants",
            lambda: ProbeConfig(
                samples=min(self.samples, smoke) if smoke else self.samples,
                temperature=self.temperature,
                top_p=self.top_p or None,
                top_k=self.top_k or None,
                seed=self.sample_seed,
                variants=names or tuple(VARIANTS),
                greedy=self.greedy,
                max_traps=self.max_traps or 2 if smoke else self.max_traps,
                cell=cell,
                concurrency=concurrency,
            ),
        )


OPTION_SETS = (EndpointOptions, CellOptions, ReportOptions, ScaleOptions, ProbeOptions)


def command(fn: F) -> F:
    """Expand each option-set parameter of ``fn`` into its flags, for typer."""
    hints = get_type_hints(fn, include_extras=True)
    params: list[inspect.Parameter] = []
    sets: dict[str, type[Any]] = {}
    for name, p in inspect.signature(fn).parameters.items():
        hint = hints[name]
        if hint in OPTION_SETS:
            sets[name] = hint
            fields = get_type_hints(hint, include_extras=True)
            params += [
                inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                                  annotation=fields[f.name])
                for f in dataclasses.fields(hint)
            ]  # fmt: skip
        else:
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hint))

    @functools.wraps(fn)
    def wrapper(**kw: Any) -> Any:
        for name, cls in sets.items():
            kw[name] = cls(**{f.name: kw.pop(f.name) for f in dataclasses.fields(cls)})
        return fn(**kw)

    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper  # type: ignore[return-value]


# -- parsing helpers -------------------------------------------------------------------------------
def split_list(value: str, convert: Callable[[str], T], flag: str) -> list[T]:
    """``"10,15"`` -> ``[10, 15]``, or a usage error naming the flag and the bad item."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise typer.BadParameter(f"{flag} needs at least one value", param_hint=flag)
    out = []
    for item in items:
        try:
            out.append(convert(item))
        except ValueError:
            raise typer.BadParameter(f"{item!r} is not a valid value", param_hint=flag) from None
    return out


def load_rewrites(path: Path | None) -> dict[str, list[str]] | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc}", param_hint="--rewrites") from None
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in data.values()
    ):
        raise typer.BadParameter(
            f"{path} must map template slugs to lists of wordings", param_hint="--rewrites"
        )
    return data


def check_names(
    names: Sequence[str], known: Sequence[str] | Registry[Any], flag: str, kind: str = "name"
) -> list[str]:
    """``names`` as their registered names (an alias becomes the name it stands for); an unknown
    one is a usage error on ``flag`` naming the nearest choice and every choice."""
    registry = known if isinstance(known, Registry) else Registry(kind, ((k, k) for k in known))
    try:
        return list(registry.choose_all(names))
    except TaskgateError as exc:
        raise typer.BadParameter(str(exc), param_hint=flag) from None


def usage(flag: str, call: Callable[[], T]) -> T:
    """``call()``, with a taskgate error turned into a usage error on ``flag``."""
    try:
        return call()
    except MissingExtraError:
        raise  # not the flag's fault: one line naming the extra
    except TaskgateError as exc:
        raise typer.BadParameter(str(exc), param_hint=flag) from None
