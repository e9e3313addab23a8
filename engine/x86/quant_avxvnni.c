/* quant_avxvnni.c — the typed-weight kernels with AVX-VNNI (vpdpbusd on
 * ymm, VEX-encoded: Intel Alder Lake and later, AMD Zen 4/5), for the AVX2
 * table where the CPU has it: the decode GEMV and the prefill GEMM of
 * Q8_0/Q4_0 (quant_tmpl.h, qgemm_tmpl.h; Q4_0's long rows on
 * qgemv_ymm_tmpl.h's two-blocks-per-ymm GEMV). */
#include <immintrin.h>

#include "engine/x86/x86.h"

#define DOT32(acc, u, s) (acc) = _mm256_dpbusd_avx_epi32((acc), (u), (s))
#define MATMUL_F32 tg_matmul_avx2
#define SUFFIX avxvnni

/* the int8 GEMM's vocabulary: ymm, 3 tokens × 16 rows (12 accumulators of
 * 16 registers) */
typedef __m256i qvi;
typedef __m256 qvf;
#define QL 8
#define QMR 3
#define qdpbusd(acc, u, s) _mm256_dpbusd_avx_epi32((acc), (u), (s))
static inline qvi qload_i(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline qvi qbcast_i32(const void *p) {
    int32_t v;
    __builtin_memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
static inline qvi qset1_i32(int32_t v) { return _mm256_set1_epi32(v); }
static inline qvf qcvt(qvi v) { return _mm256_cvtepi32_ps(v); }
static inline qvf qloadf(const float *p) { return _mm256_loadu_ps(p); }
static inline __m256i q_lanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline qvf qloadf_n(const float *p, int n) { return _mm256_maskload_ps(p, q_lanes(n)); }
static inline void qstoref(float *p, qvf v) { _mm256_storeu_ps(p, v); }
static inline void qstoref_n(float *p, qvf v, int n) { _mm256_maskstore_ps(p, q_lanes(n), v); }
static inline qvf qset1f(float v) { return _mm256_set1_ps(v); }
static inline qvf qfma(qvf a, qvf b, qvf c) { return _mm256_fmadd_ps(a, b, c); }
static inline qvf qmul(qvf a, qvf b) { return _mm256_mul_ps(a, b); }
static inline qvf qadd(qvf a, qvf b) { return _mm256_add_ps(a, b); }

/* the long-row Q4_0 decode GEMV of qgemv_ymm_tmpl.h (two blocks per ymm,
 * two rows per pass), its two nibble dot products as two vpdpbusd into the
 * int32 lanes (no int16 step to fit) */
#define DOT_NIB2(acc, u1, s1, u2, s2) \
    (acc) = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32((acc), (u1), (s1)), (u2), (s2))
static void gemv_q4_ymm(float *y, const tg_block_q8_0 *xb, const char *w, size_t ldw,
                        const float *b, int nb, int o0, int o1);
#ifndef Q4Y_OFF
#define GEMV_Q4_WIDE(y, x, w, ldw, b, nb, o0, o1) \
    ((nb) % 8 == 0 && (nb) > 16 ? (gemv_q4_ymm((y), (x), (w), (ldw), (b), (nb), (o0), (o1)), 1) : 0)
#endif

#include "engine/x86/quant_tmpl.h"
#include "engine/x86/qgemv_ymm_tmpl.h"
