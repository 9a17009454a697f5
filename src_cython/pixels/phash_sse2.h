/* Pillow's rgb2l on four-byte pixels with SSE2, bit for bit: pixels._phash. */
#ifndef MANTIS_PHASH_SSE2_H
#define MANTIS_PHASH_SSE2_H

#include <Python.h>  /* Py_ssize_t; the Cython module includes it first anyway */
#include <stdint.h>

/* A fused multiply-add (a -march with FMA and GCC's default -ffp-contract=fast) would round
   the filter polynomials differently from the Pillow build the hash must agree with. The
   pragma holds for the rest of the translation unit: the whole of _phash, which includes this
   header first. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("fp-contract=off")
#endif

/* Pillow's rgb2l on 4-byte pixels, 8 at a time with SSE2: the bytes at offsets 0 and 2
   (B and R, or R and B) and those at 1 and 3 (G and the padding) land in 16-bit lanes,
   and pmaddwd weighs each pair. G's 38470 does not fit a signed 16-bit weight: it is
   19235 doubled. Returns how many pixels it converted; the caller does the rest. */
#if defined(__SSE2__)
#include <emmintrin.h>
static Py_ssize_t mantis_grey4_sse2(const uint8_t *src, int16_t *out, Py_ssize_t width,
                                    int r_first) {
    const __m128i bytes = _mm_set1_epi32(0x00FF00FF);
    const __m128i w02 = r_first ? _mm_set1_epi32((7471 << 16) | 19595)
                                : _mm_set1_epi32((19595 << 16) | 7471);
    const __m128i w13 = _mm_set1_epi32(19235);
    const __m128i half = _mm_set1_epi32(0x8000);
    Py_ssize_t x = 0;
    for (; x + 8 <= width; x += 8) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + 4 * x));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + 4 * x + 16));
        __m128i la = _mm_add_epi32(
            _mm_add_epi32(_mm_madd_epi16(_mm_and_si128(a, bytes), w02), half),
            _mm_slli_epi32(_mm_madd_epi16(_mm_and_si128(_mm_srli_epi32(a, 8), bytes), w13), 1));
        __m128i lb = _mm_add_epi32(
            _mm_add_epi32(_mm_madd_epi16(_mm_and_si128(b, bytes), w02), half),
            _mm_slli_epi32(_mm_madd_epi16(_mm_and_si128(_mm_srli_epi32(b, 8), bytes), w13), 1));
        _mm_storeu_si128((__m128i *)(out + x),
                         _mm_packs_epi32(_mm_srli_epi32(la, 16), _mm_srli_epi32(lb, 16)));
    }
    return x;
}
#else
static Py_ssize_t mantis_grey4_sse2(const uint8_t *src, int16_t *out, Py_ssize_t width,
                                    int r_first) { return 0; }
#endif

#endif /* MANTIS_PHASH_SSE2_H */
