"""The README and the docs: the examples run and print what they say, the README is short and
opens with the two commands, and the docs site builds with ``--strict``."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: pages whose examples need a server or an extra; each has its own test below or elsewhere
#: (guide/proxy.md: tests/library/test_proxy_agents.py)
OWN_TESTS = {"guide/proxy.md", "lab/tau2.md"}


def blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


def run(code: str, scope: dict[str, Any] | None = None) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs", "exec"), {} if scope is None else scope)
    return out.getvalue().splitlines()


PAGES = sorted(
    str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if blocks(p) and str(p.relative_to(DOCS)) not in OWN_TESTS
)  # fmt: skip


@pytest.mark.parametrize("page", PAGES)
def test_every_docs_example_runs(page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    if "langchain" in text:
        pytest.importorskip("langgraph", reason="the page's LangGraph example needs the extra")
    if "from agents import" in text:
        pytest.importorskip("agents", reason="the page's example needs the openai-agents extra")
    if "from pydantic_ai import" in text:
        pytest.importorskip("pydantic_ai", reason="the page's example needs the pydantic-ai extra")
    for code in blocks(DOCS / page):  # each example on its own, as a reader copies it
        run(code)


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    head = text.split("## ")[0]
    assert "make run" in head and "make test" in head
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.strip().splitlines()[-1] == "make test"
    assert "How Strongly Should Task State Influence an LLM Agent?" in " ".join(
        text.split()
    )  # a clone has no shared/


def test_the_readme_quick_start_runs_and_prints_what_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip(
        "langgraph", reason="the README's quick start adds the LangGraph middleware"
    )
    text = README.read_text(encoding="utf-8")
    (toml,) = re.findall(r"```toml\n(.*?)```", text, re.S)
    (code,) = blocks(README)
    assert len(code.strip().splitlines()) <= 20  # the agent's code and what the gate adds
    (tmp_path / "plan.toml").write_text(toml, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    from taskgate.plans import load_plan

    assert list(load_plan("plan.toml").steps) == ["requirements", "rfq"]
    lines = run(code)
    assert lines[0].startswith("draft_rfq was not run: it needs 'collect the requirements' done")


def test_the_state_machine_example_prints_what_its_comments_say() -> None:
    (code,) = [b for b in blocks(DOCS / "guide" / "gate.md") if "parse_bookings" in b]
    lines = run(code)
    assert lines[0].startswith("[TASK-STATE] step s2 is BLOCKED -- missing prerequisites: s1.")
    assert lines[1].startswith("[BOOKING REJECTED]") and "s2 is BLOCKED" in lines[1]
    assert "BLOCKED" in lines[2]


def test_the_agent_sdk_examples_print_their_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("agents", reason="needs the openai-agents extra")
    pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    scope: dict[str, Any] = {}
    agents_block, pydantic_block = blocks(DOCS / "guide" / "sdks.md")
    assert run(agents_block, scope)[0].startswith(
        "draft_rfq was not run: it needs 'collect the requirements' done first."
    )
    assert (
        "draft_the_rfq was not run: it needs 'collect the requirements'"
        in run(pydantic_block, scope)[0]
    )


def test_the_guarded_tool_example_prints_its_refusal() -> None:
    (code,) = [b for b in blocks(DOCS / "guide" / "gate.md") if "gate.guard" in b]
    assert run(code) == [
        "place_order was not run: it needs 'select the vendor' done first. Tell the user why "
        "instead of calling it again."
    ]


def test_the_tool_gate_and_langgraph_examples_print_what_they_say() -> None:
    found = blocks(DOCS / "guide" / "gate.md")
    gate_block = found[0]
    (langgraph_block,) = [b for b in found if "create_agent(" in b]
    scope: dict[str, Any] = {}
    lines = run(gate_block, scope)
    assert lines[0].startswith("draft_rfq was not run: it needs 'collect the requirements' done")
    assert lines[1] == "collecting"  # the admitted call ran; the refused one printed nothing
    pytest.importorskip("langgraph")
    assert len(langgraph_block.strip().splitlines()) <= 32  # with its own plan: it runs alone
    assert run(langgraph_block) == ["error"]


def test_the_tau2_gate_example_runs() -> None:
    pytest.importorskip("tau2")
    (code,) = blocks(DOCS / "lab" / "tau2.md")
    lines = run(code)
    assert lines[0].startswith("True Refused by the policy gate -- rule cancel-eligibility:")
    assert lines[1] == "('cancel-eligibility',)"


#: the README's links into the repository are absolute (they are read on a package index too)
REPO = "https://github.com/taskgate/taskgate/blob/main/"


def test_every_link_of_the_readme_is_absolute_and_the_repositorys_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    assert re.findall(r"\]\(((?!https?://|#)[^)]+)", text) == []  # no relative link
    ours = re.findall(r"\]\(" + re.escape(REPO) + r"([^)#]+)", text)
    assert ours and [link for link in ours if not (ROOT / link).exists()] == []


def test_the_docs_site_builds_strictly_from_any_directory(tmp_path: Path) -> None:
    """Built from a directory other than the repository's (the changelog is a snippet read from
    the root, wherever mkdocs runs)."""
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (the dev extra)")
    done = subprocess.run(
        [mkdocs, "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(tmp_path / "site")],
        cwd=tmp_path, capture_output=True, text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "reference" / "library" / "index.html").exists()
    changelog = (tmp_path / "site" / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "Unreleased" in changelog
    # the docstrings' Sphinx roles are links, never shown raw (":func:`~taskgate.dump_ledger`")
    raw = re.compile(r":(?:func|class|meth|mod|data|attr|exc|obj):<code>")
    for page in (tmp_path / "site" / "reference").rglob("*.html"):
        assert not raw.search(page.read_text(encoding="utf-8")), page
    library = (tmp_path / "site" / "reference" / "library" / "index.html").read_text("utf-8")
    assert 'href="#taskgate.errors.TaskgateError"' in library


#: the modules whose public names (``__all__``) the API reference must show
PUBLIC = ("taskgate", "taskgate.understanding", "taskgate.lab", "taskgate.integrations.langgraph",
          "taskgate.integrations.mcp", "taskgate.integrations.openai_agents",
          "taskgate.integrations.pydantic_ai")  # fmt: skip


def _resolved(path: str) -> object:
    module, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return importlib.import_module(path)


def test_every_public_name_has_an_entry_in_the_api_reference() -> None:
    """Each name a public module exports is a ``:::`` entry of a reference page (by any of its
    import paths), or lies in a module that is one."""
    pages = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "reference").glob("*.md"))
    entries = re.findall(r"^::: ([\w.]+)", pages, re.M)
    shown = {id(_resolved(e)) for e in entries}
    modules = {e for e in entries if isinstance(_resolved(e), types.ModuleType)}
    missing = []
    for name in PUBLIC:
        try:
            module = importlib.import_module(name)
        except ImportError:  # an extra this environment lacks
            continue
        for public in module.__all__:
            obj = getattr(module, public)
            home = getattr(obj, "__module__", "")
            if public.startswith("__") or id(obj) in shown or home in modules:
                continue
            missing.append(f"{name}.{public}")
    assert missing == []
