"""The ``POST /v1/cua`` request: upstream Mantis's body, checked into one frozen ``CUARequest``.

Upstream's fields: ``instruction`` and ``start_url`` (required), ``max_steps``, ``settle_time``,
``proxy_disabled`` and the per-request toggles ``adaptive_click_tol`` and ``loop_adaptive``.
Ours: ``brain``, ``seed``, ``timeout_seconds`` and ``toggles`` (the toggles as one object,
``{"adaptive_click_tol": false}``, for clients that build the toggle set from a list of names
as upstream's ablation script does).

Why a strict reader: a client that misspells a toggle (``loop_adaptve``) would otherwise run
the episode with the default and report an ablation that never happened. So every unknown
field is refused, by name; a misspelt toggle (an unknown field holding true or false, or any
unknown name inside ``toggles``) is refused naming the toggles that exist; a value of the
wrong type is refused naming the field and the value received. Nothing is coerced.

Each refusal is a ``RequestRejected`` (an ``InvalidInputError``) carrying the HTTP status the
server answers with: 400 for the body, 401 for the token, 413 for the size, 415 for the type.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from mantis_fast._validate import MAX_REQUEST_SECONDS, flag, integer, number, text, timeout
from mantis_fast.agent.parse import MAX_JSON_DEPTH, json_depth_ok
from mantis_fast.errors import RequestRejected

__all__ = [
    "BRAINS",
    "FIELDS",
    "MAX_INSTRUCTION_CHARS",
    "MAX_STEPS_LIMIT",
    "TOGGLES",
    "URL_SCHEMES",
    "CUARequest",
    "RequestRejected",
    "check_token",
    "decode_body",
    "parse_request",
]

#: Per-request toggles (upstream's names) -> the ``GymRunner`` switch each one sets.
TOGGLES = {"adaptive_click_tol": "adaptive_click_tol", "loop_adaptive": "adaptive_windows"}
#: Scripted and model brains a request may name (``brain``).
BRAINS = ("vlm", "miniwob-oracle")
#: Schemes ``start_url`` may use: the web, local pages (MiniWoB++'s are files), inline pages.
URL_SCHEMES = ("http", "https", "file", "data", "about")
MAX_STEPS_LIMIT = 500
MAX_INSTRUCTION_CHARS = 20_000
MAX_SETTLE_SECONDS = 30.0
MAX_SEED = 2**31 - 1
#: Every field the body may hold.
FIELDS = (
    "instruction",
    "start_url",
    "max_steps",
    "settle_time",
    "proxy_disabled",
    *TOGGLES,
    "toggles",
    "brain",
    "seed",
    "timeout_seconds",
)


@dataclass(frozen=True)
class CUARequest:
    """One checked request. ``None`` means "not given": the server's default applies
    (``max_steps`` 30, the configured brain, the server's timeout; a toggle left ``None``
    follows ``MANTIS_ADAPTIVE_CLICK_TOL`` / ``MANTIS_LOOP_ADAPTIVE`` as upstream's does)."""

    instruction: str
    start_url: str
    max_steps: int = 30
    settle_time: float = 0.0
    proxy_disabled: bool = False
    adaptive_click_tol: bool | None = None
    loop_adaptive: bool | None = None
    brain: str | None = None
    seed: int | None = None
    timeout_seconds: float | None = None

    @property
    def toggles(self) -> dict[str, bool]:
        """The toggles this request sets (upstream's names), leaving out those not given."""
        return {name: value for name in TOGGLES if (value := getattr(self, name)) is not None}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _json_shown(value: Any) -> str:
    """A received value for an error message as the client wrote it: its JSON type and a
    bounded JSON text (``mantis_fast._validate.shown`` would show Python's repr)."""
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object", type(None): "null"}.get(type(value), type(value).__name__)  # fmt: skip
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{kind} {text}"


def _bad(field: str, expected: str, value: Any) -> RequestRejected:
    """A 400 naming the field; the ``fail`` of the ``mantis_fast._validate`` checks below."""
    return RequestRejected(400, f"field {field!r} must be {expected}, got {_json_shown(value)}")


# Each reader takes the field from the body (absent or null: None, the server's default) and
# checks it with mantis_fast._validate, worded as a 400 about the field.


def _integer(body: Mapping[str, Any], field: str, low: int, high: int) -> int | None:
    value = body.get(field)
    return None if value is None else integer(value, field, low=low, high=high, fail=_bad)


def _number(body: Mapping[str, Any], field: str, high: float, *, positive: bool) -> float | None:
    value = body.get(field)
    if value is None:
        return None
    return number(value, field, low=0, high=high, low_open=positive, noun="a number", fail=_bad)


def _seconds(body: Mapping[str, Any], field: str) -> float | None:
    value = body.get(field)
    return None if value is None else timeout(value, field, high=MAX_REQUEST_SECONDS, fail=_bad)


def _flag(body: Mapping[str, Any], field: str, label: str | None = None) -> bool | None:
    value = body.get(field)
    return None if value is None else flag(value, label or field, fail=_bad)


def _text(body: Mapping[str, Any], field: str) -> str:
    if field not in body:
        raise RequestRejected(400, f"field {field!r} is required")
    return text(body[field], field, empty=False, fail=_bad)


def _start_url(body: Mapping[str, Any]) -> str:
    url = _text(body, "start_url").strip()
    scheme = urlsplit(url).scheme.lower()
    if scheme not in URL_SCHEMES:
        raise RequestRejected(
            400,
            f"field 'start_url' must be a URL with scheme {', '.join(URL_SCHEMES)}, "
            f"got {_json_shown(url)}",
        )
    return url


def _known_toggles() -> str:
    return ", ".join(TOGGLES)


def _toggles(body: Mapping[str, Any]) -> dict[str, bool | None]:
    """The toggles from the top-level fields and from the ``toggles`` object (which must not
    contradict each other)."""
    found = {name: _flag(body, name) for name in TOGGLES}
    given = body.get("toggles")
    if given is None:
        return found
    if not isinstance(given, Mapping):
        raise _bad("toggles", "an object of toggle name -> true/false", given)
    unknown = [name for name in given if name not in TOGGLES]
    if unknown:
        raise RequestRejected(
            400,
            f"unknown toggle(s) {', '.join(map(repr, unknown))} in 'toggles'; "
            f"known toggles: {_known_toggles()}",
        )
    for name, value in given.items():
        value = _flag(given, name, f"toggles.{name}")
        if found[name] is not None and value is not None and found[name] != value:
            raise RequestRejected(
                400,
                f"toggle {name!r} is {str(found[name]).lower()} as a field but "
                f"{str(value).lower()} in 'toggles'",
            )
        if value is not None:
            found[name] = value
    return found


def parse_request(body: Mapping[str, Any]) -> CUARequest:
    """Check a decoded body; ``RequestRejected`` (400) naming what is wrong."""
    if not isinstance(body, Mapping):
        raise RequestRejected(400, f"the body must be a JSON object, got {_json_shown(body)}")
    unknown = [name for name in body if name not in FIELDS]
    if unknown:
        flags = [name for name in unknown if isinstance(body[name], bool)]
        if flags:  # true/false under an unknown name: a misspelt toggle
            raise RequestRejected(
                400,
                f"unknown toggle(s) {', '.join(map(repr, flags))}; "
                f"known toggles: {_known_toggles()}",
            )
        raise RequestRejected(
            400,
            f"unknown field(s) {', '.join(map(repr, unknown))}; known fields: {', '.join(FIELDS)}",
        )
    instruction = _text(body, "instruction")
    if len(instruction) > MAX_INSTRUCTION_CHARS:
        raise RequestRejected(
            400,
            f"field 'instruction' must be at most {MAX_INSTRUCTION_CHARS} characters, "
            f"got {len(instruction)}",
        )
    brain = body.get("brain")
    if brain is not None and brain not in BRAINS:
        raise _bad("brain", f"one of {', '.join(BRAINS)}", brain)
    max_steps = _integer(body, "max_steps", 1, MAX_STEPS_LIMIT)
    settle = _number(body, "settle_time", MAX_SETTLE_SECONDS, positive=False)
    proxy = _flag(body, "proxy_disabled")
    toggles = _toggles(body)
    return CUARequest(
        instruction=instruction,
        start_url=_start_url(body),
        max_steps=30 if max_steps is None else max_steps,
        settle_time=0.0 if settle is None else settle,
        proxy_disabled=bool(proxy),
        adaptive_click_tol=toggles["adaptive_click_tol"],
        loop_adaptive=toggles["loop_adaptive"],
        brain=brain,
        seed=_integer(body, "seed", 0, MAX_SEED),
        timeout_seconds=_seconds(body, "timeout_seconds"),
    )


def decode_body(data: bytes) -> Any:
    """The JSON value of a body (nesting bounded: ``json`` recurses once per level); 400."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestRejected(400, f"the body is not UTF-8: {exc}") from None
    if not json_depth_ok(text):
        raise RequestRejected(400, f"the body is nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise RequestRejected(400, f"the body is not valid JSON: {exc}") from None


def check_token(sent: str | None, token: str) -> None:
    """``RequestRejected`` (401) unless ``X-Mantis-Token`` equals the server's token, compared
    in constant time (``hmac.compare_digest``) so its length and prefix do not leak.

    The message says which: ``missing X-Mantis-Token header`` when none was sent, ``missing
    X-Mantis-Token: the header is empty`` for a blank one (a client without a token, e.g.
    ``mantis-fast ablate`` with no ``--token`` and no ``$MANTIS_TOKEN``; the server's token is
    never blank), ``wrong X-Mantis-Token`` for any other token that is not the server's."""
    if sent is None:
        raise RequestRejected(401, "missing X-Mantis-Token header")
    if not sent.strip():
        raise RequestRejected(401, "missing X-Mantis-Token: the header is empty")
    # aiohttp decodes non-UTF-8 header bytes to lone surrogates: encode them back
    if not hmac.compare_digest(sent.encode("utf-8", "surrogateescape"), token.encode("utf-8")):
        raise RequestRejected(401, "wrong X-Mantis-Token")
