import subprocess
import sys
import types

import pytest

import taskgate
import taskgate.lab

#: what an engineer's ``from taskgate import ToolGate`` must not load: statistics, plotting, model
#: runtimes, HTTP servers and clients, agent frameworks, numpy, and the lab
HEAVY = (
    "scipy", "statsmodels", "numpy", "matplotlib", "aiohttp", "httpx", "starlette", "uvicorn",
    "langchain", "langchain_core", "langgraph", "llama_cpp", "torch", "sentence_transformers",
    "ray", "mem0", "tau2", "openai", "typer", "rich", "taskgate.lab", "taskgate.cli",
    "taskgate.proxy", "taskgate.llm.client",
)  # fmt: skip


@pytest.mark.parametrize("package", [taskgate, taskgate.lab], ids=["library", "lab"])
def test_all_matches_exported_names(package: types.ModuleType) -> None:
    modules = {n for n, v in vars(package).items() if isinstance(v, types.ModuleType)}
    public = (
        {n for n in vars(package) if not n.startswith("_")} - modules - {"TYPE_CHECKING", "lazy"}
    )
    assert public <= set(package.__all__) | {"__version__"}
    for name in package.__all__:
        assert getattr(package, name) is not None, name


def test_the_library_and_the_lab_export_no_name_twice() -> None:
    assert not set(taskgate.__all__) & set(taskgate.lab.__all__)


def test_importing_the_tool_gate_loads_no_heavy_package() -> None:
    code = "import sys; from taskgate import ToolGate; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())  # fmt: skip
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == []


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = taskgate.Nope  # type: ignore[attr-defined]


def test_every_exported_exception_has_one_root() -> None:
    exported = [
        v for v in map(vars(taskgate).get, taskgate.__all__)
        if isinstance(v, type) and issubclass(v, BaseException)
    ]  # fmt: skip
    assert len(exported) >= 14
    for exc in exported:
        assert issubclass(exc, taskgate.TaskgateError), exc
        assert issubclass(exc, ValueError) or exc in (
            taskgate.TaskgateError,
            taskgate.ModelError,
            taskgate.MissingExtraError,
            taskgate.ToolRefused,
        ), exc
