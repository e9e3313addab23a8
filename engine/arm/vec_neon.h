/* vec_neon.h — the SIMD vocabulary of engine/simd/ (ops, attn, train templates)
 * for aarch64 Advanced SIMD: one vector type of VL floats, a lane mask for
 * tails, and the few operations the kernels are written in. Include only from
 * engine/arm/ files.
 *
 * NEON has no masked loads or stores, so a mask here is the number of active
 * lanes (always a prefix) and the masked forms go through a small stack
 * buffer: they never touch memory past the active lanes either. */
#ifndef TINYGPT_VEC_NEON_H
#define TINYGPT_VEC_NEON_H

#include <arm_neon.h>
#include <sleef.h>
#include <string.h>

#define VL 4
#define ISA_SUFFIX neon

typedef float32x4_t vf;
typedef int vmask; /* lanes 0..vmask-1 active */

static inline vf vzero(void) { return vdupq_n_f32(0.0f); }
static inline vf vset(float x) { return vdupq_n_f32(x); }
static inline vf vld(const float *p) { return vld1q_f32(p); }
static inline void vst(float *p, vf x) { vst1q_f32(p, x); }

/* The first n lanes active, 0 <= n <= VL. */
static inline vmask vmask_first(int n) { return n; }
static inline vf vld_m_or(const float *p, vmask m, vf fill) {
    float buf[VL];
    vst1q_f32(buf, fill);
    memcpy(buf, p, (size_t)m * sizeof(float));
    return vld1q_f32(buf);
}
static inline vf vld_m(const float *p, vmask m) { return vld_m_or(p, m, vzero()); }
static inline void vst_m(float *p, vmask m, vf x) {
    float buf[VL];
    vst1q_f32(buf, x);
    memcpy(p, buf, (size_t)m * sizeof(float));
}
/* Per lane: m active ? a : b (lane index < m) */
static inline vf vsel(vmask m, vf a, vf b) {
    const uint32x4_t idx = {0, 1, 2, 3};
    return vbslq_f32(vcltq_u32(idx, vdupq_n_u32((uint32_t)m)), a, b);
}

static inline vf vadd(vf a, vf b) { return vaddq_f32(a, b); }
static inline vf vsub(vf a, vf b) { return vsubq_f32(a, b); }
static inline vf vmul(vf a, vf b) { return vmulq_f32(a, b); }
static inline vf vdiv(vf a, vf b) { return vdivq_f32(a, b); }
static inline vf vsqrt(vf x) { return vsqrtq_f32(x); }
static inline vf vfma(vf a, vf b, vf c) { return vfmaq_f32(c, a, b); } /* a*b+c */
/* x > acc ? x : acc per lane: a NaN in x is skipped, like the reference's
 * `x > m ? x : m` (FMAX would propagate it). */
static inline vf vswap_pairs(vf x) { return vrev64q_f32(x); } /* lanes 2i <-> 2i+1 */
static inline vf vmax(vf acc, vf x) { return vbslq_f32(vcgtq_f32(x, acc), x, acc); }
static inline vf vexp(vf x) { return Sleef_expf4_u10advsimd(x); }

static inline float vsum(vf x) { return vaddvq_f32(x); }
static inline float vhmax(vf x) { return vmaxvq_f32(x); }

/* Lane r of the result = the sum of the lanes of a[r]: VL dot products
 * finished together (two rounds of pairwise adds). */
static inline vf vsum_lanes(const vf a[VL]) {
    return vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]));
}

/* Two rows of VL/2 floats per vector (head size 2): a[m] holds rows 2m and
 * 2m+1; lane r of the result = the sum of row r. */
static inline vf vsum_halves(const vf a[VL / 2]) { return vpaddq_f32(a[0], a[1]); }
/* lanes 0-1 = p[0], lanes 2-3 = p[1] */
static inline vf vbcast_pair(const float *p) {
    return vcombine_f32(vld1_dup_f32(p), vld1_dup_f32(p + 1));
}
/* lanes 0-1 = the low half + the high half */
static inline vf vfold_halves(vf x) { return vaddq_f32(x, vextq_f32(x, x, 2)); }

/* VL IEEE halves <-> f32 (fcvtl / fcvtn, round to nearest even) */
static inline vf vld_h(const uint16_t *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
static inline void vst_h(uint16_t *p, vf x) { vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(x))); }

#endif
