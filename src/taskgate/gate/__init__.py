"""The tool gate: task state around any tool dispatcher.

Wrap your dispatcher once::

    gate = ToolGate(plan)                       # a tool-bound plan: {"binding": "tool", ...}
    gate.open_request("s2")                     # the matcher resolved this request to s2
    result = gate.call("draft_rfq", draft_rfq, spec)   # judged, run, and its receipt recorded

A refused call raises :class:`ToolRefused` (its ``notice`` is what the agent should read) and the
tool never runs. Integrations (LangGraph) use the lower-level :meth:`ToolGate.begin` and
:meth:`ToolGate.finish` around their own dispatch.
"""

from taskgate.errors import ToolRefused
from taskgate.gate.tool_gate import Opened, Ticket, ToolGate, check_tools

__all__ = ["Opened", "Ticket", "ToolGate", "ToolRefused", "check_tools"]
