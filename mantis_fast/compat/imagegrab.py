"""A ``PIL.ImageGrab.grab`` look-alike on mantis_fast's MIT-SHM capture.

``grab(bbox=None, xdisplay=None)`` returns the same RGB ``PIL.Image`` as Pillow's, without a new
X connection per call: one ``Capture`` per (thread, display) is kept open and reused.
"""

from __future__ import annotations

import atexit
import threading

from PIL import Image

from mantis_fast.errors import InvalidInputError
from mantis_fast.x11.capture import Capture

__all__ = ["grab"]

_local = threading.local()
_all_captures: list[Capture] = []
_all_lock = threading.Lock()


def _capture_for(xdisplay: str | None) -> Capture:
    captures: dict[str | None, Capture] = _local.__dict__.setdefault("captures", {})
    capture = captures.get(xdisplay)
    if capture is None:
        capture = captures[xdisplay] = Capture(xdisplay)
        with _all_lock:
            _all_captures.append(capture)
    return capture


def grab(
    bbox: tuple[int, int, int, int] | None = None,
    include_layered_windows: bool = False,
    all_screens: bool = False,
    xdisplay: str | None = None,
) -> Image.Image:
    """Grab the screen, or ``bbox=(left, top, right, bottom)`` of it, as an RGB PIL image.

    ``include_layered_windows`` and ``all_screens`` are Windows options, accepted and ignored as
    Pillow does on X11 (the X11 grab always covers the whole root window).
    """
    region = None
    if bbox is not None:
        try:
            left, top, right, bottom = bbox
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"bbox must be (left, top, right, bottom), got {bbox!r}"
            ) from None
        region = (left, top, right - left, bottom - top)
    frame = _capture_for(xdisplay).grab(region)
    height, width = frame.shape[:2]
    # Pillow's own unpacker converts BGRX -> RGB into a new image: the capture view is not kept.
    return Image.frombuffer("RGB", (width, height), frame, "raw", "BGRX", frame.strides[0], 1)


@atexit.register
def _close_all() -> None:
    with _all_lock:
        for capture in _all_captures:
            capture.close()
        _all_captures.clear()
