"""The lab's packages, checked before any lab module is imported: without ``taskgate[lab]`` the
error names the extra instead of a module deep inside it."""

from taskgate._lazy import require

require(
    "lab",
    "the lab",
    ("statsmodels", "scipy", "numpy", "aiohttp", "langchain_core", "langgraph"),
)
