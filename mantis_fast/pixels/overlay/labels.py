"""Action labels (``"1. click(500,400)"``): glyphs rasterised once, placed inside the frame,
blended as white text."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mantis_fast.pixels.overlay.draw import Mark

LABEL_BOX = (0.0, 0.0, 0.0, 0.7)
LABEL_OFFSET = (6, 3)  # the text starts this far right of and above the point
LABEL_PAD = 2
MASKS_KEPT = 256


class _Glyphs:
    """Pillow's default font at one size; Pillow rasterises each glyph once into an 8-bit
    coverage mask, and a label is then a few array copies instead of a FreeType layout."""

    def __init__(self, size: int) -> None:
        from PIL import ImageFont, features

        freetype = features.check("freetype2")
        self.font = ImageFont.load_default(size) if freetype else ImageFont.load_default()
        self.height = max(1, int(self.font.getbbox("Ay|(")[3]))
        self.cache: dict[str, tuple[np.ndarray, int, int]] = {}
        # A loop labels the same few actions every turn: their masks are kept (read-only).
        self.masks: dict[str, np.ndarray] = {}

    def glyph(self, char: str) -> tuple[np.ndarray, int, int]:
        """(coverage mask with its top at the ascender, left offset, advance) of a character."""
        if char not in self.cache:
            from PIL import Image, ImageDraw

            box = self.font.getbbox(char)  # ints for a bitmap or FreeType font
            left, right = min(int(box[0]), 0), int(box[2])
            tile = Image.new("L", (max(1, right - left), self.height), 0)
            ImageDraw.Draw(tile).text((-left, 0), char, fill=255, font=self.font)
            self.cache[char] = (np.asarray(tile), left, round(self.font.getlength(char)))
        return self.cache[char]

    def mask(self, text: str) -> np.ndarray:
        """The coverage mask of ``text`` (read-only; the last ``MASKS_KEPT`` texts are kept)."""
        mask = self.masks.get(text)
        if mask is None:
            if len(self.masks) >= MASKS_KEPT:
                del self.masks[next(iter(self.masks))]  # the oldest
            mask = self.masks[text] = self._layout(text)
            mask.setflags(write=False)
        return mask

    def _layout(self, text: str) -> np.ndarray:
        placed, x = [], 0
        for tile, left, advance in map(self.glyph, text):
            placed.append((x + left, tile))
            x += advance
        out = np.zeros((self.height, max([1] + [x + t.shape[1] for x, t in placed])), np.uint8)
        for x, tile in placed:
            view = out[:, max(x, 0) : x + tile.shape[1]]
            np.maximum(view, tile[:, tile.shape[1] - view.shape[1] :], out=view)
        return out


@lru_cache(maxsize=8)
def _glyphs(size: int) -> _Glyphs:
    return _Glyphs(size)


def _label(mark: Mark, x: float, y: float, size: int, width: int, height: int) -> tuple:
    """Text mask and pixel box (left, top, right, bottom exclusive) of a label: 6 px right of
    and 3 px above the point, padded by 2 px, shifted to lie inside the frame where it fits."""
    text = "{}. {}({},{})".format(
        mark.index, mark.name, *(f"{int(v)}" if v.is_integer() else f"{v:.1f}" for v in mark[2:4])
    )
    mask = _glyphs(size).mask(text)
    left, bottom = round(x) + LABEL_OFFSET[0] - LABEL_PAD, round(y) - LABEL_OFFSET[1] + 1
    box = [left, bottom - mask.shape[0] - 2, left + mask.shape[1] + 2 * LABEL_PAD, bottom]
    dx = -box[0] if box[0] < 0 else min(0, width - box[2])
    dy = -box[1] if box[1] < 0 else min(0, height - box[3])
    return mask, [box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy]


def _draw_label_text(image: np.ndarray, mask: np.ndarray, box: list[int]) -> None:
    """White text into the label box: ``floor(d + (255 - d) * m / 255 + 1/2)`` in integers."""
    top, left = box[1] + 1, box[0] + LABEL_PAD
    y0, x0 = max(top, 0), max(left, 0)
    y1, x1 = min(top + mask.shape[0], image.shape[0]), min(left + mask.shape[1], image.shape[1])
    if y1 > y0 and x1 > x0:
        m = mask[y0 - top : y1 - top, x0 - left : x1 - left, None].astype(np.uint32)
        region = image[y0:y1, x0:x1, :3]
        d = region.astype(np.uint32)
        region[...] = (2 * (255 * d + (255 - d) * m) + 255) // 510
