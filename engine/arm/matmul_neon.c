/* matmul_neon.c — Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b, columns o0..o1-1,
 * with aarch64 Advanced SIMD (4-float vectors, 32 registers).
 *
 *   T == 1  GEMV, memory-bound: GEMV_ROWS weight rows per pass share each
 *           load of x; four accumulators per row (16 floats a step) hide
 *           the FMA latency.
 *   T > 1   GEMM, Goto/BLIS style: X is packed per (MC × KC) block into
 *           MR-row micro-panels [kc][MR], W per (KC × NR) panel, transposed
 *           to [kc][NR]; the 8 × 12 register tile of tile_neon.h accumulates
 *           with lane-indexed FMAs. W may also be IEEE half or bfloat16
 *           (tg_matmul_neon_half): it is widened to f32 as its panel is
 *           packed (exactly: every half is an f32), so the tiles and the
 *           order of every sum are those of the f32 GEMM on the widened W.
 *
 * Why results do not depend on o0/o1 (or the thread count): in the GEMV
 * every row is summed by the same sequence of operations whichever row group
 * it falls in; in the GEMM every output is one lane of one accumulator, fed
 * k = 0..IN-1 in order (later K blocks reload the partial sum from y), then
 * + b, and a tile cut short by o1 or T runs the same micro-kernel on a
 * scratch copy. */
#include <arm_neon.h>
#include <string.h>

#include "engine/arm/arm.h"
#include "engine/arm/tile_neon.h"

#define GEMV_ROWS 4
#define KC 256 /* k depth of a packed block: a W panel is KC·NR floats (12 KiB, L1) */
#define MC 128 /* token rows per packed X block: MC·KC floats (128 KiB, L2) */

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* p[0..n) in the low lanes, zeros above (0 <= n < 4); reads only p[0..n). */
ALWAYS_INLINE float32x4_t load_tail(const float *p, int n) {
    float buf[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(buf, p, (size_t)n * sizeof(float));
    return vld1q_f32(buf);
}

/* ---- GEMV: y[R] = W[R,IN] · x[IN] + b -------------------------------------- */

/* One function for 1 or GEMV_ROWS rows keeps each row's order identical:
 * a0..a3 take the vectors of each 16-float step, a0 the whole vectors after
 * them, a1 the last 1..3 floats; then (a0+a1) + (a2+a3), summed across. */
ALWAYS_INLINE void gemv_rows(int R, float *y, const float *x, const float *w, size_t ldw,
                             const float *b, int in) {
    float32x4_t a0[GEMV_ROWS], a1[GEMV_ROWS], a2[GEMV_ROWS], a3[GEMV_ROWS];
    for (int r = 0; r < R; r++) a0[r] = a1[r] = a2[r] = a3[r] = vdupq_n_f32(0.0f);
    int i = 0;
    for (; i + 16 <= in; i += 16) {
        float32x4_t x0 = vld1q_f32(x + i), x1 = vld1q_f32(x + i + 4);
        float32x4_t x2 = vld1q_f32(x + i + 8), x3 = vld1q_f32(x + i + 12);
        for (int r = 0; r < R; r++) {
            const float *wr = w + r * ldw + i;
            a0[r] = vfmaq_f32(a0[r], vld1q_f32(wr), x0);
            a1[r] = vfmaq_f32(a1[r], vld1q_f32(wr + 4), x1);
            a2[r] = vfmaq_f32(a2[r], vld1q_f32(wr + 8), x2);
            a3[r] = vfmaq_f32(a3[r], vld1q_f32(wr + 12), x3);
        }
    }
    for (; i + 4 <= in; i += 4) {
        float32x4_t x0 = vld1q_f32(x + i);
        for (int r = 0; r < R; r++) a0[r] = vfmaq_f32(a0[r], vld1q_f32(w + r * ldw + i), x0);
    }
    if (i < in) {
        float32x4_t x0 = load_tail(x + i, in - i);
        for (int r = 0; r < R; r++)
            a1[r] = vfmaq_f32(a1[r], load_tail(w + r * ldw + i, in - i), x0);
    }
    for (int r = 0; r < R; r++) {
        float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0[r], a1[r]), vaddq_f32(a2[r], a3[r])));
        y[r] = b ? s + b[r] : s;
    }
}

/* y[o0..o1) of one token row */
static void gemv(float *y, const float *x, const float *w, const float *b, int in, int o0,
                 int o1) {
    int o = o0;
    for (; o + GEMV_ROWS <= o1; o += GEMV_ROWS)
        gemv_rows(GEMV_ROWS, y + o, x, w + (size_t)o * in, (size_t)in, b ? b + o : NULL, in);
    for (; o < o1; o++)
        gemv_rows(1, y + o, x, w + (size_t)o * in, (size_t)in, b ? b + o : NULL, in);
}

/* ---- GEMM packing ------------------------------------------------------------ */

/* xp[ceil(mc/MR)][kc][MR] = X[t.., k..] (rows `in` apart); rows past mc are 0. */
static void pack_x(float *xp, const float *x, int in, int mc, int kc) {
    for (int t0 = 0; t0 < mc; t0 += MR, xp += (size_t)kc * MR) {
        for (int r = 0; r < MR; r++) {
            if (t0 + r < mc) {
                const float *xr = x + (size_t)(t0 + r) * in;
                for (int k = 0; k < kc; k++) xp[(size_t)k * MR + r] = xr[k];
            } else {
                for (int k = 0; k < kc; k++) xp[(size_t)k * MR + r] = 0.0f;
            }
        }
    }
}

/* W's element type in the GEMM: f32, or IEEE half / bfloat16 widened as packed */
enum { NW_F32, NW_F16, NW_BF16 };

/* 4 elements of a row of W from element k, as f32 */
ALWAYS_INLINE float32x4_t load4_w(int wt, const void *row, int k) {
    if (wt == NW_F32) return vld1q_f32((const float *)row + k);
    uint16x4_t h = vld1_u16((const uint16_t *)row + k);
    if (wt == NW_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); /* bfloat16: the upper half of an f32 */
}

/* element k of a row of W, as f32 */
ALWAYS_INLINE float load1_w(int wt, const void *row, int k) {
    if (wt == NW_F32) return ((const float *)row)[k];
    uint16_t h = ((const uint16_t *)row)[k];
    return wt == NW_F16 ? tg_f16_to_f32(h) : tg_bf16_to_f32(h);
}

/* row `o` of W (rows ldw elements apart) */
ALWAYS_INLINE const void *w_row(int wt, const void *w, size_t ldw, size_t o) {
    return wt == NW_F32 ? (const void *)((const float *)w + o * ldw) : (const void *)((const uint16_t *)w + o * ldw);
}

/* dst[4][ld] = the 4 × 4 block r[0..3][k..k+3], transposed */
ALWAYS_INLINE void transpose4(int wt, float *dst, size_t ld, const void *const r[4], int k) {
    float32x4_t r0 = load4_w(wt, r[0], k), r1 = load4_w(wt, r[1], k);
    float32x4_t r2 = load4_w(wt, r[2], k), r3 = load4_w(wt, r[3], k);
    float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1)); /* r0k0 r1k0 r0k2 r1k2 */
    float64x2_t t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1)); /* r0k1 r1k1 r0k3 r1k3 */
    float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3));
    float64x2_t t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3));
    vst1q_f32(dst + 0 * ld, vreinterpretq_f32_f64(vtrn1q_f64(t0, t2)));
    vst1q_f32(dst + 1 * ld, vreinterpretq_f32_f64(vtrn1q_f64(t1, t3)));
    vst1q_f32(dst + 2 * ld, vreinterpretq_f32_f64(vtrn2q_f64(t0, t2)));
    vst1q_f32(dst + 3 * ld, vreinterpretq_f32_f64(vtrn2q_f64(t1, t3)));
}

/* wp[kc][NR] = W[o.., k0..k0+kc)ᵀ as f32 for nr <= NR rows of W (of type
 * wt, ldw elements apart, w at row o); columns nr..NR-1 are 0. */
ALWAYS_INLINE void pack_w(int wt, float *wp, const void *w, size_t ldw, int nr, int kc, int k0) {
    for (int j0 = 0; j0 < NR; j0 += 4) {
        const void *r[4];
        int live = 0;
        for (int j = 0; j < 4; j++) {
            r[j] = j0 + j < nr ? w_row(wt, w, ldw, (size_t)(j0 + j)) : NULL;
            live += r[j] != NULL;
        }
        int k = 0;
        if (live == 4)
            for (; k + 4 <= kc; k += 4) transpose4(wt, wp + (size_t)k * NR + j0, NR, r, k0 + k);
        for (; k < kc; k++) /* the last k steps, or a partial group of rows */
            for (int j = 0; j < 4; j++) wp[(size_t)k * NR + j0 + j] = r[j] ? load1_w(wt, r[j], k0 + k) : 0.0f;
    }
}

/* ---- GEMM driver ---------------------------------------------------------------- */

/* W of type wt, rows ldw elements apart */
ALWAYS_INLINE void gemm_w(int wt, float *y, const float *x, const void *w, size_t ldw, const float *b,
                          int T, int in, int out, int o0, int o1) {
    alignas(16) float xp[(MC + MR - 1) / MR * MR * KC];
    alignas(16) float wp[KC * NR];
    for (int t0 = 0; t0 < T; t0 += MC) {
        const int mc = T - t0 < MC ? T - t0 : MC;
        for (int k0 = 0; k0 < in; k0 += KC) {
            const int kc = in - k0 < KC ? in - k0 : KC;
            const int first = k0 == 0, last = k0 + kc == in;
            pack_x(xp, x + (size_t)t0 * in + k0, in, mc, kc);
            for (int o = o0; o < o1; o += NR) {
                const int nr = o1 - o < NR ? o1 - o : NR;
                pack_w(wt, wp, w_row(wt, w, ldw, (size_t)o), ldw, nr, kc, k0);
                const float *bo = last && b ? b + o : NULL;
                for (int t = 0; t < mc; t += MR) {
                    const int mr = mc - t < MR ? mc - t : MR;
                    float *yt = y + (size_t)(t0 + t) * out + o;
                    if (mr == MR && nr == NR)
                        tile_8x12(xp + (size_t)t * kc, wp, kc, yt, (size_t)out, !first, bo);
                    else
                        tile_edge(xp + (size_t)t * kc, wp, kc, yt, (size_t)out, mr, nr, !first,
                                  bo);
                }
            }
        }
    }
}

/* each W type a function of its own */
static void gemm(float *y, const float *x, const float *w, const float *b, int T, int in, int out,
                 int o0, int o1) {
    gemm_w(NW_F32, y, x, w, (size_t)in, b, T, in, out, o0, o1);
}
static void gemm_f16(float *y, const float *x, const void *w, size_t ldw, const float *b, int T, int in,
                     int out, int o0, int o1) {
    gemm_w(NW_F16, y, x, w, ldw, b, T, in, out, o0, o1);
}
static void gemm_bf16(float *y, const float *x, const void *w, size_t ldw, const float *b, int T, int in,
                      int out, int o0, int o1) {
    gemm_w(NW_BF16, y, x, w, ldw, b, T, in, out, o0, o1);
}

void tg_matmul_neon_half(int h16, float *y, const float *x, const void *w, size_t ldw, const float *b,
                         int T, int in, int out, int o0, int o1) {
    if (in == 0) /* an empty sum: y = b */
        tg_bias_rows(y, b, T, out, o0, o1);
    else if (h16)
        gemm_f16(y, x, w, ldw / sizeof(uint16_t), b, T, in, out, o0, o1);
    else
        gemm_bf16(y, x, w, ldw / sizeof(uint16_t), b, T, in, out, o0, o1);
}

void tg_matmul_neon(float *y, const float *x, const float *w, const float *b, int T, int in,
                    int out, int o0, int o1) {
    if (in == 0) { /* an empty sum: y = b */
        tg_bias_rows(y, b, T, out, o0, o1);
    } else if (T == 1) {
        gemv(y, x, w, b, in, o0, o1);
    } else {
        gemm(y, x, w, b, T, in, out, o0, o1);
    }
}

/* the f32 column of the typed table (ldw == 4·IN) */
static void matmul_f32_w(float *y, const void *x, const void *w, size_t ldw, const float *b,
                         int T, int in, int out, int o0, int o1, void *ws) {
    (void)ldw, (void)ws;
    tg_matmul_neon(y, x, w, b, T, in, out, o0, o1);
}

void tg_kernels_init_matmul_neon(tg_kernels *k) {
    k->matmul = tg_matmul_neon;
    k->matmul_w[TG_WTYPE_F32] = matmul_f32_w;
}
