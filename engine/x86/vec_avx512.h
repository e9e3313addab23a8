/* vec_avx512.h — the SIMD vocabulary of engine/simd/ (ops, attn, train templates) for AVX-512F:
 * one vector type of VL floats, a lane mask for tails, and the few
 * operations the kernels are written in. Include only from files built with
 * -mavx512f. */
#ifndef TINYGPT_VEC_AVX512_H
#define TINYGPT_VEC_AVX512_H

#include <immintrin.h>
#include <sleef.h>
#include <stdint.h>

#include "engine/x86/tr8_avx.h"

#define VL 16
#define ISA_SUFFIX avx512

typedef __m512 vf;
typedef __mmask16 vmask;

static inline vf vzero(void) { return _mm512_setzero_ps(); }
static inline vf vset(float x) { return _mm512_set1_ps(x); }
static inline vf vld(const float *p) { return _mm512_loadu_ps(p); }
static inline void vst(float *p, vf x) { _mm512_storeu_ps(p, x); }
static inline vf vbcast(const float *p) { return _mm512_set1_ps(*p); }

/* The first n lanes active, 0 <= n <= VL. */
static inline vmask vmask_first(int n) { return (vmask)((1u << n) - 1u); }
/* Masked loads never touch memory of inactive lanes (no fault past the end). */
static inline vf vld_m(const float *p, vmask m) { return _mm512_maskz_loadu_ps(m, p); }
static inline vf vld_m_or(const float *p, vmask m, vf fill) {
    return _mm512_mask_loadu_ps(fill, m, p);
}
static inline void vst_m(float *p, vmask m, vf x) { _mm512_mask_storeu_ps(p, m, x); }
/* Per lane: m active ? a : b */
static inline vf vsel(vmask m, vf a, vf b) { return _mm512_mask_blend_ps(m, b, a); }

static inline vf vadd(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vsub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vdiv(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf vsqrt(vf x) { return _mm512_sqrt_ps(x); }
static inline vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); } /* a*b+c */
/* max(acc, x) where a NaN in x is skipped (VMAXPS returns its second operand
 * when either is NaN), like the reference's `x > m ? x : m`. */
static inline vf vswap_pairs(vf x) { return _mm512_permute_ps(x, 0xB1); } /* lanes 2i <-> 2i+1 */
static inline vf vmax(vf acc, vf x) { return _mm512_max_ps(x, acc); }
static inline vf vexp(vf x) { return Sleef_expf16_u10avx512f(x); }
/* dst[j·ldd + i] = r[i][k + j] for i, j < 8: eight rows of 8 floats
 * transposed (the prefill tile's queries in, its outputs out) */
#define VTR8(dst, ldd, r, k) tg_tr8_avx((dst), (ldd), (r), (k))

static inline float vsum(vf x) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline float vhmax(vf x) {
    __m256 h = _mm256_max_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Pairwise steps of vsum_lanes: add the 256-bit halves, 128-bit quarters,
 * then 64-bit and 32-bit pairs of two vectors into one. */
static inline vf vpair256_(vf x, vf y) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x44), _mm512_shuffle_f32x4(x, y, 0xee));
}
static inline vf vpair128_(vf x, vf y) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x88), _mm512_shuffle_f32x4(x, y, 0xdd));
}
static inline vf vpair32_(vf x, vf y) {
    return _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x88), _mm512_shuffle_ps(x, y, 0xdd));
}

/* Lane r of the result = the sum of the lanes of a[r]: VL dot products
 * finished together. The tree leaves source s in lane 4(s%4) + s/4 (a 4×4
 * transpose, its own inverse), so the inputs are fed in that order. */
static inline vf vsum_lanes(const vf a[VL]) {
    vf b0 = vpair256_(a[0], a[4]), b1 = vpair256_(a[8], a[12]);
    vf b2 = vpair256_(a[1], a[5]), b3 = vpair256_(a[9], a[13]);
    vf b4 = vpair256_(a[2], a[6]), b5 = vpair256_(a[10], a[14]);
    vf b6 = vpair256_(a[3], a[7]), b7 = vpair256_(a[11], a[15]);
    vf c0 = vpair128_(b0, b1), c1 = vpair128_(b2, b3);
    vf c2 = vpair128_(b4, b5), c3 = vpair128_(b6, b7);
    return vpair32_(vpair32_(c0, c1), vpair32_(c2, c3));
}

/* Two rows of VL/2 floats per vector (head size 8: two keys fill one zmm).
 * vsum_halves: a[m] holds rows 2m (lanes 0-7) and 2m+1 (lanes 8-15); lane r
 * of the result = the sum of row r's 8 lanes. The pairwise tree (128-bit
 * quarters, then 32-bit pairs twice) leaves row 4i + b in lane 4b + i; one
 * permute puts it back. */
static inline vf vsum_halves(const vf a[VL / 2]) {
    vf c0 = vpair128_(a[0], a[1]), c1 = vpair128_(a[2], a[3]);
    vf c2 = vpair128_(a[4], a[5]), c3 = vpair128_(a[6], a[7]);
    vf e = vpair32_(vpair32_(c0, c1), vpair32_(c2, c3));
    const __m512i back = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(back, e);
}
/* lanes 0-7 = p[0], lanes 8-15 = p[1] */
static inline vf vbcast_pair(const float *p) {
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)p))));
}
/* lanes 0-7 = the low half + the high half (the upper lanes: the same sums) */
static inline vf vfold_halves(vf x) { return _mm512_add_ps(x, _mm512_shuffle_f32x4(x, x, 0x4E)); }

/* VL IEEE halves <-> f32 (AVX-512F's vcvtph2ps / vcvtps2ph, round to nearest even) */
static inline vf vld_h(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
static inline void vst_h(uint16_t *p, vf x) {
    _mm256_storeu_si256((__m256i *)p, _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

#endif
