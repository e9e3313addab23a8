/* train_tmpl.h — the training kernels that are not the gemm (layernorm,
 * GELU and softmax backward, AdamW, the sum of squares of the gradient
 * norm), written once in the SIMD vocabulary of a vec_<isa>.h (VL, vf,
 * vmask, vld/vst, vld_m/vst_m, vfma, vdiv, vsqrt, vexp, vsum, ISA_SUFFIX)
 * and included by that ISA's train file. Each kernel: a main loop over whole
 * vectors, then one masked tail. */
#include <math.h>

#ifndef FN
#define TG_CAT_(a, b) a##_##b
#define TG_CAT(a, b) TG_CAT_(a, b)
#define FN(name) TG_CAT(name, ISA_SUFFIX)
#endif

/* Σ x[N]: one accumulator over the vectors, the tail in its own */
static inline float FN(row_sum)(const float *x, int n, vmask tail) {
    const int nv = n - n % VL;
    vf a0 = vzero(), a1 = vzero();
    for (int i = 0; i < nv; i += VL) a0 = vadd(a0, vld(x + i));
    if (nv < n) a1 = vld_m(x + nv, tail);
    return vsum(vadd(a0, a1));
}

/* dx[T,N] += layernorm backward; dg[N], db[N] += Σ_t dy⊙x̂, Σ_t dy
 * (mean and rstd recomputed two-pass, as in the forward) */
static void FN(layernorm_bwd)(float *dx, float *dg, float *db, const float *dy, const float *x,
                              const float *g, int T, int n, float eps) {
    const vmask tail = vmask_first(n % VL);
    const int nv = n - n % VL;
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n, *dyt = dy + (size_t)t * n;
        float *dxt = dx + (size_t)t * n;
        const float mean = FN(row_sum)(xt, n, tail) / (float)n;
        const vf vmean = vset(mean);
        vf a0 = vzero(), a1 = vzero();
        for (int i = 0; i < nv; i += VL) {
            vf d = vsub(vld(xt + i), vmean);
            a0 = vfma(d, d, a0);
        }
        if (nv < n) { /* inactive lanes load the mean: they add 0 */
            vf d = vsub(vld_m_or(xt + nv, tail, vmean), vmean);
            a1 = vfma(d, d, a1);
        }
        const float rstd = 1.0f / sqrtf(vsum(vadd(a0, a1)) / (float)n + eps);
        const vf vr = vset(rstd);

        /* Σ u and Σ u·x̂ with u = g⊙dy; the gain and bias gradients */
        vf su = vzero(), sux = vzero();
        for (int i = 0; i < nv; i += VL) {
            vf xh = vmul(vsub(vld(xt + i), vmean), vr), d = vld(dyt + i);
            vf u = vmul(vld(g + i), d);
            su = vadd(su, u);
            sux = vfma(u, xh, sux);
            vst(dg + i, vfma(d, xh, vld(dg + i)));
            vst(db + i, vadd(d, vld(db + i)));
        }
        if (nv < n) { /* inactive lanes: dy = g = 0, so u = 0 */
            vf xh = vmul(vsub(vld_m(xt + nv, tail), vmean), vr), d = vld_m(dyt + nv, tail);
            vf u = vmul(vld_m(g + nv, tail), d);
            su = vadd(su, u);
            sux = vfma(u, xh, sux);
            vst_m(dg + nv, tail, vfma(d, xh, vld_m(dg + nv, tail)));
            vst_m(db + nv, tail, vadd(d, vld_m(db + nv, tail)));
        }
        const vf m1 = vset(vsum(su) / (float)n), m2 = vset(vsum(sux) / (float)n);

        /* dx += rstd · (u - mean(u) - x̂ · mean(u⊙x̂)) */
        for (int i = 0; i < nv; i += VL) {
            vf xh = vmul(vsub(vld(xt + i), vmean), vr);
            vf u = vmul(vld(g + i), vld(dyt + i));
            vf r = vsub(vsub(u, m1), vmul(xh, m2));
            vst(dxt + i, vfma(vr, r, vld(dxt + i)));
        }
        if (nv < n) {
            vf xh = vmul(vsub(vld_m(xt + nv, tail), vmean), vr);
            vf u = vmul(vld_m(g + nv, tail), vld_m(dyt + nv, tail));
            vf r = vsub(vsub(u, m1), vmul(xh, m2));
            vst_m(dxt + nv, tail, vfma(vr, r, vld_m(dxt + nv, tail)));
        }
    }
}

/* dy · GELU'(x) of one vector. With s = 1/(1 + e^(-2u)) = ½(1 + tanh u),
 * ½(1 - tanh² u) = 2s(1 - s), so
 *   GELU'(x) = ½(1 + tanh u) + ½x(1 - tanh² u)·u'  =  s + 2x·u'·s(1 - s),
 * u = c(x + k x³), u' = c(1 + 3k x²): one exp and one division instead of
 * SLEEF's tanh (as in the forward's GELU). e^(-2u) = inf gives s = 0, and
 * s(1 - s) = 0 at both ends: no inf·0. */
static inline vf FN(gelu_bwd_v)(vf x, vf dy) {
    const float c = 0.7978845608028654f, k = 0.044715f;
    const vf one = vset(1.0f);
    vf x2 = vmul(x, x);
    vf u = vmul(vset(c), vfma(vmul(vset(k), x2), x, x));
    vf s = vdiv(one, vadd(one, vexp(vmul(vset(-2.0f), u))));
    vf du2 = vmul(vset(2.0f * c), vfma(vset(3.0f * k), x2, one)); /* 2u' */
    vf d = vfma(vmul(vmul(x, du2), s), vsub(one, s), s);
    return vmul(dy, d);
}

/* dx[N] = dy[N] · GELU'(x[N])  (dx may alias dy: each vector is read first) */
static void FN(gelu_bwd)(float *dx, const float *x, const float *dy, int n) {
    const int nv = n - n % VL;
    for (int i = 0; i < nv; i += VL) vst(dx + i, FN(gelu_bwd_v)(vld(x + i), vld(dy + i)));
    if (nv < n) {
        const vmask tail = vmask_first(n % VL);
        vst_m(dx + nv, tail, FN(gelu_bwd_v)(vld_m(x + nv, tail), vld_m(dy + nv, tail)));
    }
}

/* dx[N] = scale · p ⊙ (dy - Σ p⊙dy)  (dx may alias dy: the sum is done first) */
static void FN(softmax_bwd)(float *dx, const float *p, const float *dy, int n, float scale) {
    const vmask tail = vmask_first(n % VL);
    const int nv = n - n % VL;
    vf a0 = vzero(), a1 = vzero();
    int i = 0;
    for (; i + 2 * VL <= nv; i += 2 * VL) {
        a0 = vfma(vld(p + i), vld(dy + i), a0);
        a1 = vfma(vld(p + i + VL), vld(dy + i + VL), a1);
    }
    for (; i < nv; i += VL) a0 = vfma(vld(p + i), vld(dy + i), a0);
    if (nv < n) a1 = vfma(vld_m(p + nv, tail), vld_m(dy + nv, tail), a1);
    const vf vs = vset(vsum(vadd(a0, a1))), vsc = vset(scale);
    for (i = 0; i < nv; i += VL)
        vst(dx + i, vmul(vmul(vsc, vld(p + i)), vsub(vld(dy + i), vs)));
    if (nv < n)
        vst_m(dx + nv, tail, vmul(vmul(vsc, vld_m(p + nv, tail)), vsub(vld_m(dy + nv, tail), vs)));
}

/* One AdamW step of one vector (see engine.h); m and v updated in place */
static inline vf FN(adamw_v)(vf p, vf g, float *m, float *v, vmask tail, int masked,
                             const tg_adamw_coef *c) {
    vf gr = vmul(g, vset(c->gscale));
    vf mo = masked ? vld_m(m, tail) : vld(m), vo = masked ? vld_m(v, tail) : vld(v);
    vf mn = vadd(vmul(vset(c->beta1), mo), vmul(vset(1.0f - c->beta1), gr));
    vf vn = vadd(vmul(vset(c->beta2), vo), vmul(vmul(vset(1.0f - c->beta2), gr), gr));
    if (masked) {
        vst_m(m, tail, mn);
        vst_m(v, tail, vn);
    } else {
        vst(m, mn);
        vst(v, vn);
    }
    vf den = vadd(vdiv(vsqrt(vn), vset(c->bc2s)), vset(c->eps));
    return vsub(vmul(p, vset(c->decay)), vdiv(vmul(vset(c->step), mn), den));
}

/* p, m, v [N] updated by one AdamW step with gradient g[N] */
static void FN(adamw)(float *p, float *m, float *v, const float *g, size_t n,
                      const tg_adamw_coef *c) {
    const size_t nv = n - n % VL;
    const vmask none = vmask_first(0);
    for (size_t i = 0; i < nv; i += VL)
        vst(p + i, FN(adamw_v)(vld(p + i), vld(g + i), m + i, v + i, none, 0, c));
    if (nv < n) {
        const vmask tail = vmask_first((int)(n % VL));
        vf r = FN(adamw_v)(vld_m(p + nv, tail), vld_m(g + nv, tail), m + nv, v + nv, tail, 1, c);
        vst_m(p + nv, tail, r);
    }
}

/* Σ x[N]²: float vectors within each block of TG_SUMSQ_BLOCK, blocks added
 * in double (a fixed order: the result depends only on n and the ISA) */
static double FN(sumsq)(const float *x, size_t n) {
    _Static_assert(TG_SUMSQ_BLOCK % (2 * VL) == 0, "blocks hold whole vector pairs");
    double s = 0.0;
    size_t i = 0;
    for (; i + TG_SUMSQ_BLOCK <= n; i += TG_SUMSQ_BLOCK) {
        vf a0 = vzero(), a1 = vzero();
        for (size_t j = i; j < i + TG_SUMSQ_BLOCK; j += 2 * VL) {
            vf x0 = vld(x + j), x1 = vld(x + j + VL);
            a0 = vfma(x0, x0, a0);
            a1 = vfma(x1, x1, a1);
        }
        s += (double)vsum(vadd(a0, a1));
    }
    vf a0 = vzero(), a1 = vzero();
    for (; i + VL <= n; i += VL) {
        vf x0 = vld(x + i);
        a0 = vfma(x0, x0, a0);
    }
    if (i < n) {
        vf x1 = vld_m(x + i, vmask_first((int)(n - i)));
        a1 = vfma(x1, x1, a1);
    }
    return s + (double)vsum(vadd(a0, a1));
}

/* dx[T,N] += RMSNorm backward; dg[N] += Σ_t dy⊙x·r (r recomputed: the
 * mean of squares in f32, as in the forward) */
static void FN(rmsnorm_bwd)(float *dx, float *dg, const float *dy, const float *x,
                            const float *g, int T, int n, float eps) {
    const vmask tail = vmask_first(n % VL);
    const int nv = n - n % VL;
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n, *dyt = dy + (size_t)t * n;
        float *dxt = dx + (size_t)t * n;
        vf a0 = vzero(), a1 = vzero(), s0 = vzero();
        for (int i = 0; i < nv; i += VL) {
            vf xv = vld(xt + i);
            a0 = vfma(xv, xv, a0);
            s0 = vfma(vmul(vld(g + i), vld(dyt + i)), xv, s0);
        }
        if (nv < n) { /* inactive lanes load 0: they add nothing */
            vf xv = vld_m(xt + nv, tail);
            a1 = vfma(xv, xv, a1);
            s0 = vfma(vmul(vld_m(g + nv, tail), vld_m(dyt + nv, tail)), xv, s0);
        }
        const float r = 1.0f / sqrtf(vsum(vadd(a0, a1)) / (float)n + eps);
        const vf vr = vset(r), vc = vset(r * r * r * vsum(s0) / (float)n);
        for (int i = 0; i < nv; i += VL) {
            vf xv = vld(xt + i), d = vld(dyt + i);
            vst(dg + i, vfma(vmul(d, xv), vr, vld(dg + i)));
            vf u = vmul(vld(g + i), d);
            vst(dxt + i, vsub(vfma(vr, u, vld(dxt + i)), vmul(xv, vc)));
        }
        if (nv < n) {
            vf xv = vld_m(xt + nv, tail), d = vld_m(dyt + nv, tail);
            vst_m(dg + nv, tail, vfma(vmul(d, xv), vr, vld_m(dg + nv, tail)));
            vf u = vmul(vld_m(g + nv, tail), d);
            vst_m(dxt + nv, tail, vsub(vfma(vr, u, vld_m(dxt + nv, tail)), vmul(xv, vc)));
        }
    }
}

/* The SwiGLU gradients of one vector: σ = 1/(1 + e^(-a)) (e^(-a) = inf
 * gives σ = 0, no inf·0) */
static inline void FN(silu_mul_bwd_v)(vf a, vf b, vf dy, vf *da, vf *db) {
    const vf one = vset(1.0f);
    vf s = vdiv(one, vadd(one, vexp(vsub(vzero(), a))));
    *db = vmul(dy, vmul(a, s));
    *da = vmul(vmul(dy, b), vmul(s, vfma(a, vsub(one, s), one)));
}

/* da[N], db[N] of y = silu(a)·b (outputs may alias inputs element for element) */
static void FN(silu_mul_bwd)(float *da, float *db, const float *a, const float *b,
                             const float *dy, int n) {
    const int nv = n - n % VL;
    vf ga, gb;
    for (int i = 0; i < nv; i += VL) {
        FN(silu_mul_bwd_v)(vld(a + i), vld(b + i), vld(dy + i), &ga, &gb);
        vst(da + i, ga);
        vst(db + i, gb);
    }
    if (nv < n) {
        const vmask tail = vmask_first(n % VL);
        FN(silu_mul_bwd_v)(vld_m(a + nv, tail), vld_m(b + nv, tail), vld_m(dy + nv, tail), &ga, &gb);
        vst_m(da + nv, tail, ga);
        vst_m(db + nv, tail, gb);
    }
}

/* The template's kernels into the table (the gemm is the ISA file's own). */
static void FN(init_train_tmpl)(tg_kernels *k) {
    k->layernorm_bwd = FN(layernorm_bwd);
    k->gelu_bwd = FN(gelu_bwd);
    k->softmax_bwd = FN(softmax_bwd);
    k->adamw = FN(adamw);
    k->sumsq = FN(sumsq);
    k->rmsnorm_bwd = FN(rmsnorm_bwd);
    k->silu_mul_bwd = FN(silu_mul_bwd);
}
