"""The adaptive click tolerance: how far apart two clicks may land and still count as "the same
spot" for drift loops.

:func:`compute_click_tol_px` scales a floor with the viewport diagonal,
``max(floor, round(0.004 * hypot(w, h)))``; the reasoning text of a window's first sample widens or
tightens it through :data:`CLICK_TOL_KEYWORDS` (effective tolerance ``max(1, round(tol * mult))``
when a keyword is found, ``tol`` itself otherwise). ``MANTIS_ADAPTIVE_CLICK_TOL`` set to one of
``disabled, 0, false, off, no`` switches both off; it is read whenever a tolerance is computed.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np

from mantis_fast._validate import MAX_SIDE, as_index
from mantis_fast._validate import shown as _shown
from mantis_fast.errors import InvalidInputError
from mantis_fast.loops.toggles import toggle_enabled

__all__ = [
    "ADAPTIVE_CLICK_TOL_ENV",
    "CLICK_TOL_KEYWORDS",
    "MAX_CLICK_TOL_PX",
    "adaptive_click_tol_enabled",
    "check_click_tol",
    "click_tol_multiplier",
    "compute_click_tol_px",
    "effective_click_tol",
]

ADAPTIVE_CLICK_TOL_ENV = "MANTIS_ADAPTIVE_CLICK_TOL"
#: The largest click tolerance (and ``floor``) taken, in pixels: the package's largest screen
#: side (sizes are 1..2**31-1), so every larger tolerance would mean the same ("anywhere on the
#: screen") while ``round(tol * multiplier)`` could overflow float64.
MAX_CLICK_TOL_PX = 2**31 - 1
#: Viewport sides beyond this are not a usable viewport (``compute_click_tol_px`` gives the floor).
MAX_VIEWPORT_SIDE = MAX_SIDE

#: Keyword (substring of the lower-cased reasoning text) -> tolerance multiplier, in priority
#: order: the first keyword found wins, multi-word phrases before their substrings.
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


def adaptive_click_tol_enabled() -> bool:
    """Whether ``MANTIS_ADAPTIVE_CLICK_TOL`` leaves adaptive tolerance on (the default); off for
    ``disabled``, ``0``, ``false``, ``off`` or ``no``. Read at every call."""
    return toggle_enabled(ADAPTIVE_CLICK_TOL_ENV)


def _check_floor(floor: Any) -> int:
    value = as_index(floor)
    if value is None or not 0 <= value <= MAX_CLICK_TOL_PX:
        raise InvalidInputError(
            f"floor must be an int in 0..{MAX_CLICK_TOL_PX}, got {_shown(floor)}"
        )
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
        if not math.isfinite(side) or not 0 < side <= MAX_VIEWPORT_SIDE:
            return None
        sides.append(side)
    return sides[0], sides[1]


def compute_click_tol_px(viewport: Any, *, floor: int = 8, adaptive: bool | None = None) -> int:
    """Drift tolerance baseline for a viewport: ``max(floor, round(0.004 * hypot(w, h)))``.

    Parameters
    ----------
    viewport : tuple or object
        ``(width, height)``, or any object with ``.width`` and ``.height``.
    floor : int, default 8
        The smallest tolerance, an int in ``0..MAX_CLICK_TOL_PX``.
    adaptive : bool, optional
        The per-request override of ``MANTIS_ADAPTIVE_CLICK_TOL``: True scales, False returns
        ``floor``; None (the default) lets the variable decide.

    Returns
    -------
    int
        The tolerance in pixels. An invalid viewport (wrong shape, non-numeric, non-finite or
        non-positive sides, or sides beyond ``2**31 - 1``) gives ``floor``, and so does
        ``MANTIS_ADAPTIVE_CLICK_TOL`` set to ``disabled``/``0``/``false``/``off``/``no``.

    Raises
    ------
    InvalidInputError
        A bad ``floor`` (not an int in ``0..MAX_CLICK_TOL_PX``: the caller's bug), or an
        ``adaptive`` that is not True, False or None.

    Examples
    --------
    >>> compute_click_tol_px((1920, 1080), adaptive=True)
    9
    >>> compute_click_tol_px((1920, 1080), adaptive=False)
    8
    """
    floor = _check_floor(floor)
    if adaptive is not None and type(adaptive) is not bool:  # 1 == True: not membership
        raise InvalidInputError(f"adaptive must be True, False or None, got {adaptive!r:.40}")
    if not (adaptive_click_tol_enabled() if adaptive is None else adaptive):
        return floor
    size = _viewport_size(viewport)
    if size is None:
        return floor
    scaled = 0.004 * math.hypot(*size)
    return max(floor, round(scaled)) if math.isfinite(scaled) else floor


def click_tol_multiplier(reasoning: str | None) -> float:
    """The multiplier of the first :data:`CLICK_TOL_KEYWORDS` entry found in ``reasoning``."""
    multiplier = _keyword_multiplier(reasoning)
    return 1.0 if multiplier is None else multiplier


def _keyword_multiplier(reasoning: str | None) -> float | None:
    """The first keyword's multiplier, None when ``reasoning`` names no keyword."""
    if not reasoning:
        return None
    if not isinstance(reasoning, str):
        raise InvalidInputError(
            f"reasoning must be a string or None, got {type(reasoning).__name__}"
        )
    text = reasoning.lower()
    for keyword, multiplier in CLICK_TOL_KEYWORDS:
        if keyword in text:
            return multiplier
    return None


def effective_click_tol(click_tol_px: float, reasoning: str | None, adaptive: bool) -> float:
    """``max(1, round(click_tol_px * multiplier))`` when adaptive and ``reasoning`` names a
    :data:`CLICK_TOL_KEYWORDS` keyword, else ``click_tol_px`` as is.

    ``click_tol_px`` is checked as ``LoopDetector`` checks it (finite, ``0..MAX_CLICK_TOL_PX``),
    ``reasoning`` must be a string or None and ``adaptive`` a bool.
    """
    check_click_tol(click_tol_px)
    if reasoning is not None and not isinstance(reasoning, str):
        raise InvalidInputError(
            f"reasoning must be a string or None, got {type(reasoning).__name__}"
        )
    if not isinstance(adaptive, (bool, np.bool_)):
        raise InvalidInputError(f"adaptive must be True or False, got {_shown(adaptive)}")
    return _scaled_click_tol(click_tol_px, reasoning, bool(adaptive))


def _scaled_click_tol(click_tol_px: float, reasoning: str | None, adaptive: bool) -> float:
    """``effective_click_tol`` without the checks, for the detectors' inner loops (their
    ``click_tol_px`` was checked once, when they were built)."""
    if not adaptive or not reasoning:
        return click_tol_px
    text = reasoning.lower()  # _keyword_multiplier inlined: once per drift window
    for keyword, multiplier in CLICK_TOL_KEYWORDS:
        if keyword in text:
            return max(1, round(click_tol_px * multiplier))
    # No keyword: the baseline untouched (not rounded, nor raised to 1), as upstream.
    return click_tol_px


def check_click_tol(click_tol_px: Any) -> None:
    """Raise ``InvalidInputError`` unless ``click_tol_px`` is a finite number in
    ``0..MAX_CLICK_TOL_PX`` (bools refused)."""
    ok = isinstance(click_tol_px, Real) and not isinstance(click_tol_px, bool)
    try:
        ok = ok and math.isfinite(click_tol_px) and 0 <= click_tol_px <= MAX_CLICK_TOL_PX
    except OverflowError:  # an int (or Fraction) too large for a float
        ok = False
    if not ok:
        raise InvalidInputError(
            f"click_tol_px must be a finite number in 0..{MAX_CLICK_TOL_PX}, "
            f"got {_shown(click_tol_px)}"
        )
