# Declarations of resize_fixed.h for _resize.pyx (included there): the fixed-point area rows
# for ratios whose exact denominators are too large for the 16-bit exact rows, in a portable,
# an SSE2, an AVX2 and an AVX-512 form with the same integer arithmetic (see the header's
# comment for the error bound). tests/pixels/test_image.py checks each against the documented
# arithmetic and the float64 average.

from libc.stdint cimport int16_t, int32_t, uint8_t, uint16_t, uint32_t

cdef extern from "resize_fixed.h":
    int MANTIS_FIXED_AVX512
    int mantis_avx512_supported() noexcept nogil
    int MANTIS_FIXED_ONE_Y
    int MANTIS_FIXED_ONE_X
    void mantis_fixed_vertical_c(const uint8_t* top, Py_ssize_t stride, const uint16_t* wy,
                                 Py_ssize_t rows, uint16_t* acc, Py_ssize_t start,
                                 Py_ssize_t n) noexcept nogil
    void mantis_fixed_vertical_sse2(const uint8_t* top, Py_ssize_t stride,
                                    const uint16_t* wy, Py_ssize_t rows, uint16_t* acc,
                                    Py_ssize_t start, Py_ssize_t n) noexcept nogil
    void mantis_fixed_vertical_avx2(const uint8_t* top, Py_ssize_t stride,
                                    const uint16_t* wy, Py_ssize_t rows, uint16_t* acc,
                                    Py_ssize_t n) noexcept nogil
    void mantis_fixed_hrow_c(const uint16_t* acc, uint32_t* packed, Py_ssize_t out_w,
                             const int32_t* xs, const int16_t* weights, Py_ssize_t nwin,
                             int channels, int swap_rb, uint32_t keep,
                             uint32_t fill) noexcept nogil
    void mantis_fixed_hrow_sse2(const uint16_t* acc, uint32_t* packed, Py_ssize_t out_w,
                                const int32_t* xs, const int16_t* weights, Py_ssize_t nwin,
                                int channels, int swap_rb, uint32_t keep,
                                uint32_t fill) noexcept nogil
    void mantis_fixed_vertical_pairs_avx2(const uint8_t** tops, const uint16_t** wy,
                                          const Py_ssize_t* rows, Py_ssize_t stride,
                                          int channels, uint8_t* pairs,
                                          Py_ssize_t width) noexcept nogil
    void mantis_fixed_hrow_paired_avx2(const uint8_t* pairs, uint8_t* out_a, uint8_t* out_b,
                                       Py_ssize_t out_w, const int32_t* pair_start,
                                       const int32_t* weights, Py_ssize_t windows, int to_rgb,
                                       int swap_rb, uint32_t keep, uint32_t fill) noexcept nogil
    void mantis_fixed_vertical_fours_avx512(const uint8_t** tops, const uint16_t** wy,
                                            const Py_ssize_t* rows, Py_ssize_t stride,
                                            int channels, uint8_t* pairs,
                                            Py_ssize_t width) noexcept nogil
    void mantis_fixed_hrow_fours_avx512(const uint8_t* pairs, uint8_t* out_a, uint8_t* out_b,
                                        uint8_t* out_c, uint8_t* out_d, Py_ssize_t out_w,
                                        const int32_t* pair_start, const int32_t* weights,
                                        Py_ssize_t windows, int to_rgb, int swap_rb,
                                        uint32_t keep, uint32_t fill) noexcept nogil
