# Stub for the compiled module built from _png.pyx beside it (Cython types as comments).
# Sources are 2-D byte-row views (H, W * channels) with contiguous bytes within a row.

import numpy as np

COPY: int
BGRX_RGB: int
RGBX_RGB: int
BGRA_RGBA: int
BGR_RGB: int

def fill_rows(
    src: np.ndarray,  # const uint8_t[:, :]
    lines: np.ndarray,  # uint8_t[:, ::1]
    kind: int,
    src_channels: int,
    y0: int,
    y1: int,
    compare: bool,
    simd: bool = True,
) -> bool:
    """Write PNG scanlines ``lines[y0:y1]``; with ``compare``, whether any of them changed."""
