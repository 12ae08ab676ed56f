import re
import subprocess
import sys
import types
from pathlib import Path

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
    # an event loop, and pydantic's plugin scan (it reads every installed package's metadata
    # when the first model's schema is built: the library's models build theirs when first used)
    "asyncio", "importlib.metadata",
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


#: a fresh interpreter in which the named packages cannot be imported (as if their extra were
#: not installed), running the ``taskgate`` command with the given arguments
_WITHOUT = """
import sys
from importlib.abc import MetaPathFinder
class Hide(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Hide())
import importlib.util
_find = importlib.util.find_spec
importlib.util.find_spec = lambda n, *a: None if n.split(".")[0] in {hidden!r} else _find(n, *a)
sys.argv = ["taskgate", *{argv!r}]
from taskgate.cli import main
main()
"""


def _without(hidden: set[str], *argv: str) -> subprocess.CompletedProcess[str]:
    code = _WITHOUT.format(hidden=sorted(hidden), argv=list(argv))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_a_lab_command_without_the_lab_extra_is_one_line_naming_it() -> None:
    done = _without({"statsmodels", "scipy"}, "ladder", "--steps", "5")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "taskgate ladder" in done.stderr and "pip install 'taskgate[lab]'" in done.stderr
    assert "statsmodels" in done.stderr


def test_the_engineers_commands_work_without_the_lab() -> None:
    done = _without({"statsmodels", "scipy", "langgraph", "langchain_core"}, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.index("proxy") < done.stdout.index("ladder")  # the engineer's first
    demo = _without({"statsmodels", "scipy", "aiohttp", "numpy"}, "demo")
    assert demo.returncode == 0, demo.stderr


def test_the_proxy_without_its_extra_is_one_line_naming_it() -> None:
    done = _without({"starlette"}, "proxy", "--upstream", "http://127.0.0.1:9/v1")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "taskgate: error: the gating proxy: the 'proxy' extra is not installed (no module named "
        "'starlette'): pip install 'taskgate[proxy]'"
    )


@pytest.mark.parametrize(
    ("name", "hidden", "extra"),
    [("ChatClient", "aiohttp", "llm"), ("EmbeddingMatcher", "numpy", "embedding")],
)
def test_a_library_name_whose_extra_is_missing_names_it(name: str, hidden: str, extra: str) -> None:
    code = _WITHOUT.format(hidden=[hidden], argv=[]).split("sys.argv")[0]
    code += f"import taskgate\ntry:\n    taskgate.{name}\nexcept ImportError as e:\n    print(e)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert f"pip install 'taskgate[{extra}]'" in done.stdout, done.stdout + done.stderr


def test_the_lazy_names_come_from_the_library() -> None:
    """The names imported on first use are named by module strings, which no import contract
    sees: each must be a library module."""
    src = Path(taskgate.__file__).parent
    for init in (src / "__init__.py", src / "matching" / "__init__.py"):
        targets = re.findall(r'"(taskgate\.[\w.]+)"', init.read_text(encoding="utf-8"))
        targets += [
            f"taskgate.matching.{m}"
            for m in re.findall(r'f"\{__name__\}\.(\w+)"', init.read_text(encoding="utf-8"))
        ]
        assert targets, init
        assert [t for t in targets if t.startswith(("taskgate.lab", "taskgate.cli"))] == []
