/* roofline_avx512.c — the FMA peak probe (roofline.h), 16-lane AVX-512
 * FMA: the shared template in this ISA's vocabulary. */
#include "engine/x86/vec_avx512.h"
#include "engine/simd/fma_probe_tmpl.h"

#include <immintrin.h>

/* The DRAM read probe (roofline.h): 256-byte steps, four zmm loads into
 * four integer accumulators. */
uint64_t tg_read_probe_avx512(const uint64_t *w, size_t n) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 32 <= n; i += 32) {
        a0 = _mm512_add_epi64(a0, _mm512_load_si512(w + i));
        a1 = _mm512_add_epi64(a1, _mm512_load_si512(w + i + 8));
        a2 = _mm512_add_epi64(a2, _mm512_load_si512(w + i + 16));
        a3 = _mm512_add_epi64(a3, _mm512_load_si512(w + i + 24));
    }
    /* summed as unsigned words: _mm512_reduce_add_epi64 adds signed ones,
     * whose wrap-around is undefined behaviour in C */
    uint64_t s[8];
    _mm512_storeu_si512(s, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}
