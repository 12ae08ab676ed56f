"""The embedded model's build flags (``tools/setup_venv.py``): on x86-64 the instruction sets the
CPU lists, never ``-march=native``, which turns on AMX wherever the CPU lists it; in a microVM
whose kernel does not let a process use AMX tiles, llama.cpp's AMX kernels crashed on the first
matrix product (a segmentation fault in ``ggml_backend_amx_mul_mat``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import setup_venv

XEON = "flags\t\t: fpu sse2 avx f16c fma avx2 avx512f avx512_vnni amx_tile amx_int8 amx_bf16\n"
ARM = "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n"


def test_an_x86_cpu_gets_its_own_instruction_sets_and_no_native_build() -> None:
    flags = setup_venv.isa_flags(XEON).split()
    assert "-DGGML_NATIVE=OFF" in flags
    assert {"-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_AVX512=ON"} <= set(flags)
    assert not any("AMX" in f for f in flags)


def test_a_cpu_without_avx2_is_left_to_llama_cpp() -> None:
    assert setup_venv.isa_flags(ARM) == ""
    assert setup_venv.isa_flags("") == ""


def test_a_users_cmake_args_come_last(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_NATIVE=ON")
    args = setup_venv.build_env()["CMAKE_ARGS"].split()
    assert args[-1] == "-DGGML_NATIVE=ON"  # a later -D wins
