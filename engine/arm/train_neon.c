/* train_neon.c — the training kernels with aarch64 Advanced SIMD: the
 * general-stride GEMM (panels of A and B packed from any strides into the
 * 8 × 12 register tile of tile_neon.h) and the backward of layernorm, GELU
 * and softmax (SLEEF's advsimd tanh). */
#include <arm_neon.h>
#include <math.h>
#include <sleef.h>
#include <string.h>

#include "engine/arm/arm.h"
#include "engine/arm/tile_neon.h"

/* GEMM blocking: KC deep slices, an MC × KC block of A (L2), a KC × NC
 * panel of B. */
enum { KC = 256, MC = 96, NC = 252 };
_Static_assert(MC % MR == 0 && NC % NR == 0, "blocks hold whole tiles");
_Static_assert(MC * KC + KC * NC <= TG_GEMM_WS, "TG_GEMM_WS holds the packed panels");

/* dst = A[mc,kc] as ceil(mc/MR) panels [kc][MR], zero-padded */
static void pack_a(float *dst, const float *a, ptrdiff_t rsa, ptrdiff_t csa, int mc, int kc) {
    for (int i = 0; i < mc; i += MR) {
        const int mr = mc - i < MR ? mc - i : MR;
        const float *ai = a + i * rsa;
        for (int k = 0; k < kc; k++, dst += MR) {
            const float *src = ai + k * csa;
            int r = 0;
            for (; r < mr; r++) dst[r] = src[r * rsa];
            for (; r < MR; r++) dst[r] = 0.0f;
        }
    }
}

/* dst = B[kc,nc] as ceil(nc/NR) panels [kc][NR], zero-padded */
static void pack_b(float *dst, const float *b, ptrdiff_t rsb, ptrdiff_t csb, int kc, int nc) {
    for (int j = 0; j < nc; j += NR) {
        const int nr = nc - j < NR ? nc - j : NR;
        const float *bj = b + j * csb;
        for (int k = 0; k < kc; k++, dst += NR) {
            const float *src = bj + k * rsb;
            if (csb == 1 && nr == NR) {
                vst1q_f32(dst, vld1q_f32(src));
                vst1q_f32(dst + 4, vld1q_f32(src + 4));
                vst1q_f32(dst + 8, vld1q_f32(src + 8));
            } else {
                int c = 0;
                for (; c < nr; c++) dst[c] = src[c * csb];
                for (; c < NR; c++) dst[c] = 0.0f;
            }
        }
    }
}

/* C[M,N] = A[M,K]·B[K,N] (+C), rows m0..m1-1. Each element is one FMA chain
 * over k ascending (later K slices reload it from C), whatever m0/m1. */
static void gemm_neon(float *c, int ldc, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                      const float *b, ptrdiff_t rsb, ptrdiff_t csb, int M, int N, int K,
                      int m0, int m1, int acc, float *ws) {
    (void)M;
    if (K == 0) {
        if (!acc)
            for (int m = m0; m < m1; m++) memset(c + (size_t)m * ldc, 0, sizeof(float) * N);
        return;
    }
    float *pa = ws, *pb = ws + MC * KC;
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = K - pc < KC ? K - pc : KC;
            const int load = acc || pc > 0;
            pack_b(pb, b + pc * rsb + jc * csb, rsb, csb, kc, nc);
            for (int ic = m0; ic < m1; ic += MC) {
                const int mc = m1 - ic < MC ? m1 - ic : MC;
                pack_a(pa, a + ic * rsa + pc * csa, rsa, csa, mc, kc);
                for (int jr = 0; jr < nc; jr += NR) {
                    const int nr = nc - jr < NR ? nc - jr : NR;
                    const float *pbj = pb + (size_t)jr * kc;
                    for (int ir = 0; ir < mc; ir += MR) {
                        const int mr = mc - ir < MR ? mc - ir : MR;
                        float *cij = c + (size_t)(ic + ir) * ldc + jc + jr;
                        const float *pai = pa + (size_t)ir * kc;
                        if (mr == MR && nr == NR)
                            tile_8x12(pai, pbj, kc, cij, (size_t)ldc, load, NULL);
                        else
                            tile_edge(pai, pbj, kc, cij, (size_t)ldc, mr, nr, load, NULL);
                    }
                }
            }
        }
    }
}

/* sum of x[N] */
static float sum_row(const float *x, int n) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    int i = 0;
    for (; i + 4 <= n; i += 4) acc = vaddq_f32(acc, vld1q_f32(x + i));
    float s = vaddvq_f32(acc);
    for (; i < n; i++) s += x[i];
    return s;
}

/* dx[T,N] += layernorm backward; dg[N], db[N] += their row sums */
static void layernorm_bwd_neon(float *dx, float *dg, float *db, const float *dy,
                               const float *x, const float *g, int T, int n, float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n, *dyt = dy + (size_t)t * n;
        float *dxt = dx + (size_t)t * n;
        const float mean = sum_row(xt, n) / (float)n;
        const float32x4_t vm = vdupq_n_f32(mean);
        float32x4_t acc = vdupq_n_f32(0.0f);
        int i = 0;
        for (; i + 4 <= n; i += 4) {
            float32x4_t d = vsubq_f32(vld1q_f32(xt + i), vm);
            acc = vfmaq_f32(acc, d, d);
        }
        float var = vaddvq_f32(acc);
        for (; i < n; i++) var += (xt[i] - mean) * (xt[i] - mean);
        const float rstd = 1.0f / sqrtf(var / (float)n + eps);

        /* the two row sums of u = g⊙dy: Σu and Σu⊙x̂; dg, db accumulate */
        const float32x4_t vr = vdupq_n_f32(rstd);
        float32x4_t su = vdupq_n_f32(0.0f), sux = vdupq_n_f32(0.0f);
        for (i = 0; i + 4 <= n; i += 4) {
            float32x4_t xh = vmulq_f32(vsubq_f32(vld1q_f32(xt + i), vm), vr);
            float32x4_t d = vld1q_f32(dyt + i), u = vmulq_f32(vld1q_f32(g + i), d);
            su = vaddq_f32(su, u);
            sux = vfmaq_f32(sux, u, xh);
            vst1q_f32(dg + i, vfmaq_f32(vld1q_f32(dg + i), d, xh));
            vst1q_f32(db + i, vaddq_f32(vld1q_f32(db + i), d));
        }
        float s1 = vaddvq_f32(su), s2 = vaddvq_f32(sux);
        for (int j = i; j < n; j++) {
            float xh = (xt[j] - mean) * rstd, u = g[j] * dyt[j];
            s1 += u;
            s2 += u * xh;
            dg[j] += dyt[j] * xh;
            db[j] += dyt[j];
        }
        s1 /= (float)n;
        s2 /= (float)n;

        const float32x4_t v1 = vdupq_n_f32(s1), v2 = vdupq_n_f32(s2);
        for (i = 0; i + 4 <= n; i += 4) {
            float32x4_t xh = vmulq_f32(vsubq_f32(vld1q_f32(xt + i), vm), vr);
            float32x4_t u = vmulq_f32(vld1q_f32(g + i), vld1q_f32(dyt + i));
            float32x4_t r = vsubq_f32(vsubq_f32(u, v1), vmulq_f32(xh, v2));
            vst1q_f32(dxt + i, vfmaq_f32(vld1q_f32(dxt + i), vr, r));
        }
        for (; i < n; i++) {
            float xh = (xt[i] - mean) * rstd;
            dxt[i] += rstd * (g[i] * dyt[i] - s1 - xh * s2);
        }
    }
}

/* dx[N] = dy · GELU'(x):  GELU' = ½(1 + th) + ½x(1 - th²)·c(1 + 3k x²),
 * th = tanh(c(x + k x³)) */
static void gelu_bwd_neon(float *dx, const float *x, const float *dy, int n) {
    const float c = 0.7978845608028654f, k = 0.044715f;
    const float32x4_t vc = vdupq_n_f32(c), vk = vdupq_n_f32(k), vk3 = vdupq_n_f32(3.0f * k);
    const float32x4_t half = vdupq_n_f32(0.5f), one = vdupq_n_f32(1.0f);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vld1q_f32(x + i), v2 = vmulq_f32(v, v);
        float32x4_t th = Sleef_tanhf4_u10advsimd(vmulq_f32(vc, vfmaq_f32(v, vmulq_f32(vk, v2), v)));
        float32x4_t du = vmulq_f32(vc, vfmaq_f32(one, vk3, v2));
        float32x4_t a = vmulq_f32(half, vaddq_f32(one, th));
        float32x4_t bq = vmulq_f32(vmulq_f32(half, v), vfmsq_f32(one, th, th));
        float32x4_t d = vfmaq_f32(a, bq, du);
        vst1q_f32(dx + i, vmulq_f32(vld1q_f32(dy + i), d));
    }
    for (; i < n; i++) {
        float v = x[i];
        float th = tanhf(c * (v + k * v * v * v));
        float du = c * (1.0f + 3.0f * k * v * v);
        dx[i] = dy[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du);
    }
}

/* dx[N] = scale · p ⊙ (dy - Σ p⊙dy)  (dx may alias dy: each is read first) */
static void softmax_bwd_neon(float *dx, const float *p, const float *dy, int n, float scale) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    int i = 0;
    for (; i + 4 <= n; i += 4) acc = vfmaq_f32(acc, vld1q_f32(p + i), vld1q_f32(dy + i));
    float s = vaddvq_f32(acc);
    for (; i < n; i++) s += p[i] * dy[i];
    const float32x4_t vs = vdupq_n_f32(s), vsc = vdupq_n_f32(scale);
    for (i = 0; i + 4 <= n; i += 4) {
        float32x4_t d = vsubq_f32(vld1q_f32(dy + i), vs);
        vst1q_f32(dx + i, vmulq_f32(vsc, vmulq_f32(vld1q_f32(p + i), d)));
    }
    for (; i < n; i++) dx[i] = scale * p[i] * (dy[i] - s);
}

void tg_kernels_init_train_neon(tg_kernels *k) {
    k->gemm = gemm_neon;
    k->layernorm_bwd = layernorm_bwd_neon;
    k->gelu_bwd = gelu_bwd_neon;
    k->softmax_bwd = softmax_bwd_neon;
}
