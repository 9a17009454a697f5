# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Scanline kernel behind mantis_fast.pixels.encode's PNG writer: source pixels reordered into PNG
scanlines (a filter-type byte 0, None, then the row), a band of rows at a time, without the GIL
so bands fill in parallel. Images arrive as 2-D byte-row views (H, W * channels) with any row
stride and contiguous bytes within a row.
"""

from libc.stdint cimport uint8_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy

cdef extern from *:
    uint32_t bswap32 "__builtin_bswap32"(uint32_t) nogil

# Four-byte pixels to three with SSSE3's byte shuffle (x86-64, chosen at run time): one 16-byte
# load, shuffle and store per four pixels, four times the speed of the scalar loop below.
cdef extern from "png_ssse3.h":
    Py_ssize_t png_4to3_ssse3(const uint8_t* src, uint8_t* dst, Py_ssize_t width,
                              int swap) noexcept nogil
    int png_have_ssse3() noexcept nogil

cdef bint _SSSE3 = png_have_ssse3()

# How a source pixel becomes an output pixel (the wrapper picks one per src_format and mode).
cdef enum:
    K_COPY = 0  # same layout: grey, RGB, RGBA
    K_BGRX_RGB = 1  # BGRX or BGRA -> RGB
    K_RGBX_RGB = 2  # RGBX or RGBA -> RGB
    K_BGRA_RGBA = 3
    K_BGR_RGB = 4

COPY, BGRX_RGB, RGBX_RGB, BGRA_RGBA, BGR_RGB = (
    K_COPY, K_BGRX_RGB, K_RGBX_RGB, K_BGRA_RGBA, K_BGR_RGB
)

cdef int _OUT_CHANNELS[5]
_OUT_CHANNELS[:] = [0, 3, 3, 4, 3]


cdef inline uint32_t load32(const uint8_t* p) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, p, 4)
    return v


cdef inline void store32(uint8_t* p, uint32_t v) noexcept nogil:
    memcpy(p, &v, 4)


cdef void convert_row(const uint8_t* src, uint8_t* dst, Py_ssize_t width, int kind,
                      int src_channels, bint simd) noexcept nogil:
    """One row of ``width`` pixels. Four-byte sources go four pixels (three 32-bit stores) at a
    time: a little-endian load of B,G,R,X byte-swapped and shifted is R,G,B in its low bytes."""
    cdef Py_ssize_t x = 0
    cdef uint32_t q0, q1, q2, q3, p
    if kind == K_COPY:
        memcpy(dst, src, width * src_channels)
    elif kind == K_BGRX_RGB or kind == K_RGBX_RGB:
        if _SSSE3 and simd:
            x = png_4to3_ssse3(src, dst, width, kind == K_BGRX_RGB)
            src += 4 * x
            dst += 3 * x
        while x + 4 <= width:
            if kind == K_BGRX_RGB:
                q0 = bswap32(load32(src)) >> 8
                q1 = bswap32(load32(src + 4)) >> 8
                q2 = bswap32(load32(src + 8)) >> 8
                q3 = bswap32(load32(src + 12)) >> 8
            else:
                q0 = load32(src) & 0xFFFFFF
                q1 = load32(src + 4) & 0xFFFFFF
                q2 = load32(src + 8) & 0xFFFFFF
                q3 = load32(src + 12) & 0xFFFFFF
            store32(dst, q0 | (q1 << 24))
            store32(dst + 4, (q1 >> 8) | (q2 << 16))
            store32(dst + 8, (q2 >> 16) | (q3 << 8))
            src += 16
            dst += 12
            x += 4
        while x < width:
            if kind == K_BGRX_RGB:
                dst[0] = src[2]
                dst[2] = src[0]
            else:
                dst[0] = src[0]
                dst[2] = src[2]
            dst[1] = src[1]
            src += 4
            dst += 3
            x += 1
    elif kind == K_BGRA_RGBA:
        for x in range(width):
            p = load32(src + 4 * x)
            store32(dst + 4 * x, (bswap32(p) >> 8) | (p & 0xFF000000u))
    else:  # K_BGR_RGB
        for x in range(width):
            dst[3 * x] = src[3 * x + 2]
            dst[3 * x + 1] = src[3 * x + 1]
            dst[3 * x + 2] = src[3 * x]


def fill_rows(const uint8_t[:, :] src, uint8_t[:, ::1] lines, int kind, int src_channels,
              Py_ssize_t y0, Py_ssize_t y1, bint compare, bint simd=True):
    """Write source rows ``y0 .. y1 - 1`` into PNG scanlines ``lines[y0:y1]`` (filter byte 0,
    then the pixels converted by ``kind``). With ``compare``, return whether any scanline
    differs from what ``lines`` held before (rows are converted into a scratch row first, and
    copied only when they differ); without, return True. ``simd=False`` skips the SSSE3 rows
    (tests compare the two)."""
    cdef int out_channels = src_channels if kind == K_COPY else _OUT_CHANNELS[kind]
    if kind < K_COPY or kind > K_BGR_RGB or (
            kind != K_COPY and src_channels != (3 if kind == K_BGR_RGB else 4)):
        raise ValueError(f"kind {kind} with {src_channels} source channels")
    cdef Py_ssize_t width = src.shape[1] // src_channels
    if (src.shape[1] != width * src_channels or lines.shape[1] != 1 + width * out_channels
            or not 0 <= y0 <= y1 <= min(src.shape[0], lines.shape[0])):
        raise ValueError(f"rows {y0}..{y1} of {src.shape[0]}x{src.shape[1]} bytes do not fit "
                         f"scanlines {lines.shape[0]}x{lines.shape[1]}")
    if y0 == y1:
        return False if compare else True
    if src.strides[1] != 1:
        raise ValueError("source rows must have contiguous bytes")
    cdef Py_ssize_t n = width * out_channels, y
    cdef Py_ssize_t stride = src.strides[0]
    cdef const uint8_t* base = &src[0, 0]
    cdef uint8_t* row
    cdef uint8_t* scratch = NULL
    cdef bint changed = not compare
    if compare:
        scratch = <uint8_t*>malloc(n)
        if scratch == NULL:
            raise MemoryError()
    with nogil:
        for y in range(y0, y1):
            row = &lines[y, 0]
            if not compare:
                row[0] = 0
                convert_row(base + y * stride, row + 1, width, kind, src_channels, simd)
                continue
            if kind == K_COPY:
                if row[0] != 0 or memcmp(row + 1, base + y * stride, n) != 0:
                    row[0] = 0
                    memcpy(row + 1, base + y * stride, n)
                    changed = True
                continue
            convert_row(base + y * stride, scratch, width, kind, src_channels, simd)
            if row[0] != 0 or memcmp(row + 1, scratch, n) != 0:
                row[0] = 0
                memcpy(row + 1, scratch, n)
                changed = True
    free(scratch)
    return changed
