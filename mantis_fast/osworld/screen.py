"""The screen as OSWorld's server shows it: a PNG with the pointer pasted in its way.

The original takes ``pyautogui.screenshot()`` (a ``scrot`` PNG read back), reads the cursor
through ``pyxcursor`` (XFixes ``GetCursorImage``) and pastes it with Pillow at the pointer's
position, not at position minus hotspot, with the image's bytes taken as RGBA although XFixes
gives them as BGRA (the red and blue of a coloured cursor trade places; the default black and
white ones look right). ``paste_cursor`` reproduces that paste exactly, so an agent sees the
screenshots it was trained on; the frame comes from the framebuffer (``Capture``) and is
PNG-encoded in process.
"""

from __future__ import annotations

import threading

import numpy as np

from mantis_fast._closing import Closing
from mantis_fast.pixels.encode import PngEncoder
from mantis_fast.pixels.memcopy import owned_copy
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.windows import Windows

__all__ = ["OSWorldScreen", "paste_cursor"]


def paste_cursor(frame: np.ndarray, sprite: np.ndarray, x: int, y: int) -> None:
    """Paste an XFixes cursor ``sprite`` (BGRA bytes) into a BGRX ``frame`` in place, its
    top-left pixel at ``(x, y)``, as the original's ``Image.paste(cursor, (x, y), cursor)``:
    the sprite's bytes read as RGBA, blended by its alpha with Pillow's rounding
    (``(dst * (255 - a) + src * a) / 255``, rounded half up), the part off the frame left out.
    """
    x0, y0 = max(x, 0), max(y, 0)
    x1 = min(x + sprite.shape[1], frame.shape[1])
    y1 = min(y + sprite.shape[0], frame.shape[0])
    if x0 >= x1 or y0 >= y1:
        return
    over = sprite[y0 - y : y1 - y, x0 - x : x1 - x].astype(np.uint32)
    alpha = over[:, :, 3:4]
    # Byte 0 (XFixes' blue) lands in the image's red, byte 2 in its blue: BGRX channel
    # 0 (blue) takes sprite byte 2, channel 2 (red) takes byte 0.
    source = over[:, :, 2::-1]
    under = frame[y0:y1, x0:x1, :3]
    mixed = under.astype(np.uint32) * (255 - alpha) + source * alpha + 128
    under[...] = ((mixed >> 8) + mixed) >> 8


class OSWorldScreen(Closing):
    """One display's capture, pointer and windows, for the server's routes (thread-safe)."""

    def __init__(self, display: str, *, timeout: float = 5.0) -> None:
        self.display = display
        self._lock = threading.Lock()
        self.capture = Capture(display, timeout=timeout)
        try:
            self.windows = Windows(display, timeout=timeout)
        except BaseException:
            self.capture.close()
            raise
        self._encoder = PngEncoder()

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` of the screen now."""
        with self._lock:
            return self.capture.size

    def pointer(self) -> tuple[int, int]:
        """Where the pointer is (XFixes, one round trip)."""
        with self._lock:
            cursor = self.capture.cursor()
        return cursor.x, cursor.y

    def screenshot(self) -> bytes:
        """The screen with the cursor pasted as the original pastes it, as an RGB PNG."""
        with self._lock:
            frame = owned_copy(self.capture.grab())
            cursor = self.capture.cursor()
            paste_cursor(frame, cursor.pixels, cursor.x, cursor.y)
            return self._encoder.encode(frame, src_format="BGRX")

    def window_size(self, class_name: str) -> tuple[int, int] | None:
        """The size of the first window whose ``WM_CLASS`` names ``class_name``, else None."""
        with self._lock:
            return self.windows.size_of_class(class_name)

    def window_titles(self) -> list[str]:
        """The titles of the client windows."""
        with self._lock:
            return self.windows.titles()

    def close(self) -> None:
        with self._lock:
            self.windows.close()
            self.capture.close()
