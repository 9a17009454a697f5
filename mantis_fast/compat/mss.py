"""An ``mss.MSS`` look-alike on mantis_fast's MIT-SHM capture.

Replace ``from mss import MSS`` (or ``mss.mss()``) with ``from mantis_fast.compat.mss import MSS``:
``monitors`` (index 0 = the bounding box of all monitors, 1.. = each monitor) and
``grab(monitor_dict | (left, top, right, bottom))`` returning a ``ScreenShot`` with the same
attributes as mss's. Pixels are byte-identical to mss's (both read the server's ZPixmap bytes).
Monitor dicts carry mss 10's ``is_primary`` and ``output`` keys; where RandR marks no monitor
primary, the first one is (mss then says False everywhere).
Like mss, each ScreenShot owns its pixels; for zero-copy frames use ``mantis_fast.Capture``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from mantis_fast._closing import Closing
from mantis_fast.errors import CaptureError, InvalidInputError, InvalidTypeError
from mantis_fast.x11.capture import Capture

__all__ = ["MSS", "ScreenShot", "ScreenShotError", "mss"]

Monitor = dict[str, int]


class ScreenShotError(CaptureError):
    """Raised where mss raises ``mss.exception.ScreenShotError``."""


class Pos(NamedTuple):
    left: int
    top: int


class Size(NamedTuple):
    width: int
    height: int


class ScreenShot:
    """Owned BGRA pixels of one grab, with mss's ``ScreenShot`` attributes."""

    __slots__ = ("_pixels", "_rgb", "pos", "raw", "size")

    def __init__(self, data: bytearray, monitor: Mapping[str, int]) -> None:
        self.raw = data
        self.pos = Pos(monitor["left"], monitor["top"])
        self.size = Size(monitor["width"], monitor["height"])
        self._rgb: bytes | None = None
        self._pixels: list[tuple[tuple[int, int, int], ...]] | None = None

    @classmethod
    def from_size(cls, data: bytearray, width: int, height: int) -> ScreenShot:
        return cls(data, {"left": 0, "top": 0, "width": width, "height": height})

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return {
            "version": 3,
            "shape": (self.height, self.width, 4),
            "typestr": "|u1",
            "data": self.raw,
        }

    def _array(self) -> np.ndarray:
        return np.frombuffer(self.raw, np.uint8).reshape(self.height, self.width, 4)

    @property
    def bgra(self) -> bytes:
        return bytes(self.raw)

    @property
    def rgb(self) -> bytes:
        if self._rgb is None:
            self._rgb = self._array()[:, :, 2::-1].tobytes()
        return self._rgb

    @property
    def pixels(self) -> list[tuple[tuple[int, int, int], ...]]:
        if self._pixels is None:
            rgb = self._array()[:, :, 2::-1].tolist()
            self._pixels = [tuple(tuple(p) for p in row) for row in rgb]
        return self._pixels

    def pixel(self, coord_x: int, coord_y: int) -> tuple[int, int, int]:
        if not (0 <= coord_x < self.width and 0 <= coord_y < self.height):
            raise ScreenShotError(f"Pixel location ({coord_x}, {coord_y}) is out of range.")
        b, g, r = (int(v) for v in self._array()[coord_y, coord_x, :3])
        return r, g, b

    left = property(lambda self: self.pos.left)
    top = property(lambda self: self.pos.top)
    width = property(lambda self: self.size.width)
    height = property(lambda self: self.size.height)

    def __repr__(self) -> str:
        return f"<ScreenShot pos={self.left},{self.top} size={self.width}x{self.height}>"


class MSS(Closing):
    """mss-compatible screen grabber; ``display=None`` -> ``$DISPLAY``."""

    def __init__(self, *, display: str | bytes | None = None, with_cursor: bool = False) -> None:
        if with_cursor:
            raise InvalidInputError(
                "with_cursor=True is not supported (the cursor is not composited)"
            )
        if isinstance(display, bytes):
            display = display.decode()
        self._capture = Capture(display)
        self._monitors: list[Monitor] | None = None

    @property
    def monitors(self) -> list[Monitor]:
        if self._monitors is None:
            displays = self._capture.monitors
            each = [
                {
                    "left": d.bounds[0],
                    "top": d.bounds[1],
                    "width": d.bounds[2],
                    "height": d.bounds[3],
                    "is_primary": d.primary,
                    "output": d.name,
                }
                for d in displays
            ]
            left = min(m["left"] for m in each)
            top = min(m["top"] for m in each)
            right = max(m["left"] + m["width"] for m in each)
            bottom = max(m["top"] + m["height"] for m in each)
            union = {"left": left, "top": top, "width": right - left, "height": bottom - top}
            self._monitors = [union, *each]
        return self._monitors

    def grab(self, monitor: Mapping[str, int] | tuple[int, int, int, int]) -> ScreenShot:
        """Grab ``{"left", "top", "width", "height"}`` or PIL's ``(left, top, right, bottom)``."""
        if isinstance(monitor, tuple):
            try:
                left, top, right, bottom = monitor
            except ValueError:
                raise InvalidInputError(
                    f"expected (left, top, right, bottom), got {monitor!r}"
                ) from None
            monitor = {"left": left, "top": top, "width": right - left, "height": bottom - top}
        elif not isinstance(monitor, Mapping):
            raise InvalidTypeError(
                f"monitor must be a dict or a 4-tuple, got {type(monitor).__name__}"
            )
        try:
            region = (monitor["left"], monitor["top"], monitor["width"], monitor["height"])
        except KeyError as exc:
            raise InvalidInputError(f"monitor dict {dict(monitor)!r} lacks the key {exc}") from None
        view = self._capture.grab(region)
        data = bytearray(view.nbytes)
        np.copyto(np.frombuffer(data, np.uint8).reshape(view.shape), view)
        return ScreenShot(data, dict(zip(("left", "top", "width", "height"), region, strict=True)))

    def close(self) -> None:
        self._capture.close()


def mss(**kwargs: Any) -> MSS:
    """Factory spelled like ``mss.mss()``."""
    return MSS(**kwargs)
