# Stub for the compiled module built from _resize.pyx beside it (Cython types as comments).
# Images are 2-D byte-row views: src (H, W * channels), out (out_h, out_w * out_channels),
# any row stride, contiguous bytes within a row. Callers validate everything first.

import numpy as np

def max_threads() -> int: ...
def simd_available() -> bool: ...
def avx2_available() -> bool: ...
def use_avx2(enabled: bool) -> bool: ...  # returns the previous setting
def avx512_available() -> bool: ...
def use_avx512(enabled: bool) -> bool: ...  # returns the previous setting
def area_axis(
    src_len: int,  # Py_ssize_t
    dst_len: int,  # Py_ssize_t
) -> tuple[
    np.ndarray,
    np.ndarray,
    np.ndarray,
    int,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
]:
    """(start int32[dst], count int32[dst], weight uint32[dst, taps], denominator,
    pairs int16[dst, npairs, 8], q15 uint16[dst, taps], q14 int16[dst, 4 * windows],
    pair_start int32[dst], pair_weights int32[dst, pair windows])"""

def fixed_weights(
    weight: np.ndarray, denominator: int, one: int, taps: int
) -> np.ndarray: ...  # int64 [rows, max(taps, weight columns)], each row summing to one
def uses_fixed_point(x_axis: tuple, y_axis: tuple) -> bool: ...
def area_rounding(denominator: int) -> tuple[int, int]: ...  # uint64_t -> (multiplier, shift)
def area_rounding16(denominator: int) -> tuple[int, int]: ...  # (0, 0) when denominator > 64
def bilinear_axis(src_len: int, dst_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(left int32[dst], frac uint32[dst] in 1/2048ths, lanes int32[dst, 8])"""

def nearest_axis(src_len: int, dst_len: int) -> np.ndarray: ...  # int32[dst]
def resize_area(
    src: np.ndarray,  # const uint8_t[:, :]
    out: np.ndarray,  # uint8_t[:, :]
    crop_x: int,
    crop_y: int,
    crop_w: int,
    crop_h: int,
    x_axis: tuple,  # area_axis(crop_w, out_w)
    y_axis: tuple,  # area_axis(crop_h, out_h)
    swap_rb: bool,
    keep: int,  # uint32_t
    fill: int,  # uint32_t
    channels: int,
    out_channels: int,
    threads: int,
    simd: bool = True,
    row_start: int = 0,
    row_stop: int = -1,  # -1: through the last output row
) -> None: ...
def resize_bilinear(
    src: np.ndarray,  # const uint8_t[:, :]
    out: np.ndarray,  # uint8_t[:, :]
    crop_x: int,
    crop_y: int,
    crop_w: int,
    crop_h: int,
    x_axis: tuple,  # bilinear_axis(crop_w, out_w)
    y_axis: tuple,  # bilinear_axis(crop_h, out_h)
    swap_rb: bool,
    keep: int,
    fill: int,
    channels: int,
    out_channels: int,
    threads: int,
    row_start: int = 0,
    row_stop: int = -1,
) -> None: ...
def resize_nearest(
    src: np.ndarray,  # const uint8_t[:, :]
    out: np.ndarray,  # uint8_t[:, :]
    crop_x: int,
    crop_y: int,
    xi: np.ndarray,  # const int32_t[::1]
    yi: np.ndarray,  # const int32_t[::1]
    swap_rb: bool,
    keep: int,
    fill: int,
    channels: int,
    out_channels: int,
    threads: int,
    simd: bool = True,
    row_start: int = 0,
    row_stop: int = -1,  # -1: through the last output row
) -> None: ...
