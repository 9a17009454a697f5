"""Adaptive loop windows: widen a loop window while the agent looks productive, narrow it while
it looks stuck (upstream Mantis's ``MANTIS_LOOP_ADAPTIVE``, with its defaults).

A fixed window gets two cases wrong. Pagination (five identical clicks on "Next", the URL moving
each time) reads as a repeat loop though every click made progress; a trap (identical clicks on a
frozen captcha) is caught only at the full window. Over the last ``base`` steps:

* **pattern diversity** = distinct :func:`pattern_signature` values / ``base``, where clicks are
  bucketed on an 8 px grid so micro-drift on one target is one signature;
* **state progressed** = more than one distinct non-empty URL, or more than one distinct frame
  hash, among those steps.

The window grows to ``base + max_extension`` when diversity >= 0.6 or the state progressed,
shrinks by ``max(1, max_extension // 2)`` (not below ``floor``) when diversity <= 0.25 and the
state did not progress, and stays ``base`` otherwise or while fewer than ``base`` steps are known.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

from mantis_fast.loops.toggles import toggle_enabled

__all__ = [
    "ADAPTIVE_LOOP_ENV",
    "DIVERSITY_EXTEND",
    "DIVERSITY_SHRINK",
    "MAX_EXTENSION",
    "SIGNATURE_BUCKET_PX",
    "adapt_window",
    "adaptive_loop_enabled",
    "pattern_signature",
]

ADAPTIVE_LOOP_ENV = "MANTIS_LOOP_ADAPTIVE"
#: How far a window may widen past its base by default (upstream's ``max_extension``): a
#: detector's history must hold ``base + MAX_EXTENSION`` steps.
MAX_EXTENSION = 2
#: Diversity at or above which the window widens, and at or below which (with no state progress)
#: it narrows: upstream's thresholds.
DIVERSITY_EXTEND = 0.6
DIVERSITY_SHRINK = 0.25
#: Grid of the click buckets in :func:`pattern_signature`: upstream's fixed 8 px (not the
#: detector's click tolerance, which its docstring suggests but its code does not use).
SIGNATURE_BUCKET_PX = 8

_BUCKETED_POINTS = frozenset({"click", "double_click", "right_click"})


def adaptive_loop_enabled() -> bool:
    """Whether ``MANTIS_LOOP_ADAPTIVE`` leaves adaptive windows on (the default).

    Off for ``disabled``, ``0``, ``false``, ``off`` or ``no`` (any case, surrounding spaces
    ignored). Read at every call, so a per-request override of the variable applies at once.
    """
    return toggle_enabled(ADAPTIVE_LOOP_ENV)


def _bucket(value: Any) -> int | None:
    """``int(value) // 8`` for a finite real number (bools included, as upstream), else None."""
    if type(value) is int:
        return value // SIGNATURE_BUCKET_PX
    if type(value) is not float and not isinstance(value, Real):
        return None
    try:
        # numpy scalars lack __trunc__; typeshed gives Real no __int__, which every Real has
        return int(value) // SIGNATURE_BUCKET_PX  # type: ignore[arg-type]
    except (OverflowError, ValueError):  # inf, nan
        return None


def _param(params: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        value = params.get(name)
        if value:
            return value
    return None


def pattern_signature(kind: str, params: Mapping[str, Any]) -> tuple:
    """What makes two actions "the same pattern" when measuring pattern diversity.

    ``kind`` is the canonical type name (``normalize_action``'s first item). Clicks (also double
    and right clicks) by their point on an 8 px grid, drags by their end point on that grid, key
    presses by their lower-cased combination, typing by its first 32 characters, scrolls by their
    direction (``"down"`` when absent); every other action by its type alone.
    """
    if kind in _BUCKETED_POINTS:
        bx, by = _bucket(params.get("x")), _bucket(params.get("y"))
        return (kind,) if bx is None or by is None else (kind, bx, by)
    if kind == "drag":
        ends = []
        for names in (("end_x", "x2"), ("end_y", "y2")):
            bucket = _bucket(_param(params, *names) or 0)
            ends.append(0 if bucket is None else bucket)
        return (kind, *ends)
    if kind == "key":
        keys = _param(params, "keys", "key", "text")
        if isinstance(keys, (list, tuple)):
            keys = "+".join(map(str, keys))
        return (kind, str(keys or "").lower())
    if kind == "type":
        return (kind, str(_param(params, "text", "content") or "")[:32])
    if kind == "scroll":
        return (kind, str(params.get("direction") or "down"))
    return (kind,)


def adapt_window(
    base: int, count: int, diversity: float, progressed: bool, max_extension: int, floor: int
) -> int:
    """The adaptive window for ``base`` given ``count`` known steps and the two signals (checked
    arguments; see the module docstring)."""
    if base <= floor or count < base:
        return base
    if diversity >= DIVERSITY_EXTEND or progressed:
        return base + max_extension
    if diversity <= DIVERSITY_SHRINK:
        return max(floor, base - max(1, max_extension // 2))
    return base
