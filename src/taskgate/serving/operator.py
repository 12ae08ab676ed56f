"""What an operator sends the gate's surfaces, and who may see what: the same on the proxy and the
MCP gate.

* the request bodies of a revision (``{"cancel": "s2", "inherit": true}``, ``{"rewire": {...}}``,
  ``{"relax": {"step": ..., "prerequisite": ...}}``), an approval (``{"step", "by", "reason"}``), a
  user's message (``{"message"}``) and a settlement (``{"step", "ran"}``), each read into its model
  with one 400 line naming what is wrong;
* the **scope** of a caller: the operator (the status token, ``TASKGATE_STATUS_TOKEN``) sees and
  changes every conversation; without the token configured, each caller sees only its own API
  key's conversations and changes none (403); with it configured, a caller without it is a 401;
* finding a conversation by its whole id (``name~owner``) or by its name alone;
* the metrics' percentiles.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from taskgate.core.machine import TaskMachine
from taskgate.core.plan import Revision
from taskgate.gate.session import cancelling
from taskgate.serving.errors import HttpError
from taskgate.serving.http import owner
from taskgate.serving.signin import cross_origin, from_console

_NAME = Field(min_length=1, max_length=200)
#: the environment variable that holds the operators' token (on every surface)
TOKEN_VARIABLE = "TASKGATE_STATUS_TOKEN"


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Relax(Body):
    step: str = _NAME
    prerequisite: str = _NAME


class RevisionBody(Body):
    """A revision as an operator asks for it: a cancel (with ``rewire`` or ``inherit``), a
    rewire, or a relax."""

    cancel: str | None = Field(None, min_length=1, max_length=200)
    rewire: dict[Annotated[str, _NAME], list[Annotated[str, _NAME]]] = Field(
        default_factory=dict, max_length=1000
    )
    inherit: bool = False
    relax: Relax | None = None


class ApprovalBody(Body):
    step: str = _NAME
    by: str = _NAME
    reason: str = Field("", max_length=2000)

    @field_validator("by")
    @classmethod
    def _named(cls, by: str) -> str:
        if not by.strip():
            raise ValueError("an approval names who gave it")
        return by.strip()


class MessageBody(Body):
    """A user's message, posted by the application that has it (it opens a request)."""

    message: str = Field(min_length=1, max_length=20_000)
    #: the agent's message before it (what it proposed or asked), so a "yes" confirms it
    agent: str = Field(default="", max_length=20_000)


class SettleBody(Body):
    """Whether a call held in doubt ran."""

    step: str = _NAME
    ran: bool


def parsed(raw: bytes, model: type[BaseModel]) -> Any:
    """The body as ``model``, or a 400 naming the first thing wrong with it."""
    try:
        return model.model_validate(orjson.loads(raw))
    except orjson.JSONDecodeError as exc:
        raise HttpError(400, f"the body is not JSON: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the body"
        raise HttpError(400, f"{where}: {first['msg']}") from None


def revision_of(machine: TaskMachine, body: RevisionBody) -> Revision:
    """The revision ``body`` asks for, on ``machine``'s state (a cancel's inherited rewires)."""
    given = [body.cancel is not None, bool(body.rewire) and body.cancel is None, bool(body.relax)]
    if sum(given) != 1:
        raise HttpError(400, "a revision is one of: cancel (with rewire or inherit), rewire, relax")
    if body.cancel is not None:
        return cancelling(machine, body.cancel, body.rewire, body.inherit)
    if body.relax is not None:
        return Revision(relax=(body.relax.step, body.relax.prerequisite))
    return Revision(rewires={k: tuple(v) for k, v in body.rewire.items()})


def scope(headers: Mapping[str, str], token: str | None, *, write: bool = False) -> str | None:
    """Whose conversations the caller reaches: ``None`` for the operator (the status token),
    else its own owner (see :func:`~taskgate.serving.http.owner`). A change (``write``) needs the
    token: without one configured it is refused to everyone. The signed-in console stands for
    the token (:func:`~taskgate.serving.signin.from_console`)."""
    if token is None:
        if write:
            raise HttpError(
                403,
                f"operator changes need the status token: start the gate with {TOKEN_VARIABLE} "
                "set and send it as 'Authorization: Bearer <token>'",
                "auth_error",
            )
        return owner(headers)
    given = headers.get("authorization", "")
    if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        return None
    if from_console(headers, token):  # the signed-in console (:mod:`taskgate.serving.signin`)
        return None
    if cross_origin(headers, token):
        raise HttpError(
            403,
            "the console's requests must come from the gate's own address; behind a reverse "
            "proxy, pass the Host header on (or X-Forwarded-Host)",
            "auth_error",
        )
    raise HttpError(
        401, "the operator endpoints need 'Authorization: Bearer <token>'", "auth_error"
    )


def mine(key: str, scope_: str | None) -> bool:
    """Whether conversation ``key`` is within the caller's scope."""
    return scope_ is None or key.endswith(f"~{scope_}")


def resolve(key: str, known: Iterable[str], scope_: str | None, what: str) -> str:
    """The conversation ``key`` names: a whole id (``name~owner``), or a name alone, meaning the
    caller's own conversation of that name (for the operator: the one owner's that has it).
    Another owner's conversation reads as no conversation at all (a 404)."""
    mine_ = sorted(k for k in known if mine(k, scope_))
    if "~" not in key:
        found = [k for k in mine_ if k.rpartition("~")[0] == key]
        if len(found) > 1:
            raise HttpError(
                400, f"several {what}s are named {key!r}: give the whole id, one of "
                f"{', '.join(found[:5])}"
            )  # fmt: skip
        key = found[0] if found else key
    if key not in mine_:
        raise HttpError(404, f"no {what} {key!r}", "not_found")
    return key


#: the fewest samples a percentile is given over: a p50 of 3 calls or a p99 of 20 is one call's
#: time (the first, cold one's), not the gate's
P50_SAMPLES, P99_SAMPLES = 10, 100


def percentiles(seconds: Sequence[float]) -> dict[str, float | int]:
    """How many samples, their maximum, and p50 and p99 where there are enough of them
    (:data:`P50_SAMPLES`, :data:`P99_SAMPLES`), in milliseconds (no samples: nothing)."""
    xs = sorted(seconds)
    if not xs:
        return {}

    def ms(q: float) -> float:
        return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 3)

    out: dict[str, float | int] = {"samples": len(xs), "max_ms": ms(1.0)}
    if len(xs) >= P50_SAMPLES:
        out["p50_ms"] = ms(0.5)
    if len(xs) >= P99_SAMPLES:
        out["p99_ms"] = ms(0.99)
    return out
