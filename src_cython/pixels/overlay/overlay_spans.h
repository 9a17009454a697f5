/* Blend and gradient spans of pixels.overlay._overlay (float32, SSE2 where x86-64 has it). */
#ifndef MANTIS_OVERLAY_SPANS_H
#define MANTIS_OVERLAY_SPANS_H

#include <Python.h>  /* Py_ssize_t; the Cython module includes it first anyway */
#include <stdint.h>

#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>  /* SSE2 is part of x86-64: no CPU dispatch needed */
#endif

/* A gradient is a sum of ramps (see expand_stops): table row 0 holds the first stop
   (position, r, g, b, a), row k >= 1 the step from stop k - 1 to stop k as (position,
   width, dr, dg, db, da, hard). A ramp adds slope * clamp(t - position, 0, width); a hard
   edge (width 0) adds its jump once t > position. */
#define MANTIS_ROW 9

/* The blend of one channel byte, in float32: floor(dst + (colour - dst) * a + 0.5).
   0 <= a <= 1 and 0 <= colour <= 255 keep the value in [0, 256). */
static inline uint8_t mantis_mix(uint8_t dst, float colour, float a) {
    float d = (float)dst;
    return (uint8_t)(int)(d + (colour - d) * a + 0.5f);
}

/* The float32 path of a gradient shape, for well-conditioned geometry (distances below
   4096 px, no ramp narrower than 1e-3, no hard edge: float32 then stays far inside the
   1-LSB budget): distance, coverage, gradient and blend of n pixels fused, four at a
   time. Pixel i is at dx = dx0 + i, dy from the gradient centre; its coverage is
   cover[i] (a rectangle) or, when cover is NULL, min(max(reach - d, 0), cap) (a disc).
   table: the ramp table in float32; colour bytes in B, G, R order when bgr. */
static inline float mantis_ramp_f(float t, const float *row) {
    float u = t - row[0];
    u = u > 0.0f ? u : 0.0f;
    return u < row[1] ? u : row[1];
}

static void mantis_gradient_span(uint8_t *p, Py_ssize_t n, int nch, int bgr, float dx0,
                                 float dy, float ginv, const double *cover, float reach,
                                 float cap, const float *table, Py_ssize_t rows,
                                 float shape_alpha, int uniform) {
    const float dy2 = dy * dy;
    const int first = uniform ? 3 : 0, red = bgr ? 2 : 0, blue = bgr ? 0 : 2;
    Py_ssize_t i = 0, k;
    int j;
#if defined(__SSE2__)
    const __m128 zero = _mm_setzero_ps(), half = _mm_set1_ps(0.5f);
    const __m128 vdy2 = _mm_set1_ps(dy2), vg = _mm_set1_ps(ginv), va = _mm_set1_ps(shape_alpha);
    const __m128 vreach = _mm_set1_ps(reach), vcap = _mm_set1_ps(cap);
    const __m128 vdx0 = _mm_set1_ps(dx0);
    const __m128 keep = _mm_castsi128_ps(_mm_set_epi32(0, -1, -1, -1));
    const __m128i izero = _mm_setzero_si128();
    const Py_ssize_t stop = nch == 4 ? n - 3 : n - 5;  /* 3-byte pixels read 16 bytes */
    for (; i < stop; i += 4) {
        __m128 x = _mm_add_ps(vdx0, _mm_cvtepi32_ps(_mm_set_epi32(
            (int)i + 3, (int)i + 2, (int)i + 1, (int)i)));
        __m128 d = _mm_sqrt_ps(_mm_add_ps(_mm_mul_ps(x, x), vdy2));
        __m128 t = _mm_mul_ps(d, vg), c[4], a, w[4], v[4], dst[4];
        __m128 cr = _mm_set1_ps(table[1]), cg = _mm_set1_ps(table[2]);
        __m128 cb = _mm_set1_ps(table[3]), ca = _mm_set1_ps(table[4]);
        __m128i px = _mm_loadu_si128((const __m128i *)(p + nch * i)), lo, hi, o[4];
        if (cover)
            a = _mm_movelh_ps(_mm_cvtpd_ps(_mm_loadu_pd(cover + i)),
                              _mm_cvtpd_ps(_mm_loadu_pd(cover + i + 2)));
        else
            a = _mm_min_ps(_mm_max_ps(_mm_sub_ps(vreach, d), zero), vcap);
        /* Registers, not an array indexed in a loop: that would live on the stack. */
        for (k = 1; k < rows; k++) {
            const float *row = table + k * MANTIS_ROW;
            __m128 u = _mm_max_ps(_mm_sub_ps(t, _mm_set1_ps(row[0])), zero);
            u = _mm_min_ps(u, _mm_set1_ps(row[1]));
            ca = _mm_add_ps(ca, _mm_mul_ps(u, _mm_set1_ps(row[5])));
            if (!uniform) {
                cr = _mm_add_ps(cr, _mm_mul_ps(u, _mm_set1_ps(row[2])));
                cg = _mm_add_ps(cg, _mm_mul_ps(u, _mm_set1_ps(row[3])));
                cb = _mm_add_ps(cb, _mm_mul_ps(u, _mm_set1_ps(row[4])));
            }
        }
        a = _mm_mul_ps(a, _mm_mul_ps(ca, va));
        c[0] = bgr ? cb : cr;
        c[1] = cg;
        c[2] = bgr ? cr : cb;
        lo = _mm_unpacklo_epi8(px, izero);
        hi = _mm_unpackhi_epi8(px, izero);
        dst[0] = _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, izero));
        dst[1] = _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, izero));
        dst[2] = _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, izero));
        dst[3] = _mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, izero));
        if (nch == 4) {
            v[0] = c[0]; v[1] = c[1]; v[2] = c[2]; v[3] = zero;
            _MM_TRANSPOSE4_PS(v[0], v[1], v[2], v[3]);
            w[0] = _mm_and_ps(_mm_shuffle_ps(a, a, 0x00), keep);
            w[1] = _mm_and_ps(_mm_shuffle_ps(a, a, 0x55), keep);
            w[2] = _mm_and_ps(_mm_shuffle_ps(a, a, 0xAA), keep);
            w[3] = _mm_and_ps(_mm_shuffle_ps(a, a, 0xFF), keep);
            for (j = 0; j < 4; j++)
                o[j] = _mm_cvttps_epi32(_mm_add_ps(_mm_add_ps(
                    dst[j], _mm_mul_ps(_mm_sub_ps(v[j], dst[j]), w[j])), half));
            _mm_storeu_si128((__m128i *)(p + 4 * i), _mm_packus_epi16(
                _mm_packs_epi32(o[0], o[1]), _mm_packs_epi32(o[2], o[3])));
        } else {
            /* Planar R, G, B of four pixels -> their 12 bytes in order. */
            __m128 rg_lo = _mm_unpacklo_ps(c[0], c[1]), rg_hi = _mm_unpackhi_ps(c[0], c[1]);
            __m128 b0r1 = _mm_shuffle_ps(c[2], c[0], _MM_SHUFFLE(1, 1, 0, 0));
            __m128 g1b1 = _mm_shuffle_ps(c[1], c[2], _MM_SHUFFLE(1, 1, 1, 1));
            __m128 b2r3 = _mm_shuffle_ps(c[2], rg_hi, _MM_SHUFFLE(3, 2, 3, 2));
            __m128i out;
            int tail;
            v[0] = _mm_shuffle_ps(rg_lo, b0r1, _MM_SHUFFLE(2, 0, 1, 0));
            v[1] = _mm_shuffle_ps(g1b1, rg_hi, _MM_SHUFFLE(1, 0, 2, 0));
            v[2] = _mm_shuffle_ps(b2r3, b2r3, _MM_SHUFFLE(1, 3, 2, 0));
            w[0] = _mm_shuffle_ps(a, a, _MM_SHUFFLE(1, 0, 0, 0));
            w[1] = _mm_shuffle_ps(a, a, _MM_SHUFFLE(2, 2, 1, 1));
            w[2] = _mm_shuffle_ps(a, a, _MM_SHUFFLE(3, 3, 3, 2));
            for (j = 0; j < 3; j++)
                o[j] = _mm_cvttps_epi32(_mm_add_ps(_mm_add_ps(
                    dst[j], _mm_mul_ps(_mm_sub_ps(v[j], dst[j]), w[j])), half));
            out = _mm_packus_epi16(_mm_packs_epi32(o[0], o[1]), _mm_packs_epi32(o[2], o[2]));
            tail = _mm_cvtsi128_si32(_mm_srli_si128(out, 8));
            _mm_storel_epi64((__m128i *)(p + 3 * i), out);
            memcpy(p + 3 * i + 8, &tail, 4);
        }
    }
#endif
    for (; i < n; i++) {
        float x = dx0 + (float)(int)i;
        float d = sqrtf(x * x + dy2), t = d * ginv, c[4], a;
        uint8_t *q = p + nch * i;
        if (cover) {
            a = (float)cover[i];
        } else {
            a = reach - d;
            a = a > 0.0f ? a : 0.0f;
            a = a < cap ? a : cap;
        }
        for (j = 0; j < 4; j++) c[j] = table[1 + j];
        for (k = 1; k < rows; k++) {
            const float *row = table + k * MANTIS_ROW;
            float u = mantis_ramp_f(t, row);
            for (j = first; j < 4; j++) c[j] = c[j] + u * row[2 + j];
        }
        a = a * (c[3] * shape_alpha);
        q[0] = mantis_mix(q[0], c[red], a);
        q[1] = mantis_mix(q[1], c[1], a);
        q[2] = mantis_mix(q[2], c[blue], a);
    }
}


/* Blend n pixels of nch (3 or 4) bytes at p: pixel i toward colour with alpha a[i]. The
   colour is `rgb` (3 floats, pixel byte order) for every pixel when `colour` is NULL, else
   colour[i * nch + c]. The SSE2 loops do exactly the scalar float32 operations, four
   lanes at a time (lanes that are not colour bytes get alpha 0: their bytes come back as
   they were), so the result does not depend on where a pixel falls in a span. */
static void mantis_blend_span(uint8_t *p, Py_ssize_t n, int nch, const float *a,
                              const float *colour, const float *rgb) {
    Py_ssize_t i = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    const __m128 half = _mm_set1_ps(0.5f);
    if (nch == 4) {
        const __m128 keep = _mm_castsi128_ps(_mm_set_epi32(0, -1, -1, -1));
        const __m128 solid = _mm_set_ps(0.0f, rgb[2], rgb[1], rgb[0]);
        for (; i + 4 <= n; i += 4) {
            __m128i px = _mm_loadu_si128((const __m128i *)(p + 4 * i));
            __m128i lo = _mm_unpacklo_epi8(px, zero), hi = _mm_unpackhi_epi8(px, zero);
            __m128 d[4], c[4], w[4];
            __m128 av = _mm_loadu_ps(a + i);
            __m128i o[4];
            d[0] = _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, zero));
            d[1] = _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, zero));
            d[2] = _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, zero));
            d[3] = _mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, zero));
            w[0] = _mm_and_ps(_mm_shuffle_ps(av, av, 0x00), keep);
            w[1] = _mm_and_ps(_mm_shuffle_ps(av, av, 0x55), keep);
            w[2] = _mm_and_ps(_mm_shuffle_ps(av, av, 0xAA), keep);
            w[3] = _mm_and_ps(_mm_shuffle_ps(av, av, 0xFF), keep);
            for (int k = 0; k < 4; k++) {
                c[k] = colour ? _mm_loadu_ps(colour + 4 * (i + k)) : solid;
                o[k] = _mm_cvttps_epi32(_mm_add_ps(_mm_add_ps(
                    d[k], _mm_mul_ps(_mm_sub_ps(c[k], d[k]), w[k])), half));
            }
            _mm_storeu_si128((__m128i *)(p + 4 * i), _mm_packus_epi16(
                _mm_packs_epi32(o[0], o[1]), _mm_packs_epi32(o[2], o[3])));
        }
    } else {
        /* Four pixels are 12 bytes: load 16 (the span is long enough), blend 12. */
        const __m128 s0 = _mm_set_ps(rgb[0], rgb[2], rgb[1], rgb[0]);
        const __m128 s1 = _mm_set_ps(rgb[1], rgb[0], rgb[2], rgb[1]);
        const __m128 s2 = _mm_set_ps(rgb[2], rgb[1], rgb[0], rgb[2]);
        for (; i + 6 <= n; i += 4) {
            __m128i px = _mm_loadu_si128((const __m128i *)(p + 3 * i));
            __m128i lo = _mm_unpacklo_epi8(px, zero), hi = _mm_unpackhi_epi8(px, zero);
            __m128 d[3], c[3], w[3];
            __m128 av = _mm_loadu_ps(a + i);
            __m128i o[3];
            d[0] = _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, zero));
            d[1] = _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, zero));
            d[2] = _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, zero));
            w[0] = _mm_shuffle_ps(av, av, _MM_SHUFFLE(1, 0, 0, 0));
            w[1] = _mm_shuffle_ps(av, av, _MM_SHUFFLE(2, 2, 1, 1));
            w[2] = _mm_shuffle_ps(av, av, _MM_SHUFFLE(3, 3, 3, 2));
            if (colour) {
                c[0] = _mm_loadu_ps(colour + 3 * i);
                c[1] = _mm_loadu_ps(colour + 3 * i + 4);
                c[2] = _mm_loadu_ps(colour + 3 * i + 8);
            } else {
                c[0] = s0;
                c[1] = s1;
                c[2] = s2;
            }
            for (int k = 0; k < 3; k++)
                o[k] = _mm_cvttps_epi32(_mm_add_ps(_mm_add_ps(
                    d[k], _mm_mul_ps(_mm_sub_ps(c[k], d[k]), w[k])), half));
            {
                /* Store the 12 bytes only: a 16-byte store overlapping the next load
                   would stall it (no store forwarding across a partial overlap). */
                __m128i out = _mm_packus_epi16(_mm_packs_epi32(o[0], o[1]),
                                               _mm_packs_epi32(o[2], o[2]));
                int tail = _mm_cvtsi128_si32(_mm_srli_si128(out, 8));
                _mm_storel_epi64((__m128i *)(p + 3 * i), out);
                memcpy(p + 3 * i + 8, &tail, 4);
            }
        }
    }
#endif
    for (; i < n; i++) {
        uint8_t *q = p + nch * i;
        const float *c = colour ? colour + nch * i : rgb;
        q[0] = mantis_mix(q[0], c[0], a[i]);
        q[1] = mantis_mix(q[1], c[1], a[i]);
        q[2] = mantis_mix(q[2], c[2], a[i]);
    }
}

#endif /* MANTIS_OVERLAY_SPANS_H */
