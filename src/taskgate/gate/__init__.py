"""The gate: one core for a gated conversation, and the tool gate around any tool dispatcher.

:class:`GateSession` holds every rule of the gate (see :mod:`taskgate.gate.session`); each
surface (the tool gate, the LangGraph middleware, the proxy, the MCP gate, the SDK adapters) only
translates its framework's events into its calls. :class:`ToolGate` is that core plus the calls
that run a tool behind it. Wrap your dispatcher once::

    gate = ToolGate(plan)                       # a tool-bound plan: {"binding": "tool", ...}
    gate.open_request("s2")                     # the matcher resolved this request to s2
    result = gate.call("draft_rfq", draft_rfq, spec)   # judged, run, and its receipt recorded

A refused call raises :class:`ToolRefused` (its ``notice`` is what the agent should read) and the
tool never runs. Integrations use the lower-level :meth:`GateSession.judge` and
:meth:`GateSession.finish` around their own dispatch.
"""

from taskgate.errors import ToolRefused
from taskgate.gate.session import Call, Doubt, GateSession, Opened, Ticket, check_tools
from taskgate.gate.tool_gate import ToolGate

__all__ = [
    "Call",
    "Doubt",
    "GateSession",
    "Opened",
    "Ticket",
    "ToolGate",
    "ToolRefused",
    "check_tools",
]
