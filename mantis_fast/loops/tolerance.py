"""The adaptive click tolerance: how far apart two clicks may land and still count as "the same
spot" for drift loops.

:func:`compute_click_tol_px` scales a floor with the viewport diagonal,
``max(floor, round(0.004 * hypot(w, h)))``; the reasoning text of a window's first sample widens or
tightens it through :data:`CLICK_TOL_KEYWORDS` (effective tolerance ``max(1, round(tol * mult))``).
``MANTIS_ADAPTIVE_CLICK_TOL`` set to one of ``disabled, 0, false, off, no`` switches both off.
"""

from __future__ import annotations

import math
import operator
import os
from numbers import Real
from typing import Any

from mantis_fast.errors import InvalidInputError

__all__ = [
    "ADAPTIVE_CLICK_TOL_ENV",
    "CLICK_TOL_KEYWORDS",
    "adaptive_click_tol_enabled",
    "check_click_tol",
    "click_tol_multiplier",
    "compute_click_tol_px",
    "effective_click_tol",
]

ADAPTIVE_CLICK_TOL_ENV = "MANTIS_ADAPTIVE_CLICK_TOL"
_DISABLED_VALUES = frozenset({"disabled", "0", "false", "off", "no"})

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


def check_click_tol(click_tol_px: Any) -> None:
    ok = isinstance(click_tol_px, Real) and not isinstance(click_tol_px, bool)
    try:
        ok = ok and math.isfinite(click_tol_px) and click_tol_px >= 0
    except OverflowError:  # an int too large for a float
        ok = False
    if not ok:
        raise InvalidInputError(
            f"click_tol_px must be a finite number >= 0, got {click_tol_px!r:.80}"
        )
