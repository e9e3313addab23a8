/* vec_avx2.h — the SIMD vocabulary of engine/simd/ (ops, attn, train templates) for AVX2 + FMA:
 * one vector type of VL floats, a lane mask for tails, and the few
 * operations the kernels are written in. Include only from files built with
 * -mavx2 -mfma. */
#ifndef TINYGPT_VEC_AVX2_H
#define TINYGPT_VEC_AVX2_H

#include <immintrin.h>
#include <sleef.h>
#include <stdint.h>

#include "engine/x86/tr8_avx.h"

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
/* Per lane: m active ? a : b */
static inline vf vsel(vmask m, vf a, vf b) { return _mm256_blendv_ps(b, a, _mm256_castsi256_ps(m)); }

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
/* dst[j·ldd + i] = r[i][k + j] for i, j < 8: eight rows of 8 floats
 * transposed (the prefill tile's queries in, its outputs out) */
#define VTR8(dst, ldd, r, k) tg_tr8_avx((dst), (ldd), (r), (k))

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

/* Two rows of VL/2 floats per vector (head size 4): a[m] holds rows 2m
 * (lanes 0-3) and 2m+1 (lanes 4-7); lane r of the result = the sum of row
 * r. Three hadds leave row 2i in lane i and row 2i+1 in lane 4 + i. */
static inline vf vsum_halves(const vf a[VL / 2]) {
    vf u = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    return _mm256_permutevar8x32_ps(u, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}
/* lanes 0-3 = p[0], lanes 4-7 = p[1] */
static inline vf vbcast_pair(const float *p) {
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)p))),
                                    _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
}
/* lanes 0-3 = the low half + the high half */
static inline vf vfold_halves(vf x) { return _mm256_add_ps(x, _mm256_permute2f128_ps(x, x, 1)); }

/* VL IEEE halves <-> f32 (F16C, round to nearest even) */
static inline vf vld_h(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
static inline void vst_h(uint16_t *p, vf x) {
    _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

#endif
