# Stub for the compiled module built from _coords.pyx beside it.
# Callers validate everything first (mantis_fast.geometry.coords, mantis_fast.geometry.displays).

import numpy as np

# An axis map: (in_clip, in_lo, in_hi, in_off, int_lo, int_hi, num, den,
#               out_clip, out_lo, out_hi, out_off, half_up) -- see the module docstring.
# Stub-only (private: the module has no such name at runtime).
_AxisSpec = tuple[bool, int, int, int, int, int, float, float, bool, int, int, int, bool]

def map_points(
    points: np.ndarray,  # const coord_t[:, ::1], coord_t in {double, int64_t, int32_t}
    out: np.ndarray,  # int32_t[:, ::1], same number of rows
    x_spec: _AxisSpec,
    y_spec: _AxisSpec,
    threads: int = 1,  # int
) -> tuple[int, int]:
    """(first failing row, code) or (-1, 0); codes 1 non-finite, 2 inexact int, 3 out of int32."""

def locate_points(
    points: np.ndarray,  # const coord_t[:, ::1]
    rects: np.ndarray,  # const int64_t[:, ::1], (D, 4) x, y, w, h
    ids: np.ndarray,  # const int32_t[::1], (D,)
    out_ids: np.ndarray,  # int32_t[::1], (N,)
    out_local: np.ndarray,  # int32_t[:, ::1], (N, 2)
) -> int:
    """First row holding NaN/inf, or -1; rows outside every rect get id -1, local (-1, -1)."""
