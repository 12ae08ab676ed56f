"""Plan files an engineer writes: TOML, JSON or YAML, checked with one line per problem, and a
published JSON Schema that is the code's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from taskgate import Plan, PlanError, ToolGate
from taskgate.cli import app
from taskgate.plans import MAX_BYTES, load_plan, plan_schema

ROOT = Path(__file__).resolve().parents[2]
TOML = """
[steps.requirements]
tool = "collect_requirements"
text = "collect the requirements"

[steps.order]
tool = "place_order"
text = "place the order"
deps = ["requirements"]
"""
JSON = json.dumps({"steps": {
    "requirements": {"tool": "collect_requirements", "text": "collect the requirements"},
    "order": {"tool": "place_order", "text": "place the order", "deps": ["requirements"]},
}})  # fmt: skip
YAML = """
steps:
  requirements: {tool: collect_requirements, text: collect the requirements}
  order:
    tool: place_order
    text: place the order
    deps: [requirements]
"""


@pytest.mark.parametrize(("suffix", "text"), [(".toml", TOML), (".json", JSON), (".yaml", YAML)])
def test_the_three_formats_read_as_one_tool_bound_plan(
    tmp_path: Path, suffix: str, text: str
) -> None:
    path = tmp_path / f"plan{suffix}"
    path.write_text(text)
    plan = load_plan(path)
    assert plan.binding == "tool" and list(plan.steps) == ["requirements", "order"]
    assert plan.steps["order"].deps == ("requirements",)
    ToolGate(plan)  # the gate runs it as it is


def test_the_published_schema_is_the_codes() -> None:
    published = json.loads((ROOT / "docs" / "plan.schema.json").read_text(encoding="utf-8"))
    assert published == plan_schema()
    assert published["properties"]["binding"]["default"] == "tool"


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("a.toml", "[steps", "not TOML: "),
        ("a.json", "[1, 2]", "a plan is a table of steps, not a list"),
        (
            "a.json",
            '{"steps": {"a": {"tool": "x", "after": ["b"]}}}',
            "steps.a.after: Extra inputs",
        ),
        ("a.json", '{"steps": {}}', "steps: "),
        ("a.yaml", "steps: [unclosed", "not YAML: "),
        ("a.txt", "{}", "a plan file ends in .toml, .json, .yaml, .yml"),
    ],
)
def test_a_malformed_plan_file_is_one_line_naming_the_file(
    tmp_path: Path, name: str, text: str, says: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PlanError) as caught:
        load_plan(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and says in message and "\n" not in message


def test_a_plan_with_defects_names_each_on_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"steps": {"a": {"tool": "x", "deps": ["b"]},
                                          "b": {"tool": "", "deps": ["a"]}}}))  # fmt: skip
    with pytest.raises(PlanError) as caught:
        load_plan(path)
    assert str(caught.value).splitlines() == [
        f"{path}: 2 defect(s):",
        "  step b has an empty tool",
        "  dependency cycle a -> b -> a",
    ]


def test_name_variants_of_one_tool_bound_to_two_steps_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_text('[steps.a]\ntool = "draft_rfq"\n\n[steps.b]\ntool = "DRAFT-RFQ"\n')
    with pytest.raises(PlanError) as caught:
        load_plan(path)
    assert "DRAFT-RFQ and draft_rfq name one tool: a, b" in str(caught.value)
    result = CliRunner().invoke(app, ["plan", "check", str(path)])
    assert result.exit_code != 0 and "name one tool" in result.output


def test_an_oversized_or_missing_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_BYTES + 1))
    with pytest.raises(PlanError, match="is not a plan"):
        load_plan(big)
    with pytest.raises(PlanError, match="cannot read it"):
        load_plan(tmp_path / "none.toml")


def test_taskgate_plan_check_prints_the_steps_or_each_defect(tmp_path: Path) -> None:
    good = tmp_path / "plan.toml"
    good.write_text(TOML)
    result = CliRunner().invoke(app, ["plan", "check", str(good)])
    assert result.exit_code == 0, result.output
    assert "order: place_order (place the order) after requirements" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"steps": {"a": {"tool": "", "deps": ["zz"]}}}')
    result = CliRunner().invoke(app, ["plan", "check", str(bad)])
    assert result.exit_code == 2
    assert result.output.splitlines()[1:] == [
        "taskgate: error:   step a has an empty tool",
        "taskgate: error:   a requires unknown zz",
    ]
    schema = CliRunner().invoke(app, ["plan", "schema"])
    assert json.loads(schema.output) == plan_schema()


def test_a_plan_file_is_a_plan() -> None:
    assert Plan.model_validate(json.loads(JSON) | {"binding": "tool"}) == load_plan_text(JSON)


def load_plan_text(text: str) -> Plan:
    from taskgate.plans import parse_plan

    return parse_plan(text, ".json")


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        (
            "code.json",
            b'{"binding": "code", "steps": {"a": {"code": "RC-1"}}}',
            "binding must be 'tool'",
        ),
        (
            "dup.json",
            b'{"steps": {"a": {"tool": "x"}, "a": {"tool": "y"}}}',
            "the key 'a' is given twice",
        ),
        ("dup.yaml", b"steps:\n  a: {tool: x}\n  a: {tool: y}\n", "the key 'a' is given twice"),
        ("latin.json", b'{"steps": {"a": {"tool": "x\xff"}}}', "not UTF-8 text"),
        ("bad.yaml", b"steps: [unclosed", "not YAML: while parsing"),
    ],
)
def test_a_plan_file_that_would_lose_or_misread_a_step_is_refused(
    tmp_path: Path, name: str, data: bytes, says: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(PlanError) as caught:
        load_plan(path)
    assert says in str(caught.value) and str(caught.value).count("not YAML") <= 1


def test_a_byte_order_mark_is_read_and_a_step_listed_twice_in_deps_is_a_defect(
    tmp_path: Path,
) -> None:
    bom = tmp_path / "bom.json"
    bom.write_bytes(b'\xef\xbb\xbf{"steps": {"a": {"tool": "x"}}}')
    assert list(load_plan(bom).steps) == ["a"]
    twice = tmp_path / "twice.json"
    twice.write_text('{"steps": {"a": {"tool": "x"}, "b": {"tool": "y", "deps": ["a", "a"]}}}')
    with pytest.raises(PlanError, match="step b lists a twice in deps"):
        load_plan(twice)


def test_only_a_regular_file_is_read(tmp_path: Path) -> None:
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    with pytest.raises(PlanError, match="not a regular file"):
        load_plan(zero)
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    with pytest.raises(PlanError, match="not a regular file"):
        load_plan(folder)
