"""Put known pixels on a real X screen (root window), so captures can be checked exactly."""

from __future__ import annotations

import numpy as np
from Xlib import X
from Xlib.display import Display as XDisplay

_BAND_BYTES = 200_000  # below the core protocol's 256 KiB request limit


def paint_root(display: str, image_bgrx: np.ndarray, x: int = 0, y: int = 0) -> None:
    """Write a uint8 (H, W, 4) BGRX image onto the root window at (x, y) and wait for it."""
    height, width = image_bgrx.shape[:2]
    xdisplay = XDisplay(display)
    try:
        root = xdisplay.screen().root
        gc = root.create_gc()
        rows = max(1, _BAND_BYTES // (width * 4))
        for top in range(0, height, rows):
            band = np.ascontiguousarray(image_bgrx[top : top + rows])
            root.put_image(gc, x, y + top, width, band.shape[0], X.ZPixmap, 24, 0, band.tobytes())
        xdisplay.sync()
    finally:
        xdisplay.close()


def draw_text(display: str, x: int, y: int, text: str, colour: int = 0xFFFFFF) -> None:
    """Draw text with the server's 'fixed' core font (real glyph edges to compare on)."""
    xdisplay = XDisplay(display)
    try:
        root = xdisplay.screen().root
        font = xdisplay.open_font("fixed")
        gc = root.create_gc(foreground=colour, font=font)
        root.draw_text(gc, x, y, text.encode())
        xdisplay.sync()
    finally:
        xdisplay.close()


def test_pattern(width: int, height: int, seed: int = 0) -> np.ndarray:
    """A screen-like BGRX image: gradients, flat coloured rectangles and random noise blocks."""
    rng = np.random.default_rng(seed)
    image = np.zeros((height, width, 4), np.uint8)
    xs = np.arange(width, dtype=np.uint32)
    ys = np.arange(height, dtype=np.uint32)
    image[:, :, 0] = (xs * 255 // max(width - 1, 1))[None, :]
    image[:, :, 1] = (ys * 255 // max(height - 1, 1))[:, None]
    image[:, :, 2] = ((xs[None, :] + ys[:, None]) % 256).astype(np.uint8)
    for _ in range(12):
        w, h = rng.integers(1, max(2, width // 3)), rng.integers(1, max(2, height // 3))
        left, top = rng.integers(0, width - w + 1), rng.integers(0, height - h + 1)
        image[top : top + h, left : left + w, :3] = rng.integers(0, 256, 3, dtype=np.uint8)
    nh, nw = min(64, height), min(64, width)
    image[:nh, -nw:, :3] = rng.integers(0, 256, (nh, nw, 3), dtype=np.uint8)
    return image


test_pattern.__test__ = False  # a helper, not a pytest test
