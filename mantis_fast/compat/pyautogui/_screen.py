"""pyscreeze's screen functions on mantis_fast's capture: ``screenshot``, ``pixel``, ``center``.

pyautogui re-exports these from pyscreeze, which on Linux saves the whole screen to a PNG with
``scrot`` (or grabs it with Pillow's ``ImageGrab`` when ``gnome-screenshot`` is installed) and
crops it. Here they read only the pixels asked for, through the ``PIL.ImageGrab`` drop-in
(MIT-SHM, on a pooled connection: ``mantis_fast.compat.imagegrab``), which crops exactly as
Pillow does. The ``PIL.ImageGrab`` drop-in is imported by the first grab, not with pyautogui.
"""

from __future__ import annotations

import collections
import numbers
import os
from collections.abc import Sequence

from PIL import Image

from mantis_fast.compat.pyautogui._errors import (
    PixelOutOfRangeError,
    PyAutoGUITypeError,
    PyAutoGUIValueError,
)
from mantis_fast.compat.pyautogui._xtest import display_name, with_session

__all__ = ["RGB", "Point", "center", "pixel", "pixel_matches_color", "screenshot"]

RGB = collections.namedtuple("RGB", "red green blue")
Point = collections.namedtuple("Point", "x y")


def _region(region: object) -> tuple[int, int, int, int]:
    if isinstance(region, (str, bytes)) or not isinstance(region, Sequence) or len(region) != 4:
        raise PyAutoGUITypeError(f"region must be (left, top, width, height), got {region!r:.80}")
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in region):
        raise PyAutoGUITypeError(f"region must be four ints, got {region!r:.80}")
    left, top, width, height = (int(v) for v in region)
    if width <= 0 or height <= 0:
        raise PyAutoGUIValueError(f"region {region!r} has a non-positive width or height")
    return left, top, width, height


def _grab(bbox: tuple[int, int, int, int] | None) -> Image.Image:
    """``PIL.ImageGrab.grab(bbox)`` of ``$DISPLAY``, through the drop-in."""
    from mantis_fast.compat import imagegrab  # here, not at import: it costs ~2 ms to load

    return imagegrab.grab(bbox=bbox, xdisplay=display_name())


def screenshot(
    imageFilename: str | os.PathLike | None = None,
    region: Sequence[int] | None = None,
    allScreens: bool = False,
) -> Image.Image:
    """The screen, or ``region=(left, top, width, height)`` of it, as an RGB PIL image.

    A region reaching past the screen is padded with black, as pyscreeze's crop does. With
    ``imageFilename`` the image returned is also saved there. ``allScreens`` is a Windows
    option, accepted and ignored (the X root window covers every monitor).
    """
    box = None
    if region is not None:
        left, top, width, height = _region(region)
        box = (left, top, left + width, top + height)
    image = _grab(box)
    if imageFilename is not None:
        image.save(imageFilename)
    return image


def pixel(x: int, y: int) -> RGB:
    """The RGB color of the screen pixel at (x, y) (negative values count from the far edge,
    as PIL's ``getpixel`` does)."""
    if isinstance(x, Sequence) and not isinstance(x, str) and len(x) == 2:
        raise PyAutoGUITypeError(
            "pixel() no longer accepts a tuple of (x, y) values for the first argument. "
            f"Pass them as two separate arguments instead: pixel(x, y), got {x!r}"
        )
    for value, name in ((x, "x"), (y, "y")):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise PyAutoGUITypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    width, height = with_session(lambda session: session.screen_size())
    px = int(x) + width if x < 0 else int(x)
    py = int(y) + height if y < 0 else int(y)
    if not (0 <= px < width and 0 <= py < height):
        raise PixelOutOfRangeError(
            f"pixel ({x}, {y}) is outside the {width}x{height} screen (image index out of range)"
        )
    # One RGB pixel: its three bytes (getpixel's answer is typed for every image mode).
    r, g, b = _grab((px, py, px + 1, py + 1)).tobytes()
    return RGB(r, g, b)


def pixel_matches_color(
    x: int, y: int, expectedRGBColor: Sequence[int], tolerance: int = 0
) -> bool:
    """Whether the pixel at (x, y) is ``expectedRGBColor`` within ``tolerance`` per channel."""
    if isinstance(x, Sequence) and not isinstance(x, str) and len(x) == 2:
        raise PyAutoGUITypeError(
            "pixelMatchesColor() no longer accepts a tuple of (x, y) values for the first "
            "argument. Pass them as two separate arguments instead: pixelMatchesColor(x, y, rgb)"
            f", got {x!r}"
        )
    if (
        isinstance(expectedRGBColor, str)
        or not isinstance(expectedRGBColor, Sequence)
        or len(expectedRGBColor) not in (3, 4)
        or not all(isinstance(v, numbers.Real) for v in expectedRGBColor)
    ):
        raise PyAutoGUIValueError(
            f"expectedRGBColor must be an (r, g, b) tuple, got {expectedRGBColor!r:.80}"
        )
    actual = pixel(x, y)
    return all(abs(a - e) <= tolerance for a, e in zip(actual, expectedRGBColor[:3], strict=False))


def center(coords: Sequence[float]) -> Point:
    """The center of a ``(left, top, width, height)`` box, as pyscreeze computes it."""
    if isinstance(coords, str) or not isinstance(coords, Sequence) or len(coords) != 4:
        raise PyAutoGUITypeError(f"coords must be (left, top, width, height), got {coords!r:.80}")
    return Point(coords[0] + int(coords[2] / 2), coords[1] + int(coords[3] / 2))
