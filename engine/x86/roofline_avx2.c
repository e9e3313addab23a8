/* roofline_avx2.c — the FMA peak probe (roofline.h), 8-lane AVX2 FMA: the shared
 * template in this ISA's vocabulary. */
#include "engine/x86/vec_avx2.h"
#include "engine/simd/fma_probe_tmpl.h"

#include <immintrin.h>

/* The DRAM read probe (roofline.h): 256-byte steps, eight ymm loads into
 * four integer accumulators. */
uint64_t tg_read_probe_avx2(const uint64_t *w, size_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 32 <= n; i += 32) {
        const __m256i *p = (const __m256i *)(w + i);
        a0 = _mm256_add_epi64(a0, _mm256_add_epi64(_mm256_load_si256(p), _mm256_load_si256(p + 4)));
        a1 = _mm256_add_epi64(a1, _mm256_add_epi64(_mm256_load_si256(p + 1), _mm256_load_si256(p + 5)));
        a2 = _mm256_add_epi64(a2, _mm256_add_epi64(_mm256_load_si256(p + 2), _mm256_load_si256(p + 6)));
        a3 = _mm256_add_epi64(a3, _mm256_add_epi64(_mm256_load_si256(p + 3), _mm256_load_si256(p + 7)));
    }
    uint64_t s[4];
    _mm256_storeu_si256((__m256i *)s, _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
    return s[0] + s[1] + s[2] + s[3];
}
