/* quant_neon_tmpl.h — the NEON typed-weight kernels written once, included
 * by quant_neon.c (plain Advanced SIMD) and quant_neon_dotprod.c (sdot),
 * after defining:
 *
 *   DOT16(acc, w, x)   acc (4 × int32) += Σ_j w_j·x_j over 16 int8 pairs, 4
 *                      adjacent products per lane (vdotq_s32), or the same
 *                      sums by vmull_s8 + vpadalq_s16 (any lane grouping:
 *                      the block's sum is exact either way)
 *   SUFFIX             the name suffix of the init function
 *   qacc qacc_zero qacc_dot qacc_sum QMR   the GEMM's accumulator
 *                      (qgemm_neon_tmpl.h)
 *
 * The shape follows engine/x86/quant_tmpl.h: T == 1 GEMV on integer block
 * dots (Q8_0/Q4_0) or widened halves (F16/BF16); T > 1 for Q8_0/Q4_0 the
 * int8 GEMM on packed panels of W (qgemm_neon_tmpl.h: sdot by lane with
 * dotprod, vmull_s8 + vpadalq_s16 without); T > 1 for F16/BF16 the NEON
 * f32 GEMM widening W as it packs its panels (tg_matmul_neon_half). */
#include <arm_neon.h>
#include <stdlib.h>

#include "engine/arm/arm.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static inline float h2f(uint16_t h) { return tg_f16_to_f32(h); }

/* y[o0..o1) = W · x for one token, W in Q8_0 (q4 = 0) or Q4_0 (q4 = 1) */
ALWAYS_INLINE void gemv_q(int q4, float *y, const tg_block_q8_0 *xb, const char *w, size_t ldw,
                          const float *b, int nb, int o0, int o1) {
    for (int o = o0; o < o1; o++) {
        const char *wo = w + (size_t)o * ldw;
        float32x4_t a0 = vdupq_n_f32(0), a1 = vdupq_n_f32(0);
        for (int k = 0; k < nb; k++) {
            int8x16_t w0, w1;
            uint16_t dw;
            if (q4) {
                const tg_block_q4_0 *wb = (const tg_block_q4_0 *)wo + k;
                uint8x16_t q = vld1q_u8(wb->qs);
                w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(15))), vdupq_n_s8(8));
                w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), vdupq_n_s8(8));
                dw = wb->d;
            } else {
                const tg_block_q8_0 *wb = (const tg_block_q8_0 *)wo + k;
                w0 = vld1q_s8(wb->qs);
                w1 = vld1q_s8(wb->qs + 16);
                dw = wb->d;
            }
            int32x4_t acc = vdupq_n_s32(0);
            DOT16(acc, w0, vld1q_s8(xb[k].qs));
            DOT16(acc, w1, vld1q_s8(xb[k].qs + 16));
            float32x4_t s = vcvtq_f32_s32(acc);
            float d = h2f(dw) * h2f(xb[k].d);
            if (k & 1) a1 = vfmaq_n_f32(a1, s, d);
            else a0 = vfmaq_n_f32(a0, s, d);
        }
        float v = vaddvq_f32(vaddq_f32(a0, a1));
        y[o] = b ? v + b[o] : v;
    }
}

/* 4 weights of a half (h16) or bfloat16 row as f32 */
ALWAYS_INLINE float32x4_t load4_half(int h16, const uint16_t *p) {
    uint16x4_t h = vld1_u16(p);
    if (h16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

ALWAYS_INLINE void gemv_half(int h16, float *y, const float *x, const char *w, size_t ldw,
                             const float *b, int in, int o0, int o1) {
    for (int o = o0; o < o1; o++) {
        const uint16_t *wo = (const uint16_t *)(w + (size_t)o * ldw);
        float32x4_t a0 = vdupq_n_f32(0), a1 = vdupq_n_f32(0), a2 = vdupq_n_f32(0), a3 = vdupq_n_f32(0);
        int i = 0;
        for (; i + 16 <= in; i += 16) {
            a0 = vfmaq_f32(a0, load4_half(h16, wo + i), vld1q_f32(x + i));
            a1 = vfmaq_f32(a1, load4_half(h16, wo + i + 4), vld1q_f32(x + i + 4));
            a2 = vfmaq_f32(a2, load4_half(h16, wo + i + 8), vld1q_f32(x + i + 8));
            a3 = vfmaq_f32(a3, load4_half(h16, wo + i + 12), vld1q_f32(x + i + 12));
        }
        for (; i + 4 <= in; i += 4) a0 = vfmaq_f32(a0, load4_half(h16, wo + i), vld1q_f32(x + i));
        float v = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
        for (; i < in; i++) v += (h16 ? h2f(wo[i]) : tg_bf16_to_f32(wo[i])) * x[i];
        y[o] = b ? v + b[o] : v;
    }
}

#include "engine/arm/qgemm_neon_tmpl.h"

#if QMR != 4 && QMR != 3 && QMR != 2
#error "QMR: 2, 3 or 4"
#endif
Q_TILE(1)
Q_TILE(2)
#if QMR >= 3
Q_TILE(3)
#endif
#if QMR >= 4
Q_TILE(4)
#endif
static const q_tile_fn q_tiles[QMR + 1] = {
    NULL, q_tile_1, q_tile_2,
#if QMR >= 3
    q_tile_3,
#endif
#if QMR >= 4
    q_tile_4,
#endif
};

static void matmul_q8_0(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                        int in, int out, int o0, int o1, void *ws) {
    if (T == 1) gemv_q(0, y, x, w, ldw, b, in / TG_QK, o0, o1);
    else qgemm_run(0, q_tiles, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

static void matmul_q4_0(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                        int in, int out, int o0, int o1, void *ws) {
    if (T == 1) gemv_q(1, y, x, w, ldw, b, in / TG_QK, o0, o1);
    else qgemm_run(1, q_tiles, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

static void matmul_f16(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                       int in, int out, int o0, int o1, void *ws) {
    (void)ws; /* the GEMM's panels are on its stack */
    if (T == 1) gemv_half(1, y, x, w, ldw, b, in, o0, o1);
    else tg_matmul_neon_half(1, y, x, w, ldw, b, T, in, out, o0, o1);
}

static void matmul_bf16(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                        int in, int out, int o0, int o1, void *ws) {
    (void)ws;
    if (T == 1) gemv_half(0, y, x, w, ldw, b, in, o0, o1);
    else tg_matmul_neon_half(0, y, x, w, ldw, b, T, in, out, o0, o1);
}

/* q[N/32] = Q8_0(x[N]), bit for bit the reference's rule (vrndnq: nearest
 * even); a block with a non-finite value goes through the reference. */
static void quantize_q8_0(tg_block_q8_0 *q, const float *x, int n) {
    for (int bk = 0; bk < n / TG_QK; bk++) {
        const float *xb = x + (size_t)bk * TG_QK;
        float32x4_t v[8], m = vdupq_n_f32(0);
        uint32x4_t bad = vdupq_n_u32(0);
        for (int j = 0; j < 8; j++) {
            v[j] = vld1q_f32(xb + 4 * j);
            float32x4_t a = vabsq_f32(v[j]);
            bad = vorrq_u32(bad, vmvnq_u32(vcleq_f32(a, vdupq_n_f32(3.4028234663852886e38f))));
            m = vmaxq_f32(m, a);
        }
        if (vmaxvq_u32(bad)) {
            tg_quantize_row(TG_WTYPE_Q8_0, q + bk, xb, TG_QK);
            continue;
        }
        float amax = vmaxvq_f32(m);
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        q[bk].d = tg_f32_to_f16(d);
        for (int j = 0; j < 8; j += 2) {
            int32x4_t i0 = vcvtq_s32_f32(vrndnq_f32(vmulq_n_f32(v[j], id)));
            int32x4_t i1 = vcvtq_s32_f32(vrndnq_f32(vmulq_n_f32(v[j + 1], id)));
            int16x8_t s16 = vcombine_s16(vqmovn_s32(i0), vqmovn_s32(i1));
            vst1_s8(q[bk].qs + 4 * j, vqmovn_s16(s16));
        }
    }
}

#define INIT_NAME_(s) tg_kernels_init_quant_##s
#define INIT_NAME(s) INIT_NAME_(s)
void INIT_NAME(SUFFIX)(tg_kernels *k) {
    k->matmul_w[TG_WTYPE_F16] = matmul_f16;
    k->matmul_w[TG_WTYPE_BF16] = matmul_bf16;
    k->matmul_w[TG_WTYPE_Q8_0] = matmul_q8_0;
    k->matmul_w[TG_WTYPE_Q4_0] = matmul_q4_0;
    k->quantize_q8_0 = quantize_q8_0;
}
