"""The paper's real-tool harness (Appendix G), built on the tool gate and LangGraph.

* :mod:`.workspace`: the 18 procurement tools, each appending a block stamped
  ``== EXECUTION #W1234 ==`` to its artifact in a per-episode workspace (the artifact is the receipt);
* :mod:`taskgate.protocol.tools`: the harness brief (the TOOLS clause of Appendix B.1, byte for
  byte); :mod:`taskgate.lab.episodes.tools`: an episode's tool-bound plan;
* :mod:`taskgate.protocol.actions`: reading ACTION lines and native calls; :mod:`.dispatch`: judging and executing
  one call (a stale work order is refused in every arm);
* :mod:`.graph`: one turn as a compiled LangGraph ``StateGraph`` (at most three hops);
  :mod:`.exchange`: an episode-arm's turns, the workspace checked after each;
  :mod:`.native`: the tools as OpenAI function tools on ``ChatOpenAI``;
* :mod:`.runner`: :class:`~taskgate.lab.harness.runner.ToolHarness`, the variant of the ladder's runner
  that ``taskgate tools`` runs.

This package's own namespace needs no extra; the loop and runner modules need ``taskgate[langgraph]``.
"""

from taskgate.lab.harness.workspace import TOOLS, Workspace

__all__ = ["TOOLS", "Workspace"]
