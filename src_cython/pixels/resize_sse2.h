/* SSE2 row kernels of pixels._resize, and its compile-time facts (byte order, AVX upper-state clearing). */
#ifndef MANTIS_RESIZE_SSE2_H
#define MANTIS_RESIZE_SSE2_H

#include <Python.h>  /* Py_ssize_t; the Cython module includes it first anyway */
#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MANTIS_LITTLE_ENDIAN 1
#else
#define MANTIS_LITTLE_ENDIAN 0
#endif

/* Legacy-SSE code run while the upper halves of the AVX registers are dirty (ISA-L's
   deflate leaves them so) pays a transition penalty on every instruction: measured 2.7x on
   a 1080p resize right after encode_png. VZEROUPPER at kernel entry clears the state; it
   only exists on AVX machines, hence the runtime check. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx"))) static void mantis_vzeroupper(void) { _mm256_zeroupper(); }
static void mantis_clear_avx_upper(void) {
    static int has_avx = -1;
    if (has_avx < 0) has_avx = __builtin_cpu_supports("avx");
    if (has_avx) mantis_vzeroupper();
}
#else
static void mantis_clear_avx_upper(void) {}
#endif

/* Swap bytes 0 and 2 of a packed pixel (BGR order <-> RGB order). */
static inline uint32_t mantis_swap_rb(uint32_t v) {
    return (v & 0xFF00FF00u) | ((v >> 16) & 0xFFu) | ((v & 0xFFu) << 16);
}

#if defined(__SSE2__)
/* SSE2 is part of x86-64 itself: these rows need no CPU dispatch. Elsewhere the Cython
   rows in this module do the same work one channel at a time. */
#include <emmintrin.h>
#define MANTIS_SSE2 1

/* Rounding constants for floor(s / d + 1/2) (see area_rounding / area_rounding16). */
typedef struct {
    __m128i d32, m32, k32;     /* ((2s + d) * m32) >> k32 in 64-bit products */
    __m128i d16, m16, k16;     /* ((2s + d) * m16 >> 16) >> k16 in 16-bit lanes */
    __m128i keep, fill;        /* output mask and constant alpha, two pixels */
    int small;                 /* d <= 64: the 16-bit form is exact */
    int swap_rb;               /* exchange channels 0 and 2 */
} mantis_rounder;

static inline mantis_rounder mantis_make_rounder(uint32_t denom, uint32_t mult, int shift,
                                                 uint32_t mult16, int shift16, int swap_rb,
                                                 uint32_t keep, uint32_t fill) {
    mantis_rounder r;
    r.d32 = _mm_set1_epi32((int)denom);
    r.m32 = _mm_set1_epi32((int)mult);
    r.k32 = _mm_cvtsi32_si128(shift);
    r.d16 = _mm_set1_epi16((short)denom);
    r.m16 = _mm_set1_epi16((short)mult16);
    r.k16 = _mm_cvtsi32_si128(shift16 - 16);
    r.keep = _mm_set1_epi32((int)keep);
    r.fill = _mm_set1_epi32((int)fill);
    r.small = mult16 != 0;
    r.swap_rb = swap_rb;
    return r;
}

static inline __m128i mantis_round32(__m128i s, const mantis_rounder *r) {
    __m128i n = _mm_add_epi32(_mm_add_epi32(s, s), r->d32);
    __m128i q02 = _mm_srl_epi64(_mm_mul_epu32(n, r->m32), r->k32);
    __m128i q13 = _mm_srl_epi64(_mm_mul_epu32(_mm_srli_epi64(n, 32), r->m32), r->k32);
    return _mm_or_si128(q02, _mm_slli_epi64(q13, 32));
}

/* Two pixels' sums (four 32-bit lanes each, source channel order) -> their two packed
   output words in the low 8 bytes. Lane 3 of a 3-channel source is junk: masked off. */
static inline __m128i mantis_finish2(__m128i sa, __m128i sb, const mantis_rounder *r) {
    __m128i q;
    if (r->small) {
        __m128i s = _mm_packs_epi32(sa, sb);
        __m128i n = _mm_add_epi16(_mm_add_epi16(s, s), r->d16);
        q = _mm_srl_epi16(_mm_mulhi_epu16(n, r->m16), r->k16);
    } else {
        q = _mm_packs_epi32(mantis_round32(sa, r), mantis_round32(sb, r));
    }
    if (r->swap_rb) q = _mm_shufflehi_epi16(_mm_shufflelo_epi16(q, 0xC6), 0xC6);
    q = _mm_packus_epi16(q, q);
    return _mm_or_si128(_mm_and_si128(q, r->keep), r->fill);
}

/* One pixel's exact-area sum from 16-bit vertical sums: pairs holds `npairs` vectors of
   eight int16, (w[2t], w[2t+1]) four times, so one pmaddwd weighs two neighbouring
   pixels' channels at once. pmaddwd is signed: sums up to 65535 are flipped to
   a - 32768 (xor 0x8000) and `bias` (32768 * the sum of the weights) is added back.
   Reads 16 bytes from each pair's first pixel: the caller's zero padding covers it. */
#define MANTIS_SUM16(CH, P, W, NPAIRS, S) do {                                         \
        const uint16_t *p_ = (P);                                                      \
        const __m128i *w_ = (const __m128i *)(W);                                      \
        __m128i s_ = bias;                                                             \
        for (Py_ssize_t t_ = 0; t_ < (NPAIRS); t_++, p_ += 2 * (CH)) {                 \
            __m128i x_ = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p_), flip);    \
            x_ = _mm_unpacklo_epi16(x_, _mm_srli_si128(x_, 2 * (CH)));                 \
            s_ = _mm_add_epi32(s_, _mm_madd_epi16(x_, _mm_loadu_si128(w_ + t_)));      \
        }                                                                              \
        (S) = s_;                                                                      \
    } while (0)

/* Integer factor: the sum of `k` whole pixels (every weight 1). Sums stay below 2**14. */
#define MANTIS_SUMBOX(CH, P, W, K, S) do {                                             \
        const uint16_t *p_ = (P);                                                      \
        __m128i s_ = _mm_loadl_epi64((const __m128i *)p_);                             \
        for (Py_ssize_t t_ = 1; t_ < (K); t_++)                                        \
            s_ = _mm_add_epi16(s_, _mm_loadl_epi64((const __m128i *)(p_ + t_ * (CH)))); \
        (S) = _mm_unpacklo_epi16(s_, _mm_setzero_si128());                             \
    } while (0)

/* The same from 32-bit vertical sums: products and sums in 64-bit lanes (channels 0, 2
   and 1, 3), each lane's low half being what pmuludq multiplies; every sum < 2**30. */
#define MANTIS_SUM32(CH, P, W, TAPS, S) do {                                           \
        const uint32_t *p_ = (P);                                                      \
        const uint32_t *w_ = (W);                                                      \
        __m128i s02_ = _mm_setzero_si128(), s13_ = _mm_setzero_si128();                \
        for (Py_ssize_t t_ = 0; t_ < (TAPS); t_++, p_ += (CH)) {                       \
            __m128i x_ = _mm_loadu_si128((const __m128i *)p_);                         \
            __m128i wt_ = _mm_set1_epi32((int)w_[t_]);                                 \
            s02_ = _mm_add_epi64(s02_, _mm_mul_epu32(x_, wt_));                        \
            s13_ = _mm_add_epi64(s13_, _mm_mul_epu32(_mm_srli_epi64(x_, 32), wt_));    \
        }                                                                              \
        (S) = _mm_or_si128(s02_, _mm_slli_epi64(s13_, 32));                            \
    } while (0)

#define MANTIS_AREA_ROW(SUM, CH, ACC, WEIGHTS, STEP, COUNT) do {                       \
        Py_ssize_t j = 0;                                                              \
        for (; j + 1 < out_w; j += 2) {                                                \
            __m128i sa, sb;                                                            \
            SUM(CH, ACC + (CH) * (Py_ssize_t)xs[j], WEIGHTS + (STEP) * j, COUNT, sa);  \
            SUM(CH, ACC + (CH) * (Py_ssize_t)xs[j + 1], WEIGHTS + (STEP) * (j + 1),    \
                COUNT, sb);                                                            \
            _mm_storel_epi64((__m128i *)(packed + j), mantis_finish2(sa, sb, &r));     \
        }                                                                              \
        if (j < out_w) {                                                               \
            __m128i sa;                                                                \
            SUM(CH, ACC + (CH) * (Py_ssize_t)xs[j], WEIGHTS + (STEP) * j, COUNT, sa);  \
            packed[j] = (uint32_t)_mm_cvtsi128_si32(mantis_finish2(sa, sa, &r));       \
        }                                                                              \
    } while (0)

/* Horizontal exact-area pass: rounded, packed output pixels for one row. */
static void mantis_area_hrow16(const uint16_t *acc, uint32_t *packed, Py_ssize_t out_w,
                               const int32_t *xs, const int16_t *pairs, Py_ssize_t npairs,
                               uint32_t cell, int channels, uint32_t denom, uint32_t mult,
                               int shift, uint32_t mult16, int shift16, int swap_rb,
                               uint32_t keep, uint32_t fill) {
    const mantis_rounder r = mantis_make_rounder(denom, mult, shift, mult16, shift16,
                                                 swap_rb, keep, fill);
    const __m128i flip = _mm_set1_epi16((short)0x8000);
    const __m128i bias = _mm_set1_epi32((int)(32768u * cell));
    if (channels == 4) MANTIS_AREA_ROW(MANTIS_SUM16, 4, acc, pairs, 8 * npairs, npairs);
    else MANTIS_AREA_ROW(MANTIS_SUM16, 3, acc, pairs, 8 * npairs, npairs);
}

/* Integer factor k along the row (source width == k * output width, 16-bit sums). */
static void mantis_area_hrow_box(const uint16_t *acc, uint32_t *packed, Py_ssize_t out_w,
                                 const int32_t *xs, Py_ssize_t k, int channels,
                                 uint32_t denom, uint32_t mult, int shift, uint32_t mult16,
                                 int shift16, int swap_rb, uint32_t keep, uint32_t fill) {
    const mantis_rounder r = mantis_make_rounder(denom, mult, shift, mult16, shift16,
                                                 swap_rb, keep, fill);
    if (channels == 4) MANTIS_AREA_ROW(MANTIS_SUMBOX, 4, acc, acc, 0, k);
    else MANTIS_AREA_ROW(MANTIS_SUMBOX, 3, acc, acc, 0, k);
}

static void mantis_area_hrow32(const uint32_t *acc, uint32_t *packed, Py_ssize_t out_w,
                               const int32_t *xs, const uint32_t *weights, Py_ssize_t taps,
                               int channels, uint32_t denom, uint32_t mult, int shift,
                               uint32_t mult16, int shift16, int swap_rb, uint32_t keep,
                               uint32_t fill) {
    const mantis_rounder r = mantis_make_rounder(denom, mult, shift, mult16, shift16,
                                                 swap_rb, keep, fill);
    if (channels == 4) MANTIS_AREA_ROW(MANTIS_SUM32, 4, acc, weights, taps, taps);
    else MANTIS_AREA_ROW(MANTIS_SUM32, 3, acc, weights, taps, taps);
}
/* Exact 2x2 area average of a 4-channel source straight from two source rows: four output
   pixels per step, (sum of 4 + 2) >> 2 in 16-bit lanes, then byte order, mask, fill. */
static void mantis_area_row_2x2(const uint8_t *r0, const uint8_t *r1, uint32_t *packed,
                                Py_ssize_t out_w, int swap_rb, uint32_t keep,
                                uint32_t fill) {
    const __m128i zero = _mm_setzero_si128(), two = _mm_set1_epi16(2);
    const __m128i k = _mm_set1_epi32((int)keep), f = _mm_set1_epi32((int)fill);
    Py_ssize_t j = 0;
    for (; j + 4 <= out_w; j += 4) {
        const __m128i a0 = _mm_loadu_si128((const __m128i *)(r0 + 8 * j));
        const __m128i a1 = _mm_loadu_si128((const __m128i *)(r0 + 8 * j + 16));
        const __m128i b0 = _mm_loadu_si128((const __m128i *)(r1 + 8 * j));
        const __m128i b1 = _mm_loadu_si128((const __m128i *)(r1 + 8 * j + 16));
        /* columns summed down the two rows: pixel pairs (0,1) (2,3) (4,5) (6,7) */
        __m128i v01 = _mm_add_epi16(_mm_unpacklo_epi8(a0, zero), _mm_unpacklo_epi8(b0, zero));
        __m128i v23 = _mm_add_epi16(_mm_unpackhi_epi8(a0, zero), _mm_unpackhi_epi8(b0, zero));
        __m128i v45 = _mm_add_epi16(_mm_unpacklo_epi8(a1, zero), _mm_unpacklo_epi8(b1, zero));
        __m128i v67 = _mm_add_epi16(_mm_unpackhi_epi8(a1, zero), _mm_unpackhi_epi8(b1, zero));
        /* neighbours summed: output pixels (0 1) and (2 3), four channels each */
        __m128i h01 = _mm_add_epi16(_mm_unpacklo_epi64(v01, v23), _mm_unpackhi_epi64(v01, v23));
        __m128i h23 = _mm_add_epi16(_mm_unpacklo_epi64(v45, v67), _mm_unpackhi_epi64(v45, v67));
        h01 = _mm_srli_epi16(_mm_add_epi16(h01, two), 2);
        h23 = _mm_srli_epi16(_mm_add_epi16(h23, two), 2);
        if (swap_rb) {
            h01 = _mm_shufflehi_epi16(_mm_shufflelo_epi16(h01, 0xC6), 0xC6);
            h23 = _mm_shufflehi_epi16(_mm_shufflelo_epi16(h23, 0xC6), 0xC6);
        }
        __m128i q = _mm_packus_epi16(h01, h23);
        _mm_storeu_si128((__m128i *)(packed + j), _mm_or_si128(_mm_and_si128(q, k), f));
    }
    for (; j < out_w; j++) {
        uint32_t v = 0;
        for (int c = 0; c < 4; c++) {
            uint32_t sum = r0[8 * j + c] + r0[8 * j + 4 + c]
                           + r1[8 * j + c] + r1[8 * j + 4 + c];
            v |= ((sum + 2) >> 2) << (8 * c);
        }
        if (swap_rb) v = mantis_swap_rb(v);
        packed[j] = (v & keep) | fill;
    }
}

/* A 4-channel row without resampling: byte order, mask and fill, four pixels a step. */
static void mantis_convert_row4(const uint8_t *src, uint32_t *packed, Py_ssize_t n,
                                int swap_rb, uint32_t keep, uint32_t fill) {
    const __m128i k = _mm_set1_epi32((int)keep), f = _mm_set1_epi32((int)fill);
    const __m128i ga = _mm_set1_epi32((int)0xFF00FF00u), lo = _mm_set1_epi32(0xFF);
    Py_ssize_t j = 0;
    for (; j + 4 <= n; j += 4) {
        __m128i v = _mm_loadu_si128((const __m128i *)(src + 4 * j));
        if (swap_rb)
            v = _mm_or_si128(_mm_or_si128(_mm_and_si128(v, ga),
                                          _mm_and_si128(_mm_srli_epi32(v, 16), lo)),
                             _mm_slli_epi32(_mm_and_si128(v, lo), 16));
        _mm_storeu_si128((__m128i *)(packed + j), _mm_or_si128(_mm_and_si128(v, k), f));
    }
    for (; j < n; j++) {
        uint32_t v;
        memcpy(&v, src + 4 * j, 4);
        if (swap_rb) v = mantis_swap_rb(v);
        packed[j] = (v & keep) | fill;
    }
}
#else
#define MANTIS_SSE2 0
/* Never called (simd_available() is False): the Cython rows run instead. */
static void mantis_area_row_2x2(const uint8_t *r0, const uint8_t *r1, uint32_t *packed,
                                Py_ssize_t out_w, int swap_rb, uint32_t keep,
                                uint32_t fill) {}
static void mantis_convert_row4(const uint8_t *src, uint32_t *packed, Py_ssize_t n,
                                int swap_rb, uint32_t keep, uint32_t fill) {}
static void mantis_area_hrow16(const uint16_t *acc, uint32_t *packed, Py_ssize_t out_w,
                               const int32_t *xs, const int16_t *pairs, Py_ssize_t npairs,
                               uint32_t cell, int channels, uint32_t denom, uint32_t mult,
                               int shift, uint32_t mult16, int shift16, int swap_rb,
                               uint32_t keep, uint32_t fill) {}
static void mantis_area_hrow_box(const uint16_t *acc, uint32_t *packed, Py_ssize_t out_w,
                                 const int32_t *xs, Py_ssize_t k, int channels,
                                 uint32_t denom, uint32_t mult, int shift, uint32_t mult16,
                                 int shift16, int swap_rb, uint32_t keep, uint32_t fill) {}
static void mantis_area_hrow32(const uint32_t *acc, uint32_t *packed, Py_ssize_t out_w,
                               const int32_t *xs, const uint32_t *weights, Py_ssize_t taps,
                               int channels, uint32_t denom, uint32_t mult, int shift,
                               uint32_t mult16, int shift16, int swap_rb, uint32_t keep,
                               uint32_t fill) {}
#endif

#endif /* MANTIS_RESIZE_SSE2_H */
