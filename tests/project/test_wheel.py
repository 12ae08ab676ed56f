"""The package as users install it: the wheel and the sdist built from this tree, the wheel
installed into a fresh virtual environment, and the README's quick start, the guides' examples,
the console script and a strict type check run from there, against the installed package.

The fresh venv gets its dependencies from the dev venv (a path appended after its own
site-packages, so that the wheel's ``taskgate`` is the one imported): nothing is downloaded, and
what is checked is the package itself (its files, ``py.typed``, its metadata's extras), not the
registry's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

pytest.importorskip("build", reason="the wheel test needs `build` (in the dev extra)")
pytest.importorskip("hatchling", reason="the wheel test needs `hatchling` (in the dev extra)")
pytest.importorskip("packaging.requirements", reason="the wheel test reads its metadata")


def _run(*argv: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The wheel and the sdist, built from this tree without network isolation."""
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ROOT, cwd=out)
    (wheel,) = out.glob("taskgate-*.whl")
    (sdist,) = out.glob("taskgate-*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def installed(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed (no dependencies from the network): its python."""
    home = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(home)
    python = home / "bin" / "python"
    purelib = Path(
        _run(
            python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=home
        ).strip()
    )
    # the dev venv's packages after the fresh venv's own (a plain path: its .pth files, the
    # editable taskgate among them, are not read)
    (purelib / "zz_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
         "--quiet", built[0], cwd=home)  # fmt: skip
    return python


def _env(python: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_the_wheel_holds_every_module_and_the_typing_marker(built: tuple[Path, Path]) -> None:
    names = set(zipfile.ZipFile(built[0]).namelist())
    assert "taskgate/py.typed" in names
    tree = {
        str(p.relative_to(ROOT / "src")).replace(os.sep, "/")
        for p in (ROOT / "src" / "taskgate").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    assert tree <= names, sorted(tree - names)[:10]


def test_the_sdist_holds_the_sources_and_the_project_file(built: tuple[Path, Path]) -> None:
    import tarfile

    with tarfile.open(built[1]) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {
        "pyproject.toml",
        "README.md",
        "src/taskgate/__init__.py",
        "src/taskgate/py.typed",
    } <= names


_EXTRAS = """
import importlib.metadata as md, json, taskgate
from packaging.requirements import Requirement
dist = md.distribution("taskgate")
unmet, extras = [], set()
for line in dist.requires or []:
    req = Requirement(line)
    extras |= {e for e in dist.metadata.get_all("Provides-Extra") or []
               if req.marker is not None and req.marker.evaluate({"extra": e})}
    if req.name == "taskgate" or (req.marker is not None and not any(
            req.marker.evaluate({"extra": e}) for e in dist.metadata.get_all("Provides-Extra"))):
        continue
    try:
        if not req.specifier.contains(md.version(req.name), prereleases=True):
            unmet.append(line)
    except md.PackageNotFoundError:
        unmet.append(line)
print(json.dumps({"file": taskgate.__file__, "extras": sorted(extras), "unmet": unmet}))
"""


def test_the_installed_package_is_the_wheels_and_every_extra_resolves(installed: Path) -> None:
    """``taskgate`` imports from the fresh venv, not the tree; each extra's requirements, as the
    wheel's metadata states them, are met by what is installed beside it."""
    got = json.loads(_run(installed, "-c", _EXTRAS, cwd=installed.parent))
    assert got["file"].startswith(str(installed.parent.parent)), got["file"]
    assert {"langgraph", "mcp", "proxy", "all"} <= set(got["extras"]), got["extras"]
    assert got["unmet"] == []


def test_the_readme_quick_start_runs_from_the_installed_wheel(
    installed: Path, tmp_path: Path
) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (toml,) = re.findall(r"```toml\n(.*?)```", text, re.S)
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    (tmp_path / "plan.toml").write_text(toml, encoding="utf-8")
    (tmp_path / "quick.py").write_text(code, encoding="utf-8")
    out = _run(installed, "quick.py", cwd=tmp_path, env=_env(installed))
    assert out.startswith("draft_rfq was not run: it needs 'collect the requirements' done")


def test_the_guides_examples_run_from_the_installed_wheel(installed: Path, tmp_path: Path) -> None:
    """Every example of the guides that runs on its own (those ``tests/project/test_docs.py``
    runs against the tree), each in a fresh process of the installed wheel's venv."""
    from test_docs import DOCS, PAGES, blocks

    ran = 0
    for page in PAGES:
        for i, code in enumerate(blocks(DOCS / page)):
            script = tmp_path / f"{page.replace('/', '_')}_{i}.py"
            script.write_text(code, encoding="utf-8")
            _run(installed, script, cwd=tmp_path, env=_env(installed))
            ran += 1
    assert ran >= 10


def test_the_console_script_and_strict_types_work_from_the_installed_wheel(
    installed: Path, tmp_path: Path
) -> None:
    """``taskgate --help`` from the venv's own script, and ``mypy --strict`` on a user's file
    that calls the gate wrongly: the wheel's types reach the user's type checker."""
    assert "proxy" in _run(installed.parent / "taskgate", "--help", cwd=tmp_path,
                           env=_env(installed))  # fmt: skip
    (tmp_path / "user.py").write_text(
        "from taskgate import ToolGate\n\ngate: ToolGate = ToolGate(42)\n", encoding="utf-8"
    )
    done = subprocess.run(
        [str(installed), "-m", "mypy", "--strict", "--no-incremental", "user.py"],
        cwd=tmp_path, env=_env(installed), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'Argument 1 to "ToolGate" has incompatible type "int"' in done.stdout, done.stdout
    assert "missing library stubs or py.typed" not in done.stdout
