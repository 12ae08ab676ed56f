"""The MCP gate (the ``taskgate[mcp]`` extra): task state in front of any MCP server.

    taskgate mcp --plan plan.toml -- python my_server.py

is an MCP server whose tools are ``my_server.py``'s; each ``tools/call`` is judged on the
session's task state before it reaches the upstream, and a refused call is an MCP tool error
saying why in plain words. :class:`McpGate` holds the sessions (:mod:`.sessions`),
:func:`run_stdio` serves it to a stdio client (:mod:`.stdio`), :func:`http_app` over
streamable HTTP with the operators' endpoints (:mod:`.operator`); :func:`build_server` makes it
an MCP SDK server (:mod:`.server`).
"""

from __future__ import annotations

from taskgate.errors import MissingExtraError

try:
    from taskgate.integrations.mcp.server import (
        REQUEST_TOOL,
        build_server,
        http_app,
        run_stdio,
        serve_stdio,
    )
    from taskgate.integrations.mcp.sessions import Answer, McpGate, McpGateConfig
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "starlette", "httpx", "aiohttp"):
        raise
    raise MissingExtraError("mcp", "the MCP gate", exc.name) from None

__all__ = [
    "REQUEST_TOOL",
    "Answer",
    "McpGate",
    "McpGateConfig",
    "build_server",
    "http_app",
    "run_stdio",
    "serve_stdio",
]
