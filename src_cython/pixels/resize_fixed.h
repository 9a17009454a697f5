/* Fixed-point area rows of pixels._resize: any ratio whose cells touch at most 8 source pixels
   a side.

   The exact kernels divide integer sums by the cell's rational area; for the sizes models ask
   for (1920 -> 1316 has denominator 480, 1080 -> 728 has 135) that means 32-bit sums, 64-bit
   rounding products and a horizontal pass that cannot keep up with the source. Here every
   weight is scaled to a power of two instead, so both passes run in 16-bit lanes and the
   rounding is a shift:

   - vertical: weights in 1/32768ths (Q15, summing to exactly 32768), each row's term
     floor(x * w / 256) (pmulhuw of x << 8), plus 64 + rows / 2 (integer division): a row of
     7-fractional-bit values (Q7, at most 64 + 4 + 32640 = 32708, a signed 16-bit lane).
   - horizontal: weights in 1/16384ths (Q14, summing to exactly 16384) over windows of four
     source pixels (pmaddwd), and out = sum >> 21: the 64 added above is the half that
     rounds, since the weights sum to one. The sum is at most 16384 * 32708 < 2**31.

   Error against the exact average, per channel, for cells of at most 8 pixels: the floors
   lose between 0 and 1/128 of a level per row, which rows / 2 (in 1/128ths) centres, so at
   most 4/128; the Q15 weights (each within 1/2 of its ideal, the remainder put on the
   largest) at most 255 * 8 / 32768, the Q14 weights at most 256 * 8 / 16384, so the sum
   before the final floor is within 0.25 of average + 1/2 and every output is the exact
   average rounded down or up (|out - average| < 1), nearly always the half-up rounding the
   exact kernels give (0.3-0.4% of values differ at the sizes models ask for, about 1% at
   7x shrinks). The arithmetic is the same integer arithmetic in the
   portable, SSE2 and AVX2 rows below, so the result does not depend on the machine. */
#ifndef MANTIS_RESIZE_FIXED_H
#define MANTIS_RESIZE_FIXED_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "resize_sse2.h"   /* MANTIS_SSE2, mantis_swap_rb */

#define MANTIS_FIXED_ONE_Y 32768
#define MANTIS_FIXED_ONE_X 16384
#define MANTIS_FIXED_HALF 64
#define MANTIS_FIXED_SHIFT 21
#define MANTIS_FIXED_MAX_TAPS 8  /* source pixels a side of a cell; the bound below needs it */

/* ---- portable rows (the definition of the arithmetic) ---- */

static void mantis_fixed_vertical_c(const uint8_t *top, Py_ssize_t stride,
                                    const uint16_t *wy, Py_ssize_t rows, uint16_t *acc,
                                    Py_ssize_t from, Py_ssize_t n) {
    for (Py_ssize_t e = from; e < n; e++) {
        uint32_t v = MANTIS_FIXED_HALF + (uint32_t)(rows >> 1);
        for (Py_ssize_t t = 0; t < rows; t++) v += ((uint32_t)top[t * stride + e] * wy[t]) >> 8;
        acc[e] = (uint16_t)v;
    }
}

/* One output pixel: windows of four taps from source pixel xs[j] (zero padded beyond). */
static inline uint32_t mantis_fixed_pixel_c(const uint16_t *acc, const int16_t *w,
                                            Py_ssize_t taps, int channels) {
    uint32_t v = 0;
    for (int c = 0; c < channels; c++) {
        int32_t s = 0;
        for (Py_ssize_t t = 0; t < taps; t++) s += (int32_t)w[t] * acc[t * channels + c];
        s >>= MANTIS_FIXED_SHIFT;
        v |= (uint32_t)(s > 255 ? 255 : s) << (8 * c);
    }
    return v;
}

static void mantis_fixed_hrow_c(const uint16_t *acc, uint32_t *packed, Py_ssize_t out_w,
                                const int32_t *xs, const int16_t *weights, Py_ssize_t nwin,
                                int channels, int swap_rb, uint32_t keep, uint32_t fill) {
    for (Py_ssize_t j = 0; j < out_w; j++) {
        uint32_t v = mantis_fixed_pixel_c(acc + (Py_ssize_t)channels * xs[j],
                                          weights + 4 * nwin * j, 4 * nwin, channels);
        if (swap_rb) v = mantis_swap_rb(v);
        packed[j] = (v & keep) | fill;
    }
}

#if MANTIS_SSE2
/* ---- SSE2 rows ---- */

static void mantis_fixed_vertical_sse2(const uint8_t *top, Py_ssize_t stride,
                                       const uint16_t *wy, Py_ssize_t rows, uint16_t *acc,
                                       Py_ssize_t from, Py_ssize_t n) {
    const __m128i zero = _mm_setzero_si128();
    const __m128i half = _mm_set1_epi16((short)(MANTIS_FIXED_HALF + (rows >> 1)));
    Py_ssize_t e = from;
    for (; e + 16 <= n; e += 16) {
        const uint8_t *row = top + e;
        __m128i lo = half, hi = half;
        for (Py_ssize_t t = 0; t < rows; t++, row += stride) {
            const __m128i x = _mm_loadu_si128((const __m128i *)row);
            const __m128i w = _mm_set1_epi16((short)wy[t]);
            /* unpacking under a zero byte gives x << 8; the high half of x*256*w is x*w/256 */
            lo = _mm_add_epi16(lo, _mm_mulhi_epu16(_mm_unpacklo_epi8(zero, x), w));
            hi = _mm_add_epi16(hi, _mm_mulhi_epu16(_mm_unpackhi_epi8(zero, x), w));
        }
        _mm_storeu_si128((__m128i *)(acc + e), lo);
        _mm_storeu_si128((__m128i *)(acc + e + 8), hi);
    }
    mantis_fixed_vertical_c(top, stride, wy, rows, acc, e, n);
}

/* A pixel's four channel sums (32-bit lanes): per pair of taps, the pixel pair's channels
   interleaved (p[k] c, p[k+1] c) and weighed by (w[k], w[k+1]) with one pmaddwd. Reads
   16 bytes from each pair's first pixel: the caller's zero padding covers it. */
#define MANTIS_FIXED_SUM(CH, P, W, TAPS, S) do {                                       \
        const uint16_t *p_ = (P);                                                      \
        const int16_t *w_ = (W);                                                       \
        __m128i s_ = _mm_setzero_si128();                                              \
        for (Py_ssize_t t_ = 0; t_ < (TAPS); t_ += 2, p_ += 2 * (CH)) {                \
            int32_t pair_;                                                             \
            memcpy(&pair_, w_ + t_, 4);                                                \
            __m128i x_ = _mm_loadu_si128((const __m128i *)p_);                         \
            x_ = _mm_unpacklo_epi16(x_, _mm_srli_si128(x_, 2 * (CH)));                 \
            s_ = _mm_add_epi32(s_, _mm_madd_epi16(x_, _mm_set1_epi32(pair_)));         \
        }                                                                              \
        (S) = s_;                                                                      \
    } while (0)

static inline __m128i mantis_fixed_finish2(__m128i sa, __m128i sb, int swap_rb,
                                           __m128i keep, __m128i fill) {
    __m128i q = _mm_packs_epi32(_mm_srai_epi32(sa, MANTIS_FIXED_SHIFT),
                                _mm_srai_epi32(sb, MANTIS_FIXED_SHIFT));
    if (swap_rb) q = _mm_shufflehi_epi16(_mm_shufflelo_epi16(q, 0xC6), 0xC6);
    q = _mm_packus_epi16(q, q);
    return _mm_or_si128(_mm_and_si128(q, keep), fill);
}

#define MANTIS_FIXED_ROW(CH) do {                                                      \
        for (; j + 1 < out_w; j += 2) {                                                \
            __m128i sa, sb;                                                            \
            MANTIS_FIXED_SUM(CH, acc + (CH) * (Py_ssize_t)xs[j], weights + taps * j,   \
                             taps, sa);                                                \
            MANTIS_FIXED_SUM(CH, acc + (CH) * (Py_ssize_t)xs[j + 1],                   \
                             weights + taps * (j + 1), taps, sb);                      \
            _mm_storel_epi64((__m128i *)(packed + j),                                  \
                             mantis_fixed_finish2(sa, sb, swap_rb, k, f));             \
        }                                                                              \
    } while (0)

static void mantis_fixed_hrow_sse2(const uint16_t *acc, uint32_t *packed, Py_ssize_t out_w,
                                   const int32_t *xs, const int16_t *weights,
                                   Py_ssize_t nwin, int channels, int swap_rb, uint32_t keep,
                                   uint32_t fill) {
    const __m128i k = _mm_set1_epi32((int)keep), f = _mm_set1_epi32((int)fill);
    const Py_ssize_t taps = 4 * nwin;
    Py_ssize_t j = 0;
    if (channels == 4) MANTIS_FIXED_ROW(4);
    else MANTIS_FIXED_ROW(3);
    if (j < out_w)
        mantis_fixed_hrow_c(acc, packed + j, out_w - j, xs + j, weights + taps * j, nwin,
                            channels, swap_rb, keep, fill);
}
#else
static void mantis_fixed_vertical_sse2(const uint8_t *top, Py_ssize_t stride,
                                       const uint16_t *wy, Py_ssize_t rows, uint16_t *acc,
                                       Py_ssize_t from, Py_ssize_t n) {
    mantis_fixed_vertical_c(top, stride, wy, rows, acc, from, n);
}
static void mantis_fixed_hrow_sse2(const uint16_t *acc, uint32_t *packed, Py_ssize_t out_w,
                                   const int32_t *xs, const int16_t *weights,
                                   Py_ssize_t nwin, int channels, int swap_rb, uint32_t keep,
                                   uint32_t fill) {
    mantis_fixed_hrow_c(acc, packed, out_w, xs, weights, nwin, channels, swap_rb, keep, fill);
}
#endif /* MANTIS_SSE2 */

#if defined(__x86_64__) && defined(__GNUC__)
/* ---- AVX2 rows (chosen at run time, as in resize_avx2.h) ---- */

/* The SSE2 vertical pass, 32 bytes a step. vpunpck works within 128-bit lanes, so the two
   sums hold bytes (0-7, 16-23) and (8-15, 24-31); two lane permutes restore the order. The
   weights are broadcast once per row, and cells of up to four rows (every shrink below 3x)
   get a loop with the rows unrolled: a broadcast and the loop's own counting inside it cost
   as much as the multiplies. */
__attribute__((target("avx2"), always_inline))
static inline __m256i mantis_fixed_term(__m256i acc, __m256i x, __m256i w, const int high) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i shifted = high ? _mm256_unpackhi_epi8(zero, x) : _mm256_unpacklo_epi8(zero, x);
    return _mm256_add_epi16(acc, _mm256_mulhi_epu16(shifted, w));
}

__attribute__((target("avx2"), always_inline))
static inline Py_ssize_t mantis_fixed_vertical_rows(const uint8_t *top, Py_ssize_t stride,
                                                    const __m256i *w, Py_ssize_t rows,
                                                    __m256i half, uint16_t *acc,
                                                    Py_ssize_t n) {
    Py_ssize_t e = 0;
    for (; e + 32 <= n; e += 32) {
        const uint8_t *row = top + e;
        __m256i lo = half, hi = half;
        for (Py_ssize_t t = 0; t < rows; t++, row += stride) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)row);
            lo = mantis_fixed_term(lo, x, w[t], 0);
            hi = mantis_fixed_term(hi, x, w[t], 1);
        }
        _mm256_storeu_si256((__m256i *)(acc + e), _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_storeu_si256((__m256i *)(acc + e + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
    return e;
}

__attribute__((target("avx2")))
static void mantis_fixed_vertical_avx2(const uint8_t *top, Py_ssize_t stride,
                                       const uint16_t *wy, Py_ssize_t rows, uint16_t *acc,
                                       Py_ssize_t n) {
    const __m256i half = _mm256_set1_epi16((short)(MANTIS_FIXED_HALF + (rows >> 1)));
    const Py_ssize_t unrolled = rows <= MANTIS_FIXED_MAX_TAPS ? rows : 0;  /* 0: never here */
    __m256i w[MANTIS_FIXED_MAX_TAPS];
    Py_ssize_t e = 0;
    for (Py_ssize_t t = 0; t < unrolled; t++) w[t] = _mm256_set1_epi16((short)wy[t]);
    switch (unrolled) {
    case 0: break;   /* all of it in the SSE2 rows */
    case 1: e = mantis_fixed_vertical_rows(top, stride, w, 1, half, acc, n); break;
    case 2: e = mantis_fixed_vertical_rows(top, stride, w, 2, half, acc, n); break;
    case 3: e = mantis_fixed_vertical_rows(top, stride, w, 3, half, acc, n); break;
    case 4: e = mantis_fixed_vertical_rows(top, stride, w, 4, half, acc, n); break;
    default: e = mantis_fixed_vertical_rows(top, stride, w, unrolled, half, acc, n);
    }
    mantis_fixed_vertical_sse2(top, stride, wy, rows, acc, e, n);
}

/* One 4-channel pixel, one window of four taps: 32 bytes from its first source pixel hold
   pixels k, k+1 (low lane) and k+2, k+3 (high lane); pshufb pairs each lane's two pixels
   channel by channel and pmaddwd weighs them with (w0, w1) in the low lane and (w2, w3) in
   the high, whose 8 weight bytes are broadcast and spread by another pshufb. The pixel's
   four channel sums are the low lane plus the high lane. */
__attribute__((target("avx2"), always_inline))
static inline __m256i mantis_fixed_window(const uint16_t *p, const int16_t *w,
                                          __m256i pairs, __m256i spread) {
    int64_t w4;
    memcpy(&w4, w, 8);
    const __m256i x = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)p), pairs);
    return _mm256_madd_epi16(x, _mm256_shuffle_epi8(_mm256_set1_epi64x(w4), spread));
}

__attribute__((target("avx2"), always_inline))
static inline __m256i mantis_fixed_sum_avx2(const uint16_t *p, const int16_t *w,
                                            Py_ssize_t nwin, __m256i pairs, __m256i spread) {
    __m256i s = mantis_fixed_window(p, w, pairs, spread);
    for (Py_ssize_t u = 1; u < nwin; u++)
        s = _mm256_add_epi32(s, mantis_fixed_window(p + 16 * u, w + 4 * u, pairs, spread));
    return s;
}

/* Four output pixels a step from a 4-channel row (mantis_fixed_hrow_c's arithmetic), as
   packed words, or with `rgb` set straight into that row as 3 bytes a pixel (12 bytes
   stored as 16 while the next step overwrites the extra 4). `order` is the pshufb that
   takes the output bytes in output order; `one_window` and `to_rgb` are constants wherever
   this is inlined, so each combination compiles to its own loop. */
__attribute__((target("avx2"), always_inline))
static inline Py_ssize_t mantis_fixed_steps4(const uint16_t *acc, uint32_t *packed,
                                             uint8_t *rgb, Py_ssize_t out_w,
                                             const int32_t *xs, const int16_t *weights,
                                             Py_ssize_t nwin, __m128i order, __m128i k,
                                             __m128i f, const int one_window,
                                             const int to_rgb) {
    const __m256i pairs = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15));
    const __m256i spread = _mm256_setr_epi8(
        0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3,
        4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7);
    const Py_ssize_t taps = one_window ? 4 : 4 * nwin;
    const Py_ssize_t windows = one_window ? 1 : nwin;
    /* the last steps of an RGB row store exactly 12 bytes (below) */
    const Py_ssize_t whole = to_rgb ? out_w - 5 : out_w - 3;
    Py_ssize_t j = 0;
#define MANTIS_FIXED_AT(U) mantis_fixed_sum_avx2(acc + 4 * (Py_ssize_t)xs[j + (U)],         \
                                                 weights + taps * (j + (U)), windows,      \
                                                 pairs, spread)
    for (; j < whole; j += 4) {
        const __m256i z0 = MANTIS_FIXED_AT(0), z1 = MANTIS_FIXED_AT(1);
        const __m256i z2 = MANTIS_FIXED_AT(2), z3 = MANTIS_FIXED_AT(3);
        /* lanes added: pixels (j, j+2) and (j+1, j+3) */
        const __m256i s02 = _mm256_add_epi32(_mm256_permute2x128_si256(z0, z2, 0x20),
                                             _mm256_permute2x128_si256(z0, z2, 0x31));
        const __m256i s13 = _mm256_add_epi32(_mm256_permute2x128_si256(z1, z3, 0x20),
                                             _mm256_permute2x128_si256(z1, z3, 0x31));
        const __m256i q = _mm256_packs_epi32(_mm256_srai_epi32(s02, MANTIS_FIXED_SHIFT),
                                             _mm256_srai_epi32(s13, MANTIS_FIXED_SHIFT));
        /* bytes: pixels j, j+1 in the low lane, j+2, j+3 in the high: one vpermq orders them */
        const __m128i bytes = _mm_shuffle_epi8(_mm256_castsi256_si128(
            _mm256_permute4x64_epi64(_mm256_packus_epi16(q, q), 0x08)), order);
        if (to_rgb)
            _mm_storeu_si128((__m128i *)(rgb + 3 * j), bytes);
        else
            _mm_storeu_si128((__m128i *)(packed + j), _mm_or_si128(_mm_and_si128(bytes, k), f));
    }
#undef MANTIS_FIXED_AT
    return j;
}

__attribute__((target("avx2")))
static void mantis_fixed_hrow4_avx2(const uint16_t *acc, uint32_t *packed, uint8_t *rgb,
                                    Py_ssize_t out_w, const int32_t *xs,
                                    const int16_t *weights, Py_ssize_t nwin, int swap_rb,
                                    uint32_t keep, uint32_t fill) {
    const char z = (char)0x80, b0 = swap_rb ? 2 : 0, b2 = swap_rb ? 0 : 2;
    const __m128i k = _mm_set1_epi32((int)keep), f = _mm_set1_epi32((int)fill);
    const __m128i order = rgb
        ? _mm_setr_epi8(b0, 1, b2, b0 + 4, 5, b2 + 4, b0 + 8, 9, b2 + 8, b0 + 12, 13, b2 + 12,
                        z, z, z, z)
        : _mm_setr_epi8(b0, 1, b2, 3, b0 + 4, 5, b2 + 4, 7, b0 + 8, 9, b2 + 8, 11,
                        b0 + 12, 13, b2 + 12, 15);
    Py_ssize_t j;
    if (nwin == 1)
        j = rgb ? mantis_fixed_steps4(acc, packed, rgb, out_w, xs, weights, 1, order, k, f, 1, 1)
                : mantis_fixed_steps4(acc, packed, rgb, out_w, xs, weights, 1, order, k, f, 1, 0);
    else
        j = rgb ? mantis_fixed_steps4(acc, packed, rgb, out_w, xs, weights, nwin, order, k, f,
                                      0, 1)
                : mantis_fixed_steps4(acc, packed, rgb, out_w, xs, weights, nwin, order, k, f,
                                      0, 0);
    if (j < out_w) {
        const Py_ssize_t taps = 4 * nwin;
        mantis_fixed_hrow_sse2(acc, packed + j, out_w - j, xs + j, weights + taps * j, nwin,
                               4, swap_rb, keep, fill);
        for (; rgb && j < out_w; j++) memcpy(rgb + 3 * j, packed + j, 3);
    }
}
#else
static void mantis_fixed_vertical_avx2(const uint8_t *top, Py_ssize_t stride,
                                       const uint16_t *wy, Py_ssize_t rows, uint16_t *acc,
                                       Py_ssize_t n) {}
static void mantis_fixed_hrow4_avx2(const uint16_t *acc, uint32_t *packed, uint8_t *rgb,
                                    Py_ssize_t out_w, const int32_t *xs,
                                    const int16_t *weights, Py_ssize_t nwin, int swap_rb,
                                    uint32_t keep, uint32_t fill) {}
#endif

#endif /* MANTIS_RESIZE_FIXED_H */
