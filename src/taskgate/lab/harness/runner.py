"""The harness as a variant of the ladder's runner: same grid, run directory, resume and roles.

:class:`ToolHarness` tells :func:`taskgate.lab.run_episodes` how to play an episode-arm in the
real-tool harness: the episode with its tool-bound plan and harness brief, a fresh workspace per
episode-arm (``<out>/workspaces/<episode>/<arm>``), the turn graph in place of the arm's
exchange, and the stamp on every episode record (harness name, agent mode, langgraph version).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from taskgate._version import __version__
from taskgate.errors import UsageError, WorkspaceError
from taskgate.lab.arms.arm import Arm, ExchangeFn
from taskgate.lab.arms.registry import TOOL_LADDER
from taskgate.lab.episodes.models import Episode
from taskgate.lab.episodes.records import HarnessStamp
from taskgate.lab.episodes.tools import harness_episode
from taskgate.lab.harness.exchange import NativeModel, ToolExchange
from taskgate.lab.harness.graph import Mode
from taskgate.lab.harness.workspace import Workspace
from taskgate.lab.runner.roles import ROLES
from taskgate.llm.client import OnCall

HARNESS_NAME = "taskgate-tools"
#: the workspaces of a run directory
WORKSPACES = "workspaces"
#: the harness's arms, lowest rung first (the paper's five, by their testbed names)
TOOL_ARMS = TOOL_LADDER


def langgraph_version() -> str:
    try:
        return version("langgraph")
    except PackageNotFoundError:  # pragma: no cover - the extra is installed wherever this runs
        return "unknown"


@dataclass(frozen=True)
class ToolHarness:
    """How the runner plays an episode-arm in the harness. ``native_model`` makes the llm agent
    of the native mode from the run's call log (the CLI binds it to the endpoint)."""

    out: Path
    mode: Mode = "actions"
    native_model: Callable[[OnCall], NativeModel] | None = None
    stamp: HarnessStamp = field(init=False)

    def __post_init__(self) -> None:
        stamp = HarnessStamp(
            name=HARNESS_NAME, mode=self.mode, langgraph=langgraph_version(), taskgate=__version__
        )
        object.__setattr__(self, "stamp", stamp)

    def run_id(self, episode: Episode) -> str:
        """The harness's episode ids are its own (a shared run directory keeps both apart)."""
        return f"{episode.id}-tools-{self.mode}"

    def episode(self, episode: Episode) -> Episode:
        return harness_episode(episode, self.mode)

    def exchange(self, arm: Arm, run_id: str, agent: str, on_call: OnCall) -> ExchangeFn:
        """A fresh workspace and the turn graph for one episode-arm (an interrupted run's
        workspace is cleared: the episode-arm reruns from its start)."""
        native = None
        if self.mode == "native" and agent != "llm" and ROLES.needs_model("agent", agent):
            raise UsageError(f"the {agent} agent writes ACTION lines; run it in the actions mode")
        if self.mode == "native" and agent == "llm":
            if self.native_model is None:
                raise UsageError("the native mode's llm agent needs a model endpoint")
            native = self.native_model(on_call)
        root = self.out / WORKSPACES / run_id / arm.name
        try:
            if root.exists():
                shutil.rmtree(root)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot clear the workspace {root}: {exc.strerror or exc}"
            ) from None
        return ToolExchange(arm, Workspace(root), self.mode, native)
