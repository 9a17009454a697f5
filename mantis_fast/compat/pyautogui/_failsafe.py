"""The fail-safe: a call raises ``FailSafeException`` when it starts (or steps) with the pointer
in a corner of the screen, while ``pyautogui.FAILSAFE`` is on.

The corners (``FAILSAFE_POINTS``) are computed on first use, as pyautogui computes them at
import (this needs the display), and kept on the public module, where users may replace them.
"""

from __future__ import annotations

# The public module: FAILSAFE_POINTS is kept there.
from mantis_fast.compat import pyautogui
from mantis_fast.compat.pyautogui import _xtest

__all__ = ["MESSAGE", "points"]

MESSAGE = (
    "PyAutoGUI fail-safe triggered from mouse moving to a corner of the screen. To disable this "
    "fail-safe, set pyautogui.FAILSAFE to False. DISABLING FAIL-SAFE IS NOT RECOMMENDED."
)


def points() -> list[tuple[int, int]]:
    """``pyautogui.FAILSAFE_POINTS``: the four corners of the screen unless the user set them."""
    corners = vars(pyautogui).get("FAILSAFE_POINTS")
    if corners is None:
        width, height = _xtest.with_session(lambda session: session.screen_size())
        corners = [(0, 0), (0, height - 1), (width - 1, 0), (width - 1, height - 1)]
        pyautogui.FAILSAFE_POINTS = corners
    return corners
