"""One display's capture as PNG bytes: the seed contract's ``DisplayCapture``.

``Capture.capture_display``, ``capture_all_displays`` and ``capture_display_region`` (defined
here, in ``DisplayPngForms``, which ``Capture`` inherits) are the one-call forms of the
per-display grabs (``grab_display_clipped``, ``grab_displays``): the same pixels, encoded by
``mantis_fast.pixels.encode.encode_png`` into an RGB PNG at the capture's own (backing-store)
resolution, which on X11 is the display's size in root pixels. The arrays stay the core; this
module only wraps a ``DisplayGrab`` and encodes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from mantis_fast.errors import CaptureError, InvalidInputError
from mantis_fast.geometry.displays import Display
from mantis_fast.pixels.encode import encode_png
from mantis_fast.x11.display_grab import DisplayGrab

__all__ = ["DisplayCapture", "DisplayPngForms", "encode_display", "encode_displays"]

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


class _DisplayGrabs(Protocol):
    """What ``DisplayPngForms`` uses of the ``Capture`` it is mixed into."""

    def grab_displays(self, copy: bool = False) -> dict[int, DisplayGrab]: ...

    def _grab_display(
        self, display_id: int | None, region: Sequence[int] | None, copy: bool
    ) -> DisplayGrab: ...


class DisplayPngForms:
    """``Capture``'s per-display grabs as PNG bytes (seed 003's ``captureDisplay``,
    ``captureAllDisplays`` and ``captureDisplayRegion``).

    A mixin of ``Capture``: each method takes an owned grab under the capture's lock and
    encodes it outside the lock.
    """

    def capture_display(self: _DisplayGrabs, display_id: int | None = None) -> DisplayCapture:
        """Capture one monitor as RGB PNG bytes.

        ``grab_display_clipped(display_id)``, encoded (``encode_display``): clipped to the root
        as the grab is, with the same errors and the same primary fallback for an omitted id.

        Parameters
        ----------
        display_id : int, optional
            The monitor's id. None (default) is the primary display, as in ``grab_display``.

        Returns
        -------
        DisplayCapture
            The display and its pixels as PNG bytes (``frame``).

        Raises
        ------
        InvalidInputError
            If ``display_id`` is unknown.
        CaptureError
            If no pixel of the display is on the root window, or the capture is closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        return encode_display(self._grab_display(display_id, None, True))

    def capture_all_displays(self: _DisplayGrabs) -> list[DisplayCapture]:
        """Capture every monitor as RGB PNG bytes, from one grab (``grab_displays``).

        Returns
        -------
        list of DisplayCapture
            One per monitor, in the order of ``monitors``.

        Raises
        ------
        CaptureError
            If a monitor is wholly off the root window, or the capture is closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        return encode_displays(self.grab_displays(copy=True).values())

    def capture_display_region(
        self: _DisplayGrabs, display_id: int | None, region: Sequence[int]
    ) -> DisplayCapture:
        """Capture a region of one monitor as RGB PNG bytes.

        ``capture_display`` of a region local to the display.

        Parameters
        ----------
        display_id : int or None
            The monitor's id. None is the primary display, as in ``grab_display``.
        region : sequence of int
            ``(x, y, width, height)`` local to the display.

        Returns
        -------
        DisplayCapture
            The display and the region's pixels as PNG bytes (``frame``).

        Raises
        ------
        InvalidInputError
            If ``region`` is None, malformed or outside the display (the message names both),
            or ``display_id`` is unknown.
        CaptureError
            If no pixel of the region is on the root window, or the capture is closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        if region is None:  # grab_display's None (the whole display) is capture_display here
            raise InvalidInputError("capture_display_region needs a region (x, y, width, height)")
        return encode_display(self._grab_display(display_id, region, True))
