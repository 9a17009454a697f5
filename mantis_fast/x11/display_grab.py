"""One display's part of a grab: its pixels, and where they lie when the root clips it.

A RandR monitor is any rectangle ``xrandr --setmonitor`` was given, so it can reach past the
root window: left of or above it (negative offsets), or past its right or bottom edge. Only the
part on the root has pixels. ``DisplayGrab`` says which part that is, in the display's own
(local) coordinates (``clip``) and in root coordinates (``visible``), so a consumer maps
``image[row, col]`` to local pixel ``(clip[0] + col, clip[1] + row)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mantis_fast.geometry.displays import Display
from mantis_fast.pixels.memcopy import owned_copy
from mantis_fast.x11.regions import checked_region

__all__ = [
    "DisplayGrab",
    "local_region",
    "rows_within",
    "slice_display",
    "spanning",
    "visible_part",
]

Region = tuple[int, int, int, int]
Bands = tuple[tuple[int, int], ...]  # (top, rows) row bands of the root


# numpydoc lint does not see the generated constructor: its parameters are the fields.
@dataclass(frozen=True)
class DisplayGrab:  # numpydoc ignore=PR02
    """One display's part of a grab, and where it lies when the root window clips it.

    What ``Capture.grab_displays`` / ``grab_display_clipped`` return for one display; the
    parameters are its (read-only) attributes. ``image[row, col]`` is the display-local pixel
    ``(clip[0] + col, clip[1] + row)``.

    Parameters
    ----------
    display : Display
        The display (RandR monitor) grabbed.
    image : numpy.ndarray
        The pixels: uint8 ``(clip[3], clip[2], 4)`` BGRA, a view into the grab's frame
        unless ``copy=True`` was asked; empty, shape ``(0, 0, 4)``, when ``clip`` is None.
    region : tuple of int
        The rectangle asked for, ``(x, y, width, height)`` in display-local pixels (the whole
        display, ``(0, 0, w, h)``, when none was).
    clip : tuple of int or None
        The part of ``region`` on the root window, also local, or None when none of it is.
    visible : tuple of int or None
        That same part in global (root) pixels.
    changed_rows : list of tuple of int, optional
        Rows of ``image`` that changed since the grab before it, as ``Capture.changed_rows``
        describes them; None (default) without damage tracking.
    """

    display: Display
    image: np.ndarray
    region: Region
    clip: Region | None
    visible: Region | None
    changed_rows: list[tuple[int, int]] | None = None

    @property
    def clipped(self) -> bool:  # numpydoc ignore=RT01
        """Whether part of ``region`` lies off the root (and so is not in ``image``)."""
        return self.clip != self.region


def local_region(display: Display, region: Sequence[int] | None) -> Region:
    """``region=(x, y, width, height)`` in ``display``'s local pixels, checked to lie inside
    it (None: the whole display). ``InvalidInputError`` names the region and the display."""
    width, height = display.size
    if region is None:
        return 0, 0, width, height

    def outside() -> str:
        return (
            f"display {display.id} ({display.name or 'unnamed'}), whose local bounds are "
            f"(0, 0, {width}, {height}) (global {display.bounds})"
        )

    return checked_region(region, width, height, outside)


def visible_part(display: Display, region: Region, root_size: tuple[int, int]) -> Region | None:
    """The part of local ``region`` of ``display`` that lies on a root of ``root_size``, in
    global pixels; None when no pixel of it does."""
    left, top = display.origin
    x0, y0 = max(left + region[0], 0), max(top + region[1], 0)
    x1 = min(left + region[0] + region[2], root_size[0])
    y1 = min(top + region[1] + region[3], root_size[1])
    if x0 >= x1 or y0 >= y1:
        return None
    return x0, y0, x1 - x0, y1 - y0


def rows_within(bands: Sequence[tuple[int, int]], top: int, rows: int) -> list[tuple[int, int]]:
    """Row bands ``(top, rows)`` of the root clipped to rows ``[top, top + rows)``, as
    ``(start, stop)`` ranges relative to ``top`` (empty ones dropped)."""
    clipped = ((max(start, top), min(start + size, top + rows)) for start, size in bands)
    return [(start - top, stop - top) for start, stop in clipped if start < stop]


def spanning(parts: Sequence[Region]) -> Region:
    """The smallest rectangle holding every one of ``parts`` (at least one)."""
    left = min(x for x, _, _, _ in parts)
    top = min(y for _, y, _, _ in parts)
    right = max(x + w for x, _, w, _ in parts)
    bottom = max(y + h for _, y, _, h in parts)
    return left, top, right - left, bottom - top


def slice_display(
    display: Display,
    asked: Region,
    visible: Region | None,
    frame: np.ndarray,
    span: Region,
    bands: Bands | None,
    copy: bool,
) -> DisplayGrab:
    """``display``'s part of ``frame``, a grab of the root rectangle ``span``: ``asked`` is
    the local region wanted, ``visible`` its part on the root (global, inside ``span``) or
    None, ``bands`` the row bands the grab copied (None: unknown)."""
    if visible is None:
        return DisplayGrab(display, np.empty((0, 0, 4), np.uint8), asked, None, None, None)
    x, y, width, height = visible
    image = frame[y - span[1] : y - span[1] + height, x - span[0] : x - span[0] + width]
    left, top = display.origin
    clip = (x - left, y - top, width, height)
    changed = None if bands is None else rows_within(bands, y, height)
    return DisplayGrab(display, owned_copy(image) if copy else image, asked, clip, visible, changed)
