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

#include "engine/x86/quant_tmpl.h"
