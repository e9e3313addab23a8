/* ops_tmpl.h — softmax, layernorm, GELU and add, written once in the SIMD
 * vocabulary of a vec_<isa>.h (VL, vf, vmask, vld/vst, vld_m/vst_m for
 * tails, vfma, vmax, vsum, vhmax, vexp, vdiv, ISA_SUFFIX) and included by
 * that ISA's ops file, the only place it is compiled with the ISA's flags.
 * Each kernel: a main loop over whole vectors, then one masked tail. */
#include <math.h>

#define TG_CAT_(a, b) a##_##b
#define TG_CAT(a, b) TG_CAT_(a, b)
#define FN(name) TG_CAT(name, ISA_SUFFIX)

/* A row with no finite maximum holds only -inf and NaN: all 0 (nothing to
 * attend to), unless a NaN is present, which poisons the row as it does
 * when the maximum is finite. */
static void FN(softmax_degenerate)(float *x, int n) {
    int nan = 0;
    for (int i = 0; i < n; i++) nan |= isnan(x[i]);
    for (int i = 0; i < n; i++) x[i] = nan ? NAN : 0.0f;
}

/* x[N] = softmax(x[N]); -inf -> 0, all -inf -> all 0, any NaN -> all NaN */
static void FN(softmax)(float *x, int n) {
    const vf ninf = vset(-INFINITY);
    const vmask tail = vmask_first(n % VL);
    const int nv = n - n % VL;
    vf m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    int i = 0;
    for (; i + 4 * VL <= nv; i += 4 * VL) {
        m0 = vmax(m0, vld(x + i));
        m1 = vmax(m1, vld(x + i + VL));
        m2 = vmax(m2, vld(x + i + 2 * VL));
        m3 = vmax(m3, vld(x + i + 3 * VL));
    }
    for (; i < nv; i += VL) m0 = vmax(m0, vld(x + i));
    if (nv < n) m1 = vmax(m1, vld_m_or(x + nv, tail, ninf));
    const float max = vhmax(vmax(vmax(m0, m1), vmax(m2, m3)));
    if (max == -INFINITY) {
        FN(softmax_degenerate)(x, n);
        return;
    }

    const vf vmx = vset(max);
    vf s0 = vzero(), s1 = vzero();
    for (i = 0; i + 2 * VL <= nv; i += 2 * VL) {
        vf e0 = vexp(vsub(vld(x + i), vmx));
        vf e1 = vexp(vsub(vld(x + i + VL), vmx));
        vst(x + i, e0);
        vst(x + i + VL, e1);
        s0 = vadd(s0, e0);
        s1 = vadd(s1, e1);
    }
    for (; i < nv; i += VL) {
        vf e = vexp(vsub(vld(x + i), vmx));
        vst(x + i, e);
        s0 = vadd(s0, e);
    }
    if (nv < n) { /* inactive lanes: exp(-inf) = 0, adding nothing */
        vf e = vexp(vsub(vld_m_or(x + nv, tail, ninf), vmx));
        vst_m(x + nv, tail, e);
        s1 = vadd(s1, e);
    }

    const vf inv = vset(1.0f / vsum(vadd(s0, s1)));
    for (i = 0; i < nv; i += VL) vst(x + i, vmul(vld(x + i), inv));
    if (nv < n) vst_m(x + nv, tail, vmul(vld_m(x + nv, tail), inv));
}

/* y[T,N] = (x - mean) / sqrt(var + eps) * g + b, per row, two-pass */
static void FN(layernorm)(float *y, const float *x, const float *g, const float *b,
                          int T, int n, float eps) {
    const vmask tail = vmask_first(n % VL);
    const int nv = n - n % VL;
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n;
        float *yt = y + (size_t)t * n;

        vf a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
        int i = 0;
        for (; i + 4 * VL <= nv; i += 4 * VL) {
            a0 = vadd(a0, vld(xt + i));
            a1 = vadd(a1, vld(xt + i + VL));
            a2 = vadd(a2, vld(xt + i + 2 * VL));
            a3 = vadd(a3, vld(xt + i + 3 * VL));
        }
        for (; i < nv; i += VL) a0 = vadd(a0, vld(xt + i));
        if (nv < n) a1 = vadd(a1, vld_m(xt + nv, tail));
        const float mean = vsum(vadd(vadd(a0, a1), vadd(a2, a3))) / (float)n;

        const vf vmean = vset(mean);
        a0 = a1 = a2 = a3 = vzero();
        for (i = 0; i + 4 * VL <= nv; i += 4 * VL) {
            vf d0 = vsub(vld(xt + i), vmean), d1 = vsub(vld(xt + i + VL), vmean);
            vf d2 = vsub(vld(xt + i + 2 * VL), vmean), d3 = vsub(vld(xt + i + 3 * VL), vmean);
            a0 = vfma(d0, d0, a0);
            a1 = vfma(d1, d1, a1);
            a2 = vfma(d2, d2, a2);
            a3 = vfma(d3, d3, a3);
        }
        for (; i < nv; i += VL) {
            vf d = vsub(vld(xt + i), vmean);
            a0 = vfma(d, d, a0);
        }
        if (nv < n) { /* inactive lanes load the mean: they add 0 */
            vf d = vsub(vld_m_or(xt + nv, tail, vmean), vmean);
            a1 = vfma(d, d, a1);
        }
        const float var = vsum(vadd(vadd(a0, a1), vadd(a2, a3))) / (float)n;
        const vf rstd = vset(1.0f / sqrtf(var + eps));

        for (i = 0; i < nv; i += VL) {
            vf xh = vmul(vsub(vld(xt + i), vmean), rstd);
            vst(yt + i, vfma(xh, vld(g + i), vld(b + i)));
        }
        if (nv < n) {
            vf xh = vmul(vsub(vld_m(xt + nv, tail), vmean), rstd);
            vst_m(yt + nv, tail, vfma(xh, vld_m(g + nv, tail), vld_m(b + nv, tail)));
        }
    }
}

/* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))) of one vector */
static inline vf FN(gelu_v)(vf x) {
    /* 0.5·x·(1 + tanh u) = x / (1 + e^(-2u)): the same function, one exp and
     * one division instead of SLEEF's tanh (about 3x the work), and no
     * cancellation (1 + tanh u → 0 for very negative x is never formed). */
    const vf m2c = vset(-2.0f * 0.7978845608028654f), k = vset(0.044715f), one = vset(1.0f);
    vf inner = vfma(vmul(k, vmul(x, x)), x, x); /* x + 0.044715 x³ */
    return vdiv(x, vadd(one, vexp(vmul(m2c, inner))));
}

/* y[N] = GELU(x[N]), tanh form */
static void FN(gelu)(float *y, const float *x, int n) {
    const int nv = n - n % VL;
    for (int i = 0; i < nv; i += VL) vst(y + i, FN(gelu_v)(vld(x + i)));
    if (nv < n) {
        const vmask tail = vmask_first(n % VL);
        vst_m(y + nv, tail, FN(gelu_v)(vld_m(x + nv, tail)));
    }
}

/* y[N] = a[N] + b[N] (y may alias a or b: each vector is read before written) */
static void FN(add)(float *y, const float *a, const float *b, int n) {
    const int nv = n - n % VL;
    int i = 0;
    for (; i + 4 * VL <= nv; i += 4 * VL) {
        vf r0 = vadd(vld(a + i), vld(b + i));
        vf r1 = vadd(vld(a + i + VL), vld(b + i + VL));
        vf r2 = vadd(vld(a + i + 2 * VL), vld(b + i + 2 * VL));
        vf r3 = vadd(vld(a + i + 3 * VL), vld(b + i + 3 * VL));
        vst(y + i, r0);
        vst(y + i + VL, r1);
        vst(y + i + 2 * VL, r2);
        vst(y + i + 3 * VL, r3);
    }
    for (; i < nv; i += VL) vst(y + i, vadd(vld(a + i), vld(b + i)));
    if (nv < n) {
        const vmask tail = vmask_first(n % VL);
        vst_m(y + nv, tail, vadd(vld_m(a + nv, tail), vld_m(b + nv, tail)));
    }
}
