"""``mss.screenshot.ScreenShot``: owned BGRA pixels of one grab, with mss's attributes."""

from __future__ import annotations

from typing import Any

import numpy as np

from mantis_fast.compat.mss.exception import ScreenShotError
from mantis_fast.compat.mss.models import Monitor, Pixel, Pixels, Pos, Size
from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels.image import resize

__all__ = ["ScreenShot"]


class ScreenShot:
    """``raw`` is a bytearray of BGRA rows (the fourth byte is X's padding on depth-24 screens).

    ``rgb`` and ``pixels`` are computed once, on first use; the BGRA -> RGB pass is
    mantis_fast's conversion kernel instead of three strided slice copies.
    """

    __slots__ = ("_pixels", "_rgb", "pos", "raw", "size")

    def __init__(self, data: bytearray, monitor: Monitor, /, *, size: Size | None = None) -> None:
        self._pixels: Pixels | None = None
        self._rgb: bytes | None = None
        self.raw: bytearray = data
        self.pos = Pos(monitor["left"], monitor["top"])
        self.size = Size(monitor["width"], monitor["height"]) if size is None else size

    @classmethod
    def from_size(cls, data: bytearray, width: int, height: int, /) -> ScreenShot:
        """A screenshot of ``data`` at the origin, given only its size."""
        return cls(data, {"left": 0, "top": 0, "width": width, "height": height})

    def __repr__(self) -> str:
        return f"<{type(self).__name__} pos={self.left},{self.top} size={self.width}x{self.height}>"

    @property
    def __array_interface__(self) -> dict[str, Any]:
        """``np.asarray(shot)``: (height, width, 4) BGRA, no copy."""
        return {
            "version": 3,
            "shape": (self.height, self.width, 4),
            "typestr": "|u1",
            "data": self.raw,
        }

    def _bgra(self) -> np.ndarray:
        width, height = self.size
        expected = width * height * 4
        if len(self.raw) != expected:
            raise InvalidInputError(
                f"attempt to assign {len(self.raw)} bytes of BGRA pixels to a {width}x{height} "
                f"screenshot, which holds {expected}"
            )
        return np.frombuffer(self.raw, np.uint8).reshape(height, width, 4)

    @property
    def bgra(self) -> bytes:
        return bytes(self.raw)

    @property
    def rgb(self) -> bytes:
        """RGBRGB... bytes, row after row."""
        if self._rgb is None:
            bgra = self._bgra()
            height, width = bgra.shape[:2]
            if width and height:
                out = np.empty((height, width, 3), np.uint8)
                resize(bgra, (width, height), src_format="BGRX", out_format="RGB", out=out)
                self._rgb = out.tobytes()
            else:
                self._rgb = b""
        return self._rgb

    @property
    def pixels(self) -> Pixels:
        """Rows of (R, G, B) tuples."""
        if self._pixels is None:
            rows = self._bgra()[:, :, 2::-1].tolist()
            self._pixels = [tuple(map(tuple, row)) for row in rows]
        return self._pixels

    def pixel(self, coord_x: int, coord_y: int) -> Pixel:
        """(R, G, B) at (x, y); Python indexing, so negative coordinates count from the end."""
        try:
            return self.pixels[coord_y][coord_x]
        except IndexError:
            raise ScreenShotError(
                f"Pixel location ({coord_x}, {coord_y}) is out of range."
            ) from None

    @property
    def left(self) -> int:
        return self.pos.left

    @property
    def top(self) -> int:
        return self.pos.top

    @property
    def width(self) -> int:
        return self.size.width

    @property
    def height(self) -> int:
        return self.size.height
