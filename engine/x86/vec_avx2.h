/* vec_avx2.h — the SIMD vocabulary of engine/simd/ (ops, attn, train templates) for AVX2 + FMA:
 * one vector type of VL floats, a lane mask for tails, and the few
 * operations the kernels are written in. Include only from files built with
 * -mavx2 -mfma. */
#ifndef TINYGPT_VEC_AVX2_H
#define TINYGPT_VEC_AVX2_H

#include <immintrin.h>
#include <sleef.h>
#include <stdint.h>

#define VL 8
#define ISA_SUFFIX avx2

typedef __m256 vf;
typedef __m256i vmask; /* lane r active iff its sign bit is set */

static inline vf vzero(void) { return _mm256_setzero_ps(); }
static inline vf vset(float x) { return _mm256_set1_ps(x); }
static inline vf vld(const float *p) { return _mm256_loadu_ps(p); }
static inline void vst(float *p, vf x) { _mm256_storeu_ps(p, x); }
static inline vf vbcast(const float *p) { return _mm256_broadcast_ss(p); }

/* The first n lanes active, 0 <= n <= VL. */
static inline vmask vmask_first(int n) {
    static const int32_t ones_then_zeros[2 * VL] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                    0,  0,  0,  0,  0,  0,  0,  0};
    return _mm256_loadu_si256((const __m256i *)(ones_then_zeros + VL - n));
}
/* Masked loads never touch memory of inactive lanes (no fault past the end). */
static inline vf vld_m(const float *p, vmask m) { return _mm256_maskload_ps(p, m); }
static inline vf vld_m_or(const float *p, vmask m, vf fill) {
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
static inline void vst_m(float *p, vmask m, vf x) { _mm256_maskstore_ps(p, m, x); }

static inline vf vadd(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vsub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vdiv(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vsqrt(vf x) { return _mm256_sqrt_ps(x); }
static inline vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); } /* a*b+c */
/* max(acc, x) where a NaN in x is skipped (MAXPS returns its second operand
 * when either is NaN), like the reference's `x > m ? x : m`. */
static inline vf vswap_pairs(vf x) { return _mm256_permute_ps(x, 0xB1); } /* lanes 2i <-> 2i+1 */
static inline vf vmax(vf acc, vf x) { return _mm256_max_ps(x, acc); }
static inline vf vexp(vf x) { return Sleef_expf8_u10avx2(x); }

static inline float vsum(vf x) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline float vhmax(vf x) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Lane r of the result = the sum of the lanes of a[r]: VL dot products
 * finished together. */
static inline vf vsum_lanes(const vf a[VL]) {
    vf h01 = _mm256_hadd_ps(a[0], a[1]), h23 = _mm256_hadd_ps(a[2], a[3]);
    vf h45 = _mm256_hadd_ps(a[4], a[5]), h67 = _mm256_hadd_ps(a[6], a[7]);
    vf h0123 = _mm256_hadd_ps(h01, h23), h4567 = _mm256_hadd_ps(h45, h67);
    /* h0123 = [a0 a1 a2 a3 (low halves) | a0 a1 a2 a3 (high halves)] */
    vf lo = _mm256_permute2f128_ps(h0123, h4567, 0x20);
    vf hi = _mm256_permute2f128_ps(h0123, h4567, 0x31);
    return _mm256_add_ps(lo, hi);
}

#endif
