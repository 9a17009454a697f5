# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Fused crop + resize + colour conversion of uint8 images (the kernel behind ``image.resize``).

Images arrive as 2-D byte-row views: ``src`` is (H, W * channels) with any row stride and
contiguous pixels, ``out`` is (out_h, out_w * out_channels). The crop is given as an offset; the
resampling tables per axis (``*_axis`` functions below) are built once per geometry by the caller.

Every method fills a row of packed 32-bit pixels first, with the output's byte order already
applied (``Layout``), and ``emit_row`` turns that row into RGB/BGR (3 bytes), RGBA/BGRA (4) or L.

``area`` is exact: with the crop split into ``out`` cells, each cell's sum of source pixels
weighted by covered area is an integer once lengths are measured in units of
1 / gcd(src_len, dst_len) source pixels, so the kernel computes the exact rational average and
rounds it half up, i.e. ``floor(average + 1/2)``, through a multiply-shift that is proved exact
for every reachable numerator (see ``area_rounding``).

Denominators above 64 with cells of at most 8 source pixels a side (the general ratios models
ask for: 1920 -> 1316 has 480, 1080 -> 728 has 135) take fixed-point rows instead
(``resize_fixed.h``): weights scaled to powers of two, both passes in 16-bit lanes, every
output the exact average rounded down or up (``uses_fixed_point`` says which arithmetic a
geometry gets; the same on every machine). With AVX2 they go two output rows at a time, with
AVX-512 four (``grouped_rows``; ``use_avx512(False)`` forbids the latter), the vertical pass
writing the rows in the order the horizontal pass multiplies them in; 3-channel rows are
read as they are, each load spread to 4 bytes a pixel in registers. The exact rows below serve
the rest.

Exact area rows take one of three paths, each checked against the same exact reference:

- AVX2 (``_resize_avx2.pxi``; compiled per function, chosen at run time when the CPU has it,
  ``use_avx2(False)`` forbids it): 1.5x on both axes (1080p -> 720p) and 2x go straight from
  the source rows to the output rows (a row triple to a row pair, a row pair to a row) in
  bytes and 16-bit lanes, colour conversion included; other geometries with 16-bit vertical
  sums take an AVX2 vertical pass and horizontal row (two output pixels a register; four for
  an integer factor of 3 along the row, 4K -> 720p), the rest the SSE2 rows. The rows that
  read two or three source rows at a time prefetch them ahead (``MANTIS_PREFETCH_AHEAD``).
- SSE2 (``_resize_sse2.pxi``; every x86-64 build): a vertical pass into a 16-bit (or 32-bit)
  accumulated row, then a horizontal row kernel (pmaddwd over weight pairs, or plain adds for
  an integer factor), or both axes at once for exactly 2x.
- portable: the same vertical pass and Cython horizontal rows, one channel at a time.
"""

from cython.parallel cimport prange, threadid
from libc.stdint cimport int16_t, int32_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy as np

include "_resize_sse2.pxi"
include "_resize_avx2.pxi"
include "_resize_fixed.pxi"


ctypedef fused acc_t:
    uint16_t
    uint32_t

cdef enum:
    # Bilinear weights are fixed point with this many fractional bits (2048 == 1.0).
    BILINEAR_BITS = 11
    BILINEAR_ONE = 2048
    # Largest exact-area denominator handled with 32-bit sums and multiply-shift rounding.
    AREA_FAST_MAX_DENOM = 4194304
    # Largest denominator whose rounding runs in 16-bit lanes (area_rounding16).
    AREA_SMALL_MAX_DENOM = 64
    # Largest vertical denominator whose sums (<= 255 * it) fit an unsigned 16-bit lane.
    AREA_NARROW_MAX_DENOM_Y = 257
    # Widest cell (source pixels a side) of the fixed-point rows (resize_fixed.h's bound).
    AREA_FIXED_MAX_TAPS = 8
    # Output rows a thread takes at a time: neighbours share source rows (cache reuse) and a
    # thread the OS parks cannot hold back more than one chunk.
    ROWS_PER_CHUNK = 8
    # Zero pixels after each accumulated row: room for padded taps and 16-byte vector loads.
    ACC_PAD_PIXELS = 4


cdef struct Layout:
    int channels          # bytes per source pixel (3 or 4)
    bint swap_rb          # exchange bytes 0 and 2 (BGR order <-> RGB order)
    uint32_t keep         # mask applied to the packed word (drops padding / unused bytes)
    uint32_t fill         # OR-ed in after masking (constant 255 alpha)
    int out_channels      # 1 (L, packed word holds R, G, B in bytes 0, 1, 2), 3 or 4


def max_threads():
    """OpenMP's default team size (1 when the kernels were built without OpenMP)."""
    return mantis_omp_max_threads()


def simd_available():
    """True when the SSE2 row kernels are compiled in (every x86-64 build)."""
    return bool(MANTIS_SSE2)


def avx2_available():
    """True when the AVX2 kernels are compiled in and this CPU runs them."""
    return bool(MANTIS_AVX2 and mantis_avx2_supported())


# The AVX2 kernels run when available; tests switch them off to check the SSE2 rows.
cdef bint avx2_enabled = True


def use_avx2(bint enabled):
    """Allow (the default) or forbid the AVX2 kernels; returns the previous setting."""
    global avx2_enabled
    previous = avx2_enabled
    avx2_enabled = enabled
    return previous


def avx512_available():
    """True when the AVX-512 (F and BW) fixed-point rows are compiled in and this CPU runs
    them."""
    return bool(MANTIS_FIXED_AVX512 and mantis_avx512_supported())


# The AVX-512 rows run when available (and AVX2 is allowed); tests switch them off.
cdef bint avx512_enabled = True


def use_avx512(bint enabled):
    """Allow (the default) or forbid the AVX-512 rows; returns the previous setting."""
    global avx512_enabled
    previous = avx512_enabled
    avx512_enabled = enabled
    return previous


# --------------------------------------------------------------------------------------------
# Axis tables (built with the GIL, once per geometry; the caller caches them)
# --------------------------------------------------------------------------------------------

def area_axis(Py_ssize_t src_len, Py_ssize_t dst_len):
    """Exact coverage weights of ``dst_len`` cells laid over ``src_len`` pixels.

    Lengths are measured in units of 1 / gcd(src_len, dst_len) source pixels, where a source
    pixel is ``dst_len / g`` units wide and an output cell ``src_len / g`` units (the axis
    denominator). Returns ``(start, count, weight, denominator, pairs, q15, q14, pair_start,
    pair_weights)``: output
    ``j`` covers source pixels ``start[j] .. start[j] + count[j] - 1`` with integer
    ``weight[j, t]`` (zero padded to the widest cell) summing to the denominator;
    ``pairs[j, t]`` repeats ``(weight[j, 2t], weight[j, 2t + 1])`` four times as int16 for the
    SSE2 row; ``q15`` (uint16, summing to 32768) and ``q14`` (int16, summing to 16384, zero
    padded to whole windows of four) are the fixed-point rows' weights (``fixed_weights``),
    zeros when a cell touches more than ``AREA_FIXED_MAX_TAPS`` pixels (never used then);
    ``pair_start`` (``start // 2``) and ``pair_weights`` (int32 [dst_len, windows], each the
    Q14 weights of an even and the next odd pixel from ``2 * pair_start[j]``, the even one in
    the low 16 bits) are the paired rows' (``resize_fixed.h``).
    """
    cdef Py_ssize_t g = _gcd(src_len, dst_len)
    cdef Py_ssize_t cell = src_len // g, pixel = dst_len // g
    cdef Py_ssize_t taps = cell // pixel + 2
    start_arr = np.empty(dst_len, np.int32)
    count_arr = np.empty(dst_len, np.int32)
    weight_arr = np.zeros((dst_len, taps), np.uint32)
    cdef int32_t[::1] start = start_arr
    cdef int32_t[::1] count = count_arr
    cdef uint32_t[:, ::1] weight = weight_arr
    cdef Py_ssize_t j, k, lo, hi, k0, k1, widest = 1
    for j in range(dst_len):
        lo = j * cell
        hi = lo + cell
        k0 = lo // pixel
        k1 = (hi - 1) // pixel
        start[j] = <int32_t>k0
        count[j] = <int32_t>(k1 - k0 + 1)
        widest = max(widest, k1 - k0 + 1)
        for k in range(k0, k1 + 1):
            weight[j, k - k0] = <uint32_t>(min(hi, (k + 1) * pixel) - max(lo, k * pixel))
    weight_arr = np.ascontiguousarray(weight_arr[:, :widest])
    npairs = (widest + 1) // 2
    padded = np.zeros((dst_len, 2 * npairs), np.int16)
    padded[:, :widest] = weight_arr          # every weight <= pixel <= 16384 fits int16
    pairs = np.repeat(padded.reshape(dst_len, npairs, 1, 2), 4, axis=2)
    windows = (widest + 3) // 4
    # pair windows of the paired rows: from the even pixel at or before start, one more tap
    paired_windows = (widest + 2) // 2
    if widest <= AREA_FIXED_MAX_TAPS:
        q15 = fixed_weights(weight_arr, cell, MANTIS_FIXED_ONE_Y, widest).astype(np.uint16)
        q14 = fixed_weights(weight_arr, cell, MANTIS_FIXED_ONE_X, 4 * windows).astype(np.int16)
        moved = np.zeros((dst_len, 2 * paired_windows), np.int64)
        odd = (start_arr & 1).astype(bool)
        moved[~odd, :widest] = q14[~odd, :widest]
        moved[odd, 1:widest + 1] = q14[odd, :widest]
        packed = (moved[:, 0::2] & 0xFFFF) | (moved[:, 1::2] << 16)
        pair_weights = packed.astype(np.uint32).view(np.int32)
    else:
        q15 = np.zeros((dst_len, widest), np.uint16)
        q14 = np.zeros((dst_len, 4 * windows), np.int16)
        pair_weights = np.zeros((dst_len, paired_windows), np.int32)
    return (start_arr, count_arr, weight_arr, cell, pairs.reshape(dst_len, npairs, 8), q15, q14,
            start_arr >> 1, np.ascontiguousarray(pair_weights))


def fixed_weights(weight, Py_ssize_t denominator, Py_ssize_t one, Py_ssize_t taps):
    """Each row of exact weights (summing to ``denominator``) scaled to sum to ``one``: every
    weight rounded half up, the rounding remainder added to the row's (first) largest weight
    (so a constant image stays constant), zero padded to ``taps`` columns. int64 [rows, taps].
    For cells of at most 8 pixels the largest weight is at least ``one / 8`` and the remainder
    at most 4, so every weight stays in ``0 .. one``."""
    exact = np.asarray(weight, np.int64)
    scaled = (2 * exact * one + denominator) // (2 * denominator)
    remainder = one - scaled.sum(axis=1)
    scaled[np.arange(len(scaled)), np.argmax(exact, axis=1)] += remainder
    padded = np.zeros((len(scaled), max(taps, scaled.shape[1])), np.int64)
    padded[:, :scaled.shape[1]] = scaled
    return padded


def area_rounding(uint64_t denominator):
    """``(multiplier, shift)`` with ``((2*s + d) * multiplier) >> shift == floor(s/d + 1/2)``.

    Exact for every ``0 <= s <= 255 * d`` when ``d <= 2**22``: with ``n = 2s + d < 511 d`` and
    ``m = ceil(2**k / 2d) = (2**k + e) / 2d`` where ``0 <= e < 2d``, ``n*m / 2**k`` exceeds
    ``n / 2d`` by ``n*e / (2d * 2**k) < 1 / 2d`` once ``2**k >= 1022 d**2``, which is less than
    the distance from ``n / 2d`` to the next integer above it, so the floor is unchanged. Both
    ``n`` and ``m`` fit 32 bits and ``n * m < 2**64``.
    """
    if denominator < 1 or denominator > AREA_FAST_MAX_DENOM:
        raise ValueError(f"denominator {denominator} outside 1..{AREA_FAST_MAX_DENOM}")
    d = int(denominator)
    shift = (1022 * d * d - 1).bit_length()
    multiplier = ((1 << shift) + 2 * d - 1) // (2 * d)
    return multiplier, shift


def area_rounding16(uint64_t denominator):
    """``(multiplier, shift)`` for the 16-bit form, ``((2*s + d) * m >> 16) >> (shift - 16)``.

    Same proof as ``area_rounding`` with ``shift >= 16``; for ``d <= 64`` every ``n = 2s + d``
    and ``m`` fit 16 bits. Returns ``(0, 0)`` when ``d > 64``.
    """
    if denominator < 1:
        raise ValueError(f"denominator must be >= 1, got {denominator}")
    if denominator > AREA_SMALL_MAX_DENOM:
        return 0, 0
    d = int(denominator)
    shift = max(16, (1022 * d * d - 1).bit_length())
    return ((1 << shift) + 2 * d - 1) // (2 * d), shift


def bilinear_axis(Py_ssize_t src_len, Py_ssize_t dst_len):
    """Half-pixel-centre linear taps: ``(left int32[dst], frac uint32[dst], lanes int32[dst, 8])``.

    Output ``j`` samples source coordinate ``(j + 1/2) * src_len / dst_len - 1/2``, clamped to
    ``[0, src_len - 1]``; ``frac`` is the right pixel's weight in 1/2048ths, rounded half up;
    ``lanes`` repeats the left weight (2048 - frac) four times and frac four times (the AVX2
    row's multipliers). Computed in integers: no float rounding enters the geometry.
    """
    left_arr = np.empty(dst_len, np.int32)
    frac_arr = np.empty(dst_len, np.uint32)
    cdef int32_t[::1] left = left_arr
    cdef uint32_t[::1] frac = frac_arr
    cdef Py_ssize_t j, num, den = 2 * dst_len, x0, rem
    for j in range(dst_len):
        num = (2 * j + 1) * src_len - dst_len          # source coordinate * den
        if num <= 0:
            x0, rem = 0, 0
        else:
            x0 = num // den
            rem = num - x0 * den
            if x0 >= src_len - 1:
                x0, rem = src_len - 1, 0
        left[j] = <int32_t>x0
        frac[j] = <uint32_t>((rem * BILINEAR_ONE * 2 + den) // (2 * den))
    lanes = np.empty((dst_len, 8), np.int32)
    lanes[:, :4] = (BILINEAR_ONE - frac_arr.astype(np.int64))[:, None]
    lanes[:, 4:] = frac_arr[:, None]
    return left_arr, frac_arr, lanes


def nearest_axis(Py_ssize_t src_len, Py_ssize_t dst_len):
    """Centre sampling: output ``j`` takes source ``floor((j + 1/2) * src_len / dst_len)``."""
    index_arr = np.empty(dst_len, np.int32)
    cdef int32_t[::1] index = index_arr
    cdef Py_ssize_t j
    for j in range(dst_len):
        index[j] = <int32_t>(((2 * j + 1) * src_len) // (2 * dst_len))
    return index_arr


def uses_fixed_point(tuple x_axis, tuple y_axis):
    """True when ``resize_area`` takes the fixed-point rows for these axes (``area_axis``):
    the cell's denominator beyond the 16-bit exact rounding (> 64) and cells of at most 8
    source pixels a side; otherwise the exact rows."""
    return bool(x_axis[3] * y_axis[3] > AREA_SMALL_MAX_DENOM
                and x_axis[2].shape[1] <= AREA_FIXED_MAX_TAPS
                and y_axis[2].shape[1] <= AREA_FIXED_MAX_TAPS)


cdef (Py_ssize_t, Py_ssize_t) _row_span(Py_ssize_t start, Py_ssize_t stop, Py_ssize_t rows):
    """The output rows to compute, clamped to ``[0, rows]`` (``stop`` -1: through the last)."""
    if stop < 0 or stop > rows:
        stop = rows
    start = min(max(start, 0), stop)
    return start, stop


cdef Py_ssize_t _gcd(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    while b:
        a, b = b, a % b
    return a


# --------------------------------------------------------------------------------------------
# Pixel packing and row output
# --------------------------------------------------------------------------------------------

cdef inline uint32_t finish(uint32_t v, bint swap_rb, uint32_t keep,
                            uint32_t fill) noexcept nogil:
    """Source-order packed pixel -> output byte order, padding masked, alpha filled."""
    if swap_rb:
        v = mantis_swap_rb(v)
    return (v & keep) | fill


cdef inline void emit_row(const uint32_t* packed, uint8_t* o, Py_ssize_t n,
                          int out_channels) noexcept nogil:
    """Write ``n`` packed pixels as 4, 3 or 1 (luma) bytes each."""
    cdef Py_ssize_t j
    cdef uint32_t v
    cdef uint64_t lo
    if out_channels == 4:
        if MANTIS_LITTLE_ENDIAN:
            memcpy(o, packed, <size_t>n * 4)
        else:
            for j in range(n):
                v = packed[j]
                o[4 * j] = <uint8_t>v
                o[4 * j + 1] = <uint8_t>(v >> 8)
                o[4 * j + 2] = <uint8_t>(v >> 16)
                o[4 * j + 3] = <uint8_t>(v >> 24)
    elif out_channels == 3:
        j = 0
        if MANTIS_LITTLE_ENDIAN:
            # Four pixels -> 12 bytes as one 8-byte and one 4-byte store.
            while j + 4 <= n:
                lo = ((packed[j] & 0xFFFFFF) | (<uint64_t>(packed[j + 1] & 0xFFFFFF) << 24)
                      | (<uint64_t>packed[j + 2] << 48))
                v = ((packed[j + 2] >> 16) & 0xFF) | ((packed[j + 3] & 0xFFFFFF) << 8)
                memcpy(o + 3 * j, &lo, 8)
                memcpy(o + 3 * j + 8, &v, 4)
                j += 4
        while j < n:
            v = packed[j]
            o[3 * j] = <uint8_t>v
            o[3 * j + 1] = <uint8_t>(v >> 8)
            o[3 * j + 2] = <uint8_t>(v >> 16)
            j += 1
    else:
        # ITU-R BT.601 luma in 16-bit fixed point, the formula of Pillow's convert("L").
        for j in range(n):
            v = packed[j]
            o[j] = <uint8_t>((19595 * (v & 0xFF) + 38470 * ((v >> 8) & 0xFF)
                              + 7471 * ((v >> 16) & 0xFF) + 0x8000) >> 16)


cdef inline void emit_simd(const uint32_t* packed, uint8_t* o, Py_ssize_t n, int out_channels,
                           bint avx2) noexcept nogil:
    """``emit_row``, with the AVX2 rows for 3 bytes and L when ``avx2`` (same bytes)."""
    if avx2 and out_channels == 3:
        mantis_emit_rgb_avx2(packed, o, n)
    elif avx2 and out_channels == 1:
        mantis_emit_luma_avx2(packed, o, n)
    else:
        emit_row(packed, o, n, out_channels)


cdef inline uint8_t* thread_scratch(uint8_t[:, ::1] scratch, Py_ssize_t tid) noexcept nogil:
    """This thread's scratch row, aligned to a cache line."""
    cdef uint8_t* mine = &scratch[tid, 0]
    return mine + (64 - (<size_t>mine) % 64) % 64


cdef object new_scratch(int threads, Py_ssize_t per_thread):
    """Zeroed per-thread scratch rows (+64 bytes each for alignment)."""
    return np.zeros((threads, (per_thread + 63) // 64 * 64 + 64), np.uint8)


# --------------------------------------------------------------------------------------------
# Area (exact coverage-weighted average)
# --------------------------------------------------------------------------------------------

cdef inline void add_rows(acc_t* acc, bint first, Py_ssize_t n, Py_ssize_t count, bint unit,
                          const uint8_t* r0, const uint8_t* r1, const uint8_t* r2,
                          acc_t w0, acc_t w1, acc_t w2) noexcept nogil:
    """acc (=|+=) the weighted sum of ``count`` (1..3) rows in one pass over n bytes."""
    cdef Py_ssize_t e
    if first:
        if count == 3:
            if unit:
                for e in range(n):
                    acc[e] = <acc_t>(r0[e] + r1[e] + r2[e])
            else:
                for e in range(n):
                    acc[e] = <acc_t>(w0 * r0[e] + w1 * r1[e] + w2 * r2[e])
        elif count == 2:
            if unit:
                for e in range(n):
                    acc[e] = <acc_t>(r0[e] + r1[e])
            else:
                for e in range(n):
                    acc[e] = <acc_t>(w0 * r0[e] + w1 * r1[e])
        else:
            for e in range(n):
                acc[e] = <acc_t>(w0 * r0[e])
    elif count == 3:
        if unit:
            for e in range(n):
                acc[e] += <acc_t>(r0[e] + r1[e] + r2[e])
        else:
            for e in range(n):
                acc[e] += <acc_t>(w0 * r0[e] + w1 * r1[e] + w2 * r2[e])
    elif count == 2:
        if unit:
            for e in range(n):
                acc[e] += <acc_t>(r0[e] + r1[e])
        else:
            for e in range(n):
                acc[e] += <acc_t>(w0 * r0[e] + w1 * r1[e])
    else:
        for e in range(n):
            acc[e] += <acc_t>(w0 * r0[e])


cdef inline void area_vertical(const uint8_t* top, Py_ssize_t stride, const uint32_t* wy,
                               Py_ssize_t rows, bint unit, acc_t* acc,
                               Py_ssize_t n) noexcept nogil:
    """acc[e] = sum over the cell's rows of weight * row[e] (e over n bytes).

    Rows go in groups of three (two when two are left) so acc is written once per group;
    ``unit`` (an integer factor: every weight is 1) adds without multiplying.
    """
    cdef Py_ssize_t t = 0, count
    cdef const uint8_t* r0
    while t < rows:
        count = rows - t
        if count > 3:
            count = 2 if count == 4 else 3
        r0 = top + t * stride
        add_rows(acc, t == 0, n, count, unit, r0, r0 + stride, r0 + 2 * stride,
                 <acc_t>wy[t], <acc_t>(wy[t + 1] if count > 1 else 0),
                 <acc_t>(wy[t + 2] if count > 2 else 0))
        t += count


cdef inline uint32_t round_area(uint32_t s, uint32_t denom, uint64_t multiplier,
                                int shift) noexcept nogil:
    return <uint32_t>(((<uint64_t>(2 * s + denom)) * multiplier) >> shift)


cdef inline void area_horizontal(const acc_t* acc, uint32_t* packed, Py_ssize_t out_w,
                                 const int32_t* xs, const uint32_t* xw, Py_ssize_t taps,
                                 uint32_t denom, uint64_t multiplier, int shift,
                                 const Layout* layout) noexcept nogil:
    """Portable row: weighted sums per channel (32-bit, denominators <= 2**22), rounded."""
    cdef Py_ssize_t j, t, channels = layout.channels
    cdef const acc_t* p
    cdef const uint32_t* w
    cdef uint32_t wt, s0, s1, s2, s3
    cdef bint swap_rb = layout.swap_rb
    cdef uint32_t keep = layout.keep, fill = layout.fill
    for j in range(out_w):
        p = acc + channels * xs[j]
        w = xw + j * taps
        s0 = s1 = s2 = s3 = 0
        for t in range(taps):
            wt = w[t]
            s0 += wt * p[0]
            s1 += wt * p[1]
            s2 += wt * p[2]
            if channels == 4:
                s3 += wt * p[3]
            p += channels
        packed[j] = finish(round_area(s0, denom, multiplier, shift)
                           | round_area(s1, denom, multiplier, shift) << 8
                           | round_area(s2, denom, multiplier, shift) << 16
                           | round_area(s3, denom, multiplier, shift) << 24,
                           swap_rb, keep, fill)


cdef inline void area_horizontal_wide(const uint32_t* acc, uint32_t* packed, Py_ssize_t out_w,
                                      const int32_t* xs, const uint32_t* xw, Py_ssize_t taps,
                                      uint64_t denom, const Layout* layout) noexcept nogil:
    """64-bit sums and true division: huge co-prime geometries (denominator > 2**22)."""
    cdef Py_ssize_t j, t, c, channels = layout.channels
    cdef const uint32_t* p
    cdef uint64_t s[4]
    cdef uint32_t v
    for j in range(out_w):
        p = acc + channels * xs[j]
        s[0] = s[1] = s[2] = s[3] = 0
        for t in range(taps):
            for c in range(channels):
                s[c] += <uint64_t>xw[j * taps + t] * p[c]
            p += channels
        v = 0
        for c in range(channels):
            v |= <uint32_t>((2 * s[c] + denom) // (2 * denom)) << (8 * c)
        packed[j] = finish(v, layout.swap_rb, layout.keep, layout.fill)


cdef inline void grouped_rows(uint8_t* pairs, Py_ssize_t pairs_bytes, uint8_t* out,
                              Py_ssize_t out_stride, const uint8_t* base, Py_ssize_t stride,
                              Py_ssize_t first, Py_ssize_t stop, Py_ssize_t group, bint fours,
                              const int32_t* ys, const int32_t* ycount, const uint16_t* yq,
                              Py_ssize_t yq_taps, Py_ssize_t crop_w, Py_ssize_t out_w,
                              int out_channels,
                              const int32_t* pair_start, const int32_t* pair_weights,
                              Py_ssize_t windows, bint swap_rb, uint32_t keep,
                              uint32_t fill, int channels) noexcept nogil:
    """Output rows ``first`` .. ``first + group - 1`` (the last repeated past ``stop``) of the
    fixed-point rows: each row's vertical values into its slot of the pairs, then the
    horizontal pass for all of them at once (into packed rows after the pairs for L). From
    3 channels the vertical pass spreads each load to 4 bytes a pixel in registers (the fourth
    channel, 0, is dropped or filled like BGRX's X)."""
    cdef uint8_t* dest[4]
    cdef const uint8_t* tops[4]
    cdef const uint16_t* weights[4]
    cdef Py_ssize_t rows[4]
    cdef Py_ssize_t r, row
    dest[2] = dest[3] = NULL
    for r in range(group):
        row = min(first + r, stop - 1)
        tops[r] = base + ys[row] * stride
        weights[r] = yq + row * yq_taps
        rows[r] = ycount[row]
        dest[r] = (pairs + pairs_bytes + r * out_w * 4 if out_channels == 1
                   else out + row * out_stride)
    if fours:
        mantis_fixed_vertical_fours_avx512(tops, weights, rows, stride, channels, pairs, crop_w)
    else:
        mantis_fixed_vertical_pairs_avx2(tops, weights, rows, stride, channels, pairs, crop_w)
    if fours:
        mantis_fixed_hrow_fours_avx512(pairs, dest[0], dest[1], dest[2], dest[3], out_w,
                                       pair_start, pair_weights, windows, out_channels == 3,
                                       swap_rb, keep, fill)
    else:
        mantis_fixed_hrow_paired_avx2(pairs, dest[0], dest[1], out_w, pair_start, pair_weights,
                                      windows, out_channels == 3, swap_rb, keep, fill)
    if out_channels == 1:
        for r in range(group):
            mantis_emit_luma_avx2(<uint32_t*>dest[r], out + min(first + r, stop - 1) * out_stride,
                                  out_w)


def resize_area(const uint8_t[:, :] src, uint8_t[:, :] out, Py_ssize_t crop_x,
                Py_ssize_t crop_y, Py_ssize_t crop_w, Py_ssize_t crop_h, tuple x_axis,
                tuple y_axis,
                bint swap_rb, uint32_t keep, uint32_t fill, int channels, int out_channels,
                int threads, bint simd=True, Py_ssize_t row_start=0, Py_ssize_t row_stop=-1):
    """Area resample of the crop into ``out``, exact or fixed point by geometry (see the module
    docstring and ``uses_fixed_point``); only output
    rows ``row_start`` to ``row_stop`` (-1: the last) when given, the others left as they are."""
    cdef Layout layout = Layout(channels, swap_rb, keep, fill, out_channels)
    cdef const int32_t[::1] xs = x_axis[0]
    cdef const uint32_t[:, ::1] xw = x_axis[2]
    cdef const int16_t[:, :, ::1] xpairs = x_axis[4]
    cdef const int32_t[::1] ys = y_axis[0]
    cdef const int32_t[::1] ycount = y_axis[1]
    cdef const uint32_t[:, ::1] yw = y_axis[2]
    cdef uint64_t denom_x = x_axis[3], denom_y = y_axis[3]
    cdef uint64_t denom = denom_x * denom_y
    cdef const int16_t[:, ::1] xq = x_axis[6]
    cdef const uint16_t[:, ::1] yq = y_axis[5]
    cdef Py_ssize_t nwin = xq.shape[1] // 4
    cdef const int32_t[::1] pair_start = x_axis[7]
    cdef const int32_t[:, ::1] pair_weights = x_axis[8]
    cdef Py_ssize_t windows = pair_weights.shape[1]
    # The fixed-point rows (resize_fixed.h), within one level of the exact average.
    cdef bint fixed = uses_fixed_point(x_axis, y_axis)
    cdef bint wide = denom > AREA_FAST_MAX_DENOM
    cdef bint narrow = (not wide) and denom_y <= AREA_NARROW_MAX_DENOM_Y
    cdef uint64_t multiplier = 0
    cdef uint32_t multiplier16 = 0
    cdef int shift = 0, shift16 = 0
    if not wide:
        multiplier, shift = area_rounding(denom)
        multiplier16, shift16 = area_rounding16(denom)
    simd = simd and MANTIS_SSE2
    cdef bint avx2 = simd and avx2_enabled and MANTIS_AVX2 and mantis_avx2_supported()
    # Integer factor along the row: a source pixel is one unit wide, so every weight is 1.
    cdef Py_ssize_t cell_x = denom_x
    cdef bint box_x = narrow and multiplier16 != 0 and xw.shape[0] * cell_x == crop_w
    cdef bint box_y = <Py_ssize_t>(yw.shape[0] * denom_y) == crop_h
    # Exactly 2x on both axes from 4 channels: one pass over pairs of source rows.
    cdef bint halve = simd and box_x and box_y and cell_x == 2 and denom_y == 2 and channels == 4
    cdef Py_ssize_t out_h = out.shape[0], out_w = out.shape[1] // out_channels
    row_start, row_stop = _row_span(row_start, row_stop, out_h)
    cdef Py_ssize_t taps_x = xw.shape[1], npairs = xpairs.shape[1]
    cdef Py_ssize_t n = crop_w * channels
    cdef Py_ssize_t stride = src.strides[0]
    # Fixed point with AVX2 (AVX-512): output rows two (four) at a time, in the layout of
    # resize_fixed.h's paired rows; a group past the last row repeats it. 3-channel rows are
    # read as they are, each load spread to 4 bytes a pixel in registers.
    cdef bint grouped = fixed and avx2
    cdef bint fours = (grouped and avx512_enabled and MANTIS_FIXED_AVX512
                       and mantis_avx512_supported())
    cdef Py_ssize_t group = 4 if fours else 2
    cdef Py_ssize_t pairs_bytes = ((crop_w + 1) // 2 + windows + 1) * 16 * group
    # Per-thread scratch: the accumulated row (zero padded so padded taps read zeros) and the
    # packed output row, each starting on its own cache line; for the grouped rows the pairs
    # (zero beyond the row: a cell's last window may reach past it) and a packed row a member.
    cdef Py_ssize_t acc_bytes = ((n + (taps_x + ACC_PAD_PIXELS) * channels) * 4 + 63) // 64 * 64
    scratch_arr = new_scratch(threads, pairs_bytes + group * out_w * 4 if grouped
                              else acc_bytes + out_w * 4)
    cdef uint8_t[:, ::1] scratch = scratch_arr
    cdef const uint8_t* base = &src[crop_y, crop_x * channels]
    cdef Py_ssize_t i
    cdef uint8_t* mine
    cdef uint32_t* packed
    cdef const uint8_t* top
    # 1.5x or 2x on both axes: output rows straight from their source rows (a row pair from
    # three rows, or a row from two), no accumulated row; L goes through packed rows.
    cdef bint thirds = avx2 and 2 * crop_w == 3 * out_w and 2 * crop_h == 3 * out_h
    cdef bint halves = avx2 and crop_w == 2 * out_w and crop_h == 2 * out_h
    cdef int direct_channels = 4 if out_channels == 1 else out_channels
    cdef uint8_t* o0
    cdef uint8_t* o1
    cdef Py_ssize_t row, done
    cdef Py_ssize_t groups = (row_stop - row_start + group - 1) // group
    cdef uint8_t* out_base = &out[0, 0]
    cdef Py_ssize_t out_stride = out.strides[0]
    if grouped:
        with nogil:
            mantis_clear_avx_upper()
            for i in prange(groups, num_threads=threads, schedule="dynamic",
                            chunksize=max(1, ROWS_PER_CHUNK // group)):
                mine = thread_scratch(scratch, threadid())
                grouped_rows(mine, pairs_bytes, out_base, out_stride, base, stride,
                             row_start + group * i, row_stop, group, fours, &ys[0], &ycount[0],
                             &yq[0, 0], yq.shape[1], crop_w, out_w, out_channels,
                             &pair_start[0], &pair_weights[0, 0], windows, swap_rb, keep, fill,
                             channels)
        return
    if thirds or halves:
        with nogil:
            mantis_clear_avx_upper()
            # Thirds work in output row pairs: the span widens to whole pairs (same values).
            for i in prange(row_start // 2 if thirds else row_start,
                            (row_stop + 1) // 2 if thirds else row_stop, num_threads=threads,
                            schedule="dynamic", chunksize=ROWS_PER_CHUNK // 2):
                mine = thread_scratch(scratch, threadid())
                row = 2 * i if thirds else i
                o0 = mine if out_channels == 1 else &out[row, 0]
                if thirds:
                    o1 = mine + acc_bytes if out_channels == 1 else &out[row + 1, 0]
                    top = base + 3 * i * stride
                    mantis_area_rows_thirds(top, top + stride, top + 2 * stride, o0, o1, out_w,
                                            channels, direct_channels, multiplier16, shift16,
                                            swap_rb, keep, fill)
                else:
                    top = base + 2 * i * stride
                    mantis_area_row_halves(top, top + stride, o0, out_w, channels,
                                           direct_channels, swap_rb, keep, fill)
                if out_channels == 1:
                    mantis_emit_luma_avx2(<uint32_t*>o0, &out[row, 0], out_w)
                    if thirds:
                        mantis_emit_luma_avx2(<uint32_t*>o1, &out[row + 1, 0], out_w)
        return
    with nogil:
        mantis_clear_avx_upper()
        for i in prange(row_start, row_stop, num_threads=threads, schedule="dynamic",
                        chunksize=ROWS_PER_CHUNK):
            mine = thread_scratch(scratch, threadid())
            packed = <uint32_t*>(mine + acc_bytes)
            if halve:
                mantis_area_row_2x2(base + 2 * i * stride, base + (2 * i + 1) * stride, packed,
                                    out_w, swap_rb, keep, fill)
            elif fixed:
                top = base + ys[i] * stride
                if avx2:
                    mantis_fixed_vertical_avx2(top, stride, &yq[i, 0], ycount[i],
                                               <uint16_t*>mine, n)
                elif simd:
                    mantis_fixed_vertical_sse2(top, stride, &yq[i, 0], ycount[i],
                                               <uint16_t*>mine, 0, n)
                else:
                    mantis_fixed_vertical_c(top, stride, &yq[i, 0], ycount[i],
                                            <uint16_t*>mine, 0, n)
                if simd:
                    mantis_fixed_hrow_sse2(<uint16_t*>mine, packed, out_w, &xs[0], &xq[0, 0],
                                           nwin, channels, swap_rb, keep, fill)
                else:
                    mantis_fixed_hrow_c(<uint16_t*>mine, packed, out_w, &xs[0], &xq[0, 0],
                                        nwin, channels, swap_rb, keep, fill)
            elif wide:
                area_vertical(base + ys[i] * stride, stride, &yw[i, 0], ycount[i], box_y,
                              <uint32_t*>mine, n)
                area_horizontal_wide(<uint32_t*>mine, packed, out_w, &xs[0], &xw[0, 0],
                                     taps_x, denom, &layout)
            elif narrow:
                if avx2:
                    mantis_area_vertical16_avx2(base + ys[i] * stride, stride, &yw[i, 0],
                                                ycount[i], box_y, <uint16_t*>mine, n)
                else:
                    area_vertical(base + ys[i] * stride, stride, &yw[i, 0], ycount[i], box_y,
                                  <uint16_t*>mine, n)
                if simd and box_x:
                    done = 0
                    if avx2 and cell_x == 3 and channels == 4:
                        done = mantis_area_hrow_box3_avx2(<uint16_t*>mine, packed, out_w,
                                                          <uint32_t>denom, multiplier16,
                                                          shift16, swap_rb, keep, fill)
                    if done < out_w:
                        mantis_area_hrow_box(<uint16_t*>mine, packed + done, out_w - done,
                                             &xs[done], cell_x, channels, <uint32_t>denom,
                                             <uint32_t>multiplier, shift, multiplier16,
                                             shift16, swap_rb, keep, fill)
                elif avx2:
                    mantis_area_hrow16_avx2(<uint16_t*>mine, packed, out_w, &xs[0],
                                            &xpairs[0, 0, 0], npairs, cell_x, channels,
                                            <uint32_t>denom, <uint32_t>multiplier, shift,
                                            multiplier16, shift16, swap_rb, keep, fill)
                elif simd:
                    mantis_area_hrow16(<uint16_t*>mine, packed, out_w, &xs[0], &xpairs[0, 0, 0],
                                       npairs, cell_x, channels, <uint32_t>denom,
                                       <uint32_t>multiplier, shift, multiplier16, shift16,
                                       swap_rb, keep, fill)
                else:
                    area_horizontal(<uint16_t*>mine, packed, out_w, &xs[0], &xw[0, 0], taps_x,
                                    <uint32_t>denom, multiplier, shift, &layout)
            else:
                area_vertical(base + ys[i] * stride, stride, &yw[i, 0], ycount[i], box_y,
                              <uint32_t*>mine, n)
                if simd:
                    mantis_area_hrow32(<uint32_t*>mine, packed, out_w, &xs[0], &xw[0, 0],
                                       taps_x, channels, <uint32_t>denom, <uint32_t>multiplier,
                                       shift, multiplier16, shift16, swap_rb, keep, fill)
                else:
                    area_horizontal(<uint32_t*>mine, packed, out_w, &xs[0], &xw[0, 0], taps_x,
                                    <uint32_t>denom, multiplier, shift, &layout)
            emit_simd(packed, &out[i, 0], out_w, out_channels, avx2)


# --------------------------------------------------------------------------------------------
# Bilinear and nearest
# --------------------------------------------------------------------------------------------

cdef inline void bilinear_row(uint32_t* acc, const uint8_t* r0, const uint8_t* r1,
                              uint32_t fy, Py_ssize_t n, uint32_t* packed, Py_ssize_t out_w,
                              const int32_t* xs, const uint32_t* xf,
                              const Layout* layout) noexcept nogil:
    cdef Py_ssize_t e, j
    cdef uint32_t w0 = BILINEAR_ONE - fy, f, g, s0, s1, s2, s3
    cdef const uint32_t* p
    cdef Py_ssize_t channels = layout.channels
    cdef bint swap_rb = layout.swap_rb
    cdef uint32_t keep = layout.keep, fill = layout.fill
    cdef uint32_t half = 1 << (2 * BILINEAR_BITS - 1)
    if fy == 0:
        for e in range(n):
            acc[e] = <uint32_t>r0[e] << BILINEAR_BITS
    else:
        for e in range(n):
            acc[e] = w0 * r0[e] + fy * r1[e]
    for j in range(out_w):
        p = acc + channels * xs[j]
        f = xf[j]
        g = BILINEAR_ONE - f
        s0 = (g * p[0] + f * p[channels] + half) >> (2 * BILINEAR_BITS)
        s1 = (g * p[1] + f * p[channels + 1] + half) >> (2 * BILINEAR_BITS)
        s2 = (g * p[2] + f * p[channels + 2] + half) >> (2 * BILINEAR_BITS)
        s3 = (g * p[3] + f * p[channels + 3] + half) >> (2 * BILINEAR_BITS)
        packed[j] = finish(s0 | s1 << 8 | s2 << 16 | s3 << 24, swap_rb, keep, fill)


def resize_bilinear(const uint8_t[:, :] src, uint8_t[:, :] out, Py_ssize_t crop_x,
                    Py_ssize_t crop_y, Py_ssize_t crop_w, Py_ssize_t crop_h, tuple x_axis,
                    tuple y_axis, bint swap_rb, uint32_t keep, uint32_t fill, int channels,
                    int out_channels, int threads, Py_ssize_t row_start=0,
                    Py_ssize_t row_stop=-1):
    """Two-tap linear interpolation with half-pixel centres, edges clamped to the crop (output
    rows ``row_start`` to ``row_stop`` only, as for ``resize_area``)."""
    cdef Layout layout = Layout(channels, swap_rb, keep, fill, out_channels)
    cdef const int32_t[::1] xs = x_axis[0]
    cdef const uint32_t[::1] xf = x_axis[1]
    cdef const int32_t[:, ::1] lanes = x_axis[2]
    cdef const int32_t[::1] ys = y_axis[0]
    cdef const uint32_t[::1] yf = y_axis[1]
    cdef Py_ssize_t out_h = out.shape[0], out_w = out.shape[1] // out_channels
    row_start, row_stop = _row_span(row_start, row_stop, out_h)
    cdef Py_ssize_t n = crop_w * channels
    cdef Py_ssize_t stride = src.strides[0]
    cdef Py_ssize_t acc_bytes = ((n + ACC_PAD_PIXELS * channels) * 4 + 63) // 64 * 64
    scratch_arr = new_scratch(threads, acc_bytes + out_w * 4)
    cdef uint8_t[:, ::1] scratch = scratch_arr
    cdef const uint8_t* base = &src[crop_y, crop_x * channels]
    cdef Py_ssize_t i, y0, y1
    cdef uint8_t* mine
    cdef uint32_t* packed
    cdef bint avx2 = MANTIS_SSE2 and avx2_enabled and MANTIS_AVX2 and mantis_avx2_supported()
    with nogil:
        mantis_clear_avx_upper()
        for i in prange(row_start, row_stop, num_threads=threads, schedule="dynamic",
                        chunksize=ROWS_PER_CHUNK):
            mine = thread_scratch(scratch, threadid())
            packed = <uint32_t*>(mine + acc_bytes)
            y0 = ys[i]
            y1 = y0 + 1 if y0 + 1 < crop_h else y0
            if avx2:
                mantis_bilinear_vertical_avx2(base + y0 * stride, base + y1 * stride, yf[i],
                                              <uint32_t*>mine, n)
                mantis_bilinear_hrow_avx2(<uint32_t*>mine, packed, out_w, &xs[0], &lanes[0, 0],
                                          channels, swap_rb, keep, fill)
            else:
                bilinear_row(<uint32_t*>mine, base + y0 * stride, base + y1 * stride, yf[i],
                             n, packed, out_w, &xs[0], &xf[0], &layout)
            emit_simd(packed, &out[i, 0], out_w, out_channels, avx2)


cdef inline void nearest_row(const uint8_t* row, uint32_t* packed, Py_ssize_t out_w,
                             const int32_t* xi, const Layout* layout) noexcept nogil:
    cdef Py_ssize_t j
    cdef const uint8_t* p
    cdef uint32_t v
    cdef bint swap_rb = layout.swap_rb
    cdef uint32_t keep = layout.keep, fill = layout.fill
    if layout.channels == 4:
        for j in range(out_w):
            memcpy(&v, row + 4 * xi[j], 4)
            if not MANTIS_LITTLE_ENDIAN:
                p = row + 4 * xi[j]
                v = p[0] | (<uint32_t>p[1]) << 8 | (<uint32_t>p[2]) << 16 | (<uint32_t>p[3]) << 24
            packed[j] = finish(v, swap_rb, keep, fill)
    else:
        for j in range(out_w):
            p = row + 3 * xi[j]
            packed[j] = finish(p[0] | (<uint32_t>p[1]) << 8 | (<uint32_t>p[2]) << 16,
                               swap_rb, keep, fill)


def resize_nearest(const uint8_t[:, :] src, uint8_t[:, :] out, Py_ssize_t crop_x,
                   Py_ssize_t crop_y, const int32_t[::1] xi, const int32_t[::1] yi,
                   bint swap_rb, uint32_t keep, uint32_t fill, int channels, int out_channels,
                   int threads, bint simd=True, Py_ssize_t row_start=0,
                   Py_ssize_t row_stop=-1):
    """Centre-sampled nearest neighbour; with identity tables, a pure crop + convert (output
    rows ``row_start`` to ``row_stop`` only, as for ``resize_area``)."""
    cdef Layout layout = Layout(channels, swap_rb, keep, fill, out_channels)
    cdef Py_ssize_t out_h = out.shape[0], out_w = out.shape[1] // out_channels
    row_start, row_stop = _row_span(row_start, row_stop, out_h)
    cdef Py_ssize_t stride = src.strides[0]
    scratch_arr = new_scratch(threads, out_w * 4)
    cdef uint8_t[:, ::1] scratch = scratch_arr
    cdef const uint8_t* base = &src[crop_y, crop_x * channels]
    cdef Py_ssize_t i
    cdef uint32_t* packed
    # Same width (a crop or a vertical-only resample): rows convert without an index table.
    cdef bint straight = (simd and MANTIS_SSE2 and channels == 4 and out_w == xi.shape[0]
                          and xi[out_w - 1] == out_w - 1)
    cdef bint avx2 = (simd and MANTIS_SSE2 and avx2_enabled and MANTIS_AVX2
                      and mantis_avx2_supported())
    cdef Py_ssize_t row_pixels = src.shape[1] // channels - crop_x  # from the crop's left edge
    cdef Py_ssize_t done
    with nogil:
        mantis_clear_avx_upper()
        for i in prange(row_start, row_stop, num_threads=threads, schedule="dynamic",
                        chunksize=ROWS_PER_CHUNK):
            packed = <uint32_t*>thread_scratch(scratch, threadid())
            if straight:
                mantis_convert_row4(base + yi[i] * stride, packed, out_w, swap_rb, keep, fill)
            else:
                done = 0
                if avx2:
                    done = mantis_nearest_row_avx2(base + yi[i] * stride, row_pixels, channels,
                                                   &xi[0], packed, out_w, swap_rb, keep, fill)
                nearest_row(base + yi[i] * stride, packed + done, out_w - done, &xi[done],
                            &layout)
            emit_simd(packed, &out[i, 0], out_w, out_channels, avx2)
