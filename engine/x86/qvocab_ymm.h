/* qvocab_ymm.h — the ymm vocabulary of the int8 prefill GEMM
 * (qgemm_tmpl.h) and the long-row Q4_0 decode GEMV hook (qgemv_ymm_tmpl.h)
 * shared by the AVX2 and AVX-VNNI tables (quant_avx2.c, quant_avxvnni.c),
 * which define their own qdpbusd (and DOT32, DOT_NIB2) before including
 * it: QMR tokens × 16 rows, 12 accumulators of 16 registers at QMR 3. */
#ifndef TINYGPT_QVOCAB_YMM_H
#define TINYGPT_QVOCAB_YMM_H
#include <immintrin.h>
#include <stdint.h>

#include "engine/x86/x86.h"

typedef __m256i qvi;
typedef __m256 qvf;
#define QL 8
#ifndef QMR
#define QMR 3
#endif
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

/* the long-row GEMVs (qgemv_ymm_tmpl.h): rows of 8·k blocks, k > 2 */
static void gemv_q4_ymm(float *y, const tg_block_q8_0 *xb, const char *w, size_t ldw,
                        const float *b, int nb, int o0, int o1);
#ifndef Q4Y_OFF
#define GEMV_Q4_WIDE(y, x, w, ldw, b, nb, o0, o1) \
    ((nb) % 8 == 0 && (nb) > 16 ? (gemv_q4_ymm((y), (x), (w), (ldw), (b), (nb), (o0), (o1)), 1) : 0)
#endif

#endif
