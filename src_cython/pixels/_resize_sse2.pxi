# Declarations of resize_sse2.h for _resize.pyx (included there): the byte order, the AVX
# upper-state clearing and the SSE2 row kernels, in C because the operations they need (pmaddwd,
# pmuludq, packs) have no Cython spelling. SSE2 is part of x86-64 itself, so no CPU dispatch is
# needed; on other machines MANTIS_SSE2 is 0, the header's functions are empty stubs that are
# never called, and the Cython rows in _resize.pyx do the work. Every row is checked against the
# Cython rows and an exact reference in tests/pixels/test_image.py.

from libc.stdint cimport int16_t, int32_t, uint8_t, uint16_t, uint32_t

from mantis_omp cimport mantis_omp_max_threads

cdef extern from "resize_sse2.h":
    void mantis_clear_avx_upper() noexcept nogil
    int MANTIS_LITTLE_ENDIAN
    int MANTIS_SSE2
    uint32_t mantis_swap_rb(uint32_t v) noexcept nogil
    void mantis_area_row_2x2(const uint8_t* r0, const uint8_t* r1, uint32_t* packed,
                             Py_ssize_t out_w, int swap_rb, uint32_t keep,
                             uint32_t fill) noexcept nogil
    void mantis_convert_row4(const uint8_t* src, uint32_t* packed, Py_ssize_t n, int swap_rb,
                             uint32_t keep, uint32_t fill) noexcept nogil
    void mantis_area_hrow16(const uint16_t* acc, uint32_t* packed, Py_ssize_t out_w,
                            const int32_t* xs, const int16_t* pairs, Py_ssize_t npairs,
                            uint32_t cell, int channels, uint32_t denom, uint32_t mult,
                            int shift, uint32_t mult16, int shift16, int swap_rb,
                            uint32_t keep, uint32_t fill) noexcept nogil
    void mantis_area_hrow_box(const uint16_t* acc, uint32_t* packed, Py_ssize_t out_w,
                              const int32_t* xs, Py_ssize_t k, int channels, uint32_t denom,
                              uint32_t mult, int shift, uint32_t mult16, int shift16,
                              int swap_rb, uint32_t keep, uint32_t fill) noexcept nogil
    void mantis_area_hrow32(const uint32_t* acc, uint32_t* packed, Py_ssize_t out_w,
                            const int32_t* xs, const uint32_t* weights, Py_ssize_t taps,
                            int channels, uint32_t denom, uint32_t mult, int shift,
                            uint32_t mult16, int shift16, int swap_rb, uint32_t keep,
                            uint32_t fill) noexcept nogil
