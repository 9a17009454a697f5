/* AVX2 kernels of pixels._resize, each compiled for AVX2 alone and chosen at run time. */
#ifndef MANTIS_RESIZE_AVX2_H
#define MANTIS_RESIZE_AVX2_H

#include <Python.h>  /* Py_ssize_t; the Cython module includes it first anyway */
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>
#define MANTIS_AVX2 1
/* Source bytes a row kernel prefetches ahead of its loads: a frame bigger than the last-level
   cache (a 4K screen is 33 MB) streams from memory, and the two or three rows a kernel reads
   at once are too few streams for the hardware prefetcher to keep busy (4K -> 720p measured
   3.8 ms without, 2.6 ms with). */
#define MANTIS_PREFETCH_AHEAD 4096

static int mantis_avx2_supported(void) {
    static int has_avx2 = -1;
    if (has_avx2 < 0) has_avx2 = __builtin_cpu_supports("avx2");
    return has_avx2;
}

/* The small-factor kernels below keep everything in bytes and 16-bit lanes: each 128-bit
   lane loads a few source pixels, pshufb pairs the channels of neighbours and pmaddubsw
   weighs the pairs (horizontal sums of two output pixels a lane), rows are added in 16-bit
   lanes, and the rounded bytes go through one pshufb into the output byte order: 3 bytes a
   pixel, or 4 masked and alpha filled. The same block code runs on zero-padded copies of
   the last few pixels of a row, so no load or store leaves the rows. */
typedef struct {
    __m256i take, weights, emit, keep, fill;
} mantis_small_area;

__attribute__((target("avx2")))
static inline __m256i mantis_load_lanes(const uint8_t *p, Py_ssize_t lane1) {
    return _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p)),
        _mm_loadu_si128((const __m128i *)(p + lane1)), 1);
}

/* The horizontal step of every block: a row's lanes shuffled into channel pairs, weighed. */
__attribute__((target("avx2")))
static inline __m256i mantis_pair_sums(const uint8_t *p, Py_ssize_t lane1,
                                       const mantis_small_area *k) {
    return _mm256_maddubs_epi16(_mm256_shuffle_epi8(mantis_load_lanes(p, lane1), k->take),
                                k->weights);
}

/* Four output pixels a lane (bytes, source channel order) -> output order, masked and
   filled for 4 output channels (`masked` is a constant wherever this is inlined). */
__attribute__((target("avx2"), always_inline))
static inline __m256i mantis_emit(__m256i q, const mantis_small_area *k, const int masked) {
    q = _mm256_shuffle_epi8(q, k->emit);
    return masked ? _mm256_or_si256(_mm256_and_si256(q, k->keep), k->fill) : q;
}

/* `take` and `weights` are the caller's; the rest follows the output layout. */
__attribute__((target("avx2")))
static void mantis_small_area_emit(mantis_small_area *k, int out_channels, int swap_rb,
                                   uint32_t keep, uint32_t fill) {
    const char z = (char)0x80;   /* pshufb: a zero byte */
    const char b0 = swap_rb ? 2 : 0, b2 = swap_rb ? 0 : 2;
    if (out_channels == 4) {
        k->emit = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            b0, 1, b2, 3, b0 + 4, 5, b2 + 4, 7, b0 + 8, 9, b2 + 8, 11,
            b0 + 12, 13, b2 + 12, 15));
        k->keep = _mm256_set1_epi32((int)keep);
        k->fill = _mm256_set1_epi32((int)fill);
    } else {
        k->emit = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            b0, 1, b2, b0 + 4, 5, b2 + 4, b0 + 8, 9, b2 + 8, b0 + 12, 13, b2 + 12,
            z, z, z, z));
        k->keep = _mm256_set1_epi32(-1);
        k->fill = _mm256_setzero_si256();
    }
}

/* Exact area 3 -> 2 on both axes (1.5x, e.g. 1920x1080 -> 1280x720): three source rows
   give two output rows, three source pixels two output pixels, with weights (2, 1) and
   (1, 2) per axis, denominator 9.

   - horizontal: a lane's three pixels a, b, c pair as (a, b) and (b, c), weighed (4, 2)
     and (2, 4): twice the horizontal sums, at most 1530;
   - vertical: 2 * sum + 9 = (H0 + H0 + H1) + 9 and (H1 + H2 + H2) + 9, at most 4599;
   - rounding: floor(s / 9 + 1/2) by the 16-bit multiply-shift of area_rounding16, which
     is (7282, 17) for 9: the multiplier is even, so pmulhuw by 3641 alone (a shift of
     exactly 16) gives the same quotients;
   - packuswb then vpermq put row 0's four pixels in lane 0 and row 1's in lane 1.

   A block is four output pixels of both rows: six source pixels of three rows, 16 bytes
   read at p and p + 3 * channels of each. */
__attribute__((target("avx2"), always_inline))
static inline __m256i mantis_thirds_block(const uint8_t *p0, const uint8_t *p1,
                                          const uint8_t *p2, Py_ssize_t lane1,
                                          const mantis_small_area *k, __m256i nine,
                                          __m256i mult, const int masked) {
    const __m256i h0 = mantis_pair_sums(p0, lane1, k), h1 = mantis_pair_sums(p1, lane1, k);
    const __m256i h2 = mantis_pair_sums(p2, lane1, k);
    __m256i n0 = _mm256_add_epi16(_mm256_add_epi16(h0, h0), _mm256_add_epi16(h1, nine));
    __m256i n1 = _mm256_add_epi16(_mm256_add_epi16(h2, h2), _mm256_add_epi16(h1, nine));
    __m256i q0 = _mm256_mulhi_epu16(n0, mult), q1 = _mm256_mulhi_epu16(n1, mult);
    return mantis_emit(_mm256_permute4x64_epi64(_mm256_packus_epi16(q0, q1), 0xD8), k,
                       masked);
}

/* Whole blocks from output pixel 0 while their 16-byte loads and stores stay inside the
   rows; returns the first pixel left. */
__attribute__((target("avx2"), always_inline))
static inline Py_ssize_t mantis_thirds_blocks(const uint8_t *r0, const uint8_t *r1,
                                              const uint8_t *r2, uint8_t *o0, uint8_t *o1,
                                              Py_ssize_t out_w, Py_ssize_t channels,
                                              Py_ssize_t out_channels,
                                              const mantis_small_area *k, __m256i nine,
                                              __m256i mult, const int masked) {
    const Py_ssize_t lane1 = 3 * channels, src_step = 6 * channels;
    const Py_ssize_t out_step = 4 * out_channels;
    Py_ssize_t j = 0, s = 0, o = 0;
    for (; j + 6 <= out_w; j += 4, s += src_step, o += out_step) {
        _mm_prefetch((const char *)r0 + s + MANTIS_PREFETCH_AHEAD, _MM_HINT_T0);
        _mm_prefetch((const char *)r1 + s + MANTIS_PREFETCH_AHEAD, _MM_HINT_T0);
        _mm_prefetch((const char *)r2 + s + MANTIS_PREFETCH_AHEAD, _MM_HINT_T0);
        __m256i q = mantis_thirds_block(r0 + s, r1 + s, r2 + s, lane1, k, nine, mult,
                                        masked);
        _mm_storeu_si128((__m128i *)(o0 + o), _mm256_castsi256_si128(q));
        _mm_storeu_si128((__m128i *)(o1 + o), _mm256_extracti128_si256(q, 1));
    }
    return j;
}

/* Output rows o0, o1 (out_w pixels, out_w even) from source rows r0, r1, r2. */
__attribute__((target("avx2")))
static void mantis_area_rows_thirds(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                                    uint8_t *o0, uint8_t *o1, Py_ssize_t out_w,
                                    int channels, int out_channels, uint32_t mult16,
                                    int shift16, int swap_rb, uint32_t keep,
                                    uint32_t fill) {
    const char z = (char)0x80;
    mantis_small_area k;
    if (channels == 4)
        k.take = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            0, 4, 1, 5, 2, 6, 3, 7, 4, 8, 5, 9, 6, 10, 7, 11));
    else
        k.take = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            0, 3, 1, 4, 2, 5, z, z, 3, 6, 4, 7, 5, 8, z, z));
    k.weights = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        4, 2, 4, 2, 4, 2, 4, 2, 2, 4, 2, 4, 2, 4, 2, 4));
    mantis_small_area_emit(&k, out_channels, swap_rb, keep, fill);
    const __m256i nine = _mm256_set1_epi16(9);
    const __m256i mult = _mm256_set1_epi16((short)(mult16 >> (shift16 - 16)));
    const Py_ssize_t lane1 = 3 * channels, src_step = 6 * channels;
    const Py_ssize_t out_step = 4 * out_channels;
    const int masked = out_channels == 4;
    Py_ssize_t j = masked
        ? mantis_thirds_blocks(r0, r1, r2, o0, o1, out_w, channels, 4, &k, nine, mult, 1)
        : mantis_thirds_blocks(r0, r1, r2, o0, o1, out_w, channels, 3, &k, nine, mult, 0);
    Py_ssize_t s = j / 2 * 3 * channels, o = j * out_channels;
    for (; j < out_w; j += 4, s += src_step, o += out_step) {
        const Py_ssize_t pixels = out_w - j < 4 ? out_w - j : 4;
        const size_t in_bytes = (size_t)(pixels / 2 * 3 * channels);
        const size_t out_bytes = (size_t)(pixels * out_channels);
        uint8_t a[32] = {0}, b[32] = {0}, c[32] = {0}, q[32];
        memcpy(a, r0 + s, in_bytes);
        memcpy(b, r1 + s, in_bytes);
        memcpy(c, r2 + s, in_bytes);
        _mm256_storeu_si256((__m256i *)q,
                            mantis_thirds_block(a, b, c, lane1, &k, nine, mult, masked));
        memcpy(o0 + o, q, out_bytes);
        memcpy(o1 + o, q + 16, out_bytes);
    }
}

/* Exact area 2 -> 1 on both axes (2x): each lane's four source pixels pair as (a, b) and
   (c, d) with weights 1, the two rows' sums are added and (s + 2) >> 2 rounds them
   (floor(s / 4 + 1/2) exactly). A block is eight output pixels of one row, from sixteen
   source pixels of two rows: 16 bytes read at p, p + 4 * channels, p + 8 * channels and
   p + 12 * channels. */
__attribute__((target("avx2"), always_inline))
static inline __m256i mantis_halves_block(const uint8_t *p0, const uint8_t *p1,
                                          Py_ssize_t channels, const mantis_small_area *k,
                                          const int masked) {
    const __m256i two = _mm256_set1_epi16(2);
    const Py_ssize_t lane1 = 4 * channels, half = 8 * channels;
    __m256i a = _mm256_add_epi16(mantis_pair_sums(p0, lane1, k),
                                 mantis_pair_sums(p1, lane1, k));
    __m256i b = _mm256_add_epi16(mantis_pair_sums(p0 + half, lane1, k),
                                 mantis_pair_sums(p1 + half, lane1, k));
    a = _mm256_srli_epi16(_mm256_add_epi16(a, two), 2);
    b = _mm256_srli_epi16(_mm256_add_epi16(b, two), 2);
    return mantis_emit(_mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), 0xD8), k,
                       masked);
}

/* Whole blocks from output pixel 0 while their loads and stores stay inside the rows;
   returns the first pixel left. */
__attribute__((target("avx2"), always_inline))
static inline Py_ssize_t mantis_halves_blocks(const uint8_t *r0, const uint8_t *r1,
                                              uint8_t *o, Py_ssize_t out_w,
                                              Py_ssize_t channels, Py_ssize_t out_channels,
                                              const mantis_small_area *k, const int masked) {
    const Py_ssize_t src_step = 16 * channels, out_half = 4 * out_channels;
    Py_ssize_t j = 0, s = 0, b = 0;
    for (; j + 10 <= out_w; j += 8, s += src_step, b += 2 * out_half) {
        _mm_prefetch((const char *)r0 + s + MANTIS_PREFETCH_AHEAD, _MM_HINT_T0);
        _mm_prefetch((const char *)r1 + s + MANTIS_PREFETCH_AHEAD, _MM_HINT_T0);
        __m256i q = mantis_halves_block(r0 + s, r1 + s, channels, k, masked);
        _mm_storeu_si128((__m128i *)(o + b), _mm256_castsi256_si128(q));
        _mm_storeu_si128((__m128i *)(o + b + out_half), _mm256_extracti128_si256(q, 1));
    }
    return j;
}

/* Output row o (out_w pixels) from source rows r0, r1. */
__attribute__((target("avx2")))
static void mantis_area_row_halves(const uint8_t *r0, const uint8_t *r1, uint8_t *o,
                                   Py_ssize_t out_w, int channels, int out_channels,
                                   int swap_rb, uint32_t keep, uint32_t fill) {
    const char z = (char)0x80;
    mantis_small_area k;
    if (channels == 4)
        k.take = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15));
    else
        k.take = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            0, 3, 1, 4, 2, 5, z, z, 6, 9, 7, 10, 8, 11, z, z));
    k.weights = _mm256_set1_epi8(1);
    mantis_small_area_emit(&k, out_channels, swap_rb, keep, fill);
    const Py_ssize_t src_step = 16 * channels, out_half = 4 * out_channels;
    const int masked = out_channels == 4;
    Py_ssize_t j = masked ? mantis_halves_blocks(r0, r1, o, out_w, channels, 4, &k, 1)
                          : mantis_halves_blocks(r0, r1, o, out_w, channels, 3, &k, 0);
    Py_ssize_t s = j * 2 * channels, b = j * out_channels;
    for (; j < out_w; j += 8, s += src_step, b += 2 * out_half) {
        const Py_ssize_t pixels = out_w - j < 8 ? out_w - j : 8;
        uint8_t a[64] = {0}, c[64] = {0}, q[32];
        memcpy(a, r0 + s, (size_t)(2 * pixels * channels));
        memcpy(c, r1 + s, (size_t)(2 * pixels * channels));
        _mm256_storeu_si256((__m256i *)q, mantis_halves_block(a, c, channels, &k, masked));
        /* lane 0 holds pixels 0..3, lane 1 pixels 4..7 */
        memcpy(o + b, q, (size_t)((pixels < 4 ? pixels : 4) * out_channels));
        if (pixels > 4)
            memcpy(o + b + out_half, q + 16, (size_t)((pixels - 4) * out_channels));
    }
}

/* The SSE2 horizontal row mantis_area_hrow16 (any geometry with 16-bit vertical sums),
   two output pixels a register: lanes hold pixels (j, j + 2) in one register and
   (j + 1, j + 3) in the other, so after packssdw lane 0 holds pixels j, j + 1 and lane 1
   pixels j + 2, j + 3, and one vpermq puts the four packed words in order. The last
   out_w % 4 pixels go through the SSE2 row. */
__attribute__((target("avx2")))
static inline __m256i mantis_load_two(const void *lo, const void *hi) {
    return _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo)),
        _mm_loadu_si128((const __m128i *)hi), 1);
}

#define MANTIS_SUM16_AVX2(CH, NPAIRS, PA, PB, WA, WB, S) do {                          \
        const uint16_t *pa_ = (PA), *pb_ = (PB);                                       \
        const int16_t *wa_ = (WA), *wb_ = (WB);                                        \
        __m256i s_ = bias;                                                             \
        for (Py_ssize_t t_ = 0; t_ < (NPAIRS); t_++) {                                 \
            __m256i x_ = _mm256_xor_si256(mantis_load_two(pa_, pb_), flip);            \
            x_ = _mm256_unpacklo_epi16(x_, _mm256_srli_si256(x_, 2 * (CH)));           \
            s_ = _mm256_add_epi32(s_, _mm256_madd_epi16(x_, mantis_load_two(wa_, wb_))); \
            pa_ += 2 * (CH); pb_ += 2 * (CH); wa_ += 8; wb_ += 8;                      \
        }                                                                              \
        (S) = s_;                                                                      \
    } while (0)

#define MANTIS_AREA_ROW_AVX2(CH, NPAIRS) do {                                          \
        for (; j + 4 <= out_w; j += 4) {                                               \
            const int16_t *w_ = pairs + 8 * npairs * j;                                \
            __m256i sa, sb, q;                                                         \
            MANTIS_SUM16_AVX2(CH, NPAIRS, acc + (CH) * (Py_ssize_t)xs[j],              \
                              acc + (CH) * (Py_ssize_t)xs[j + 2], w_,                  \
                              w_ + 16 * npairs, sa);                                   \
            MANTIS_SUM16_AVX2(CH, NPAIRS, acc + (CH) * (Py_ssize_t)xs[j + 1],          \
                              acc + (CH) * (Py_ssize_t)xs[j + 3], w_ + 8 * npairs,     \
                              w_ + 24 * npairs, sb);                                   \
            if (small) {                                                               \
                __m256i s = _mm256_packs_epi32(sa, sb);                                \
                __m256i n = _mm256_add_epi16(_mm256_add_epi16(s, s), d16);             \
                q = _mm256_srl_epi16(_mm256_mulhi_epu16(n, m16), k16);                 \
            } else {                                                                   \
                q = _mm256_packs_epi32(mantis_round32_avx2(sa, d32, m32, k32),         \
                                       mantis_round32_avx2(sb, d32, m32, k32));        \
            }                                                                          \
            if (swap_rb)                                                               \
                q = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(q, 0xC6), 0xC6);     \
            q = _mm256_permute4x64_epi64(_mm256_packus_epi16(q, q), 0x08);             \
            _mm_storeu_si128((__m128i *)(packed + j),                                  \
                             _mm_or_si128(_mm_and_si128(_mm256_castsi256_si128(q), k4), \
                                          f4));                                        \
        }                                                                              \
    } while (0)

__attribute__((target("avx2")))
static inline __m256i mantis_round32_avx2(__m256i s, __m256i d, __m256i m, __m128i k) {
    __m256i n = _mm256_add_epi32(_mm256_add_epi32(s, s), d);
    __m256i q02 = _mm256_srl_epi64(_mm256_mul_epu32(n, m), k);
    __m256i q13 = _mm256_srl_epi64(_mm256_mul_epu32(_mm256_srli_epi64(n, 32), m), k);
    return _mm256_or_si256(q02, _mm256_slli_epi64(q13, 32));
}

__attribute__((target("avx2")))
static void mantis_area_hrow16_avx2(const uint16_t *acc, uint32_t *packed,
                                    Py_ssize_t out_w, const int32_t *xs,
                                    const int16_t *pairs, Py_ssize_t npairs, uint32_t cell,
                                    int channels, uint32_t denom, uint32_t mult, int shift,
                                    uint32_t mult16, int shift16, int swap_rb,
                                    uint32_t keep, uint32_t fill) {
    const __m256i flip = _mm256_set1_epi16((short)0x8000);
    const __m256i bias = _mm256_set1_epi32((int)(32768u * cell));
    const __m256i d32 = _mm256_set1_epi32((int)denom), m32 = _mm256_set1_epi32((int)mult);
    const __m256i d16 = _mm256_set1_epi16((short)denom);
    const __m256i m16 = _mm256_set1_epi16((short)mult16);
    const __m128i k32 = _mm_cvtsi32_si128(shift), k16 = _mm_cvtsi32_si128(shift16 - 16);
    const __m128i k4 = _mm_set1_epi32((int)keep), f4 = _mm_set1_epi32((int)fill);
    const int small = mult16 != 0;
    Py_ssize_t j = 0;
    /* Two pairs (three or four taps: shrinking by 1x to 3x, the usual sizes) unrolled. */
    if (channels == 4 && npairs == 2) MANTIS_AREA_ROW_AVX2(4, 2);
    else if (channels == 4) MANTIS_AREA_ROW_AVX2(4, npairs);
    else if (npairs == 2) MANTIS_AREA_ROW_AVX2(3, 2);
    else MANTIS_AREA_ROW_AVX2(3, npairs);
    if (j < out_w)
        mantis_area_hrow16(acc, packed + j, out_w - j, xs + j, pairs + 8 * npairs * j,
                           npairs, cell, channels, denom, mult, shift, mult16, shift16,
                           swap_rb, keep, fill);
}

/* The vertical pass into 16-bit sums (area_vertical with vertical denominators <= 257):
   sixteen columns at a time summed over all the cell's rows in a register, so the row is
   written once. Products and sums fit 16 bits (at most 255 * 257). */
__attribute__((target("avx2")))
static void mantis_area_vertical16_avx2(const uint8_t *top, Py_ssize_t stride,
                                        const uint32_t *wy, Py_ssize_t rows, int unit,
                                        uint16_t *acc, Py_ssize_t n) {
    Py_ssize_t e = 0;
    for (; e + 32 <= n; e += 32) {
        const uint8_t *row = top + e;
        __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
        for (Py_ssize_t t = 0; t < rows; t++, row += stride) {
            _mm_prefetch((const char *)row + MANTIS_PREFETCH_AHEAD, _MM_HINT_T0);
            __m256i a = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)row));
            __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(row + 16)));
            if (!unit) {
                const __m256i w = _mm256_set1_epi16((short)wy[t]);
                a = _mm256_mullo_epi16(a, w);
                b = _mm256_mullo_epi16(b, w);
            }
            lo = _mm256_add_epi16(lo, a);
            hi = _mm256_add_epi16(hi, b);
        }
        _mm256_storeu_si256((__m256i *)(acc + e), lo);
        _mm256_storeu_si256((__m256i *)(acc + e + 16), hi);
    }
    for (; e < n; e++) {
        uint32_t sum = 0;
        for (Py_ssize_t t = 0; t < rows; t++) sum += wy[t] * top[t * stride + e];
        acc[e] = (uint16_t)sum;
    }
}

/* Exact area 3 -> 1 along the row (an integer factor of 3, e.g. 4K -> 1280x720) from the
   16-bit vertical sums of a 4-channel row: four output pixels a step, from twelve source
   pixels (64-bit lanes of four channels). Four 128-bit loads, each two pixels into one
   lane of a register, give [p0 p1 | p6 p7], [p3 p4 | p9 p10], [p2 p3 | p8 p9] and
   [p4 p5 | p10 p11]; unpacking the first two and blending the last two line up the three
   pixels of each output (p0 p3 p6 p9, p1 p4 p7 p10, p2 p5 p8 p11), which add up in order.
   The rounding is area_rounding16's (denominator <= 64: every 2s + d fits 16 bits).
   Returns the first output pixel left (the caller's SSE2 row does the rest). */
__attribute__((target("avx2")))
static Py_ssize_t mantis_area_hrow_box3_avx2(const uint16_t *acc, uint32_t *packed,
                                             Py_ssize_t out_w, uint32_t denom,
                                             uint32_t mult16, int shift16, int swap_rb,
                                             uint32_t keep, uint32_t fill) {
    const __m256i d = _mm256_set1_epi16((short)denom), m = _mm256_set1_epi16((short)mult16);
    const __m128i k = _mm_cvtsi32_si128(shift16 - 16);
    const __m128i keep4 = _mm_set1_epi32((int)keep), fill4 = _mm_set1_epi32((int)fill);
    Py_ssize_t j = 0;
    for (; j + 4 <= out_w; j += 4) {
        const uint16_t *p = acc + 12 * j;
#define MANTIS_TWO_PIXEL_PAIRS(A, B)                                                   \
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(                \
            (const __m128i *)(p + 4 * (A)))), _mm_loadu_si128((const __m128i *)(p + 4 * (B))), 1)
        const __m256i y0 = MANTIS_TWO_PIXEL_PAIRS(0, 6), y1 = MANTIS_TWO_PIXEL_PAIRS(3, 9);
        const __m256i y2 = MANTIS_TWO_PIXEL_PAIRS(2, 8), y3 = MANTIS_TWO_PIXEL_PAIRS(4, 10);
#undef MANTIS_TWO_PIXEL_PAIRS
        __m256i s = _mm256_add_epi16(_mm256_unpacklo_epi64(y0, y1),
                                     _mm256_unpackhi_epi64(y0, y1));
        s = _mm256_add_epi16(s, _mm256_blend_epi32(y2, y3, 0xCC));
        __m256i q = _mm256_srl_epi16(
            _mm256_mulhi_epu16(_mm256_add_epi16(_mm256_add_epi16(s, s), d), m), k);
        if (swap_rb) q = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(q, 0xC6), 0xC6);
        /* pixels 0, 1 in lane 0 and 2, 3 in lane 1, bytes in each lane's low half */
        q = _mm256_permute4x64_epi64(_mm256_packus_epi16(q, q), 0x08);
        _mm_storeu_si128((__m128i *)(packed + j),
                         _mm_or_si128(_mm_and_si128(_mm256_castsi256_si128(q), keep4), fill4));
    }
    return j;
}

/* emit_row for 3 output channels: eight packed pixels to 24 bytes a step (one 32-byte
   store, the last 8 bytes overwritten by the next step), the tail a pixel at a time. */
__attribute__((target("avx2")))
static void mantis_emit_rgb_avx2(const uint32_t *packed, uint8_t *o, Py_ssize_t n) {
    const char z = (char)0x80;
    const __m256i take = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, z, z, z, z));
    const __m256i order = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
    Py_ssize_t j = 0;
    for (; 3 * j + 32 <= 3 * n; j += 8) {
        __m256i v = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(packed + j)),
                                        take);
        _mm256_storeu_si256((__m256i *)(o + 3 * j), _mm256_permutevar8x32_epi32(v, order));
    }
    for (; j < n; j++) {
        o[3 * j] = (uint8_t)packed[j];
        o[3 * j + 1] = (uint8_t)(packed[j] >> 8);
        o[3 * j + 2] = (uint8_t)(packed[j] >> 16);
    }
}
/* emit_row for L, eight packed pixels (bytes R, G, B, _) a step: Pillow's BT.601 formula
   (19595 R + 38470 G + 7471 B + 0x8000) >> 16 in the same integers, as two pmaddwd: (R, B)
   by (19595, 7471), and (G, _) by (19235, 0) doubled (38470 is no signed 16-bit factor). */
__attribute__((target("avx2")))
static void mantis_emit_luma_avx2(const uint32_t *packed, uint8_t *o, Py_ssize_t n) {
    const __m256i low = _mm256_set1_epi32(0x00FF00FF);
    const __m256i rb = _mm256_set1_epi32((7471 << 16) | 19595);
    const __m256i g = _mm256_set1_epi32(19235);
    const __m256i half = _mm256_set1_epi32(0x8000);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    Py_ssize_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(packed + j));
        __m256i s = _mm256_madd_epi16(_mm256_and_si256(v, low), rb);
        s = _mm256_add_epi32(s, _mm256_slli_epi32(
            _mm256_madd_epi16(_mm256_and_si256(_mm256_srli_epi32(v, 8), low), g), 1));
        s = _mm256_srli_epi32(_mm256_add_epi32(s, half), 16);
        /* dwords 0..7 -> bytes: the packs work within lanes, the permute undoes it */
        __m256i q = _mm256_packus_epi32(s, s);
        q = _mm256_packus_epi16(q, q);
        q = _mm256_permutevar8x32_epi32(q, order);
        _mm_storel_epi64((__m128i *)(o + j), _mm256_castsi256_si128(q));
    }
    for (; j < n; j++) {
        const uint32_t v = packed[j];
        o[j] = (uint8_t)((19595 * (v & 0xFF) + 38470 * ((v >> 8) & 0xFF)
                          + 7471 * ((v >> 16) & 0xFF) + 0x8000) >> 16);
    }
}

/* Nearest neighbour's packed row: eight source pixels a step by one gather (4 bytes from
   each pixel's first byte), R and B swapped by pshufb, masked and filled. From 3 channels
   the fourth byte is the next pixel's (masked off): the steps stop where it would lie past
   the row, the rest goes a pixel at a time. Returns the pixels done. */
__attribute__((target("avx2")))
static Py_ssize_t mantis_nearest_row_avx2(const uint8_t *row, Py_ssize_t width, int channels,
                                          const int32_t *xi, uint32_t *packed, Py_ssize_t n,
                                          int swap_rb, uint32_t keep, uint32_t fill) {
    const __m256i swap = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(2, 1, 0, 3, 6, 5, 4, 7, 10, 9, 8, 11, 14, 13, 12, 15));
    const __m256i k = _mm256_set1_epi32((int)keep), f = _mm256_set1_epi32((int)fill);
    Py_ssize_t safe = n;  /* xi never decreases */
    if (channels == 3)
        while (safe > 0 && 3 * (Py_ssize_t)xi[safe - 1] + 4 > 3 * width) safe--;
    Py_ssize_t j = 0;
    for (; j + 8 <= safe; j += 8) {
        __m256i at = _mm256_loadu_si256((const __m256i *)(xi + j));
        if (channels == 3) at = _mm256_add_epi32(at, _mm256_add_epi32(at, at));
        else at = _mm256_slli_epi32(at, 2);
        __m256i v = _mm256_i32gather_epi32((const int *)row, at, 1);
        if (swap_rb) v = _mm256_shuffle_epi8(v, swap);
        _mm256_storeu_si256((__m256i *)(packed + j),
                            _mm256_or_si256(_mm256_and_si256(v, k), f));
    }
    return j;
}
/* Bilinear rows (resize_bilinear), the integers of its portable row bit for bit: the two
   source rows blended in 32-bit lanes (pmaddwd of their zero-extended values side by side,
   by (2048 - fy, fy)), then each output pixel's two neighbours weighed by its lane weights
   (2048 - f four times, f four times) with pmulld, the halves added and rounded. */
__attribute__((target("avx2")))
static void mantis_bilinear_vertical_avx2(const uint8_t *r0, const uint8_t *r1, uint32_t fy,
                                          uint32_t *acc, Py_ssize_t n) {
    const __m256i w = _mm256_set1_epi32((int)((fy << 16) | (2048 - fy)));
    Py_ssize_t e = 0;
    for (; e + 16 <= n; e += 16) {
        const __m256i a = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(r0 + e)));
        const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(r1 + e)));
        /* unpacks work within lanes: lo holds values 0-3 | 8-11, hi 4-7 | 12-15 */
        const __m256i lo = _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), w);
        const __m256i hi = _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), w);
        _mm256_storeu_si256((__m256i *)(acc + e), _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_storeu_si256((__m256i *)(acc + e + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
    for (; e < n; e++) acc[e] = (2048 - fy) * r0[e] + fy * r1[e];
}

/* One output pixel's four channel sums, rounded (`spread` puts a 3-channel pixel pair's
   values in lanes 0-2 and 4-6; lanes 3 and 7 hold the next value, masked off later). */
__attribute__((target("avx2"), always_inline))
static inline __m128i mantis_bilinear_pixel(const uint32_t *p, const int32_t *w, __m256i spread) {
    const __m256i v = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)p), spread);
    const __m256i prod = _mm256_mullo_epi32(v, _mm256_loadu_si256((const __m256i *)w));
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(prod), _mm256_extracti128_si256(prod, 1));
    return _mm_srli_epi32(_mm_add_epi32(s, _mm_set1_epi32(1 << 21)), 22);
}

/* Output pixels two a step; reads 8 values from each pixel's left neighbour (the caller's
   zero padding covers the row's end). */
__attribute__((target("avx2")))
static void mantis_bilinear_hrow_avx2(const uint32_t *acc, uint32_t *packed, Py_ssize_t out_w,
                                      const int32_t *xs, const int32_t *lanes, int channels,
                                      int swap_rb, uint32_t keep, uint32_t fill) {
    const __m256i spread = channels == 4 ? _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)
                                         : _mm256_setr_epi32(0, 1, 2, 3, 3, 4, 5, 6);
    const __m128i swap = _mm_setr_epi8(2, 1, 0, 3, 6, 5, 4, 7, 10, 9, 8, 11, 14, 13, 12, 15);
    const __m128i k = _mm_set1_epi32((int)keep), f = _mm_set1_epi32((int)fill);
    Py_ssize_t j = 0;
    for (; j + 2 <= out_w; j += 2) {
        const __m128i a = mantis_bilinear_pixel(acc + channels * xs[j], lanes + 8 * j, spread);
        const __m128i b = mantis_bilinear_pixel(acc + channels * xs[j + 1], lanes + 8 * j + 8,
                                                spread);
        __m128i q = _mm_packus_epi16(_mm_packus_epi32(a, b), _mm_setzero_si128());
        if (swap_rb) q = _mm_shuffle_epi8(q, swap);
        _mm_storel_epi64((__m128i *)(packed + j), _mm_or_si128(_mm_and_si128(q, k), f));
    }
    if (j < out_w) {
        __m128i q = mantis_bilinear_pixel(acc + channels * xs[j], lanes + 8 * j, spread);
        q = _mm_packus_epi16(_mm_packus_epi32(q, q), q);
        if (swap_rb) q = _mm_shuffle_epi8(q, swap);
        packed[j] = (uint32_t)_mm_cvtsi128_si32(_mm_or_si128(_mm_and_si128(q, k), f));
    }
}
#else
#define MANTIS_AVX2 0
static int mantis_avx2_supported(void) { return 0; }
static void mantis_area_rows_thirds(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                                    uint8_t *o0, uint8_t *o1, Py_ssize_t out_w,
                                    int channels, int out_channels, uint32_t mult16,
                                    int shift16, int swap_rb, uint32_t keep,
                                    uint32_t fill) {}
static void mantis_area_row_halves(const uint8_t *r0, const uint8_t *r1, uint8_t *o,
                                   Py_ssize_t out_w, int channels, int out_channels,
                                   int swap_rb, uint32_t keep, uint32_t fill) {}
static void mantis_area_hrow16_avx2(const uint16_t *acc, uint32_t *packed,
                                    Py_ssize_t out_w, const int32_t *xs,
                                    const int16_t *pairs, Py_ssize_t npairs, uint32_t cell,
                                    int channels, uint32_t denom, uint32_t mult, int shift,
                                    uint32_t mult16, int shift16, int swap_rb,
                                    uint32_t keep, uint32_t fill) {}
static void mantis_area_vertical16_avx2(const uint8_t *top, Py_ssize_t stride,
                                        const uint32_t *wy, Py_ssize_t rows, int unit,
                                        uint16_t *acc, Py_ssize_t n) {}
static Py_ssize_t mantis_area_hrow_box3_avx2(const uint16_t *acc, uint32_t *packed,
                                             Py_ssize_t out_w, uint32_t denom,
                                             uint32_t mult16, int shift16, int swap_rb,
                                             uint32_t keep, uint32_t fill) { return 0; }
static void mantis_emit_rgb_avx2(const uint32_t *packed, uint8_t *o, Py_ssize_t n) {}
static void mantis_emit_luma_avx2(const uint32_t *packed, uint8_t *o, Py_ssize_t n) {}
static void mantis_bilinear_vertical_avx2(const uint8_t *r0, const uint8_t *r1, uint32_t fy,
                                          uint32_t *acc, Py_ssize_t n) {}
static void mantis_bilinear_hrow_avx2(const uint32_t *acc, uint32_t *packed, Py_ssize_t out_w,
                                      const int32_t *xs, const int32_t *lanes, int channels,
                                      int swap_rb, uint32_t keep, uint32_t fill) {}
static Py_ssize_t mantis_nearest_row_avx2(const uint8_t *row, Py_ssize_t width, int channels,
                                          const int32_t *xi, uint32_t *packed, Py_ssize_t n,
                                          int swap_rb, uint32_t keep, uint32_t fill) {
    return 0;
}
#endif

#endif /* MANTIS_RESIZE_AVX2_H */
