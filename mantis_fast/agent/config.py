"""``AgentConfig``: every setting of the vision loop in one validated, frozen object.

Keys are those of the reference configuration (``HOST``, ``PORT``, ``API_URL`` ... ``UI_CONFIG``)
plus a few this implementation needs (``MAX_TURNS``, ``DISPLAY``, ``PANEL_TOKEN``, ``CORS_ORIGINS``,
retry and settle settings). Sources, later ones winning: the defaults below, a configuration file
(``AgentConfig.load``), then ``KEY=VALUE`` overrides from the command line. The file is TOML, or
a Python module of UPPER_CASE constants (the reference's ``config.py``, any file ending in
``.py``): that module is run as Python, so it is the user's own code and is trusted as such.
Key names are case-insensitive (``CAPTURE_CROP`` and ``capture_crop`` are the same key). A bad
value is a ``ConfigError`` at start naming the key and the value, never a failure deep in a turn.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import ipaddress
import logging
import math
import os
import runpy
import secrets
import traceback
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mantis_fast import _validate
from mantis_fast._validate import MAX_IMAGE_SIDE, described, flag, number, text
from mantis_fast.errors import ConfigError
from mantis_fast.pixels import sizing

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef, unused-ignore]  # 3.11+: tomllib

__all__ = ["DEFAULT_SYSTEM_PROMPT", "DEFAULT_UI_CONFIG", "AgentConfig", "ConfigError"]


DEFAULT_SYSTEM_PROMPT = """\
You operate a computer desktop by looking at one screenshot per turn and answering with actions.

COORDINATES: every coordinate is an integer from 0 to 1000, normalized to the screenshot you \
see: (0,0) is its top-left corner, (1000,1000) its bottom-right, (500,500) its centre. Never \
use pixel coordinates.

OUTPUT: reply with ONE JSON object and nothing else (no prose, no markdown fences):
{"observation": "<short story: what you see, what you did last turn and whether it worked, \
what you do now and why>",
 "bboxes": [{"x1": 0, "y1": 0, "x2": 0, "y2": 0, "label": "<what this region is>"}],
 "actions": [{"name": "click", "x1": 0, "y1": 0}]}

ACTIONS (executed in order, then a new screenshot is taken):
- {"name": "move", "x1", "y1"}                  move the pointer
- {"name": "click", "x1", "y1"}                 left click
- {"name": "right_click", "x1", "y1"}           right click
- {"name": "double_click", "x1", "y1"}          double click
- {"name": "drag", "x1", "y1", "x2", "y2"}      press at (x1,y1), move to (x2,y2), release
- {"name": "scroll", "x1", "y1", "direction": "up|down|left|right", "amount": 3}
- {"name": "type", "text": "..."}               type text into the focused element
- {"name": "key", "keys": "ctrl+s"}             press a key or combination

OVERLAYS burned into the screenshot are feedback, not part of the screen:
- ORANGE heat marks where your actions of the last turn landed (clicks, moves, both ends of a \
drag), with index and coordinate labels; fainter orange marks are older turns. If orange heat \
sits on a spot where nothing changed, your action had no effect: try something different \
instead of repeating it.
- BLUE boxes are the bboxes you reported last turn (your own regions of interest).

LIMITS per turn: at most {max_actions} actions and {max_bboxes} bboxes; extra ones are ignored. \
Keep the observation short: it is your only memory between turns.
"""

DEFAULT_UI_CONFIG: dict[str, Any] = {
    "executed_heat": {
        "enabled": True,
        "radius_scale": 0.035,
        "stops": [
            [0.0, "rgba(255,120,0,0.85)"],
            [0.45, "rgba(255,140,0,0.45)"],
            [1.0, "rgba(255,160,0,0)"],
        ],
        "trail_turns": 4,
        "trail_shrink": 0.8,
    },
    "bbox_heat": {
        "enabled": True,
        "border": "rgba(30,120,255,0.9)",
        "border_width": 2,
        "fill_stops": [[0.0, "rgba(30,120,255,0.30)"], [1.0, "rgba(30,120,255,0.05)"]],
    },
}

DEFAULT_BOOT_VLM_OUTPUT = (
    '{"observation": "Start: take a first look at the screen.", "bboxes": [], "actions": []}'
)

#: ``PANEL_TOKEN = "auto"``: a random token drawn when the configuration is built.
AUTO_TOKEN = "auto"
LOOPBACK_NAMES = ("localhost",)
LAYOUTS = ("flat", "turn_dirs")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
ANNOTATORS = ("native", "external")
ON_VLM_ERROR = ("stop", "continue", "wait")
SIZE_POLICIES = ("reference", "qwen2", "qwen3", "anthropic")
CROP_KEYS = ("x1", "y1", "x2", "y2")
FULL_SCREEN = {"x1": 0, "y1": 0, "x2": 1000, "y2": 1000}


def _fail(key: str, value: Any, expected: str) -> ConfigError:
    top, dot, rest = key.partition(".")  # UI_CONFIG.executed_heat.stops
    name = top.upper() + dot + rest
    return ConfigError(f"config key {name}: expected {expected}, got {described(value, 200)}")


def _rejected(key: str, expected: str, value: Any) -> ConfigError:
    """``_fail`` in the argument order of ``mantis_fast._validate``'s ``fail``."""
    return _fail(key, value, expected)


# The checks of mantis_fast._validate, key first (the order of the key table's checkers) and
# worded as configuration errors: "config key PORT: expected an integer >= 0 and <= 65535".
def _number(key: str, value: Any, *, low: float | None = None, high: float | None = None,
            low_open: bool = False, integer: bool = False) -> Any:  # fmt: skip
    noun = None if integer else "a number"  # no NaN in TOML: "a number" says it
    return number(value, key, low=low, high=high, low_open=low_open, integer=integer,
                  noun=noun, fail=_rejected)  # fmt: skip


def _seconds(key: str, value: Any) -> float:
    """A time limit: finite, > 0 and at most an hour (as every timeout in the package)."""
    return _validate.timeout(value, key, fail=_rejected)


def _text(key: str, value: Any, *, empty: bool = True) -> str:
    return text(value, key, empty=empty, fail=_rejected)


def _flag(key: str, value: Any) -> bool:
    return flag(value, key, fail=_rejected)


def _choice(key: str, value: Any, choices: Iterable[str], *, fold=str.lower) -> str:
    choices = tuple(choices)
    if not isinstance(value, str) or fold(value) not in choices:
        raise _fail(key, value, "one of " + ", ".join(repr(c) for c in choices))
    return fold(value)


def _crop(key: str, value: Any) -> dict[str, int]:
    expected = "a table {x1, y1, x2, y2} of numbers 0..1000 with x1 < x2 and y1 < y2"
    if isinstance(value, (list, tuple)) and len(value) == 4:
        value = dict(zip(CROP_KEYS, value, strict=True))
    if not isinstance(value, Mapping) or set(value) != set(CROP_KEYS):
        raise _fail(key, value, expected)
    crop = {}
    for name in CROP_KEYS:
        number = value[name]
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise _fail(key, value, expected)
        if not (math.isfinite(number) and 0 <= number <= 1000):
            raise _fail(key, value, expected)
        crop[name] = round(number)
    if crop["x1"] >= crop["x2"] or crop["y1"] >= crop["y2"]:
        raise _fail(key, value, expected)
    return crop


def _merge(base: dict, update: Mapping, path: str) -> dict:
    """Deep-merge ``update`` into a copy of ``base``; unknown sections/keys are errors."""
    merged = copy.deepcopy(base)
    for name, value in update.items():
        if name not in base:
            raise ConfigError(
                f"config key UI_CONFIG: unknown entry {path}{name!r}; known: {sorted(base)}"
            )
        if isinstance(base[name], dict):
            if not isinstance(value, Mapping):
                raise _fail("UI_CONFIG", value, f"a table for {path}{name}")
            merged[name] = _merge(base[name], value, f"{path}{name}.")
        else:
            merged[name] = copy.deepcopy(value)
    return merged


def _ui_config(key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(key, value, "a table with executed_heat and bbox_heat")
    merged = _merge(DEFAULT_UI_CONFIG, value, "")
    heat, boxes = merged["executed_heat"], merged["bbox_heat"]
    for section in (heat, boxes):
        _flag(f"{key}.enabled", section["enabled"])
    _number(f"{key}.executed_heat.radius_scale", heat["radius_scale"], low=0, high=1, low_open=True)
    _number(f"{key}.executed_heat.trail_turns", heat["trail_turns"], low=1, high=64, integer=True)
    _number(f"{key}.executed_heat.trail_shrink", heat["trail_shrink"], low=0, high=1, low_open=True)
    _number(f"{key}.bbox_heat.border_width", boxes["border_width"], low=0, high=64)
    _text(f"{key}.bbox_heat.border", boxes["border"], empty=False)
    for name, stops in (("executed_heat.stops", heat["stops"]),
                        ("bbox_heat.fill_stops", boxes["fill_stops"])):  # fmt: skip
        expected = "a non-empty list of [position 0..1, colour string] pairs"
        if not isinstance(stops, list) or not stops:
            raise _fail(f"{key}.{name}", stops, expected)
        for stop in stops:
            if not (isinstance(stop, (list, tuple)) and len(stop) == 2):
                raise _fail(f"{key}.{name}", stops, expected)
            _number(f"{key}.{name} position", stop[0], low=0, high=1)
            _text(f"{key}.{name} colour", stop[1], empty=False)
    try:  # the overlay module is the final judge of colours and stops
        from mantis_fast.pixels.overlay import UIConfig
    except ImportError:
        return merged
    try:
        UIConfig.from_dict(merged)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"config key UI_CONFIG: {exc}") from None
    return merged


def _url(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise _fail(key, value, "an http:// or https:// URL")
    return value


def _host(key: str, value: Any) -> str:
    return _text(key, value, empty=False).strip()


def is_loopback(host: str) -> bool:
    """Whether a bind address only accepts connections from this machine."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _log_level(key: str, value: Any) -> str:
    """A level name, or the number a ``config.py`` may write (``LOG_LEVEL = logging.INFO``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        name = logging.getLevelName(value)
        if name in LOG_LEVELS:
            return name
        raise _fail(key, value, "one of " + ", ".join(repr(c) for c in LOG_LEVELS))
    return _choice(key, value, LOG_LEVELS, fold=str.upper)


def _directory(key: str, value: Any) -> str:
    """A non-empty path (a ``config.py`` may give a ``pathlib.Path``)."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return _text(key, value, empty=False)


def normalize_origin(origin: str) -> str | None:
    """A web origin as browsers send it in ``Origin`` (``scheme://host[:port]``, lower case, no
    default port), or None when ``origin`` is not one. ``"null"`` (pages from ``file:``, sandboxed
    frames) stays ``"null"``."""
    text = origin.strip()
    if text == "null":
        return text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), parts.hostname
    if scheme not in ("http", "https") or not host or parts.username or parts.password:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    shown = f"[{host}]" if ":" in host else host
    if port is not None and port != {"http": 80, "https": 443}[scheme]:
        shown += f":{port}"
    return f"{scheme}://{shown}"


def _origins(key: str, value: Any) -> tuple[str, ...]:
    """``CORS_ORIGINS``: ``"*"``, or origins (a list, or one string, comma-separated); empty =
    off. Kept as a tuple of normalized origins, ``("*",)`` for any."""
    expected = 'a list of origins like "http://localhost:3000", or "*"'
    if isinstance(value, str):
        items = [item for item in value.split(",") if item.strip()]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise _fail(key, value, expected)
    origins: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise _fail(key, value, expected)
        if item.strip() == "*":
            return ("*",)
        origin = normalize_origin(item)
        if origin is None:
            raise _fail(key, item, expected + " (scheme://host[:port], no path)")
        if origin not in origins:
            origins.append(origin)
    return tuple(origins)


# key -> (default, validator). Order is the reference's, then this implementation's additions.
_KEYS: dict[str, tuple[Any, Any]] = {
    # network and panel
    "host": ("127.0.0.1", _host),
    "port": (8765, lambda k, v: _number(k, v, low=0, high=65535, integer=True)),
    "panel_token": ("", _text),
    "cors_origins": ((), _origins),
    "panel_max_body_bytes": (
        32 * 1024 * 1024,
        lambda k, v: _number(k, v, low=1024, high=2**31, integer=True),
    ),
    "panel_max_connections": (
        64,
        lambda k, v: _number(k, v, low=1, high=100_000, integer=True),
    ),
    "panel_header_timeout_seconds": (5.0, _seconds),
    "panel_request_timeout_seconds": (30.0, _seconds),
    "inject_queue_max": (16, lambda k, v: _number(k, v, low=1, high=100_000, integer=True)),
    "inject_queue_max_bytes": (
        1024 * 1024,
        lambda k, v: _number(k, v, low=1024, high=2**31, integer=True),
    ),
    "log_level": ("INFO", _log_level),
    "log_to_file": (True, _flag),
    "ui_config": (DEFAULT_UI_CONFIG, _ui_config),
    # VLM connection
    "api_url": ("http://127.0.0.1:8000/v1/chat/completions", _url),
    "api_key": ("", _text),
    "model": ("default", lambda k, v: _text(k, v, empty=False)),
    "temperature": (0.0, lambda k, v: _number(k, v, low=0, high=2)),
    "top_p": (1.0, lambda k, v: _number(k, v, low=0, high=1, low_open=True)),
    "max_tokens": (1024, lambda k, v: _number(k, v, low=1, high=1_000_000, integer=True)),
    "vlm_http_timeout_seconds": (120.0, lambda k, v: _number(k, v)),
    "vlm_max_retries": (2, lambda k, v: _number(k, v, low=0, high=20, integer=True)),
    "vlm_retry_backoff_seconds": (1.0, lambda k, v: _number(k, v, low=0, high=600)),
    "vlm_on_error": ("stop", lambda k, v: _choice(k, v, ON_VLM_ERROR)),
    "vlm_max_reply_bytes": (
        8 * 1024 * 1024,
        lambda k, v: _number(k, v, low=1024, high=2**31, integer=True),
    ),
    "vlm_max_reply_chars": (
        1_000_000,
        lambda k, v: _number(k, v, low=1, high=2**31, integer=True),
    ),
    # prompt
    "system_prompt": (DEFAULT_SYSTEM_PROMPT, lambda k, v: _text(k, v, empty=False)),
    "max_actions_per_turn": (8, lambda k, v: _number(k, v, low=1, high=1000, integer=True)),
    "max_bboxes_per_turn": (8, lambda k, v: _number(k, v, low=0, high=1000, integer=True)),
    # capture and working area
    "display": ("", _text),
    "capture_crop": (FULL_SCREEN, _crop),
    # <= 0 means "not set" (the reference's "if both > 0"): a negative value is no error
    "capture_width": (0, lambda k, v: _number(k, v, high=MAX_IMAGE_SIDE, integer=True)),
    "capture_height": (0, lambda k, v: _number(k, v, high=MAX_IMAGE_SIDE, integer=True)),
    "capture_scale_percent": (100.0, lambda k, v: _number(k, v, high=1000)),
    "capture_size_policy": ("reference", lambda k, v: _choice(k, v, SIZE_POLICIES)),
    "capture_max_long_edge": (
        0,
        lambda k, v: _number(k, v, low=0, high=MAX_IMAGE_SIDE, integer=True),
    ),
    "capture_delay": (0.0, lambda k, v: _number(k, v, low=0, high=600)),
    "capture_settle": (False, _flag),
    "settle_timeout_seconds": (2.0, lambda k, v: _number(k, v, low=0, high=600)),
    "settle_quiet_ms": (100.0, lambda k, v: _number(k, v, low=0, high=60_000)),
    "annotator": ("native", lambda k, v: _choice(k, v, ANNOTATORS)),
    # execution
    "physical_execution": (True, _flag),
    "action_delay_seconds": (0.05, lambda k, v: _number(k, v, low=0, high=600)),
    "drag_duration_steps": (20, lambda k, v: _number(k, v, low=1, high=10_000, integer=True)),
    "drag_step_delay": (0.01, lambda k, v: _number(k, v, low=0, high=10)),
    # run output
    "runs_dir": ("runs", _directory),
    "log_layout": ("flat", lambda k, v: _choice(k, v, LAYOUTS)),
    # boot injection and turn limit
    "boot_enabled": (False, _flag),
    "boot_vlm_output": (DEFAULT_BOOT_VLM_OUTPUT, lambda k, v: _text(k, v, empty=False)),
    "max_turns": (0, lambda k, v: _number(k, v, low=0, integer=True)),
}


def _field(name: str) -> Any:
    return dataclasses.field(default=_KEYS[name][0])


@dataclasses.dataclass(frozen=True)
class AgentConfig:
    """All settings of one agent run. Build with ``AgentConfig(...)``, ``from_mapping`` or
    ``from_toml``; derive variants with ``replace(**changes)``. Fields are the lower-case keys.

    Semantics of the less obvious keys:

    - ``vlm_http_timeout_seconds`` bounds one whole attempt (connect, send, the reply's
      headers and body); ``<= 0`` means no timeout (the reference's meaning; a stalled
      endpoint then blocks the loop). ``vlm_max_retries`` extra attempts follow a transport
      error, a timeout, HTTP 429 or 5xx, after ``vlm_retry_backoff_seconds * 2**attempt``.
    - ``vlm_max_reply_bytes`` (the response body, read no further) and ``vlm_max_reply_chars``
      (the assistant text) bound one reply: a larger one is a failed model call.
    - ``vlm_on_error``: after the last attempt fails, ``"stop"`` ends the run, ``"continue"``
      runs the next turn with no actions, ``"wait"`` waits for ``POST /inject``.
    - ``capture_width``/``capture_height`` both > 0 fix the frame size; otherwise (either one
      <= 0, which means "not set") ``capture_scale_percent`` scales the crop uniformly (<= 0
      means 100). Other ``capture_size_policy`` values and ``capture_max_long_edge``: see
      ``frame_size``.
    - ``capture_delay``: seconds slept before each capture (0: capture at once).
      ``capture_settle = True`` then also waits until the screen is still (``settle_quiet_ms``
      without change, at most ``settle_timeout_seconds``); off by default.
    - ``annotator="external"`` waits for ``POST /annotated`` instead of drawing overlays natively.
    - ``panel_max_connections`` connections at once (one more is answered 503 and closed);
      ``panel_header_timeout_seconds`` for a request's line and headers, counted from the
      connection or the previous response (so it bounds idle connections too);
      ``panel_request_timeout_seconds`` to read its body and write its response.
    - ``inject_queue_max``/``inject_queue_max_bytes`` bound the injections waiting for the loop
      (count, UTF-8 bytes): past them ``POST /inject`` gets 429, or 413 for one too large.
    - ``panel_token`` is required when ``host`` is not a loopback address; ``"auto"`` draws a
      random one when the configuration is built (``mantis-fast run`` prints the page URL
      with it).
    - ``cors_origins`` (empty: off) lets pages of those origins call the panel from a browser
      (preflights answered, ``Access-Control-Allow-Origin`` echoed); ``"*"`` any origin, only on
      a loopback ``host``. The token, when set, is still required.
    - ``max_turns = 0`` runs until stopped; ``display = ""`` means ``$DISPLAY`` (and
      ``mantis-fast run`` starts a private Xvfb when that is unset too).
    """

    host: str = _field("host")
    port: int = _field("port")
    panel_token: str = _field("panel_token")
    cors_origins: tuple = _field("cors_origins")
    panel_max_body_bytes: int = _field("panel_max_body_bytes")
    panel_max_connections: int = _field("panel_max_connections")
    panel_header_timeout_seconds: float = _field("panel_header_timeout_seconds")
    panel_request_timeout_seconds: float = _field("panel_request_timeout_seconds")
    inject_queue_max: int = _field("inject_queue_max")
    inject_queue_max_bytes: int = _field("inject_queue_max_bytes")
    log_level: str = _field("log_level")
    log_to_file: bool = _field("log_to_file")
    ui_config: dict = dataclasses.field(default_factory=lambda: copy.deepcopy(DEFAULT_UI_CONFIG))
    api_url: str = _field("api_url")
    api_key: str = _field("api_key")
    model: str = _field("model")
    temperature: float = _field("temperature")
    top_p: float = _field("top_p")
    max_tokens: int = _field("max_tokens")
    vlm_http_timeout_seconds: float = _field("vlm_http_timeout_seconds")
    vlm_max_retries: int = _field("vlm_max_retries")
    vlm_retry_backoff_seconds: float = _field("vlm_retry_backoff_seconds")
    vlm_on_error: str = _field("vlm_on_error")
    vlm_max_reply_bytes: int = _field("vlm_max_reply_bytes")
    vlm_max_reply_chars: int = _field("vlm_max_reply_chars")
    system_prompt: str = _field("system_prompt")
    max_actions_per_turn: int = _field("max_actions_per_turn")
    max_bboxes_per_turn: int = _field("max_bboxes_per_turn")
    display: str = _field("display")
    capture_crop: dict = dataclasses.field(default_factory=lambda: dict(FULL_SCREEN))
    capture_width: int = _field("capture_width")
    capture_height: int = _field("capture_height")
    capture_scale_percent: float = _field("capture_scale_percent")
    capture_size_policy: str = _field("capture_size_policy")
    capture_max_long_edge: int = _field("capture_max_long_edge")
    capture_delay: float = _field("capture_delay")
    capture_settle: bool = _field("capture_settle")
    settle_timeout_seconds: float = _field("settle_timeout_seconds")
    settle_quiet_ms: float = _field("settle_quiet_ms")
    annotator: str = _field("annotator")
    physical_execution: bool = _field("physical_execution")
    action_delay_seconds: float = _field("action_delay_seconds")
    drag_duration_steps: int = _field("drag_duration_steps")
    drag_step_delay: float = _field("drag_step_delay")
    runs_dir: str = _field("runs_dir")
    log_layout: str = _field("log_layout")
    boot_enabled: bool = _field("boot_enabled")
    boot_vlm_output: str = _field("boot_vlm_output")
    max_turns: int = _field("max_turns")

    def __post_init__(self) -> None:
        for name, (_default, check) in _KEYS.items():
            object.__setattr__(self, name, check(name, getattr(self, name)))
        if self.panel_token == AUTO_TOKEN:  # drawn once: replace() keeps the drawn token
            object.__setattr__(self, "panel_token", secrets.token_urlsafe(24))
        if not is_loopback(self.host) and not self.panel_token:
            raise ConfigError(
                f"config key HOST: binding {self.host!r} exposes the panel beyond this machine; "
                "set PANEL_TOKEN (clients then send 'Authorization: Bearer <token>')"
            )
        if "*" in self.cors_origins and not is_loopback(self.host):
            raise ConfigError(
                f"config key CORS_ORIGINS: '*' lets every web page a browser opens call the "
                f"panel, so it is allowed only on a loopback HOST, not {self.host!r}; list the "
                "origins that may call it instead"
            )
        if "*" in self.cors_origins and not self.panel_token:
            raise ConfigError(
                "config key CORS_ORIGINS: '*' lets every web page a browser opens call the "
                "panel, and without PANEL_TOKEN any of them could drive the desktop; set "
                "PANEL_TOKEN, or list the origins that may call it"
            )
        if "null" in self.cors_origins:
            raise ConfigError(
                "config key CORS_ORIGINS: 'null' is the origin any page can send (a sandboxed "
                "frame, a data: URL), so listing it lets every page in; serve the panel page "
                "from an http origin and list that"
            )

    # -- construction ---------------------------------------------------------------------
    @staticmethod
    def keys() -> list[str]:
        """Every configuration key, upper-case as in a TOML file."""
        return [name.upper() for name in _KEYS]

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any], base: AgentConfig | None = None):
        """Keys of ``mapping`` (any case) over ``base`` (default: the defaults)."""
        changes = {}
        for key, value in mapping.items():
            name = str(key).lower()
            if name not in _KEYS:
                near = difflib.get_close_matches(name.upper(), cls.keys(), n=1)
                hint = f"; did you mean {near[0]}?" if near else ""
                raise ConfigError(f"unknown config key {key!r}{hint}")
            changes[name] = value
        return dataclasses.replace(base, **changes) if base else cls(**changes)

    @classmethod
    def from_toml(cls, path: str | os.PathLike, overrides: Iterable[str] = ()) -> AgentConfig:
        """Load a TOML file (top-level keys), then apply ``KEY=VALUE`` overrides."""
        return cls.load(path, overrides=overrides)

    @classmethod
    def from_file(cls, path: str | os.PathLike, overrides: Iterable[str] = ()) -> AgentConfig:
        """Load a configuration file, TOML or a ``config.py`` (see ``load``), then apply
        ``KEY=VALUE`` overrides."""
        return cls.load(path, overrides=overrides)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike | None = None,
        settings: Mapping[str, Any] | None = None,
        overrides: Iterable[str] = (),
    ) -> AgentConfig:
        """The file, then ``settings``, then ``KEY=VALUE`` overrides, validated once as a
        whole: a check across keys (a non-loopback ``HOST`` needs ``PANEL_TOKEN``) sees every
        source, whichever of them sets which key.

        A file ending in ``.py`` is the reference's ``config.py``: a Python module whose
        UPPER_CASE names are the keys (``CAPTURE_WIDTH = 1280``); it is *run* to read them, so
        it must be your own code. Any other file is TOML (top-level keys). Both take the same
        keys, validated the same way; an unknown key is a ``ConfigError`` either way."""
        merged: dict[str, tuple[Any, Any]] = {}  # folded name -> the key as written, value
        for source in (_read_file(path) if path else {}, settings or {}, _overrides(overrides)):
            merged.update((str(key).lower(), (key, value)) for key, value in source.items())
        return cls.from_mapping(dict(merged.values()))

    def with_overrides(self, overrides: Iterable[str]) -> AgentConfig:
        """Apply ``KEY=VALUE`` strings; VALUE is read as a TOML value when it is one
        (``3``, ``false``, ``{x1=0, y1=0, x2=500, y2=500}``), else taken as text."""
        changes = _overrides(overrides)
        return AgentConfig.from_mapping(changes, base=self) if changes else self

    def replace(self, **changes: Any) -> AgentConfig:
        return AgentConfig.from_mapping(changes, base=self)

    # -- views ------------------------------------------------------------------------------
    def to_dict(self, *, secrets: bool = False) -> dict[str, Any]:
        """Upper-case key -> value; tokens and API keys are masked unless ``secrets``."""
        data = {name.upper(): copy.deepcopy(getattr(self, name)) for name in _KEYS}
        if not secrets:
            for key in ("PANEL_TOKEN", "API_KEY"):
                data[key] = "***" if data[key] else ""
        return data

    @property
    def system_prompt_text(self) -> str:
        """The system prompt with its ``{max_actions}``/``{max_bboxes}`` limits filled in."""
        return self.system_prompt.replace("{max_actions}", str(self.max_actions_per_turn)).replace(
            "{max_bboxes}", str(self.max_bboxes_per_turn)
        )

    @property
    def vlm_timeout(self) -> float | None:
        """Seconds, or None for no timeout (``VLM_HTTP_TIMEOUT_SECONDS <= 0``)."""
        return self.vlm_http_timeout_seconds if self.vlm_http_timeout_seconds > 0 else None

    @property
    def runs_path(self) -> Path:
        return Path(self.runs_dir)

    def frame_size(self, crop_size: tuple[int, int]) -> tuple[int, int]:
        """Size of the frame the model sees for a working area of ``crop_size`` pixels.

        ``"reference"``: CAPTURE_WIDTH x CAPTURE_HEIGHT when both are set, else
        CAPTURE_SCALE_PERCENT of the crop; ``"qwen2"``/``"qwen3"``: Qwen-VL's smart_resize
        (factor 28/32) of the crop; ``"anthropic"``: the computer-use XGA/WXGA/FWXGA target.
        ``CAPTURE_MAX_LONG_EDGE > 0`` then caps the longer side.
        """
        policy = self.capture_size_policy
        if policy == "qwen2":
            size = sizing.qwen_size(crop_size, factor=sizing.QWEN2_VL_FACTOR)
        elif policy == "qwen3":
            size = sizing.qwen_size(crop_size, factor=sizing.QWEN3_VL_FACTOR)
        elif policy == "anthropic":
            size = sizing.anthropic_size(crop_size)
        elif self.capture_width > 0 and self.capture_height > 0:
            size = sizing.fixed_size(self.capture_width, self.capture_height)
        else:
            size = sizing.scale_percent_size(crop_size, self.capture_scale_percent)
        if self.capture_max_long_edge > 0:
            size = sizing.cap_long_edge(size, self.capture_max_long_edge)
        return size


def _read_file(path: str | os.PathLike) -> dict[str, Any]:
    if os.fspath(path).endswith(".py"):
        return _read_python(path)
    return _read_toml(path)


def _plain(value: Any) -> Any:
    """A ``config.py`` value in the shapes TOML gives: tuples become lists, all the way down."""
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _read_python(path: str | os.PathLike) -> dict[str, Any]:
    """The UPPER_CASE module-level names of a ``config.py``, by running it (``runpy``; its
    ``__file__`` is set, so it may build paths from its own place). Names starting with ``_``
    and imported modules are not keys; everything else UPPER_CASE is, as a TOML key would be."""
    where = os.fspath(path)
    shown = repr(where)
    if not os.path.isfile(where):
        raise ConfigError(f"config file {shown} does not exist")
    try:
        namespace = runpy.run_path(where, run_name="__mantis_fast_config__")
    except Exception as exc:  # the user's code: a SyntaxError, a NameError, ...
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == where]
        at = f" (line {lines[-1]})" if lines else ""
        raise ConfigError(
            f"config file {shown} failed to run{at}: {type(exc).__name__}: {exc}"
        ) from None
    return {
        name: _plain(value)
        for name, value in namespace.items()
        if name.isupper() and not name.startswith("_") and not isinstance(value, types.ModuleType)
    }


def _read_toml(path: str | os.PathLike) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {os.fspath(path)!r} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {os.fspath(path)!r} is not valid TOML: {exc}") from None


def _overrides(overrides: Iterable[str]) -> dict[str, Any]:
    changes = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} is not KEY=VALUE")
        changes[key.strip()] = parse_value(raw)
    return changes


def parse_value(raw: str) -> Any:
    """A command-line value: a TOML value when it parses as one, else the text itself."""
    text = raw.strip()
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return raw
