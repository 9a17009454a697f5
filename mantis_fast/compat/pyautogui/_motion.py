"""Pointer motion, as pyautogui's ``_mouseMoveDrag`` moves: at once, or in tweened steps over
a duration, with the fail-safe checked before each step.

A duration of at most ``pyautogui.MINIMUM_DURATION`` is instant; a longer one is cut into
steps at least ``pyautogui.MINIMUM_SLEEP`` apart, placed along the line by ``tween``.
"""

from __future__ import annotations

import math
import numbers

# The public module: MINIMUM_DURATION, MINIMUM_SLEEP and FAILSAFE are set there.
from mantis_fast.compat import pyautogui
from mantis_fast.compat.pyautogui import _failsafe
from mantis_fast.compat.pyautogui._call import Actions
from mantis_fast.compat.pyautogui._errors import PyAutoGUITypeError, PyAutoGUIValueError
from mantis_fast.compat.pyautogui._points import Point

__all__ = ["move_path"]


def _finite_real(value: object) -> bool:
    """Whether a tween's answer is a finite real number (a float, numpy's, a Fraction...)."""
    return isinstance(value, numbers.Real) and math.isfinite(value)


def move_path(
    acts: Actions,
    x: int | None,
    y: int | None,
    x_offset: int,
    y_offset: int,
    duration: float,
    tween: object,
) -> None:
    """pyautogui's ``_mouseMoveDrag``: instant, or tweened steps over ``duration`` seconds."""
    if x is None and y is None and x_offset == 0 and y_offset == 0:
        return
    tweened = duration > pyautogui.MINIMUM_DURATION
    # Where the pointer is: pyautogui asks every time; it matters for an offset and a tween.
    start = acts.pos if x is None or y is None or tweened else Point(x, y)
    x = (start.x if x is None else x) + x_offset
    y = (start.y if y is None else y) + y_offset
    steps: list[tuple[float, float]] = [(x, y)]
    pause = 0.0
    if tweened:
        if not callable(tween):
            raise PyAutoGUITypeError(f"tween must be a function of [0, 1], got {tween!r:.80}")
        width, height = acts.size
        count = max(width, height)
        pause = duration / count
        if pause < pyautogui.MINIMUM_SLEEP:
            count = max(1, int(duration / pyautogui.MINIMUM_SLEEP))
            pause = duration / count
        steps = []
        for i in range(count):
            n = tween(i / count)
            if not _finite_real(n):
                raise PyAutoGUIValueError(f"tween {tween!r:.60} returned {n!r:.60} for {i / count}")
            steps.append(pyautogui.getPointOnLine(start.x, start.y, x, y, n))
        steps.append((x, y))  # the last step is the destination itself
    corners = _failsafe.points() if pyautogui.FAILSAFE else ()
    step = (x, y)
    for sx, sy in steps:
        if len(steps) > 1:
            acts.sleep(pause)
        step = (int(round(sx)), int(round(sy)))  # noqa: RUF046 (numpy floats)
        # Landing on a corner on purpose is no fail-safe trigger; the user's pointer there is.
        if step not in corners:
            acts.check()
        acts.move(*step)
    if step not in corners:
        acts.check()
