# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The kernel behind mantis_fast.pixels.frames.phash_64: Pillow's ``convert("L")`` followed by
``resize((9, 8))`` (default BICUBIC), reproduced bit for bit without building either image, in
the pass order of Pillow 13 or of Pillow 10 to 12 (``order``). Frames arrive as 2-D byte-row
views (H, W * channels) with any row stride and contiguous bytes within a row.

Pillow resamples in two separable passes with fixed-point coefficients, the first one's results
clipped to bytes: usually the horizontal pass over just the source rows the vertical pass
reads, then the vertical pass; for frames much taller than wide, the other way round. Every
step below follows its order of operations exactly, because a one-unit difference in a
thumbnail pixel can flip a hash bit: coefficients in double per output pixel, normalised by
their sum, rounded away from zero to PRECISION_BITS fixed point, sums in int32 starting at one
half.
"""

from libc.math cimport ceil
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t

import numpy as np

cdef extern from "phash_sse2.h":
    Py_ssize_t mantis_grey4_sse2(const uint8_t* src, int16_t* out, Py_ssize_t width,
                                 int r_first) nogil

cdef enum:
    PRECISION_BITS = 22     # Pillow's 32 - 8 - 2: 8 bits of pixel, 2 of headroom, in an int32
    OUT_W = 9
    OUT_H = 8


cdef inline double bicubic(double x) noexcept nogil:
    """Keys' cubic convolution with a = -0.5, grouped as Pillow's bicubic_filter."""
    if x < 0.0:
        x = -x
    if x < 1.0:
        return (1.5 * x - 2.5) * x * x + 1
    if x < 2.0:
        return (((x - 5) * x + 8) * x - 4) * -0.5
    return 0.0


cdef int coefficients(Py_ssize_t in_size, int out_size, int32_t[:, ::1] bounds,
                      int32_t[:, ::1] kk, double[::1] work) noexcept nogil:
    """Pillow's precompute_coeffs + normalize_coeffs_8bpc for a box of the whole axis:
    ``bounds[i] = (first source index, tap count)``, ``kk[i, :count]`` the fixed-point taps."""
    # Pillow passes the box edges as C floats: the axis length goes through float first.
    cdef double scale = <double><float>in_size / out_size
    cdef double filterscale = scale if scale > 1.0 else 1.0
    cdef double support = 2.0 * filterscale
    cdef double inv_filterscale = 1.0 / filterscale
    cdef double center, ww, w
    cdef int i, x, xmin, xmax
    for i in range(out_size):
        center = 0.0 + (i + 0.5) * scale
        xmin = <int>(center - support + 0.5)    # C truncation, as Pillow rounds
        if xmin < 0:
            xmin = 0
        xmax = <int>(center + support + 0.5)
        if xmax > in_size:
            xmax = <int>in_size
        xmax -= xmin
        ww = 0.0
        for x in range(xmax):
            w = bicubic((x + xmin - center + 0.5) * inv_filterscale)
            work[x] = w
            ww += w
        if ww != 0.0:
            for x in range(xmax):
                work[x] /= ww
        for x in range(xmax):
            if work[x] < 0:
                kk[i, x] = <int32_t>(-0.5 + work[x] * (1 << PRECISION_BITS))
            else:
                kk[i, x] = <int32_t>(0.5 + work[x] * (1 << PRECISION_BITS))
        bounds[i, 0] = xmin
        bounds[i, 1] = xmax
    return 0


cdef inline uint8_t clip8(int32_t v) noexcept nogil:
    v >>= PRECISION_BITS    # arithmetic shift, as Pillow's lookup table index
    if v < 0:
        return 0
    if v > 255:
        return 255
    return <uint8_t>v


cdef inline void grey_row(const uint8_t* src, int16_t* out, Py_ssize_t width, int channels,
                          int r, int g, int b) noexcept nogil:
    """Pillow's rgb2l: L = (R*19595 + G*38470 + B*7471 + 0x8000) >> 16. Inlined with constant
    offsets, so the compiler can vectorise each layout."""
    cdef Py_ssize_t x
    cdef const uint8_t* p
    for x in range(width):
        p = src + x * channels
        out[x] = <int16_t>((p[r] * <uint32_t>19595 + p[g] * <uint32_t>38470
                            + p[b] * <uint32_t>7471 + 0x8000) >> 16)


cdef void to_grey(const uint8_t* src, int16_t* out, Py_ssize_t width, int channels,
                  int r, int g, int b) noexcept nogil:
    """A grey row, widened to int16 for the horizontal pass."""
    cdef Py_ssize_t x
    if channels == 1:
        for x in range(width):
            out[x] = src[x]
    elif channels == 4 and g == 1 and (r == 2 or r == 0):
        x = mantis_grey4_sse2(src, out, width, r == 0)
        grey_row(src + 4 * x, out + x, width - x, 4, r, 1, 2 - r)
    elif channels == 3 and r == 0 and g == 1 and b == 2:
        grey_row(src, out, width, 3, 0, 1, 2)
    elif channels == 3 and r == 2 and g == 1 and b == 0:
        grey_row(src, out, width, 3, 2, 1, 0)
    else:
        grey_row(src, out, width, channels, r, g, b)


cdef enum:
    SPLIT = 8       # a tap k is hi * 2**SPLIT + lo, both int16 (|k| < 2**23, 0 <= lo < 2**SPLIT)
    # Taps summed in int32 before widening to int64: the lo sums stay under 255 * 255 * CHUNK;
    # the hi sums are bounded by the taps' absolute sum (about 1.1 * 2**22 / 2**SPLIT).
    CHUNK = 16384


cdef inline void horizontal_row(const int16_t* grey, uint8_t* out, const int32_t[:, ::1] bounds,
                                const int16_t[:, ::1] hi, const int16_t[:, ::1] lo) noexcept nogil:
    """One row of Pillow's horizontal pass: OUT_W clipped bytes from a grey row. Pillow sums
    byte * int32 tap in int32; splitting each tap into two int16 halves gives the same exact
    sum from 16-bit multiply-adds, which the compiler vectorises (pmaddwd)."""
    cdef int32_t xmin, count, sh, sl
    cdef int64_t total
    cdef Py_ssize_t xx, x, start, stop
    cdef const int16_t* p
    cdef const int16_t* kh
    cdef const int16_t* kl
    for xx in range(OUT_W):
        xmin = bounds[xx, 0]
        count = bounds[xx, 1]
        p = grey + xmin
        kh = &hi[xx, 0]
        kl = &lo[xx, 0]
        total = 1 << (PRECISION_BITS - 1)
        start = 0
        while start < count:
            stop = min(start + CHUNK, count)
            sh = 0
            sl = 0
            for x in range(start, stop):
                sh = sh + p[x] * kh[x]
                sl = sl + p[x] * kl[x]
            total += (<int64_t>sh << SPLIT) + sl
            start = stop
        out[xx] = clip8(<int32_t>total)


def thumbnail(const uint8_t[:, :] img, int channels, int r, int g, int b, int order=0):
    """uint8 (8, 9): ``Image.fromarray(rgb).convert("L").resize((9, 8))`` of the frame, whose
    channels ``r``, ``g``, ``b`` are at those byte offsets in a pixel (ignored for grey).
    ``order`` 0 chooses the first pass as Pillow 13 does, 1 runs the horizontal pass first
    always (Pillow 10 to 12), 2 the vertical pass first always (tests)."""
    cdef Py_ssize_t height = img.shape[0], width = img.shape[1] // channels
    cdef Py_ssize_t stride = img.strides[0]
    cdef const uint8_t* base = &img[0, 0]
    out_arr = np.zeros((OUT_H, OUT_W), np.uint8)
    cdef uint8_t[:, ::1] out = out_arr
    # Pillow skips a pass whose axis already has the output size (a bicubic pass at scale 1
    # would be the identity anyway).
    cdef bint horizontal = width != OUT_W, vertical = height != OUT_H
    # Pillow 13 runs the vertical pass first when the height shrinks by more than twice as
    # many pixels as the width (checked against it for every geometry up to 90 x 90 and along
    # the boundary up to 3000 rows); the intermediate byte clip makes the order visible.
    cdef bint horizontal_first = not (height > OUT_H and height - OUT_H > 2 * (width - OUT_W))
    if order:
        horizontal_first = order == 1
    cdef int ksize_h = <int>ceil(2.0 * max(<double><float>width / OUT_W, 1.0)) * 2 + 1
    cdef int ksize_v = <int>ceil(2.0 * max(<double><float>height / OUT_H, 1.0)) * 2 + 1
    vb_arr = np.zeros((OUT_H, 2), np.int32)
    vk_arr = np.zeros((OUT_H, ksize_v), np.int32)
    hb_arr = np.zeros((OUT_W, 2), np.int32)
    hk_arr = np.zeros((OUT_W, ksize_h), np.int32)
    cdef int32_t[:, ::1] vbounds = vb_arr, vk = vk_arr, hbounds = hb_arr, hk = hk_arr
    cdef double[::1] work = np.zeros(max(ksize_h, ksize_v), np.float64)
    coefficients(height, OUT_H, vbounds, vk, work)
    if horizontal:
        coefficients(width, OUT_W, hbounds, hk, work)
    hi_arr = (hk_arr >> SPLIT).astype(np.int16)
    lo_arr = (hk_arr & ((1 << SPLIT) - 1)).astype(np.int16)
    cdef int16_t[:, ::1] hi = hi_arr, lo = lo_arr
    # Source rows any output row reads (Pillow's ybox_first, ybox_last).
    cdef Py_ssize_t first = vbounds[0, 0]
    cdef Py_ssize_t last = vbounds[OUT_H - 1, 0] + vbounds[OUT_H - 1, 1]
    if not vertical:
        first, last = 0, OUT_H
    line_arr = np.empty(width, np.int16)
    cdef int16_t[::1] line = line_arr
    # Horizontal first: the rows it produces (OUT_W wide, or the grey rows when the width is
    # already 9). Vertical first: int32 sums of every output row, OUT_H x width.
    rows_arr = np.empty((last - first if horizontal_first else 0,
                         OUT_W if horizontal else width), np.uint8)
    cdef uint8_t[:, ::1] rows = rows_arr
    acc_arr = np.full((0 if horizontal_first else OUT_H, width), 1 << (PRECISION_BITS - 1),
                      np.int32)
    cdef int32_t[:, ::1] acc = acc_arr
    cdef Py_ssize_t y, xx, x, yy
    cdef const int32_t* k
    cdef int32_t ss, kv, ymin, count
    cdef int32_t* sums
    with nogil:
        for y in range(first, last):
            to_grey(base + y * stride, &line[0], width, channels, r, g, b)
            if horizontal_first:
                if horizontal:
                    horizontal_row(&line[0], &rows[y - first, 0], hbounds, hi, lo)
                else:
                    for x in range(width):
                        rows[y - first, x] = <uint8_t>line[x]
                continue
            # Vertical first: add this row into each output row whose taps reach it (integer
            # sums, so the order of the additions does not matter).
            for yy in range(OUT_H):
                ymin = vbounds[yy, 0]
                if y < ymin or y >= ymin + vbounds[yy, 1]:
                    continue
                kv = vk[yy, y - ymin]
                sums = &acc[yy, 0]
                for x in range(width):
                    sums[x] = sums[x] + line[x] * kv
        if horizontal_first:
            for yy in range(OUT_H):
                if not vertical:
                    for xx in range(OUT_W):
                        out[yy, xx] = rows[yy, xx]
                    continue
                ymin = vbounds[yy, 0] - <int32_t>first
                count = vbounds[yy, 1]
                k = &vk[yy, 0]
                for xx in range(OUT_W):
                    ss = 1 << (PRECISION_BITS - 1)
                    for x in range(count):
                        ss = ss + rows[ymin + x, xx] * k[x]
                    out[yy, xx] = clip8(ss)
        else:
            for yy in range(OUT_H):
                for x in range(width):
                    line[x] = clip8(acc[yy, x])
                if horizontal:
                    horizontal_row(&line[0], &out[yy, 0], hbounds, hi, lo)
                else:
                    for xx in range(OUT_W):
                        out[yy, xx] = <uint8_t>line[xx]
    return out_arr


def phash_64(const uint8_t[:, :] img, int channels, int r, int g, int b, int order=0):
    """Upstream Mantis's 17 hex characters for the frame (`hash_of` its `thumbnail`)."""
    return hash_of(thumbnail(img, channels, r, g, b, order))


def hash_of(const uint8_t[:, ::1] t):
    """Upstream Mantis's 17 hex characters from an (8, 9) thumbnail: bit ``8 * row + c`` (from
    the least significant) set when pixel ``c`` is brighter than pixel ``c + 1``, then the mean
    grey // 16 (at most 15)."""
    cdef unsigned long long bits = 0
    cdef long total = 0
    cdef int row, c
    if t.shape[0] != OUT_H or t.shape[1] != OUT_W:
        raise ValueError(f"thumbnail must be ({OUT_H}, {OUT_W}), got ({t.shape[0]}, {t.shape[1]})")
    for row in range(OUT_H):
        for c in range(OUT_W):
            total += t[row, c]
        for c in range(OUT_W - 1):
            if t[row, c] > t[row, c + 1]:
                bits |= 1ULL << (row * 8 + c)
    return f"{bits:016x}{min(total // (OUT_H * OUT_W) // 16, 15):x}"
