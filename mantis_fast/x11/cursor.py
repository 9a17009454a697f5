"""The pointer's image, from the XFixes extension.

X draws the cursor as a hardware or software sprite outside the window contents, so no
``GetImage`` (ours or anyone's) contains it. XFixes ``GetCursorImage`` (version 2 and later)
returns the current cursor as ARGB pixels with premultiplied alpha, its hotspot and position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CursorImage", "XFixesUnavailable", "draw_cursor", "read_cursor", "xfixes_version"]

EXTENSION_NAME = "XFIXES"
# GetCursorImage arrived in XFixes 2.0; the server refuses requests newer than the version the
# client announced, so we announce the one we speak.
_NEEDED = (2, 0)


class XFixesUnavailable(Exception):
    """The server has no usable XFixes (the reason is the message)."""


@dataclass(frozen=True)
class CursorImage:
    """The cursor as the server would draw it now."""

    x: int  # the pointer (hotspot) position on the screen
    y: int
    hot_x: int  # the hotspot within the image
    hot_y: int
    serial: int  # changes whenever the cursor image changes
    pixels: np.ndarray  # (height, width, 4) uint8 BGRA, premultiplied alpha

    @property
    def left(self) -> int:
        return self.x - self.hot_x

    @property
    def top(self) -> int:
        return self.y - self.hot_y


def xfixes_version(xdisplay) -> tuple[int, int]:
    """Announce our XFixes version and return the server's; ``XFixesUnavailable`` if too old."""
    if not xdisplay.has_extension(EXTENSION_NAME):
        raise XFixesUnavailable("the server has no XFixes extension")
    reply = xdisplay.xfixes_query_version()
    version = (reply.major_version, reply.minor_version)
    if version < _NEEDED:
        raise XFixesUnavailable(f"XFixes {version[0]}.{version[1]} is older than 2.0")
    return version


def read_cursor(xdisplay, root) -> CursorImage:
    """One ``GetCursorImage`` round trip (call ``xfixes_version`` once per connection first)."""
    reply = xdisplay.xfixes_get_cursor_image(root)
    argb = np.asarray(reply.cursor_image, dtype="<u4")
    pixels = argb.view(np.uint8).reshape(reply.height, reply.width, 4)
    return CursorImage(reply.x, reply.y, reply.xhot, reply.yhot, reply.cursor_serial, pixels)


OPAQUE = 255


def draw_cursor(frame: np.ndarray, sprite: np.ndarray, left: int, top: int) -> None:
    """Blend a cursor ``sprite`` (BGRA) into a BGRA/BGRX ``frame`` in place, its top-left
    pixel at ``(left, top)`` of the frame, as scrot ``-p`` and mss draw the pointer.

    Opaque cursor pixels replace the screen's; translucent ones mix as
    ``int(c * a + s * (1 - a))`` with ``a = alpha / 255``; the part off the frame is left out.
    """
    x0, y0 = max(left, 0), max(top, 0)
    x1 = min(left + sprite.shape[1], frame.shape[1])
    y1 = min(top + sprite.shape[0], frame.shape[0])
    if x0 >= x1 or y0 >= y1:
        return
    under = frame[y0:y1, x0:x1, :3]
    over = sprite[y0 - top : y1 - top, x0 - left : x1 - left]
    alpha = over[:, :, 3:4]
    opaque = alpha == OPAQUE
    partial = (alpha > 0) & ~opaque
    if partial.any():
        a = alpha.astype(np.float64) / OPAQUE
        mixed = (over[:, :, :3] * a + under * (1 - a)).astype(np.uint8)
        np.copyto(under, mixed, where=partial)
    np.copyto(under, over[:, :, :3], where=opaque)
