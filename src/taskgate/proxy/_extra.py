"""The proxy's packages, checked before any proxy module is imported: without
``taskgate[proxy]`` the error names the extra."""

from taskgate._lazy import require

require("proxy", "the gating proxy", ("starlette", "uvicorn", "httpx", "aiohttp"))
