"""A procurement MCP server to put the gate in front of, for tests and demos (shipped, as the
fake model server is): ``python -m taskgate.integrations.mcp.testing [--log FILE] [--http PORT]``.

Its tools are collect_requirements, draft_rfq, send_rfq, select_vendor, place_order (each does
one step of the work) and search_catalog (a read). Every call it receives is appended to the log
file as one JSON line, so a test can show that a refused call never reached it; a ``slow``
argument (seconds) makes a call take that long, and ``fail: true`` makes it fail.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from taskgate.errors import UsageError

TOOLS = {
    "collect_requirements": "Collect the buyer's requirements (items, quantities, budget).",
    "draft_rfq": "Draft the request for quotes from the requirements.",
    "send_rfq": "Send the request for quotes to the vendors.",
    "select_vendor": "Select the vendor from the quotes received.",
    "place_order": "Place the purchase order with the selected vendor.",
    "search_catalog": "Search the product catalog (read only).",
}


def make_server(log: Path | None) -> MCPServer:
    server = MCPServer("procurement")

    def tool(name: str, description: str) -> None:
        def run(note: str = "", slow: float = 0.0, fail: bool = False) -> str:
            if log is not None:
                with log.open("a", encoding="utf-8") as f:
                    f.write(json.dumps({"tool": name, "note": note}) + "\n")
            if slow:
                time.sleep(min(slow, 30.0))
            if fail:
                raise UsageError(f"{name} failed (as asked)")
            return f"{name}: done ({note})" if note else f"{name}: done"

        run.__name__ = name
        run.__doc__ = description
        server.tool()(run)

    for name, description in TOOLS.items():
        tool(name, description)
    return server


def calls(log: Path) -> list[dict[str, Any]]:
    """The calls a server wrote to ``log``, in order."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--log", type=Path)
    ap.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on this port")
    args = ap.parse_args()
    server = make_server(args.log)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
