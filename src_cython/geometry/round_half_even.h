/* Round half to even, as Python's round(): the coordinate kernels' one rounding. */
#ifndef MANTIS_ROUND_HALF_EVEN_H
#define MANTIS_ROUND_HALF_EVEN_H

#include <stdint.h>

/* The hardware conversion in the default rounding mode (one SSE2 instruction on x86-64; rint
   elsewhere) gives the same integer Python's round() gives. */
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
static inline int64_t mantis_round_half_even(double q) {
    return _mm_cvtsd_si64(_mm_set_sd(q));
}
#else
#include <math.h>
static inline int64_t mantis_round_half_even(double q) { return (int64_t)rint(q); }
#endif

#endif /* MANTIS_ROUND_HALF_EVEN_H */
