"""The paper's real-tool harness (Appendix G), built on the tool gate: so far its workspace (the
18 procurement tools with stamped artifacts), the harness brief and the tool-bound plan of an
episode. The agent loop, its five arms and the Table rw report are not built yet."""

from .brief import TOOLS_CLAUSE, harness_brief, tool_plan
from .workspace import TOOLS, Workspace

__all__ = ["TOOLS", "TOOLS_CLAUSE", "Workspace", "harness_brief", "tool_plan"]
