# Stub for the compiled module built from _overlay.pyx beside it (inputs validated by
# mantis_fast.pixels.overlay.draw; shapes are blended into ``image`` in place, in row order of
# ``ops``).

import numpy as np

OP_DISC: int  # 0
OP_RECT: int  # 1
OP_SEGMENT: int  # 2
OP_COLUMNS: int  # 15
STOP_COLUMNS: int  # 5
COORD_LIMIT: float  # 1e7, the largest coordinate magnitude the Python layer lets through
FLOAT32_EXTENT: float  # 4096.0, geometry up to this many pixels may take the float32 path

def max_threads() -> int: ...
def composite(
    image: np.ndarray,  # uint8_t[:, :, :], (H, W, 3 | 4), pixels contiguous, rows any stride
    ops: np.ndarray,  # const double[:, ::1], (N, 15), one shape per row:
    #   0 kind (OP_*), 1 first stop row, 2 stop count (>= 1), 3 shape alpha (0..1),
    #   4-5 gradient centre (rect), 6 gradient radius (rect; 0 = t is 0 everywhere),
    #   7-10 disc: cx, cy, r, - | rect: outer x0, y0, x1, y1 | segment: x0, y0, x1, y1,
    #   11-14 rect: hole x0, y0, x1, y1 (empty when x0 >= x1) | segment: half width, -, -, -
    stops: np.ndarray,  # const double[:, ::1], (M, 5): position 0..1 (sorted within a
    #   shape's rows), r, g, b in 0..255, a in 0..1
    bgr: bool,  # bint, colour bytes in B, G, R order
    threads: int,  # int, OpenMP threads (<= 1: the calling thread only)
    fast_path: bool = True,  # bint, False keeps every shape on the float64 path (tests)
) -> None: ...
