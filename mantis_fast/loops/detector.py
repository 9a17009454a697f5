"""Loop detection for computer-use agents: adaptive click tolerance and a streaming detector.

An agent that re-clicks the same target forever is the most common failure a host has to catch.
:class:`LoopDetector` watches the actions of one episode and answers, after every step, whether the
last ``window`` samples form a loop of one of three kinds:

* **drift** — the samples are all the same spatial action type (``click``, ``double_click``,
  ``right_click``, or ``drag`` by its start point) and each lies within the effective click
  tolerance of the window's *first* sample on both axes (``|dx| <= tol and |dy| <= tol``).
* **repeat** — the actions are identical (type and params; the reasoning text is not compared),
  except scroll-like actions (type name contains ``"scroll"``) while the screen or URL changed at
  every step of the window: scrolling through a long page is progress, scrolling at its end is not.
* **state** — the samples share one frame hash and one URL. Samples recorded without a frame never
  form a state loop (nothing is known about the screen).

The click tolerance follows source document 002: :func:`compute_click_tol_px` scales the baseline
with the viewport diagonal, and the reasoning text of a window's first sample widens or tightens it
through :data:`CLICK_TOL_KEYWORDS`. Both are switched off by ``MANTIS_ADAPTIVE_CLICK_TOL`` set to
one of ``disabled, 0, false, off, no`` or per detector with ``LoopDetector(adaptive=False)``.

Actions are duck-typed (see :func:`normalize_action`): gym-style objects with ``.action_type``
(a string or an enum whose ``.value`` is one), ``.params`` and ``.reasoning``, or plain mappings
such as ``{"type": "click", "x": 10, "y": 20, "reasoning": "..."}``.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np

from mantis_fast.errors import InvalidInputError
from mantis_fast.loops._loop import DriftRing

__all__ = [
    "ADAPTIVE_CLICK_TOL_ENV",
    "CLICK_TOL_KEYWORDS",
    "DRIFT_KINDS",
    "LoopDetector",
    "adaptive_click_tol_enabled",
    "click_tol_multiplier",
    "compute_click_tol_px",
    "effective_click_tol",
    "normalize_action",
]

ADAPTIVE_CLICK_TOL_ENV = "MANTIS_ADAPTIVE_CLICK_TOL"
_DISABLED_VALUES = frozenset({"disabled", "0", "false", "off", "no"})

#: Keyword (substring of the lower-cased reasoning text) -> tolerance multiplier, in the order of
#: source document 002: the first keyword found wins, multi-word phrases before their substrings.
CLICK_TOL_KEYWORDS: tuple[tuple[str, float], ...] = (
    ("submit button", 1.5),
    ("button", 1.5),
    ("submit", 1.5),
    ("dropdown", 0.75),
    ("select", 0.75),
    ("menu item", 0.75),
    ("link", 0.5),
    ("anchor", 0.5),
    ("listing", 1.0),
    ("card", 1.0),
    ("input field", 1.0),
    ("form field", 1.0),
    ("text field", 1.0),
)

#: Action types that can form a drift loop; their codes in batched arrays are 1..len(DRIFT_KINDS)
#: in this order, 0 standing for every other action (and for spatial actions without a point).
DRIFT_KINDS: tuple[str, ...] = ("click", "double_click", "right_click", "drag")
_DRIFT_CODE = {name: code for code, name in enumerate(DRIFT_KINDS, start=1)}

# Where an action's point is looked up, in order; a drag's (x, y) is its start point.
_POINT_KEYS = (("x", "y"), ("start_x", "start_y"), ("x1", "y1"))
# Keys of the mapping form that are not params.
_ENVELOPE_KEYS = frozenset({"type", "action_type", "reasoning", "params"})
_MISSING = object()


def adaptive_click_tol_enabled() -> bool:
    """Whether ``MANTIS_ADAPTIVE_CLICK_TOL`` leaves adaptive tolerance on (the default)."""
    value = os.environ.get(ADAPTIVE_CLICK_TOL_ENV)
    return value is None or value.strip().lower() not in _DISABLED_VALUES


def _check_floor(floor: Any) -> int:
    try:
        value = operator.index(floor)
    except TypeError:
        value = -1
    if isinstance(floor, bool) or value < 0:
        raise InvalidInputError(f"floor must be a non-negative int, got {floor!r:.80}")
    return value


def _viewport_size(viewport: Any) -> tuple[float, float] | None:
    """``(w, h)`` from a pair or an object with ``.width``/``.height``; None when not usable."""
    try:
        if hasattr(viewport, "width") and hasattr(viewport, "height"):
            w, h = viewport.width, viewport.height
        else:
            w, h = viewport
    except (TypeError, ValueError):
        return None
    sides = []
    for v in (w, h):
        if isinstance(v, (bool, str, bytes)) or not isinstance(v, Real):
            return None
        try:
            side = float(v)
        except (OverflowError, ValueError):
            return None
        if not math.isfinite(side) or side <= 0:
            return None
        sides.append(side)
    return sides[0], sides[1]


def compute_click_tol_px(viewport: Any, *, floor: int = 8) -> int:
    """Drift tolerance baseline for a viewport: ``max(floor, round(0.004 * hypot(w, h)))``.

    ``viewport`` is ``(width, height)`` (or any object with ``.width`` and ``.height``). An invalid
    viewport (wrong shape, non-numeric, non-finite or non-positive sides) returns ``floor``, and so
    does ``MANTIS_ADAPTIVE_CLICK_TOL`` set to ``disabled``/``0``/``false``/``off``/``no``. A bad
    ``floor`` (negative, not an int) is the caller's bug and raises ValueError.
    """
    floor = _check_floor(floor)
    if not adaptive_click_tol_enabled():
        return floor
    size = _viewport_size(viewport)
    if size is None:
        return floor
    scaled = 0.004 * math.hypot(*size)
    return max(floor, round(scaled)) if math.isfinite(scaled) else floor


def click_tol_multiplier(reasoning: str | None) -> float:
    """The multiplier of the first :data:`CLICK_TOL_KEYWORDS` entry found in ``reasoning``."""
    if not reasoning:
        return 1.0
    text = reasoning.lower()
    for keyword, multiplier in CLICK_TOL_KEYWORDS:
        if keyword in text:
            return multiplier
    return 1.0


def effective_click_tol(click_tol_px: float, reasoning: str | None, adaptive: bool) -> float:
    """``max(1, round(click_tol_px * multiplier))`` when adaptive, else ``click_tol_px`` as is."""
    if not adaptive:
        return click_tol_px
    return max(1, round(click_tol_px * click_tol_multiplier(reasoning)))


def normalize_action(action: Any) -> tuple[str, Mapping[str, Any], str]:
    """``(type, params, reasoning)`` of an action, the one normalisation every detector uses.

    Accepted forms:

    * an object with ``.action_type`` and ``.params`` (and optionally ``.reasoning``), where
      ``action_type`` is a string or an enum whose ``.value`` is a string;
    * a mapping with a ``"type"`` (or ``"action_type"``) key, an optional ``"reasoning"`` key and
      either a ``"params"`` mapping or the params as its remaining keys.

    The type is lower-cased; missing params are ``{}``, missing reasoning is ``""``. Anything else
    raises ValueError naming what was received.
    """
    # Fast paths first (exact dicts, then attribute access): this runs once per agent step.
    if type(action) is dict or (
        getattr(action, "action_type", _MISSING) is _MISSING and isinstance(action, Mapping)
    ):
        kind = action.get("type")
        if kind is None:
            kind = action.get("action_type")
        params = action.get("params")
        if params is None:
            params = {k: v for k, v in action.items() if k not in _ENVELOPE_KEYS}
        reasoning = action.get("reasoning")
    else:
        try:
            kind = action.action_type
            params = action.params
        except AttributeError:
            raise InvalidInputError(
                "action must be a mapping with a 'type' key or an object with .action_type and "
                f".params, got {type(action).__name__} {action!r:.80}"
            ) from None
        reasoning = getattr(action, "reasoning", None)
    if type(kind) is not str:
        kind = getattr(kind, "value", kind)
        if not isinstance(kind, str):
            raise InvalidInputError(
                f"action type must be a string or a string enum, got {kind!r:.80}"
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
    return kind.lower(), params, reasoning


def _coordinate(name: str, value: Any) -> float:
    if (type(value) is not int and type(value) is not float) and (
        isinstance(value, (bool, str, bytes)) or not isinstance(value, Real)
    ):
        raise InvalidInputError(f"action {name} must be a real number, got {value!r:.80}")
    try:
        value = float(value)
    except OverflowError:
        raise InvalidInputError(f"action {name} must be finite, got {value!r:.80}") from None
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


_frame_hash = None


def _hash_frame(frame: Any) -> str:
    """Frame hash of an image via ``mantis_fast.pixels.frames.frame_hash`` (imported on first
    use)."""
    global _frame_hash
    if _frame_hash is None:
        from mantis_fast.pixels.frames import frame_hash

        _frame_hash = frame_hash
    return _frame_hash(frame)


def _check_click_tol(click_tol_px: Any) -> None:
    ok = isinstance(click_tol_px, Real) and not isinstance(click_tol_px, bool)
    try:
        ok = ok and math.isfinite(click_tol_px) and click_tol_px >= 0
    except OverflowError:  # an int too large for a float
        ok = False
    if not ok:
        raise InvalidInputError(
            f"click_tol_px must be a finite number >= 0, got {click_tol_px!r:.80}"
        )


def _sample(action: Any, url: Any, frame: Any) -> tuple:
    """One step as the detectors store it.

    ``(type, drift code, x, y, reasoning, signature, frame hash, url)``: the drift code is 0 for
    actions that cannot drift (including spatial ones without a point, whose x, y are 0.0); the
    signature ``(type, params)`` is what repeat loops compare with ``==``.
    """
    kind, params, reasoning = normalize_action(action)
    code = _DRIFT_CODE.get(kind, 0)
    x = y = 0.0
    if code:
        point = action_point(params)
        if point is None:
            code = 0
        else:
            x, y = point
    if frame is None or type(frame) is str:
        frame_hash = frame
    elif isinstance(frame, str):
        frame_hash = str(frame)
    elif isinstance(frame, np.ndarray):
        frame_hash = _hash_frame(frame)
    else:
        raise InvalidInputError(
            f"frame must be an image array, a hash string or None, got {type(frame).__name__}"
        )
    if type(url) is not str:
        if url is None:
            url = ""
        elif isinstance(url, str):
            url = str(url)
        else:
            raise InvalidInputError(f"url must be a string, got {type(url).__name__} {url!r:.80}")
    # The mapping form without a "params" key already built a private params dict.
    owned = type(action) is dict and "params" not in action
    return kind, code, x, y, reasoning, (kind, params if owned else dict(params)), frame_hash, url


class LoopDetector:
    """Streaming drift / repeat / state loop detector over a bounded ring of recent samples.

    ``click_tol_px`` is the drift baseline (usually :func:`compute_click_tol_px` of the screen);
    ``history`` bounds the ring and so the largest window that can be asked about; ``adaptive``
    overrides ``MANTIS_ADAPTIVE_CLICK_TOL`` for this detector (None: read the variable once, now).

    Per step, :meth:`record` updates run lengths incrementally, so :meth:`is_repeat_loop` and
    :meth:`is_state_loop` are O(1) and :meth:`is_drift_loop` walks the window (in C, over the
    preallocated :class:`~mantis_fast.loops._loop.DriftRing`) only when its samples already share
    one spatial action type.
    """

    __slots__ = (
        "_adaptive",
        "_change_run",
        "_count",
        "_drift_ring",
        "_hashes",
        "_head",
        "_reasons",
        "_repeat_run",
        "_scrolls",
        "_signatures",
        "_state_run",
        "_tols",
        "_urls",
        "click_tol_px",
        "history",
    )

    def __init__(self, click_tol_px: float = 8, history: int = 32, *, adaptive: bool | None = None):
        _check_click_tol(click_tol_px)
        if isinstance(history, bool) or not isinstance(history, int) or history < 2:
            raise InvalidInputError(f"history must be an int >= 2, got {history!r}")
        if adaptive not in (True, False, None):
            raise InvalidInputError(f"adaptive must be True, False or None, got {adaptive!r}")
        self.click_tol_px = click_tol_px
        self.history = history
        self._adaptive = adaptive_click_tol_enabled() if adaptive is None else bool(adaptive)
        self._drift_ring = DriftRing(history)
        self._tols: list[float | None] = [None] * history
        self._reasons: list[str] = [""] * history
        self._signatures: list[Any] = [None] * history
        self._scrolls: list[bool] = [False] * history
        self._hashes: list[str | None] = [None] * history
        self._urls: list[str] = [""] * history
        self.reset()

    @property
    def adaptive(self) -> bool:
        """Whether keyword multipliers apply (the override, else the environment at creation)."""
        return self._adaptive

    def __len__(self) -> int:
        """Number of samples held (at most ``history``)."""
        return self._count

    def reset(self) -> None:
        """Forget every sample (start of a new episode); the ring keeps its size."""
        self._head = self.history - 1
        self._count = 0
        self._repeat_run = self._change_run = self._state_run = 0
        self._drift_ring.clear()
        for ring in (self._tols, self._signatures, self._hashes):
            ring[:] = [None] * self.history
        self._reasons[:] = [""] * self.history
        self._urls[:] = [""] * self.history

    def _effective_click_tol(self, action: Any) -> float:
        """Drift tolerance for a window whose first sample is ``action``.

        ``max(1, round(click_tol_px * multiplier))`` with the multiplier of the action's reasoning
        text; the raw ``click_tol_px`` when adaptive tolerance is off.
        """
        return effective_click_tol(self.click_tol_px, normalize_action(action)[2], self._adaptive)

    def record(self, action: Any, *, url: str | None = "", frame: Any = None) -> None:
        """Append one step: the action taken, the page URL and the frame (image or hash string).

        ``frame`` is the screen the step belongs to: a precomputed hash string, an image (hashed
        with ``mantis_fast.pixels.frames.frame_hash``), or None when unknown.
        """
        kind, code, x, y, reasoning, signature, frame_hash, url = _sample(action, url, frame)

        history = self.history
        prev = self._head
        head = prev + 1
        if head == history:
            head = 0
        if self._count:
            run = self._repeat_run
            self._repeat_run = (
                (run + 1 if run < history else run) if signature == self._signatures[prev] else 1
            )
            run = self._change_run
            if frame_hash != self._hashes[prev] or url != self._urls[prev]:
                self._change_run = run + 1 if run < history else run
                self._state_run = 0 if frame_hash is None else 1
            else:
                self._change_run = 0
                run = self._state_run
                self._state_run = (
                    (run + 1 if run < history else run) if frame_hash is not None else 0
                )
            if self._count < history:
                self._count += 1
        else:
            self._repeat_run = 1
            self._change_run = 0
            self._state_run = 0 if frame_hash is None else 1
            self._count = 1
        self._head = head
        self._drift_ring.push(code, x, y)
        self._tols[head] = None
        self._reasons[head] = reasoning
        self._signatures[head] = signature
        self._scrolls[head] = "scroll" in kind
        self._hashes[head] = frame_hash
        self._urls[head] = url

    def _check_window(self, window: Any) -> int:
        if type(window) is int and 2 <= window <= self.history:
            return window
        if isinstance(window, bool):
            raise InvalidInputError(f"window must be an int, got {window!r}")
        try:
            window = operator.index(window)
        except TypeError:
            raise InvalidInputError(f"window must be an int, got {window!r:.80}") from None
        if window < 2 or window > self.history:
            raise InvalidInputError(f"window must be in [2, history={self.history}], got {window}")
        return window

    def _drift(self, window: int) -> bool:
        ring = self._drift_ring
        if ring.kind_run < window:
            return False
        first = self._head - window + 1
        if first < 0:
            first += self.history
        tol = self._tols[first]
        if tol is None:
            tol = self._tols[first] = effective_click_tol(
                self.click_tol_px, self._reasons[first], self._adaptive
            )
        return ring.within(window, tol)

    def _repeat(self, window: int) -> bool:
        return self._repeat_run >= window and not (
            self._scrolls[self._head] and self._change_run >= window - 1
        )

    def is_drift_loop(self, window: int) -> bool:
        """The last ``window`` samples are one spatial action type near the first one's point."""
        return self._drift(self._check_window(window))

    def is_repeat_loop(self, window: int) -> bool:
        """The last ``window`` actions are identical (scrolls on a changing screen excepted)."""
        return self._repeat(self._check_window(window))

    def is_state_loop(self, window: int) -> bool:
        """The last ``window`` samples share one frame hash and URL."""
        return self._state_run >= self._check_window(window)

    def is_any_loop(self, window: int) -> bool:
        """Any of the three loop kinds over the last ``window`` samples."""
        window = self._check_window(window)
        return self._state_run >= window or self._repeat(window) or self._drift(window)
