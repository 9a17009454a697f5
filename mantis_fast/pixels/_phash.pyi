# Stub for the compiled module built from _phash.pyx beside it (Cython types as comments).
# Frames are 2-D byte-row views (H, W * channels) with contiguous bytes within a row; r, g, b
# are the byte offsets of those channels in a pixel (ignored when channels is 1).

import numpy as np

def thumbnail(
    img: np.ndarray,  # const uint8_t[:, :]
    channels: int,
    r: int,
    g: int,
    b: int,
    order: int = 0,
) -> np.ndarray:
    """uint8 (8, 9): Pillow's convert("L").resize((9, 8)) of the frame."""

def phash_64(
    img: np.ndarray,  # const uint8_t[:, :]
    channels: int,
    r: int,
    g: int,
    b: int,
) -> str: ...
