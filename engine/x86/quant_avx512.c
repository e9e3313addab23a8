/* quant_avx512.c — the typed-weight kernels for the AVX-512 table with
 * AVX512-VNNI (vpdpbusd, EVEX on ymm: the decode GEMV streams 256-bit
 * loads, as the f32 one does; on zmm in the prefill GEMM of Q8_0/Q4_0) and
 * the AVX-512 f32 GEMM behind the other types' T > 1 (quant_tmpl.h,
 * qgemm_tmpl.h). */
#include <immintrin.h>

#include "engine/x86/x86.h"

#define DOT32(acc, u, s) (acc) = _mm256_dpbusd_epi32((acc), (u), (s))
#define MATMUL_F32 tg_matmul_avx512
#define SUFFIX avx512vnni

/* the int8 GEMM's vocabulary: zmm, 6 tokens × 32 rows (24 accumulators) */
typedef __m512i qvi;
typedef __m512 qvf;
#define QL 16
#define QMR 6
#define qdpbusd(acc, u, s) _mm512_dpbusd_epi32((acc), (u), (s))
static inline qvi qload_i(const void *p) { return _mm512_loadu_si512(p); }
static inline qvi qbcast_i32(const void *p) {
    int32_t v;
    __builtin_memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}
static inline qvi qset1_i32(int32_t v) { return _mm512_set1_epi32(v); }
static inline qvf qcvt(qvi v) { return _mm512_cvtepi32_ps(v); }
static inline qvf qloadf(const float *p) { return _mm512_loadu_ps(p); }
static inline qvf qloadf_n(const float *p, int n) {
    return _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1u), p);
}
static inline void qstoref(float *p, qvf v) { _mm512_storeu_ps(p, v); }
static inline void qstoref_n(float *p, qvf v, int n) {
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1u), v);
}
static inline qvf qset1f(float v) { return _mm512_set1_ps(v); }
static inline qvf qfma(qvf a, qvf b, qvf c) { return _mm512_fmadd_ps(a, b, c); }
static inline qvf qmul(qvf a, qvf b) { return _mm512_mul_ps(a, b); }
static inline qvf qadd(qvf a, qvf b) { return _mm512_add_ps(a, b); }

/* the f16 scales of 8 consecutive Q4_0 (q4) or Q8_0 blocks from p as 8
 * words: word permutes across two zmm loads (Q4_0: the scales are words
 * 9·j of the 144 bytes; Q8_0: words 17·j of 272, two permutes), reading
 * only bytes of those 8 blocks */
static inline __m128i gemv_scales8(int q4, const char *p) {
    const __m512i l0 = _mm512_loadu_si512(p), l1 = _mm512_loadu_si512(p + 64);
    if (q4) {
        const __m512i i9 = _mm512_setr_epi32(9 << 16, 27 << 16 | 18, 45 << 16 | 36, 63 << 16 | 54, 0,
                                             0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        return _mm512_castsi512_si128(_mm512_permutex2var_epi16(l0, i9, l1));
    }
    const __m512i l2 = _mm512_loadu_si512(p + 128), l3 = _mm512_loadu_si512(p + 192);
    /* words 0, 17, 34, 51 of l0:l1 into words 0..3; 68, 85, 102, 119 (4,
     * 21, 38, 55 of l2:l3) into words 4..7 */
    const __m512i ia = _mm512_setr_epi32(17 << 16, 51 << 16 | 34, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                         0, 0, 0, 0);
    const __m512i ib = _mm512_setr_epi32(0, 0, 21 << 16 | 4, 55 << 16 | 38, 0, 0, 0, 0, 0, 0, 0,
                                         0, 0, 0, 0, 0);
    __m128i a = _mm512_castsi512_si128(_mm512_permutex2var_epi16(l0, ia, l1));
    __m128i b = _mm512_castsi512_si128(_mm512_permutex2var_epi16(l2, ib, l3));
    return _mm_blend_epi16(a, b, 0xf0);
}
#define GEMV_SCALES8(q4, p) gemv_scales8((q4), (p))

/* the same for 4 blocks (a row of IN = 128: the tiny models), read under a
 * mask so that no byte past the 4 blocks is touched */
static inline __m128i gemv_scales4(int q4, const char *p) {
    int words = q4 ? 4 * 9 : 4 * 17; /* 72 or 136 bytes */
    __m512i l0 = _mm512_maskz_loadu_epi16((__mmask32)(words >= 32 ? ~0u : (1u << words) - 1u), p);
    __m512i l1 = words > 32 ? _mm512_maskz_loadu_epi16((__mmask32)((1ull << (words - 32)) - 1u), p + 64)
                            : _mm512_setzero_si512();
    const __m512i i = q4 ? _mm512_setr_epi32(9 << 16, 27 << 16 | 18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                         : _mm512_setr_epi32(17 << 16, 51 << 16 | 34, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castsi512_si128(_mm512_permutex2var_epi16(l0, i, l1));
}
#define GEMV_SCALES4(q4, p) gemv_scales4((q4), (p))

/* the short-row GEMV two blocks per zmm (qgemv_small_tmpl.h) */
#define GEMV_SMALL_ZMM 1

#include "engine/x86/quant_tmpl.h"
