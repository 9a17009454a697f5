"""One display's capture as PNG bytes: the seed contract's ``DisplayCapture``.

``Capture.capture_display``, ``capture_all_displays`` and ``capture_display_region`` are the
one-call forms of the per-display grabs (``grab_display_clipped``, ``grab_displays``): the
same pixels, encoded by ``mantis_fast.pixels.encode.encode_png`` into an RGB PNG at the
capture's own (backing-store) resolution, which on X11 is the display's size in root pixels.
The arrays stay the core; this module only wraps a ``DisplayGrab`` and encodes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mantis_fast.errors import CaptureError
from mantis_fast.geometry.displays import Display
from mantis_fast.pixels.encode import encode_png
from mantis_fast.x11.display_grab import DisplayGrab

__all__ = ["DisplayCapture", "encode_display", "encode_displays"]

Region = tuple[int, int, int, int]


@dataclass(frozen=True)
class DisplayCapture:
    """What ``Capture.capture_display`` / ``capture_all_displays`` / ``capture_display_region``
    return for one display (the seed's ``{ display, frame }``).

    ``frame``: PNG bytes, 8-bit RGB, of the display (or of the local region asked for), one
    image pixel per root pixel. ``region``: the rectangle asked for, in display-local pixels
    (``(0, 0, w, h)`` for the whole display). ``clip``: the part of it in ``frame``, also local:
    ``region`` itself unless the display reaches past the root window, whose pixels only exist
    on it; ``visible``: that part in global (root) pixels. PNG pixel ``(col, row)`` is local
    pixel ``(clip[0] + col, clip[1] + row)``.
    """

    display: Display
    frame: bytes
    region: Region
    clip: Region
    visible: Region

    @property
    def clipped(self) -> bool:
        """Whether part of ``region`` lies off the root (and so is not in ``frame``)."""
        return self.clip != self.region

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of ``frame``, in pixels."""
        return self.clip[2], self.clip[3]


def encode_display(grab: DisplayGrab) -> DisplayCapture:
    """``grab`` (an owned copy: encoding runs outside the capture's lock) as a
    ``DisplayCapture``. ``CaptureError`` when no pixel of it is on the root."""
    if grab.clip is None or grab.visible is None:
        display = grab.display
        raise CaptureError(
            f"display {display.id} ({display.name or 'unnamed'}) at {display.bounds} is "
            "entirely off the root window: it has no pixels to encode"
        )
    frame = encode_png(grab.image, src_format="BGRX")
    return DisplayCapture(grab.display, frame, grab.region, grab.clip, grab.visible)


def encode_displays(grabs: Iterable[DisplayGrab]) -> list[DisplayCapture]:
    """Every grab encoded, in their order; ``CaptureError`` naming the first display wholly
    off the root, before anything is encoded."""
    grabs = list(grabs)
    for grab in grabs:
        if grab.clip is None:
            encode_display(grab)  # raises, naming it
    return [encode_display(grab) for grab in grabs]
