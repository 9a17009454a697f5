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
    """uint8 (8, 9): Pillow's convert("L").resize((9, 8)) of the frame; order 0 as Pillow 13,
    1 as Pillow 10-12 (horizontal pass first), 2 vertical pass first."""

def phash_64(
    img: np.ndarray,  # const uint8_t[:, :]
    channels: int,
    r: int,
    g: int,
    b: int,
    order: int = 0,
) -> str: ...
def hash_of(t: np.ndarray) -> str:  # const uint8_t[:, ::1], shape (8, 9)
    """Upstream Mantis's 17 hex characters from an (8, 9) thumbnail."""
