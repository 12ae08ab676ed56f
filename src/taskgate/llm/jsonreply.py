"""Reading a JSON object out of a model's reply, and validating it with pydantic."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from taskgate.errors import ReplyFormatError

T = TypeVar("T", bound=BaseModel)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ReplyFormatError(f"the key {key!r} is given twice in one object")
        out[key] = value
    return out


def extract_json(text: str, *, unique: bool = False) -> Any:
    """The first JSON object in ``text`` (code fences and prose around it tolerated); with
    ``unique``, an object that gives one key twice is a :class:`ReplyFormatError` (a JSON
    decoder would keep the last and lose the first silently)."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start = body.find("{")
    if start == -1:
        raise ReplyFormatError("no JSON object in the reply")
    try:
        decoder = json.JSONDecoder(object_pairs_hook=_unique if unique else None)
        obj, _ = decoder.raw_decode(body[start:])
    except RecursionError:  # a model looping on '[' nests deeper than the decoder can follow
        raise ReplyFormatError("the JSON nests too deeply") from None
    return obj


def parse_reply(text: str, model: type[T], *, unique: bool = False) -> T:
    """Validate the reply against ``model``; raise :class:`ReplyFormatError` saying what was
    wrong (with ``unique``, a key given twice in one object is wrong too)."""
    try:
        return model.model_validate(extract_json(text, unique=unique))
    except json.JSONDecodeError as exc:
        raise ReplyFormatError(f"the JSON is malformed ({exc.msg} at character {exc.pos})") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "the object"
        raise ReplyFormatError(f"{where}: {first['msg']}") from exc


class MatchReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    step: str | None
    explicit_redo: bool = False

    @field_validator("step", mode="before")
    @classmethod
    def _norm(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip()
            if v.lower() in ("", "null", "none"):
                return None
            return v.lower() if re.fullmatch(r"[sS]\d+", v) else v
        return v


class StepReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    deps: list[str] = []
    code: str = ""
    tool: str = ""

    @field_validator("code", mode="before")
    @classmethod
    def _code(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("tool", mode="before")
    @classmethod
    def _tool(cls, v: Any) -> Any:  # read only for tool-bound briefs: never a reason to re-ask
        return v if isinstance(v, str) else ""


class GraphReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    steps: dict[str, StepReply]


class RevisionReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    cancel: str | None = None
    rewires: dict[str, list[str]] | None = None
    relax: list[str] | None = None

    @field_validator("relax")
    @classmethod
    def _pair(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and len(v) != 2:
            raise ValueError("relax must be [step, dropped_prerequisite] or null")
        return v
