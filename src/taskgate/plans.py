"""Plan files: a tool-bound plan an engineer writes by hand, in TOML, JSON or YAML.

A plan file lists the steps in order; each names the tool whose successful call is its receipt,
its prerequisites (``deps``, step ids) and, optionally, its wording (``text``, what refusals and
ask-back questions call it)::

    # plan.toml
    [steps.requirements]
    tool = "collect_requirements"
    text = "collect the requirements"

    [steps.order]
    tool = "place_order"
    text = "place the order"
    deps = ["requirements"]

It is a :class:`~taskgate.Plan` whose ``binding`` defaults to ``"tool"``; its JSON Schema is
:func:`plan_schema` (``taskgate plan schema``; published as ``docs/plan.schema.json``).
:func:`load_plan` reads one and checks it: a file that cannot be read, a field that is wrong, or a
plan with defects (a step bound to no tool, a prerequisite that names no step, a cycle) is one
:class:`~taskgate.PlanError` naming the file, with one line per defect. YAML needs PyYAML
(``taskgate[yaml]``).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from taskgate.core.plan import Plan
from taskgate.core.validator import validate
from taskgate.errors import MissingExtraError, PlanError

#: the largest plan file read (a plan is a few kilobytes; this bounds untrusted input)
MAX_BYTES = 1 << 20
SUFFIXES = (".toml", ".json", ".yaml", ".yml")


def plan_schema() -> dict[str, Any]:
    """The JSON Schema of a plan file (a tool-bound :class:`~taskgate.Plan`)."""
    schema = Plan.model_json_schema()
    schema["properties"]["binding"] = {"const": "tool", "default": "tool", "title": "Binding"}
    schema["title"] = "taskgate plan"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def load_plan(path: str | Path) -> Plan:
    """The plan in ``path`` (``.toml``, ``.json``, ``.yaml`` or ``.yml``), checked."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise PlanError(f"{path}: a plan file ends in {', '.join(SUFFIXES)}")
    try:
        if not path.is_file():  # a directory, a pipe, a device: never read
            raise PlanError(f"{path}: cannot read it: not a regular file")
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)  # at most this much is read, whatever the file claims
    except OSError as exc:
        raise PlanError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise PlanError(f"{path}: over {MAX_BYTES} bytes is not a plan")
    return parse_plan(raw, path.suffix.lower(), str(path))


def parse_plan(raw: bytes | str, kind: str, where: str = "the plan") -> Plan:
    """A plan from its text in the format ``kind`` (a suffix: ``.toml``, ``.json``, ``.yaml``)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise PlanError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    data = _read(text.removeprefix("\ufeff"), kind, where)
    if not isinstance(data, dict):
        raise PlanError(f"{where}: a plan is a table of steps, not a {type(data).__name__}")
    if data.get("binding", "tool") != "tool":
        raise PlanError(f"{where}: a plan file binds its steps to tools: binding must be 'tool'")
    data = {"binding": "tool", **data}
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"]) or "the plan"
        raise PlanError(f"{where}: {at}: {first['msg']}") from None
    defects = [
        f"step {sid} lists {dep} twice in deps"
        for sid, spec in plan.steps.items()
        for dep in sorted({d for d in spec.deps if spec.deps.count(d) > 1})
    ]
    defects += [d.detail for d in validate(plan)]
    if defects:
        lines = "\n".join(f"  {d}" for d in defects)
        raise PlanError(f"{where}: {len(defects)} defect(s):\n{lines}")
    return plan


def _read(text: str, kind: str, where: str) -> object:
    try:
        if kind == ".toml":
            return tomllib.loads(text)
        if kind == ".json":
            return json.loads(text, object_pairs_hook=_unique)
        if kind in (".yaml", ".yml"):
            return _yaml(text, where)
    except _Duplicate as exc:  # a mapping's key given twice: no step may vanish
        raise PlanError(f"{where}: not {kind[1:].upper()}: {exc}") from None
    except PlanError:
        raise
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError and JSONDecodeError are both
        raise PlanError(f"{where}: not {kind[1:].upper()}: {_first_line(exc)}") from None
    raise PlanError(f"{where}: unknown plan format {kind!r}; use {', '.join(SUFFIXES)}")


def _yaml(text: str, where: str) -> object:
    try:
        import yaml
    except ModuleNotFoundError:
        raise MissingExtraError("yaml", "reading a YAML plan", "yaml") from None

    class Loader(yaml.SafeLoader):  # type: ignore[misc]
        """The safe loader, refusing a key written twice in one mapping (as TOML does)."""

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[object, object]:
        return _unique(
            [(loader.construct_object(k), loader.construct_object(v)) for k, v in node.value]
        )

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return yaml.load(text, Loader=Loader)
    except _Duplicate:
        raise
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        raise PlanError(f"{where}: not YAML: {_first_line(exc)}") from None


class _Duplicate(PlanError):
    """A key given twice in one mapping of a plan file."""


def _unique(pairs: list[tuple[object, object]]) -> dict[object, object]:
    """A mapping from its pairs; a key given twice is an error (a step must not vanish)."""
    out: dict[object, object] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(f"the key {key!r} is given twice")
        out[key] = value
    return out


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
