"""Points: the ``Point``/``Size`` tuples pyautogui returns, and the forms a point is given in.

pyautogui's ``_normalizeXYArgs`` takes ``(x, y)``, ``((x, y),)``, ``((left, top, width,
height),)`` for the box's center, ``('image.png',)`` for the center of that image on the screen,
and None for a coordinate of the pointer.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

# The public module: what pyautogui resolves there at call time is looked up there.
from mantis_fast.compat import pyautogui
from mantis_fast.compat.pyautogui import _args
from mantis_fast.compat.pyautogui._errors import PyAutoGUITypeError, PyAutoGUIValueError

if TYPE_CHECKING:
    from mantis_fast.compat.pyautogui._call import Actions

__all__ = ["Point", "Size", "point_args", "xy"]

# Named as pyautogui's own (``pyautogui.Point``), whose public module they belong to.
Point = collections.namedtuple("Point", "x y", module=__package__)
Size = collections.namedtuple("Size", "width height", module=__package__)


def point_args(first: object, second: object, here: Callable[[], Point]) -> Point | None:
    """pyautogui's ``_normalizeXYArgs``: ``here()`` supplies a missing coordinate."""
    if first is None and second is None:
        return here()
    if first is None:
        return Point(here().x, _args.integer(second, "y"))
    if isinstance(first, str):  # an image file to find on the screen
        location = pyautogui.locateOnScreen(first)
        return None if location is None else Point(*pyautogui.center(location))
    if isinstance(first, Sequence):
        if second is not None:
            raise PyAutoGUIValueError(
                "When passing a sequence for firstArg, secondArg must not be passed "
                f"(received {second!r:.80})."
            )
        if len(first) == 2:
            return Point(_args.integer(first[0], "x"), _args.integer(first[1], "y"))
        if len(first) == 4:
            box = [_args.integer(v, "box") for v in first]
            return Point(*pyautogui.center(box))
        raise PyAutoGUIValueError(
            "The supplied sequence must have exactly 2 or exactly 4 elements "
            f"({len(first)} were received: {first!r:.80})."
        )
    if second is None:
        return Point(_args.integer(first, "x"), here().y)
    return Point(_args.integer(first, "x"), _args.integer(second, "y"))


def xy(acts: Actions, x: object, y: object) -> Point:
    """The point a call's ``x``, ``y`` arguments name (a None coordinate is the pointer's)."""
    point = point_args(x, y, lambda: acts.pos)
    if point is None:  # pyautogui fails to unpack None here: a TypeError
        raise PyAutoGUITypeError(f"image {x!r} was not found on the screen")
    return point
