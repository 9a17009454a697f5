# Declarations of resize_avx2.h for _resize.pyx (included there, after _resize_sse2.pxi). The
# module is built without -mavx2, so every function of the header carries
# __attribute__((target("avx2"))) and runs only after mantis_avx2_supported() said yes at run
# time; the compiler ends each one with VZEROUPPER, so the legacy-SSE code after it pays no
# transition penalty. Elsewhere MANTIS_AVX2 is 0 and the functions are empty stubs that are
# never called. Every kernel is checked against an exact reference in
# tests/pixels/test_image.py, next to the SSE2 and Cython rows.

from libc.stdint cimport int16_t, int32_t, uint8_t, uint16_t, uint32_t

cdef extern from "resize_avx2.h":
    int MANTIS_AVX2
    int mantis_avx2_supported() noexcept nogil
    void mantis_area_rows_thirds(const uint8_t* r0, const uint8_t* r1, const uint8_t* r2,
                                 uint8_t* o0, uint8_t* o1, Py_ssize_t out_w, int channels,
                                 int out_channels, uint32_t mult16, int shift16, int swap_rb,
                                 uint32_t keep, uint32_t fill) noexcept nogil
    void mantis_area_row_halves(const uint8_t* r0, const uint8_t* r1, uint8_t* o,
                                Py_ssize_t out_w, int channels, int out_channels, int swap_rb,
                                uint32_t keep, uint32_t fill) noexcept nogil
    void mantis_area_hrow16_avx2(const uint16_t* acc, uint32_t* packed, Py_ssize_t out_w,
                                 const int32_t* xs, const int16_t* pairs, Py_ssize_t npairs,
                                 uint32_t cell, int channels, uint32_t denom, uint32_t mult,
                                 int shift, uint32_t mult16, int shift16, int swap_rb,
                                 uint32_t keep, uint32_t fill) noexcept nogil
    void mantis_area_vertical16_avx2(const uint8_t* top, Py_ssize_t stride, const uint32_t* wy,
                                     Py_ssize_t rows, int unit, uint16_t* acc,
                                     Py_ssize_t n) noexcept nogil
    Py_ssize_t mantis_area_hrow_box3_avx2(const uint16_t* acc, uint32_t* packed,
                                          Py_ssize_t out_w, uint32_t denom, uint32_t mult16,
                                          int shift16, int swap_rb, uint32_t keep,
                                          uint32_t fill) noexcept nogil
    void mantis_emit_rgb_avx2(const uint32_t* packed, uint8_t* o, Py_ssize_t n) noexcept nogil
    void mantis_emit_luma_avx2(const uint32_t* packed, uint8_t* o, Py_ssize_t n) noexcept nogil
    void mantis_bilinear_vertical_avx2(const uint8_t* r0, const uint8_t* r1, uint32_t fy,
                                       uint32_t* acc, Py_ssize_t n) noexcept nogil
    void mantis_bilinear_hrow_avx2(const uint32_t* acc, uint32_t* packed, Py_ssize_t out_w,
                                   const int32_t* xs, const int32_t* lanes, int channels,
                                   int swap_rb, uint32_t keep, uint32_t fill) noexcept nogil
    Py_ssize_t mantis_nearest_row_avx2(const uint8_t* row, Py_ssize_t width, int channels,
                                       const int32_t* xi, uint32_t* packed, Py_ssize_t n,
                                       int swap_rb, uint32_t keep, uint32_t fill) noexcept nogil
