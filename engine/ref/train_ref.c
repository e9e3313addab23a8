/* train_ref.c — C reference of the training kernels (backward pass and the
 * general-stride GEMM): the fallback and the oracle for the SIMD versions.
 * Plain loops, accumulation in the obvious order. */
#include <math.h>

#include "engine/engine.h"

/* C[M,N] = (C, bias or 0) + A[M,K]·B[K,N], rows m0..m1-1, general strides,
 * triangular cases as in engine.h */
static void gemm_ref(float *c, int ldc, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                     const float *b, ptrdiff_t rsb, ptrdiff_t csb, int M, int N, int K,
                     int tri, int m0, int m1, int acc, const float *bias, float *ws) {
    (void)M;
    (void)ws;
    for (int m = m0; m < m1; m++)
        for (int n = 0; n < N; n++) {
            if (tri == TG_TRI_C_LOWER && n > m) continue;
            int k0 = tri == TG_TRI_A_UPPER ? m : 0;
            int k1 = tri == TG_TRI_A_LOWER && m + 1 < K ? m + 1 : K;
            float s = acc ? c[(size_t)m * ldc + n] : bias ? bias[n] : 0.0f;
            for (int k = k0; k < k1; k++) s += a[m * rsa + k * csa] * b[k * rsb + n * csb];
            c[(size_t)m * ldc + n] = s;
        }
}

/* mean and 1/sqrt(var + eps) of one row, two-pass as in the forward */
static void row_stats(const float *x, int n, float eps, float *mean, float *rstd) {
    float m = 0.0f;
    for (int i = 0; i < n; i++) m += x[i];
    m /= (float)n;
    float v = 0.0f;
    for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    v /= (float)n;
    *mean = m;
    *rstd = 1.0f / sqrtf(v + eps);
}

/* dx[T,N] += layernorm backward; dg[N], db[N] += their row sums */
static void layernorm_bwd_ref(float *dx, float *dg, float *db, const float *dy,
                              const float *x, const float *g, int T, int n, float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n, *dyt = dy + (size_t)t * n;
        float *dxt = dx + (size_t)t * n;
        float mean, rstd;
        row_stats(xt, n, eps, &mean, &rstd);
        float su = 0.0f, sux = 0.0f;
        for (int i = 0; i < n; i++) {
            float xh = (xt[i] - mean) * rstd, u = g[i] * dyt[i];
            su += u;
            sux += u * xh;
            dg[i] += dyt[i] * xh;
            db[i] += dyt[i];
        }
        su /= (float)n;
        sux /= (float)n;
        for (int i = 0; i < n; i++) {
            float xh = (xt[i] - mean) * rstd;
            dxt[i] += rstd * (g[i] * dyt[i] - su - xh * sux);
        }
    }
}

/* dx[N] = dy · GELU'(x) */
static void gelu_bwd_ref(float *dx, const float *x, const float *dy, int n) {
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    for (int i = 0; i < n; i++) {
        float v = x[i];
        float th = tanhf(c * (v + 0.044715f * v * v * v));
        float du = c * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = dy[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du);
    }
}

/* dx[N] = scale · p ⊙ (dy - Σ p⊙dy) */
static void softmax_bwd_ref(float *dx, const float *p, const float *dy, int n, float scale) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += p[i] * dy[i];
    for (int i = 0; i < n; i++) dx[i] = scale * p[i] * (dy[i] - s);
}

/* one AdamW step (see engine.h), in PyTorch's order */
static void adamw_ref(float *p, float *m, float *v, const float *g, size_t n,
                      const tg_adamw_coef *c) {
    for (size_t i = 0; i < n; i++) {
        float gr = g[i] * c->gscale;
        float pw = p[i] * c->decay;
        m[i] = c->beta1 * m[i] + (1.0f - c->beta1) * gr;
        v[i] = c->beta2 * v[i] + (1.0f - c->beta2) * gr * gr;
        p[i] = pw - c->step * m[i] / (sqrtf(v[i]) / c->bc2s + c->eps);
    }
}

/* Σ x[N]², in double */
static double sumsq_ref(const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

/* dx[T,N] += RMSNorm backward; dg[N] += Σ_t dy⊙x·r */
static void rmsnorm_bwd_ref(float *dx, float *dg, const float *dy, const float *x,
                            const float *g, int T, int n, float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n, *dyt = dy + (size_t)t * n;
        float *dxt = dx + (size_t)t * n;
        float ss = 0.0f;
        for (int i = 0; i < n; i++) ss += xt[i] * xt[i];
        float r = 1.0f / sqrtf(ss / (float)n + eps);
        float sux = 0.0f;
        for (int i = 0; i < n; i++) {
            sux += g[i] * dyt[i] * xt[i];
            dg[i] += dyt[i] * xt[i] * r;
        }
        float c = r * r * r * sux / (float)n;
        for (int i = 0; i < n; i++) dxt[i] += r * g[i] * dyt[i] - xt[i] * c;
    }
}

/* da[N], db[N]: the gradients of y = silu(a)·b */
static void silu_mul_bwd_ref(float *da, float *db, const float *a, const float *b,
                             const float *dy, int n) {
    for (int i = 0; i < n; i++) {
        float av = a[i], bv = b[i], d = dy[i];
        float s = 1.0f / (1.0f + expf(-av));
        da[i] = d * bv * s * (1.0f + av * (1.0f - s));
        db[i] = d * av * s;
    }
}

void tg_kernels_init_train_ref(tg_kernels *k) {
    k->rmsnorm_bwd = rmsnorm_bwd_ref;
    k->silu_mul_bwd = silu_mul_bwd_ref;
    k->gemm = gemm_ref;
    k->layernorm_bwd = layernorm_bwd_ref;
    k->gelu_bwd = gelu_bwd_ref;
    k->softmax_bwd = softmax_bwd_ref;
    k->adamw = adamw_ref;
    k->sumsq = sumsq_ref;
}
