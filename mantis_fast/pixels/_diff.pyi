# Stub for the compiled module built from _diff.pyx beside it (Cython types as comments).
# Frames are 2-D byte-row views (H, W * channels) with contiguous bytes within a row.

import numpy as np

def block_sums(
    img: np.ndarray,  # const uint8_t[:, :]
    channels: int,
    col_lo: np.ndarray,  # const int32_t[::1]
    col_hi: np.ndarray,  # const int32_t[::1]
    row_lo: np.ndarray,  # const int32_t[::1]
    row_hi: np.ndarray,  # const int32_t[::1]
    threads: int,
) -> np.ndarray:
    """uint64 (bands, blocks, channels) per-channel sums over the grid of blocks."""

def changed_bbox(
    a: np.ndarray,  # const uint8_t[:, :]
    b: np.ndarray,  # const uint8_t[:, :]
    channels: int,
) -> tuple[int, int, int, int] | None: ...
