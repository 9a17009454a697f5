"""What a loop detector stores per step, and the one set of rules that reads it from the forms
actions come in (an ``Action``, a mapping, an object with ``action_type``/``params``), shared by
the streaming :class:`~mantis_fast.loops.detector.LoopDetector` and the batched
:mod:`~mantis_fast.loops.trajectory`, so both give the same verdicts.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np

from mantis_fast._validate import shown as _shown
from mantis_fast.actions.model import CANONICAL_NAMES, canonical_name, read_action
from mantis_fast.errors import InvalidInputError

__all__ = [
    "DRIFT_CODE",
    "DRIFT_KINDS",
    "SCROLL_LIKE_KEYS",
    "action_point",
    "is_scroll_like",
    "normalize_action",
    "to_sample",
]

#: Action types that can form a drift loop; their codes in batched arrays are 1..len(DRIFT_KINDS)
#: in this order, 0 standing for every other action (and for spatial actions without a point).
DRIFT_KINDS: tuple[str, ...] = ("click", "double_click", "right_click", "drag")
DRIFT_CODE = {name: code for code, name in enumerate(DRIFT_KINDS, start=1)}

#: Keys whose repeated presses read a page rather than loop (exempt from repeat loops while the
#: screen keeps changing, as scrolls are): upstream Mantis's list, page up/down, the up/down
#: arrows and vi's j/k, plus the spellings the input layer also accepts for the same keys (pgup,
#: pgdn) and the browser names of the arrows (which upstream's substring match also caught).
SCROLL_LIKE_KEYS = frozenset(
    {"page_down", "pagedown", "page_up", "pageup", "down", "up", "j", "k"}
    | {"pgdn", "pgup", "arrowdown", "arrowup"}
)
_KEY_SEPARATORS = re.compile(r"[+\s,]+")

# Where an action's point is looked up, in order; a drag's (x, y) is its start point.
_POINT_KEYS = (("x", "y"), ("start_x", "start_y"), ("x1", "y1"))
_MISSING = object()


def normalize_action(action: Any) -> tuple[str, Mapping[str, Any], str]:
    """``(type, params, reasoning)`` of an action, the one normalisation every detector uses.

    Accepted forms:

    * a mapping: read by ``mantis_fast.actions.model.read_action``, the reader of
      ``Action.from_dict`` (the type under ``name``, ``action``, ``type`` or ``action_type``;
      a nested ``params`` mapping updated with the other keys; the display keys and ``space``
      are not params);
    * an object with ``.action_type`` and ``.params`` (and optionally ``.reasoning``), where
      ``action_type`` is a string or an enum whose ``.value`` is a string (an ``Action``, the
      Gym's, upstream's).

    The type is made canonical as ``Action`` reads it (``canonical_name``: ``"Type-Text"`` ->
    ``"type"``, ``"left_click"`` -> ``"click"``); a name outside the vocabulary is kept in
    that spelling (``"Scroll-Up"`` -> ``"scroll_up"``) rather than refused, since a detector
    compares actions it need not perform. Missing params are ``{}``, missing reasoning is
    ``""``. Anything else raises ValueError naming what was received.
    """
    if type(action) is dict or (
        getattr(action, "action_type", _MISSING) is _MISSING and isinstance(action, Mapping)
    ):
        name, fields, why, _, _, _ = read_action(action)  # unpacked: no field lookups
        canonical = CANONICAL_NAMES.get(name)  # the common case, without a call
        return canonical if canonical is not None else canonical_name(name), fields, why
    try:
        kind = action.action_type
        params = action.params
    except AttributeError:
        raise InvalidInputError(
            "action must be a mapping with a 'type' key or an object with .action_type and "
            f".params, got {type(action).__name__} {_shown(action)}"
        ) from None
    reasoning = getattr(action, "reasoning", None)
    if type(kind) is not str:
        kind = getattr(kind, "value", kind)
        if not isinstance(kind, str):
            raise InvalidInputError(
                f"action type must be a string or a string enum, got {_shown(kind)}"
            )
    if params is None:
        params = {}
    elif type(params) is not dict and not isinstance(params, Mapping):
        raise InvalidInputError(f"action params must be a mapping, got {type(params).__name__}")
    if reasoning is None:
        reasoning = ""
    elif type(reasoning) is not str and not isinstance(reasoning, str):
        raise InvalidInputError(
            f"action reasoning must be a string, got {type(reasoning).__name__}"
        )
    return canonical_name(kind), params, reasoning


def _coordinate(name: str, value: Any) -> float:
    if (type(value) is not int and type(value) is not float) and (
        isinstance(value, (bool, str, bytes)) or not isinstance(value, Real)
    ):
        raise InvalidInputError(f"action {name} must be a real number, got {_shown(value)}")
    try:
        value = float(value)
    except OverflowError:
        raise InvalidInputError(f"action {name} must be finite, got {_shown(value)}") from None
    if not math.isfinite(value):
        raise InvalidInputError(f"action {name} must be finite, got {value}")
    return value


def action_point(params: Mapping[str, Any]) -> tuple[float, float] | None:
    """The point of an action: ``x``/``y``, else ``start_x``/``start_y``, else ``x1``/``y1``."""
    for kx, ky in _POINT_KEYS:
        x = params.get(kx)
        if x is not None:
            return _coordinate(kx, x), _coordinate(ky, params.get(ky))
    return None


def is_scroll_like(kind: str, params: Mapping[str, Any]) -> bool:
    """Whether repeating the action is how one reads a page: a scroll (any type whose name
    contains ``"scroll"``), a wait, or a key press of a :data:`SCROLL_LIKE_KEYS` key.

    ``kind`` is the canonical type name. A key press's combination (``keys``, ``key`` or ``text``:
    ``"ctrl+down"``, ``"Page_Down"``, ``["shift", "j"]``) is split on ``+``, commas and spaces, and
    one of its keys must be a navigation key by its whole name: ``"backspace"`` is not ``"k"``.
    """
    if kind == "key":
        keys = params.get("keys") or params.get("key") or params.get("text")
        if isinstance(keys, str):
            names = _KEY_SEPARATORS.split(keys.lower())
        elif isinstance(keys, (list, tuple)):
            names = [k.lower() for k in keys if isinstance(k, str)]
        else:
            return False
        return not SCROLL_LIKE_KEYS.isdisjoint(names)
    return kind == "wait" or "scroll" in kind


_frame_hash = None


def _hash_frame(frame: Any) -> str:
    """Frame hash of an image via ``mantis_fast.pixels.frames.frame_hash`` (imported on first
    use)."""
    global _frame_hash
    if _frame_hash is None:
        from mantis_fast.pixels.frames import frame_hash

        _frame_hash = frame_hash
    return _frame_hash(frame)


def _is_pil_image(frame: Any) -> bool:
    pil = sys.modules.get("PIL.Image")  # not imported: cannot be a PIL image
    return pil is not None and isinstance(frame, pil.Image)


def _phash_pil(frame: Any) -> str:
    from mantis_fast.pixels.frames import phash_64

    return phash_64(frame)


def to_sample(action: Any, url: Any, frame: Any) -> tuple:
    """One step as the detectors store it.

    ``(type, drift code, x, y, reasoning, signature, scroll-like, frame hash, url)``: the drift
    code is 0 for actions that cannot drift (including spatial ones without a point, whose x, y
    are 0.0); the signature ``(type, params)`` is what repeat loops compare with ``==``;
    scroll-like is :func:`is_scroll_like`. ``frame`` is a hash string (``""`` is none, as
    upstream's failed hash), an image array (hashed with ``frame_hash``), a ``PIL.Image`` (hashed
    with ``phash_64``, upstream's own hash) or None; ``url`` a string or None (``""``).
    """
    kind, params, reasoning = normalize_action(action)
    code = DRIFT_CODE.get(kind, 0)
    x = y = 0.0
    if code:
        scroll_like = False  # a spatial action is never scroll-like
        # Fast path for the common shape (x and y plain finite numbers); anything else, and
        # every error, goes through action_point.
        px: Any = params.get("x")
        py: Any = params.get("y")
        tx, ty = type(px), type(py)
        fast = (tx is int or tx is float) and (ty is int or ty is float)
        if fast:
            try:
                x, y = float(px), float(py)
            except OverflowError:  # an int beyond float64
                fast = False
            else:
                fast = (x - x) + (y - y) == 0.0  # NaN unless both are finite
        if not fast:
            point = action_point(params)
            if point is None:
                code = 0
                x = y = 0.0
            else:
                x, y = point
    else:
        scroll_like = (
            "scroll" in kind or kind == "wait" or (kind == "key" and is_scroll_like(kind, params))
        )
    if frame is None or type(frame) is str:
        frame_hash = frame or None
    elif isinstance(frame, str):
        frame_hash = str(frame) or None
    elif isinstance(frame, np.ndarray):
        frame_hash = _hash_frame(frame)
    elif _is_pil_image(frame):
        frame_hash = _phash_pil(frame)
    else:
        raise InvalidInputError(
            "frame must be an image array, a PIL image, a hash string or None, got "
            f"{type(frame).__name__}"
        )
    if type(url) is not str:
        if url is None:
            url = ""
        elif isinstance(url, str):
            url = str(url)
        else:
            raise InvalidInputError(f"url must be a string, got {type(url).__name__} {_shown(url)}")
    # The mapping form built a private params dict (``read_action``).
    owned = type(action) is dict
    signature = (kind, params if owned else dict(params))
    return kind, code, x, y, reasoning, signature, scroll_like, frame_hash, url
