/* qvocab_zmm.h — the zmm vocabulary of the int8 prefill GEMM (qgemm_tmpl.h)
 * shared by the AVX-512 tables with AVX512-VNNI (quant_avx512.c) and
 * without it (quant_avx512bw.c), which define their own qdpbusd (and
 * qdpbusd2 / qdpbusd_s) before or after including it: QMR tokens × 32 rows,
 * 24 accumulators at QMR 6. */
#ifndef TINYGPT_QVOCAB_ZMM_H
#define TINYGPT_QVOCAB_ZMM_H
#include <immintrin.h>
#include <stdint.h>

typedef __m512i qvi;
typedef __m512 qvf;
#define QL 16
#define QMR 6
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

#endif
