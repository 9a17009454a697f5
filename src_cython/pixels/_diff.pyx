# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Frame comparison kernels behind mantis_fast.pixels.frames: block sums for the frame hash and the
bounding box of changed pixels. Images arrive as 2-D byte-row views (H, W * channels) with any
row stride and contiguous bytes within a row.
"""

from cython.parallel cimport prange, threadid
from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy

import numpy as np


def block_sums(const uint8_t[:, :] img, int channels, const int32_t[::1] col_lo,
               const int32_t[::1] col_hi, const int32_t[::1] row_lo,
               const int32_t[::1] row_hi, int threads):
    """Per-channel sums over a grid of blocks: ``out[r, c, k]`` sums channel ``k`` over rows
    ``row_lo[r] .. row_hi[r] - 1`` and columns ``col_lo[c] .. col_hi[c] - 1`` (uint64).

    Each row band is summed down its columns first (one contiguous pass per row, vectorised),
    then the column totals are split into blocks: the image is read once, nothing full-size
    is allocated. Column totals are 32-bit: bands must be under 16843009 rows.
    """
    cdef Py_ssize_t bands = row_lo.shape[0], blocks = col_lo.shape[0]
    cdef Py_ssize_t n = img.shape[1]
    out_arr = np.zeros((bands, blocks, channels), np.uint64)
    cdef uint64_t[:, :, ::1] out = out_arr
    scratch_arr = np.empty((threads, n + 16), np.uint32)
    cdef uint32_t[:, ::1] scratch = scratch_arr
    cdef Py_ssize_t stride = img.strides[0]
    cdef const uint8_t* base = &img[0, 0]
    cdef Py_ssize_t band, y, e, k, x, c
    cdef uint32_t* columns
    cdef const uint8_t* row
    with nogil:
        for band in prange(bands, num_threads=threads, schedule="dynamic"):
            columns = &scratch[threadid(), 0]
            for e in range(n):
                columns[e] = 0
            for y in range(row_lo[band], row_hi[band]):
                row = base + y * stride
                for e in range(n):
                    columns[e] += row[e]
            for k in range(blocks):
                for x in range(col_lo[k], col_hi[k]):
                    for c in range(channels):
                        out[band, k, c] += columns[x * channels + c]
    return out_arr


cdef inline Py_ssize_t first_difference(const uint8_t* a, const uint8_t* b,
                                        Py_ssize_t n) noexcept nogil:
    """Index of the first differing byte in [0, n), or -1."""
    cdef Py_ssize_t i = 0
    cdef uint64_t x, y
    while i + 8 <= n:
        memcpy(&x, a + i, 8)
        memcpy(&y, b + i, 8)
        if x != y:
            break
        i += 8
    while i < n:
        if a[i] != b[i]:
            return i
        i += 1
    return -1


cdef inline Py_ssize_t last_difference(const uint8_t* a, const uint8_t* b,
                                       Py_ssize_t n) noexcept nogil:
    """Index of the last differing byte in [0, n), or -1."""
    cdef Py_ssize_t i = n
    cdef uint64_t x, y
    while i >= 8:
        memcpy(&x, a + i - 8, 8)
        memcpy(&y, b + i - 8, 8)
        if x != y:
            break
        i -= 8
    while i > 0:
        i -= 1
        if a[i] != b[i]:
            return i
    return -1


def changed_bbox(const uint8_t[:, :] a, const uint8_t[:, :] b, int channels):
    """``(x, y, w, h)`` of the pixels whose bytes differ between ``a`` and ``b``, or None.

    Rows are compared whole from the top down and from the bottom up, each scan stopping at
    its first differing row; between those rows only the bytes left of the leftmost and right
    of the rightmost difference found so far are examined, and the scan stops as soon as the
    box spans the full width.
    """
    cdef Py_ssize_t height = a.shape[0], n = a.shape[1]
    cdef Py_ssize_t width = n // channels
    cdef Py_ssize_t sa = a.strides[0], sb = b.strides[0]
    cdef const uint8_t* pa = &a[0, 0]
    cdef const uint8_t* pb = &b[0, 0]
    cdef Py_ssize_t top = 0, bottom, y, i, left, right
    with nogil:
        while top < height and memcmp(pa + top * sa, pb + top * sb, n) == 0:
            top += 1
        if top == height:
            bottom = -1
        else:
            bottom = height - 1
            while memcmp(pa + bottom * sa, pb + bottom * sb, n) == 0:
                bottom -= 1
            left = width          # exclusive bound still to search on the left
            right = -1            # inclusive bound of the rightmost difference
            for y in range(top, bottom + 1):
                if left > 0:
                    i = first_difference(pa + y * sa, pb + y * sb, left * channels)
                    if i >= 0:
                        left = i // channels
                if right < width - 1:
                    i = last_difference(pa + y * sa + (right + 1) * channels,
                                        pb + y * sb + (right + 1) * channels,
                                        (width - right - 1) * channels)
                    if i >= 0:
                        right = right + 1 + i // channels
                if left == 0 and right == width - 1:
                    break
    if bottom < 0:
        return None
    return (left, top, right - left + 1, bottom - top + 1)
