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
   7x shrinks). The arithmetic is the same integer arithmetic in the portable, SSE2, AVX2 and
   AVX-512 rows below, so the result does not depend on the machine. */
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

/* ---- AVX2 rows in pairs: two output rows a step ----

   A horizontal pass over one row spends most of its time arranging data rather than
   multiplying: each output pixel's taps gathered, paired channel by channel, weights spread,
   lanes added across. Here the vertical pass writes two output rows (a and b) in the order
   pmaddwd wants, so the horizontal pass only loads, multiplies and adds:

   - pair m (32 bytes) holds source pixels 2m and 2m + 1 of both rows: row a's eight 16-bit
     values (c0 of 2m, c0 of 2m + 1, c2, c2, c1, c1, c3, c3), then row b's;
   - output pixel j reads `nw` pairs from pair_start[j] = xs[j] / 2, each weighed by one
     32-bit (even tap, odd tap) weight pair broadcast from `pair_weights` (the Q14 weights
     moved one tap right when xs[j] is odd, zero beyond the cell): a load, a broadcast and a
     pmaddwd a pair for both rows, row a's channel sums in the low lane and row b's in the
     high, no lane crossing until the four pixels' bytes are packed.

   The vertical values are those of mantis_fixed_vertical_c (x << 8 made by a shift or a mask
   in place of an unpack) and every output sum the same products as mantis_fixed_hrow_c's
   plus zero products, so the result is that of the portable rows, bit for bit. */

/* Where a row's second step of `step` bytes starts: where the row's address is a multiple of
   `step`, when that is a whole number of pairs (8 bytes) in (numpy's arrays start 16 bytes
   past a cache line, and a load across two lines costs two), else right after the first.
   The steps that overlap compute the same values twice. */
static inline Py_ssize_t mantis_fixed_second_step(const uint8_t *row, Py_ssize_t step) {
    const Py_ssize_t skew = (Py_ssize_t)((uintptr_t)row & (uintptr_t)(step - 1));
    return skew && !(skew & 7) ? step - skew : step;
}

/* The steps of a group's vertical pass over a row of `width` pixels (n = 4 * width bytes in
   4-byte pixels), each STEP(at, source) covering `size` of those bytes from `at`; the bytes
   done are left in `e`. From 4 channels the second step starts where the first row's address
   is aligned (mantis_fixed_second_step); from 3, a step's whole load reads `size` source bytes
   from at / 4 * 3, so the steps whose load would pass the row's end read by a mask. A last
   step ends the row when it starts a pair; any rest is the caller's. */
#define MANTIS_FIXED_STEPS(STEP, size, tops, width, channels, e) do {                       \
        const Py_ssize_t n_ = 4 * (width);                                                  \
        (e) = 0;                                                                            \
        if (n_ < (size)) break;                                                             \
        if ((channels) == 4) {                                                              \
            STEP(0, MANTIS_SOURCE_4);                                                       \
            for ((e) = mantis_fixed_second_step((tops)[0], (size)); (e) + (size) <= n_;     \
                 (e) += (size))                                                             \
                STEP((e), MANTIS_SOURCE_4);                                                 \
            if ((e) < n_ && !((n_ - (size)) & 7)) {                                         \
                STEP(n_ - (size), MANTIS_SOURCE_4);                                         \
                (e) = n_;                                                                   \
            }                                                                               \
        } else {                                                                            \
            for (; (e) + (size) <= n_ && (e) / 4 * 3 + (size) <= 3 * (width); (e) += (size)) \
                STEP((e), MANTIS_SOURCE_3);                                                 \
            for (; (e) + (size) <= n_; (e) += (size)) STEP((e), MANTIS_SOURCE_3_END);       \
            if ((e) < n_ && !((n_ - (size)) & 7)) {                                         \
                STEP(n_ - (size), MANTIS_SOURCE_3_END);                                     \
                (e) = n_;                                                                   \
            }                                                                               \
        }                                                                                   \
    } while (0)

/* The 16-bit lane of channel c of pixel x within its pair (the layout above). */
static inline Py_ssize_t mantis_paired_lane(Py_ssize_t x, int c, Py_ssize_t pair_bytes) {
    static const int slot[4] = {0, 2, 1, 3};
    return (x >> 1) * (pair_bytes / 2) + 2 * slot[c] + (x & 1);
}

/* A group's vertical values from byte `from` on, portably (`group` rows in the layout; `e`
   counts 4 bytes a pixel, and a 3-channel source's missing fourth byte is 0). */
static void mantis_fixed_vertical_paired_c(const uint8_t *const *tops, const uint16_t *const *wy,
                                           const Py_ssize_t *rows, Py_ssize_t stride,
                                           int channels, uint8_t *pairs, int group,
                                           Py_ssize_t from, Py_ssize_t n) {
    for (int r = 0; r < group; r++) {
        uint16_t *lanes = (uint16_t *)(pairs + 16 * r);
        for (Py_ssize_t e = from; e < n; e++) {
            const Py_ssize_t c = e & 3, at = (e >> 2) * channels + c;
            uint32_t v = MANTIS_FIXED_HALF + (uint32_t)(rows[r] >> 1);
            for (Py_ssize_t t = 0; t < rows[r] && c < channels; t++)
                v += ((uint32_t)tops[r][t * stride + at] * wy[r][t]) >> 8;
            lanes[mantis_paired_lane(e >> 2, (int)(e & 3), 16 * group)] = (uint16_t)v;
        }
    }
}

/* How the steps read the source: 4 bytes a pixel; 3 bytes a pixel spread to 4 (the fourth
   0) in registers, by a whole vector load while that stays inside the row, else (END) by a
   masked load of exactly the step's bytes. A constant wherever it is passed. */
enum { MANTIS_SOURCE_4 = 0, MANTIS_SOURCE_3 = 1, MANTIS_SOURCE_3_END = 2 };

/* 8 source pixels from `p` as 32 bytes of 4-byte pixels. */
__attribute__((target("avx2"), always_inline))
static inline __m256i mantis_load8(const uint8_t *p, const int source) {
    if (source == MANTIS_SOURCE_4) return _mm256_loadu_si256((const __m256i *)p);
    const char z = (char)0x80;
    const __m256i x = source == MANTIS_SOURCE_3
        ? _mm256_loadu_si256((const __m256i *)p)
        : _mm256_maskload_epi32((const int *)p, _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0));
    /* each 128-bit lane gets its 12 bytes (dwords 3k .. 3k + 2), then a zero after every 3 */
    return _mm256_shuffle_epi8(
        _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 1, 2, 2, 3, 4, 5, 5)),
        _mm256_broadcastsi128_si256(
            _mm_setr_epi8(0, 1, 2, z, 3, 4, 5, z, 6, 7, 8, z, 9, 10, 11, z)));
}

/* One output row's vertical values for 8 source pixels (32 bytes), as pairs: m and m + 2 in
   `first`'s lanes, m + 1 and m + 3 in `second`'s. */
__attribute__((target("avx2"), always_inline))
static inline void mantis_fixed_pairs8(const uint8_t *row, Py_ssize_t stride, const __m256i *w,
                                       Py_ssize_t rows, __m256i half, __m256i *first,
                                       __m256i *second, const int source) {
    const __m256i high = _mm256_set1_epi16((short)0xFF00);
    /* 16-bit lanes (c0, c2 | c1, c3) of pixels 0..3 -> (c0 0, c0 1, c2 0, c2 1 | ...) */
    const __m256i order = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15));
    __m256i even = half, odd = half;
    for (Py_ssize_t t = 0; t < rows; t++, row += stride) {
        const __m256i x = mantis_load8(row, source);
        even = _mm256_add_epi16(even, _mm256_mulhi_epu16(_mm256_slli_epi16(x, 8), w[t]));
        odd = _mm256_add_epi16(odd, _mm256_mulhi_epu16(_mm256_and_si256(x, high), w[t]));
    }
    even = _mm256_shuffle_epi8(even, order);
    odd = _mm256_shuffle_epi8(odd, order);
    *first = _mm256_unpacklo_epi64(even, odd);
    *second = _mm256_unpackhi_epi64(even, odd);
}

/* mantis_fixed_pairs8 with the loop over the cell's rows unrolled for cells of 1 to 4 rows
   (shrinks below 4x): a loop of two or three turns cost as much as its multiplies. */
__attribute__((target("avx2"), always_inline))
static inline void mantis_fixed_pairs8_any(const uint8_t *row, Py_ssize_t stride,
                                           const __m256i *w, Py_ssize_t rows, __m256i half,
                                           __m256i *first, __m256i *second, const int source) {
    switch (rows) {
    case 1: mantis_fixed_pairs8(row, stride, w, 1, half, first, second, source); break;
    case 2: mantis_fixed_pairs8(row, stride, w, 2, half, first, second, source); break;
    case 3: mantis_fixed_pairs8(row, stride, w, 3, half, first, second, source); break;
    case 4: mantis_fixed_pairs8(row, stride, w, 4, half, first, second, source); break;
    default: mantis_fixed_pairs8(row, stride, w, rows, half, first, second, source);
    }
}

/* Both rows' pairs for bytes e .. e + 31 (4 a pixel), built in registers, stored whole. */
__attribute__((target("avx2"), always_inline))
static inline void mantis_fixed_pairs_step(const uint8_t *const *tops, Py_ssize_t stride,
                                           __m256i (*w)[MANTIS_FIXED_MAX_TAPS],
                                           const Py_ssize_t *rows, const __m256i *half,
                                           uint8_t *pairs, Py_ssize_t e, const int source) {
    __m256i fa, sa, fb, sb;
    uint8_t *p = pairs + 4 * e;  /* 32-byte pairs, 8 pixels' 4-byte values each */
    const Py_ssize_t at = source == MANTIS_SOURCE_4 ? e : e / 4 * 3;
    mantis_fixed_pairs8_any(tops[0] + at, stride, w[0], rows[0], half[0], &fa, &sa, source);
    mantis_fixed_pairs8_any(tops[1] + at, stride, w[1], rows[1], half[1], &fb, &sb, source);
    _mm256_storeu_si256((__m256i *)p, _mm256_permute2x128_si256(fa, fb, 0x20));
    _mm256_storeu_si256((__m256i *)(p + 32), _mm256_permute2x128_si256(sa, sb, 0x20));
    _mm256_storeu_si256((__m256i *)(p + 64), _mm256_permute2x128_si256(fa, fb, 0x31));
    _mm256_storeu_si256((__m256i *)(p + 96), _mm256_permute2x128_si256(sa, sb, 0x31));
}

/* The vertical values (mantis_fixed_vertical_c's) of two output rows over `width` source
   pixels (3 or 4 channels) into the paired layout, 8 pixels a step: both rows' pairs for
   those pixels are put together in registers and stored whole (a store per 16 bytes cost
   more than the arithmetic). */
__attribute__((target("avx2")))
static void mantis_fixed_vertical_pairs_avx2(const uint8_t *const *tops,
                                             const uint16_t *const *wy, const Py_ssize_t *rows,
                                             Py_ssize_t stride, int channels, uint8_t *pairs,
                                             Py_ssize_t width) {
    __m256i w[2][MANTIS_FIXED_MAX_TAPS], half[2];
    for (int r = 0; r < 2; r++) {
        half[r] = _mm256_set1_epi16((short)(MANTIS_FIXED_HALF + (rows[r] >> 1)));
        for (Py_ssize_t t = 0; t < rows[r] && t < MANTIS_FIXED_MAX_TAPS; t++)
            w[r][t] = _mm256_set1_epi16((short)wy[r][t]);
    }
    Py_ssize_t e;  /* bytes done */
#define MANTIS_PAIRS_STEP(AT, SOURCE) \
    mantis_fixed_pairs_step(tops, stride, w, rows, half, pairs, (AT), (SOURCE))
    MANTIS_FIXED_STEPS(MANTIS_PAIRS_STEP, 32, tops, width, channels, e);
#undef MANTIS_PAIRS_STEP
    mantis_fixed_vertical_paired_c(tops, wy, rows, stride, channels, pairs, 2, e, 4 * width);
}

/* One output pixel of one row (`lanes`: that row's half of pair 0), portably. */
static inline uint32_t mantis_paired_pixel_c(const uint16_t *lanes, Py_ssize_t pair_bytes,
                                             Py_ssize_t first_pair, const int32_t *weights,
                                             Py_ssize_t nw) {
    uint32_t v = 0;
    for (int c = 0; c < 4; c++) {
        int32_t s = 0;
        for (Py_ssize_t u = 0; u < nw; u++) {
            const int16_t even = (int16_t)(weights[u] & 0xFFFF);
            const int16_t odd = (int16_t)((uint32_t)weights[u] >> 16);
            const Py_ssize_t x = 2 * (first_pair + u);
            s += even * lanes[mantis_paired_lane(x, c, pair_bytes)]
                 + odd * lanes[mantis_paired_lane(x + 1, c, pair_bytes)];
        }
        s >>= MANTIS_FIXED_SHIFT;
        v |= (uint32_t)(s > 255 ? 255 : s) << (8 * c);
    }
    return v;
}

/* A packed pixel in output order: R and B swapped when asked, and for 4 bytes keep and fill. */
static inline uint32_t mantis_paired_finish(uint32_t v, int to_rgb, int swap_rb, uint32_t keep,
                                            uint32_t fill) {
    if (swap_rb) v = mantis_swap_rb(v);
    return to_rgb ? v : (v & keep) | fill;
}

/* An RGB step's 12 bytes of one row, exactly (the last step of a row: nothing after them). */
static inline void mantis_store12(uint8_t *p, __m128i lane) {
    const uint32_t last = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(lane, 8));
    _mm_storel_epi64((__m128i *)p, lane);
    memcpy(p + 8, &last, 4);
}

/* Four output pixels of both rows a step; `windows` is a constant wherever this is inlined.
   A row's last pixels are steps too, the last ending at the row's end (RGB ones stored
   exactly, mantis_store12): only rows under four pixels are the caller's. */
__attribute__((target("avx2"), always_inline))
static inline Py_ssize_t mantis_fixed_steps_paired(const uint8_t *pairs, uint8_t *out_a,
                                                   uint8_t *out_b, Py_ssize_t out_w,
                                                   const int32_t *pair_start,
                                                   const int32_t *weights,
                                                   const Py_ssize_t windows, __m256i order,
                                                   __m256i k, __m256i f, const int to_rgb) {
    /* an RGB step stores 16 bytes, 12 of them its own */
    const Py_ssize_t whole = to_rgb ? out_w - 5 : out_w - 3;
    Py_ssize_t j = 0;
#define MANTIS_PAIRED_AT(U, S) do {                                                        \
        const uint8_t *p_ = pairs + 32 * (Py_ssize_t)pair_start[j + (U)];                 \
        const int32_t *w_ = weights + windows * (j + (U));                                \
        __m256i s_ = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)p_),           \
                                       _mm256_set1_epi32(w_[0]));                         \
        for (Py_ssize_t u_ = 1; u_ < windows; u_++)                                        \
            s_ = _mm256_add_epi32(s_, _mm256_madd_epi16(                                   \
                _mm256_loadu_si256((const __m256i *)(p_ + 32 * u_)),                      \
                _mm256_set1_epi32(w_[u_])));                                               \
        (S) = _mm256_srai_epi32(s_, MANTIS_FIXED_SHIFT);                                   \
    } while (0)
    for (;; j += 4) {
        int exact = 0;
        if (j >= whole) {  /* the row's last pixels: steps ending at the row's end at most */
            if (j >= out_w || out_w < 4) break;
            if (j > out_w - 4) j = out_w - 4;  /* overlapping the step before: same values */
            exact = to_rgb;
        }
        __m256i s0, s1, s2, s3;
        MANTIS_PAIRED_AT(0, s0);
        MANTIS_PAIRED_AT(1, s1);
        MANTIS_PAIRED_AT(2, s2);
        MANTIS_PAIRED_AT(3, s3);
        /* bytes: row a's pixels j .. j + 3 in the low lane, row b's in the high */
        __m256i v = _mm256_shuffle_epi8(
            _mm256_packus_epi16(_mm256_packs_epi32(s0, s1), _mm256_packs_epi32(s2, s3)), order);
        if (exact) {
            mantis_store12(out_a + 3 * j, _mm256_castsi256_si128(v));
            mantis_store12(out_b + 3 * j, _mm256_extracti128_si256(v, 1));
        } else if (to_rgb) {
            _mm_storeu_si128((__m128i *)(out_a + 3 * j), _mm256_castsi256_si128(v));
            _mm_storeu_si128((__m128i *)(out_b + 3 * j), _mm256_extracti128_si256(v, 1));
        } else {
            v = _mm256_or_si256(_mm256_and_si256(v, k), f);
            _mm_storeu_si128((__m128i *)(out_a + 4 * j), _mm256_castsi256_si128(v));
            _mm_storeu_si128((__m128i *)(out_b + 4 * j), _mm256_extracti128_si256(v, 1));
        }
    }
#undef MANTIS_PAIRED_AT
    return j;
}

/* Two output rows from the paired layout: 3 bytes a pixel (to_rgb) or 4 (packed words with
   keep and fill applied). Rows a and b may be the same row. */
__attribute__((target("avx2")))
static void mantis_fixed_hrow_paired_avx2(const uint8_t *pairs, uint8_t *out_a, uint8_t *out_b,
                                          Py_ssize_t out_w, const int32_t *pair_start,
                                          const int32_t *weights, Py_ssize_t windows,
                                          int to_rgb, int swap_rb, uint32_t keep,
                                          uint32_t fill) {
    /* each pixel's bytes come out as (c0, c2, c1, c3) */
    const char z = (char)0x80, b0 = swap_rb ? 1 : 0, b2 = swap_rb ? 0 : 1;
    const __m128i order = to_rgb
        ? _mm_setr_epi8(b0, 2, b2, b0 + 4, 6, b2 + 4, b0 + 8, 10, b2 + 8, b0 + 12, 14, b2 + 12,
                        z, z, z, z)
        : _mm_setr_epi8(b0, 2, b2, 3, b0 + 4, 6, b2 + 4, 7, b0 + 8, 10, b2 + 8, 11,
                        b0 + 12, 14, b2 + 12, 15);
    const __m256i o = _mm256_broadcastsi128_si256(order);
    const __m256i k = _mm256_set1_epi32((int)keep), f = _mm256_set1_epi32((int)fill);
    Py_ssize_t j;
#define MANTIS_PAIRED_ROW(WINDOWS)                                                          \
    (to_rgb ? mantis_fixed_steps_paired(pairs, out_a, out_b, out_w, pair_start, weights,    \
                                        WINDOWS, o, k, f, 1)                                \
            : mantis_fixed_steps_paired(pairs, out_a, out_b, out_w, pair_start, weights,    \
                                        WINDOWS, o, k, f, 0))
    switch (windows) {
    case 1: j = MANTIS_PAIRED_ROW(1); break;
    case 2: j = MANTIS_PAIRED_ROW(2); break;
    case 3: j = MANTIS_PAIRED_ROW(3); break;
    default: j = MANTIS_PAIRED_ROW(windows);
    }
#undef MANTIS_PAIRED_ROW
    for (; j < out_w; j++) {
        for (int row = 0; row < 2; row++) {
            uint32_t v = mantis_paired_pixel_c((const uint16_t *)(pairs + 16 * row), 32,
                                               pair_start[j], weights + windows * j, windows);
            v = mantis_paired_finish(v, to_rgb, swap_rb, keep, fill);
            memcpy((row ? out_b : out_a) + (to_rgb ? 3 : 4) * j, &v, to_rgb ? 3 : 4);
        }
    }
}

/* ---- AVX-512 rows in fours (chosen at run time when the CPU has AVX-512 F and BW) ----

   The paired rows of AVX2 widened: pairs of 64 bytes hold four output rows (a, b, c, d; 16
   bytes each, the layout above), the vertical pass takes 16 source pixels a step and the
   horizontal pass one 512-bit pmaddwd a pair window for the four rows, so each instruction
   does twice the work. The same integer arithmetic again. */
#define MANTIS_FIXED_AVX512 1

static int mantis_avx512_supported(void) {
    static int has_avx512 = -1;
    if (has_avx512 < 0)  /* libgcc also checks that the OS saves the 512-bit state */
        has_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    return has_avx512;
}

/* mantis_load8, 16 pixels. */
__attribute__((target("avx512f,avx512bw"), always_inline))
static inline __m512i mantis_load16(const uint8_t *p, const int source) {
    if (source == MANTIS_SOURCE_4) return _mm512_loadu_si512((const void *)p);
    const char z = (char)0x80;
    const __m512i x = source == MANTIS_SOURCE_3 ? _mm512_loadu_si512((const void *)p)
                                                : _mm512_maskz_loadu_epi32(0x0FFF, p);
    return _mm512_shuffle_epi8(
        _mm512_permutexvar_epi32(
            _mm512_setr_epi32(0, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 11), x),
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, z, 3, 4, 5, z, 6, 7, 8, z, 9, 10, 11, z)));
}

__attribute__((target("avx512f,avx512bw"), always_inline))
static inline void mantis_fixed_pairs16(const uint8_t *row, Py_ssize_t stride, const __m512i *w,
                                        Py_ssize_t rows, __m512i half, __m512i *first,
                                        __m512i *second, const int source) {
    const __m512i high = _mm512_set1_epi16((short)0xFF00);
    const __m512i order = _mm512_broadcast_i32x4(_mm_setr_epi8(
        0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15));
    __m512i even = half, odd = half;
    for (Py_ssize_t t = 0; t < rows; t++, row += stride) {
        const __m512i x = mantis_load16(row, source);
        even = _mm512_add_epi16(even, _mm512_mulhi_epu16(_mm512_slli_epi16(x, 8), w[t]));
        odd = _mm512_add_epi16(odd, _mm512_mulhi_epu16(_mm512_and_si512(x, high), w[t]));
    }
    even = _mm512_shuffle_epi8(even, order);
    odd = _mm512_shuffle_epi8(odd, order);
    *first = _mm512_unpacklo_epi64(even, odd);   /* pairs m, m + 2, m + 4, m + 6 */
    *second = _mm512_unpackhi_epi64(even, odd);  /* pairs m + 1, m + 3, m + 5, m + 7 */
}

/* mantis_fixed_pairs8_any, 64 bytes wide. */
__attribute__((target("avx512f,avx512bw"), always_inline))
static inline void mantis_fixed_pairs16_any(const uint8_t *row, Py_ssize_t stride,
                                            const __m512i *w, Py_ssize_t rows, __m512i half,
                                            __m512i *first, __m512i *second, const int source) {
    switch (rows) {
    case 1: mantis_fixed_pairs16(row, stride, w, 1, half, first, second, source); break;
    case 2: mantis_fixed_pairs16(row, stride, w, 2, half, first, second, source); break;
    case 3: mantis_fixed_pairs16(row, stride, w, 3, half, first, second, source); break;
    case 4: mantis_fixed_pairs16(row, stride, w, 4, half, first, second, source); break;
    default: mantis_fixed_pairs16(row, stride, w, rows, half, first, second, source);
    }
}

/* Four registers' 128-bit lanes transposed (lane k of register r to lane r of register k),
   and each stored whole `step` bytes apart. */
__attribute__((target("avx512f,avx512bw"), always_inline))
static inline void mantis_store_transposed(uint8_t *p, Py_ssize_t step, __m512i a, __m512i b,
                                           __m512i c, __m512i d) {
    const __m512i ab_lo = _mm512_shuffle_i64x2(a, b, 0x44), ab_hi = _mm512_shuffle_i64x2(a, b, 0xEE);
    const __m512i cd_lo = _mm512_shuffle_i64x2(c, d, 0x44), cd_hi = _mm512_shuffle_i64x2(c, d, 0xEE);
    _mm512_storeu_si512((void *)p, _mm512_shuffle_i64x2(ab_lo, cd_lo, 0x88));
    _mm512_storeu_si512((void *)(p + step), _mm512_shuffle_i64x2(ab_lo, cd_lo, 0xDD));
    _mm512_storeu_si512((void *)(p + 2 * step), _mm512_shuffle_i64x2(ab_hi, cd_hi, 0x88));
    _mm512_storeu_si512((void *)(p + 3 * step), _mm512_shuffle_i64x2(ab_hi, cd_hi, 0xDD));
}

/* The four rows' pairs for bytes e .. e + 63 (4 a pixel), built in registers, stored whole. */
__attribute__((target("avx512f,avx512bw"), always_inline))
static inline void mantis_fixed_fours_step(const uint8_t *const *tops, Py_ssize_t stride,
                                           __m512i (*w)[MANTIS_FIXED_MAX_TAPS],
                                           const Py_ssize_t *rows, const __m512i *half,
                                           uint8_t *pairs, Py_ssize_t e, const int source) {
    __m512i f0, s0, f1, s1, f2, s2, f3, s3;
    uint8_t *p = pairs + 8 * e;  /* 64-byte pairs, 8 pixels' 4-byte values each */
    const Py_ssize_t at = source == MANTIS_SOURCE_4 ? e : e / 4 * 3;
    mantis_fixed_pairs16_any(tops[0] + at, stride, w[0], rows[0], half[0], &f0, &s0, source);
    mantis_fixed_pairs16_any(tops[1] + at, stride, w[1], rows[1], half[1], &f1, &s1, source);
    mantis_fixed_pairs16_any(tops[2] + at, stride, w[2], rows[2], half[2], &f2, &s2, source);
    mantis_fixed_pairs16_any(tops[3] + at, stride, w[3], rows[3], half[3], &f3, &s3, source);
    mantis_store_transposed(p, 2 * 64, f0, f1, f2, f3);       /* pairs m, m + 2, .. */
    mantis_store_transposed(p + 64, 2 * 64, s0, s1, s2, s3);  /* pairs m + 1, m + 3, .. */
}

/* mantis_fixed_vertical_pairs_avx2 for four rows, 16 source pixels a step. */
__attribute__((target("avx512f,avx512bw")))
static void mantis_fixed_vertical_fours_avx512(const uint8_t *const *tops,
                                               const uint16_t *const *wy,
                                               const Py_ssize_t *rows, Py_ssize_t stride,
                                               int channels, uint8_t *pairs,
                                               Py_ssize_t width) {
    __m512i w[4][MANTIS_FIXED_MAX_TAPS], half[4];
    for (int r = 0; r < 4; r++) {
        half[r] = _mm512_set1_epi16((short)(MANTIS_FIXED_HALF + (rows[r] >> 1)));
        for (Py_ssize_t t = 0; t < rows[r] && t < MANTIS_FIXED_MAX_TAPS; t++)
            w[r][t] = _mm512_set1_epi16((short)wy[r][t]);
    }
    Py_ssize_t e;  /* bytes done */
#define MANTIS_FOURS_STEP(AT, SOURCE) \
    mantis_fixed_fours_step(tops, stride, w, rows, half, pairs, (AT), (SOURCE))
    MANTIS_FIXED_STEPS(MANTIS_FOURS_STEP, 64, tops, width, channels, e);
#undef MANTIS_FOURS_STEP
    mantis_fixed_vertical_paired_c(tops, wy, rows, stride, channels, pairs, 4, e, 4 * width);
}

/* Four output pixels of the four rows a step (mantis_fixed_steps_paired, widened). */
__attribute__((target("avx512f,avx512bw"), always_inline))
static inline Py_ssize_t mantis_fixed_steps_fours(const uint8_t *pairs, uint8_t *const *out,
                                                  Py_ssize_t out_w, const int32_t *pair_start,
                                                  const int32_t *weights,
                                                  const Py_ssize_t windows, __m512i order,
                                                  __m512i k, __m512i f, const int to_rgb) {
    const Py_ssize_t whole = to_rgb ? out_w - 5 : out_w - 3;
    const Py_ssize_t size = to_rgb ? 3 : 4;
    Py_ssize_t j = 0;
#define MANTIS_FOURS_AT(U, S) do {                                                         \
        const uint8_t *p_ = pairs + 64 * (Py_ssize_t)pair_start[j + (U)];                 \
        const int32_t *w_ = weights + windows * (j + (U));                                \
        __m512i s_ = _mm512_madd_epi16(_mm512_loadu_si512((const void *)p_),              \
                                       _mm512_set1_epi32(w_[0]));                         \
        for (Py_ssize_t u_ = 1; u_ < windows; u_++)                                        \
            s_ = _mm512_add_epi32(s_, _mm512_madd_epi16(                                   \
                _mm512_loadu_si512((const void *)(p_ + 64 * u_)),                         \
                _mm512_set1_epi32(w_[u_])));                                               \
        (S) = _mm512_srai_epi32(s_, MANTIS_FIXED_SHIFT);                                   \
    } while (0)
    for (;; j += 4) {
        int exact = 0;
        if (j >= whole) {  /* as in mantis_fixed_steps_paired */
            if (j >= out_w || out_w < 4) break;
            if (j > out_w - 4) j = out_w - 4;
            exact = to_rgb;
        }
        __m512i s0, s1, s2, s3;
        MANTIS_FOURS_AT(0, s0);
        MANTIS_FOURS_AT(1, s1);
        MANTIS_FOURS_AT(2, s2);
        MANTIS_FOURS_AT(3, s3);
        /* lane r: row r's pixels j .. j + 3 */
        __m512i v = _mm512_shuffle_epi8(
            _mm512_packus_epi16(_mm512_packs_epi32(s0, s1), _mm512_packs_epi32(s2, s3)), order);
        if (!to_rgb) v = _mm512_or_si512(_mm512_and_si512(v, k), f);
        if (exact) {
            mantis_store12(out[0] + 3 * j, _mm512_castsi512_si128(v));
            mantis_store12(out[1] + 3 * j, _mm512_extracti32x4_epi32(v, 1));
            mantis_store12(out[2] + 3 * j, _mm512_extracti32x4_epi32(v, 2));
            mantis_store12(out[3] + 3 * j, _mm512_extracti32x4_epi32(v, 3));
        } else {
            _mm_storeu_si128((__m128i *)(out[0] + size * j), _mm512_castsi512_si128(v));
            _mm_storeu_si128((__m128i *)(out[1] + size * j), _mm512_extracti32x4_epi32(v, 1));
            _mm_storeu_si128((__m128i *)(out[2] + size * j), _mm512_extracti32x4_epi32(v, 2));
            _mm_storeu_si128((__m128i *)(out[3] + size * j), _mm512_extracti32x4_epi32(v, 3));
        }
    }
#undef MANTIS_FOURS_AT
    return j;
}

/* Four output rows from the layout in fours; rows may repeat (the same row written twice). */
__attribute__((target("avx512f,avx512bw")))
static void mantis_fixed_hrow_fours_avx512(const uint8_t *pairs, uint8_t *out_a, uint8_t *out_b,
                                           uint8_t *out_c, uint8_t *out_d, Py_ssize_t out_w,
                                           const int32_t *pair_start, const int32_t *weights,
                                           Py_ssize_t windows, int to_rgb, int swap_rb,
                                           uint32_t keep, uint32_t fill) {
    uint8_t *const out[4] = {out_a, out_b, out_c, out_d};
    const char z = (char)0x80, b0 = swap_rb ? 1 : 0, b2 = swap_rb ? 0 : 1;
    const __m128i order = to_rgb
        ? _mm_setr_epi8(b0, 2, b2, b0 + 4, 6, b2 + 4, b0 + 8, 10, b2 + 8, b0 + 12, 14, b2 + 12,
                        z, z, z, z)
        : _mm_setr_epi8(b0, 2, b2, 3, b0 + 4, 6, b2 + 4, 7, b0 + 8, 10, b2 + 8, 11,
                        b0 + 12, 14, b2 + 12, 15);
    const __m512i o = _mm512_broadcast_i32x4(order);
    const __m512i k = _mm512_set1_epi32((int)keep), f = _mm512_set1_epi32((int)fill);
    Py_ssize_t j;
#define MANTIS_FOURS_ROW(WINDOWS)                                                           \
    (to_rgb ? mantis_fixed_steps_fours(pairs, out, out_w, pair_start, weights, WINDOWS, o,  \
                                       k, f, 1)                                             \
            : mantis_fixed_steps_fours(pairs, out, out_w, pair_start, weights, WINDOWS, o,  \
                                       k, f, 0))
    switch (windows) {
    case 1: j = MANTIS_FOURS_ROW(1); break;
    case 2: j = MANTIS_FOURS_ROW(2); break;
    case 3: j = MANTIS_FOURS_ROW(3); break;
    default: j = MANTIS_FOURS_ROW(windows);
    }
#undef MANTIS_FOURS_ROW
    for (; j < out_w; j++) {
        for (int row = 0; row < 4; row++) {
            uint32_t v = mantis_paired_pixel_c((const uint16_t *)(pairs + 16 * row), 64,
                                               pair_start[j], weights + windows * j, windows);
            v = mantis_paired_finish(v, to_rgb, swap_rb, keep, fill);
            memcpy(out[row] + (to_rgb ? 3 : 4) * j, &v, to_rgb ? 3 : 4);
        }
    }
}
#else
static void mantis_fixed_vertical_avx2(const uint8_t *top, Py_ssize_t stride,
                                       const uint16_t *wy, Py_ssize_t rows, uint16_t *acc,
                                       Py_ssize_t n) {}
static void mantis_fixed_vertical_pairs_avx2(const uint8_t *const *tops,
                                             const uint16_t *const *wy, const Py_ssize_t *rows,
                                             Py_ssize_t stride, int channels, uint8_t *pairs,
                                             Py_ssize_t width) {}
static void mantis_fixed_hrow_paired_avx2(const uint8_t *pairs, uint8_t *out_a, uint8_t *out_b,
                                          Py_ssize_t out_w, const int32_t *pair_start,
                                          const int32_t *weights, Py_ssize_t windows,
                                          int to_rgb, int swap_rb, uint32_t keep,
                                          uint32_t fill) {}
#define MANTIS_FIXED_AVX512 0
static int mantis_avx512_supported(void) { return 0; }
static void mantis_fixed_vertical_fours_avx512(const uint8_t *const *tops,
                                               const uint16_t *const *wy,
                                               const Py_ssize_t *rows, Py_ssize_t stride,
                                               int channels, uint8_t *pairs,
                                               Py_ssize_t width) {}
static void mantis_fixed_hrow_fours_avx512(const uint8_t *pairs, uint8_t *out_a, uint8_t *out_b,
                                           uint8_t *out_c, uint8_t *out_d, Py_ssize_t out_w,
                                           const int32_t *pair_start, const int32_t *weights,
                                           Py_ssize_t windows, int to_rgb, int swap_rb,
                                           uint32_t keep, uint32_t fill) {}
#endif

#endif /* MANTIS_RESIZE_FIXED_H */
