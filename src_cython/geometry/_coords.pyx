# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Batched coordinate maps, bit-exact with the scalar functions of ``mantis_fast.geometry.coords``.

Every per-axis map the package needs (brain -> display scaling, normalized 0..1000 <-> pixels,
display-local -> global) is one shape::

    v = clip(v, in_lo, in_hi)           # only when in_clip (normalized input is clamped first)
    d = v - in_off                      # pixels -> normalized: distance from the area origin
    r = round((d * num) / den)          # Python's round(d * num / den): multiply, then divide
                                        # (half_up: floor(q + 1/2), JavaScript's Math.round)
    r = clip(r, out_lo, out_hi)         # only when out_clip
    out = r + out_off                   # must fit int32

evaluated in float64 in exactly that order and rounded half to even (the hardware conversion
in the default rounding mode) or, for the display-local -> global map, half up as the seed's
``Math.round`` does; each element equals what the Python scalar expression gives.
Integer inputs are exact as long as ``|d| * num <= 2**53``; the caller passes the integer range
that guarantees it (``int_lo..int_hi``) and rows outside it are reported, never rounded.

The kernels never raise for bad data: they return ``(row, code)`` of the first bad row, or
``(-1, 0)``, and the Python layer turns that into a ValueError naming the row.
"""

from cython.parallel cimport prange
from libc.math cimport floor, isfinite
from libc.stdint cimport int32_t, int64_t

cdef extern from "round_half_even.h":
    int64_t mantis_round_half_even(double q) noexcept nogil

# Result codes (mirrored in mantis_fast.geometry.coords).
cdef enum:
    OK = 0
    NON_FINITE = 1       # NaN or infinity in the input
    INEXACT_INT = 2      # integer input too large to scale exactly in float64
    OUT_OF_RANGE = 3     # result does not fit int32, or the quotient overflowed

# Below this many rows, starting an OpenMP team costs more than it saves.
cdef Py_ssize_t PARALLEL_MIN_ROWS = 65536
# Quotients inside +-2**62 convert to int64 exactly; beyond that no int32 result is possible.
cdef double ROUND_SAFE = 4611686018427387904.0
cdef int64_t INT32_LO = -2147483648
cdef int64_t INT32_HI = 2147483647
cdef int64_t FAR_PIXEL = 4611686018427387904

ctypedef fused coord_t:
    double
    int64_t
    int32_t


cdef struct AxisMap:
    bint in_clip
    double in_lo
    double in_hi
    int64_t in_lo_int
    int64_t in_hi_int
    double in_off
    int64_t in_off_int
    int64_t int_lo
    int64_t int_hi
    double num
    double den
    bint out_clip
    int64_t out_lo
    int64_t out_hi
    int64_t out_off
    bint half_up


cdef AxisMap make_axis_map(tuple spec) except *:
    """spec = (in_clip, in_lo, in_hi, in_off, int_lo, int_hi, num, den, out_clip, out_lo,
    out_hi, out_off, half_up); everything is a Python int except num and den (floats)."""
    cdef AxisMap m
    (in_clip, in_lo, in_hi, in_off, int_lo, int_hi, num, den,
     out_clip, out_lo, out_hi, out_off, half_up) = spec
    m.in_clip = in_clip
    m.in_lo = in_lo
    m.in_hi = in_hi
    m.in_lo_int = in_lo
    m.in_hi_int = in_hi
    m.in_off = in_off
    m.in_off_int = in_off
    m.int_lo = int_lo
    m.int_hi = int_hi
    m.num = num
    m.den = den
    m.out_clip = out_clip
    m.out_lo = out_lo
    m.out_hi = out_hi
    m.out_off = out_off
    m.half_up = half_up
    return m


cdef inline int64_t round_half_up(double q) noexcept nogil:
    # floor(q + 0.5) in float64 rounds 0.49999999999999994 up; the fraction q - floor(q) is
    # exact, so compare it instead.
    cdef double whole = floor(q)
    return <int64_t>whole + (1 if q - whole >= 0.5 else 0)


cdef inline int finish_axis(double d, const AxisMap *m, int32_t *out) noexcept nogil:
    cdef double q = (d * m.num) / m.den
    cdef int64_t r
    if -ROUND_SAFE < q < ROUND_SAFE:
        r = round_half_up(q) if m.half_up else mantis_round_half_even(q)
    elif m.out_clip and q == q:      # clamping defines the result even for an overflow
        r = m.out_lo if q < 0 else m.out_hi
    else:
        return OUT_OF_RANGE
    if m.out_clip:
        r = m.out_lo if r < m.out_lo else r
        r = m.out_hi if r > m.out_hi else r
    r += m.out_off
    if r < INT32_LO or r > INT32_HI:
        return OUT_OF_RANGE
    out[0] = <int32_t>r
    return OK


cdef inline int map_float(double v, const AxisMap *m, int32_t *out) noexcept nogil:
    if not isfinite(v):
        return NON_FINITE
    if m.in_clip:
        v = m.in_lo if v < m.in_lo else v
        v = m.in_hi if v > m.in_hi else v
    return finish_axis(v - m.in_off, m, out)


cdef inline int map_int(int64_t v, const AxisMap *m, int32_t *out) noexcept nogil:
    if m.in_clip:
        if v < m.in_lo_int:
            v = m.in_lo_int
        elif v > m.in_hi_int:
            v = m.in_hi_int
    if v < m.int_lo or v > m.int_hi:
        return INEXACT_INT
    return finish_axis(<double>(v - m.in_off_int), m, out)


cdef inline int map_row(const coord_t *point, const AxisMap *mx, const AxisMap *my,
                        int32_t *out) noexcept nogil:
    cdef int code
    if coord_t is double:
        code = map_float(point[0], mx, out)
        if code == OK:
            code = map_float(point[1], my, out + 1)
    else:
        code = map_int(point[0], mx, out)
        if code == OK:
            code = map_int(point[1], my, out + 1)
    return code


cdef Py_ssize_t first_failure(const coord_t *points, Py_ssize_t n, const AxisMap *mx,
                              const AxisMap *my, int32_t *out, int *code) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        code[0] = map_row(points + 2 * i, mx, my, out + 2 * i)
        if code[0] != OK:
            return i
    return -1


def map_points(const coord_t[:, ::1] points, int32_t[:, ::1] out, tuple x_spec, tuple y_spec,
               int threads=1):
    """Apply the per-axis maps to every row of ``points`` (N, 2) into ``out`` int32 (N, 2).

    ``threads > 1`` hands out chunks of rows to an OpenMP team (serial below
    PARALLEL_MIN_ROWS rows; dynamic chunks, so one descheduled thread stalls only its chunk).
    Returns ``(row, code)`` of the first failing row, or ``(-1, 0)``. Rows after a failing row
    may or may not have been written.
    """
    cdef AxisMap mx = make_axis_map(x_spec)
    cdef AxisMap my = make_axis_map(y_spec)
    cdef Py_ssize_t n = points.shape[0]
    cdef Py_ssize_t i, row = -1
    cdef Py_ssize_t failures = 0
    cdef int code = OK
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} rows for {n} points")
    if n == 0:
        return -1, OK
    cdef const coord_t *src = &points[0, 0]
    cdef int32_t *dst = &out[0, 0]
    with nogil:
        if threads <= 1 or n < PARALLEL_MIN_ROWS:
            row = first_failure(src, n, &mx, &my, dst, &code)
        else:
            for i in prange(n, schedule="dynamic", chunksize=16384, num_threads=threads):
                if map_row(src + 2 * i, &mx, &my, dst + 2 * i) != OK:
                    failures += 1
            if failures != 0:   # the error path: find the first failing row, in order
                row = first_failure(src, n, &mx, &my, dst, &code)
    return row, code


cdef inline bint pixel_of(coord_t v, int64_t *pixel) noexcept nogil:
    """The integer pixel containing position ``v`` (floor); False when v is NaN/inf."""
    if coord_t is double:
        if not isfinite(v):
            return False
        if v >= ROUND_SAFE:         # far beyond any display: any far-away pixel will do
            pixel[0] = FAR_PIXEL
        elif v <= -ROUND_SAFE:
            pixel[0] = -FAR_PIXEL
        else:
            pixel[0] = <int64_t>floor(v)
    else:
        pixel[0] = v
    return True


def locate_points(const coord_t[:, ::1] points, const int64_t[:, ::1] rects,
                  const int32_t[::1] ids, int32_t[::1] out_ids, int32_t[:, ::1] out_local):
    """Global -> display-local for every row: the first rect (x, y, w, h) whose half-open box
    holds the pixel containing the point gives ``out_ids[i]`` and the local pixel; rows outside
    every rect get id -1 and local (-1, -1).

    Returns the first row holding NaN/inf, or -1.
    """
    cdef Py_ssize_t n = points.shape[0]
    cdef Py_ssize_t count = rects.shape[0]
    cdef Py_ssize_t i, k, bad = -1
    cdef int64_t px, py
    if out_ids.shape[0] != n or out_local.shape[0] != n or ids.shape[0] != count:
        raise ValueError("output or id arrays do not match the number of points or rects")
    if count and rects.shape[1] != 4:
        raise ValueError(f"rects must be (D, 4), got ({count}, {rects.shape[1]})")
    with nogil:
        for i in range(n):
            if not (pixel_of(points[i, 0], &px) and pixel_of(points[i, 1], &py)):
                bad = i
                break
            out_ids[i] = -1
            out_local[i, 0] = -1
            out_local[i, 1] = -1
            for k in range(count):
                if (rects[k, 0] <= px < rects[k, 0] + rects[k, 2]
                        and rects[k, 1] <= py < rects[k, 1] + rects[k, 3]):
                    out_ids[i] = ids[k]
                    out_local[i, 0] = <int32_t>(px - rects[k, 0])
                    out_local[i, 1] = <int32_t>(py - rects[k, 1])
                    break
    return bad
