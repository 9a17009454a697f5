/* Four-byte pixels to three with SSSE3's byte shuffle (x86-64, chosen at run time): pixels._png. */
#ifndef MANTIS_PNG_SSSE3_H
#define MANTIS_PNG_SSSE3_H

#include <Python.h>  /* Py_ssize_t; the Cython module includes it first anyway */
#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <tmmintrin.h>
__attribute__((target("ssse3")))
static Py_ssize_t png_4to3_ssse3(const unsigned char* src, unsigned char* dst,
                                 Py_ssize_t width, int swap) {
    const __m128i mask = swap
        ? _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1)
        : _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    Py_ssize_t x = 0;
    /* Each store writes 16 bytes for 12: stop while 4 spare bytes remain in the row. */
    for (; x + 6 <= width; x += 4) {
        __m128i p = _mm_loadu_si128((const __m128i*)(src + 4 * x));
        _mm_storeu_si128((__m128i*)(dst + 3 * x), _mm_shuffle_epi8(p, mask));
    }
    return x;
}
static int png_have_ssse3(void) { return __builtin_cpu_supports("ssse3"); }
#else
static Py_ssize_t png_4to3_ssse3(const unsigned char* src, unsigned char* dst,
                                 Py_ssize_t width, int swap) { return 0; }
static int png_have_ssse3(void) { return 0; }
#endif

#endif /* MANTIS_PNG_SSSE3_H */
