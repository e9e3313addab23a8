/* test_ops.c — softmax, layernorm, GELU and add on every ISA against the C
 * reference (awkward lengths, guard bytes, -inf/NaN behaviour), and the
 * reference itself against a double-precision oracle written here. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/engine/checkasm.h"

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define EPS ((double)FLT_EPSILON)

static const int lens[] = {1,  2,  3,  4,   5,   7,   8,   9,    15,   16,   17,  31,
                           32, 33, 63, 64,  65,  127, 128, 129,  255,  256,  257, 768,
                           1000, 1024, 3072, 50257};


/* ---- double-precision oracles ------------------------------------------------ */

/* want[N] = softmax(x) in double; tol = (n + 8)·eps·|want| (a length-n sum
 * of positive terms in any order, exp within an ulp, both sides rounding),
 * plus 2 denormal ulps: results below FLT_MIN carry absolute precision. */
static void softmax_oracle(float *want, float *tol, const float *x, int n) {
    double max = -INFINITY, sum = 0.0;
    for (int i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - max);
    for (int i = 0; i < n; i++) {
        double p = exp((double)x[i] - max) / sum;
        want[i] = (float)p;
        tol[i] = (float)((n + 8) * EPS * p + 2.0 * FLT_TRUE_MIN);
    }
}

/* y[T,N] = layernorm in double. The float mean carries an error up to
 * n·eps·mean|x| and every x - mean up to n·eps·|x - mean| through the
 * variance, so tol = (n + 8)·eps·(|g|·rstd·(mean|x| + |x - mean|) + |b|). */
static void layernorm_oracle(float *want, float *tol, const float *x, const float *g,
                             const float *b, int T, int n, float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n;
        double mean = 0.0, mabs = 0.0, var = 0.0;
        for (int i = 0; i < n; i++) mean += xt[i], mabs += fabs(xt[i]);
        mean /= n;
        mabs /= n;
        for (int i = 0; i < n; i++) var += (xt[i] - mean) * (xt[i] - mean);
        var /= n;
        double rstd = 1.0 / sqrt(var + (double)eps);
        for (int i = 0; i < n; i++) {
            size_t k = (size_t)t * n + i;
            double d = xt[i] - mean;
            want[k] = (float)(d * rstd * g[i] + b[i]);
            tol[k] = (float)((n + 8) * EPS * (fabs(g[i]) * rstd * (mabs + fabs(d)) + fabs(b[i])));
        }
    }
}

/* GELU in double. u = sqrt(2/pi)(x + 0.044715x³) is computed to a few ulps
 * and tanh to an ulp; an error δu moves y by 0.5|x|(1 - t²)δu, so
 * tol = 8·eps·|x|·(1 + |u|(1 - t²)) (never relative to |y|, which cancels
 * towards 0 for negative x). */
static void gelu_oracle(float *want, float *tol, const float *x, int n) {
    const double c = sqrt(2.0 / M_PI);
    for (int i = 0; i < n; i++) {
        double v = x[i], u = c * (v + 0.044715 * v * v * v), t = tanh(u);
        want[i] = (float)(0.5 * v * (1.0 + t));
        tol[i] = (float)(8.0 * EPS * fabs(v) * (1.0 + fabs(u) * (1.0 - t * t)));
    }
}

/* ---- softmax ----------------------------------------------------------------- */

/* One softmax input on every engine: in place, guards intact, within the
 * oracle's tolerance of the reference. */
static void softmax_check(const tg_engine *ref, const tg_engine *eng, int n_eng, const float *x,
                          int n, const char *kind) {
    float *want = ck_alloc(n), *tol = ck_alloc(n), *got = ck_alloc(n), *dummy = ck_alloc(n);
    memcpy(want, x, n * sizeof *x);
    ref->k.softmax(want, n);
    softmax_oracle(dummy, tol, x, n);
    /* the tolerance is relative to the exact value; -inf entries have tol 0 */
    for (int e = 0; e < n_eng; e++) {
        memcpy(got, x, n * sizeof *x);
        eng[e].k.softmax(got, n);
        CK_EXPECT_GUARDS(got, "softmax %s n=%d %s", tg_isa_name(eng[e].isa), n, kind);
        CK_EXPECT_CLOSE(got, want, tol, n, "softmax %s n=%d %s", tg_isa_name(eng[e].isa), n, kind);
    }
    ck_free(want);
    ck_free(tol);
    ck_free(got);
    ck_free(dummy);
}

Test(softmax, lengths) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int li = 0; li < LEN(lens); li++) {
        int n = lens[li];
        float *x = ck_alloc(n);
        ck_fill(&r, x, n, -10.0f, 10.0f);
        softmax_check(&ref, eng, n_eng, x, n, "[-10,10)");
        /* wide range: many results underflow to denormals and 0 */
        ck_fill(&r, x, n, -120.0f, 5.0f);
        softmax_check(&ref, eng, n_eng, x, n, "[-120,5)");
        /* all equal, and far from 0 (the max must be subtracted) */
        for (int i = 0; i < n; i++) x[i] = 1000.0f;
        softmax_check(&ref, eng, n_eng, x, n, "all 1000");
        ck_free(x);
    }
}

/* Masked (-inf) entries get exactly 0; the others renormalise. */
Test(softmax, masked) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int li = 0; li < LEN(lens); li++) {
        int n = lens[li];
        float *x = ck_alloc(n);
        ck_fill(&r, x, n, -5.0f, 5.0f);
        for (int i = 0; i < n; i++)
            if (ck_randi(&r, 0, 2) == 0) x[i] = -INFINITY;
        x[ck_randi(&r, 0, n - 1)] = 0.5f; /* at least one live entry */
        softmax_check(&ref, eng, n_eng, x, n, "masked");
        /* causal-style: a live prefix, the rest masked */
        int live = ck_randi(&r, 1, n);
        ck_fill(&r, x, n, -5.0f, 5.0f);
        for (int i = live; i < n; i++) x[i] = -INFINITY;
        softmax_check(&ref, eng, n_eng, x, n, "causal");
        for (int e = 0; e < n_eng; e++) {
            float *y = ck_alloc(n);
            memcpy(y, x, n * sizeof *x);
            eng[e].k.softmax(y, n);
            int zeros = 1;
            double sum = 0.0;
            for (int i = 0; i < n; i++) {
                if (i >= live) zeros &= y[i] == 0.0f;
                sum += y[i];
            }
            cr_expect(zeros, "softmax %s n=%d: masked entries not 0", tg_isa_name(eng[e].isa), n);
            cr_expect(fabs(sum - 1.0) <= (n + 8) * EPS, "softmax %s n=%d: sums to %.9g",
                      tg_isa_name(eng[e].isa), n, sum);
            ck_free(y);
        }
        ck_free(x);
    }
}

/* All -inf -> all 0. A NaN anywhere -> all NaN, including a row of only
 * NaN and -inf (which has no finite max). */
Test(softmax, degenerate_rows) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng); /* includes the reference: it obeys this too */
    ck_rng r = ck_rng_new(__func__);
    for (int li = 0; li < LEN(lens); li++) {
        int n = lens[li];
        float *x = ck_alloc(n);
        for (int e = 0; e < n_eng; e++) {
            const char *isa = tg_isa_name(eng[e].isa);
            int ok = 1;
            for (int i = 0; i < n; i++) x[i] = -INFINITY;
            eng[e].k.softmax(x, n);
            for (int i = 0; i < n; i++) ok &= x[i] == 0.0f;
            cr_expect(ok, "softmax %s n=%d: all -inf row is not all 0", isa, n);

            ck_fill(&r, x, n, -3.0f, 3.0f);
            x[ck_randi(&r, 0, n - 1)] = NAN;
            eng[e].k.softmax(x, n);
            ok = 1;
            for (int i = 0; i < n; i++) ok &= isnan(x[i]) != 0;
            cr_expect(ok, "softmax %s n=%d: one NaN does not poison the row", isa, n);

            for (int i = 0; i < n; i++) x[i] = -INFINITY;
            x[ck_randi(&r, 0, n - 1)] = NAN;
            eng[e].k.softmax(x, n);
            ok = 1;
            for (int i = 0; i < n; i++) ok &= isnan(x[i]) != 0;
            cr_expect(ok, "softmax %s n=%d: NaN among -inf gives a clean row", isa, n);
            CK_EXPECT_GUARDS(x, "softmax %s n=%d degenerate", isa, n);
        }
        ck_free(x);
    }
}

/* The reference against the double oracle. */
Test(softmax, reference_vs_double) {
    tg_engine ref;
    ck_engine_ref(&ref);
    ck_rng r = ck_rng_new(__func__);
    for (int li = 0; li < LEN(lens); li++) {
        int n = lens[li];
        float *x = ck_alloc(n), *want = ck_alloc(n), *tol = ck_alloc(n);
        ck_fill(&r, x, n, -20.0f, 20.0f);
        for (int i = 0; i < n; i++)
            if (ck_randi(&r, 0, 4) == 0) x[i] = -INFINITY;
        x[ck_randi(&r, 0, n - 1)] = 1.0f;
        softmax_oracle(want, tol, x, n);
        ref.k.softmax(x, n);
        CK_EXPECT_CLOSE(x, want, tol, n, "softmax reference vs double n=%d", n);
        ck_free(x);
        ck_free(want);
        ck_free(tol);
    }
}

/* ---- layernorm --------------------------------------------------------------- */

static void layernorm_case(const tg_engine *ref, const tg_engine *eng, int n_eng, ck_rng *r,
                           int T, int n, float lo, float hi) {
    size_t nt = (size_t)T * n;
    float *x = ck_alloc(nt), *g = ck_alloc(n), *b = ck_alloc(n);
    float *want = ck_alloc(nt), *tol = ck_alloc(nt), *got = ck_alloc(nt), *exact = ck_alloc(nt);
    ck_fill(r, x, nt, lo, hi);
    ck_fill(r, g, n, 0.5f, 1.5f);
    ck_fill(r, b, n, -0.5f, 0.5f);
    const float eps = 1e-5f;
    layernorm_oracle(exact, tol, x, g, b, T, n, eps);
    ref->k.layernorm(want, x, g, b, T, n, eps);
    CK_EXPECT_CLOSE(want, exact, tol, nt, "layernorm reference vs double T=%d n=%d x in [%g,%g)",
                    T, n, (double)lo, (double)hi);
    for (int e = 0; e < n_eng; e++) {
        ck_poison(got, nt);
        eng[e].k.layernorm(got, x, g, b, T, n, eps);
        CK_EXPECT_GUARDS(got, "layernorm %s T=%d n=%d", tg_isa_name(eng[e].isa), T, n);
        CK_EXPECT_CLOSE(got, want, tol, nt, "layernorm %s T=%d n=%d x in [%g,%g)",
                        tg_isa_name(eng[e].isa), T, n, (double)lo, (double)hi);
    }
    ck_free(x);
    ck_free(g);
    ck_free(b);
    ck_free(want);
    ck_free(tol);
    ck_free(got);
    ck_free(exact);
}

Test(layernorm, lengths) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int Ts[] = {1, 3, 5};
    for (int li = 0; li < LEN(lens); li++)
        for (int ti = 0; ti < LEN(Ts); ti++) {
            int n = lens[li], T = Ts[ti];
            if ((size_t)T * n > 200000 && T > 1) continue;
            layernorm_case(&ref, eng, n_eng, &r, T, n, -2.0f, 2.0f);
            /* a large common offset: a one-pass E[x²] - E[x]² would lose it all */
            layernorm_case(&ref, eng, n_eng, &r, T, n, 1000.0f, 1001.0f);
        }
}

/* NaN in a row poisons that row only; rows are independent. */
Test(layernorm, nan_rows) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int ns[] = {1, 7, 17, 33, 768};
    for (int li = 0; li < LEN(ns); li++) {
        int n = ns[li], T = 3;
        float *x = ck_alloc((size_t)T * n), *g = ck_alloc(n), *b = ck_alloc(n);
        float *y = ck_alloc((size_t)T * n);
        ck_fill(&r, x, (size_t)T * n, -1.0f, 1.0f);
        ck_fill(&r, g, n, 0.5f, 1.5f);
        ck_fill(&r, b, n, -0.5f, 0.5f);
        x[n + ck_randi(&r, 0, n - 1)] = NAN; /* row 1 */
        for (int e = 0; e < n_eng; e++) {
            eng[e].k.layernorm(y, x, g, b, T, n, 1e-5f);
            int ok = 1;
            for (int i = 0; i < n; i++)
                ok &= !isnan(y[i]) && isnan(y[n + i]) && !isnan(y[2 * n + i]);
            cr_expect(ok, "layernorm %s n=%d: NaN not confined to its row", tg_isa_name(eng[e].isa),
                      n);
        }
        ck_free(x);
        ck_free(g);
        ck_free(b);
        ck_free(y);
    }
}

/* ---- GELU -------------------------------------------------------------------- */

static void gelu_case(const tg_engine *ref, const tg_engine *eng, int n_eng, const float *x,
                      int n, const char *kind) {
    float *want = ck_alloc(n), *tol = ck_alloc(n), *got = ck_alloc(n), *exact = ck_alloc(n);
    gelu_oracle(exact, tol, x, n);
    ref->k.gelu(want, x, n);
    CK_EXPECT_CLOSE(want, exact, tol, n, "gelu reference vs double n=%d %s", n, kind);
    for (int e = 0; e < n_eng; e++) {
        ck_poison(got, n);
        eng[e].k.gelu(got, x, n);
        CK_EXPECT_GUARDS(got, "gelu %s n=%d %s", tg_isa_name(eng[e].isa), n, kind);
        CK_EXPECT_CLOSE(got, want, tol, n, "gelu %s n=%d %s", tg_isa_name(eng[e].isa), n, kind);
    }
    ck_free(want);
    ck_free(tol);
    ck_free(got);
    ck_free(exact);
}

Test(gelu, lengths) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int li = 0; li < LEN(lens); li++) {
        int n = lens[li];
        float *x = ck_alloc(n);
        ck_fill(&r, x, n, -6.0f, 6.0f);
        gelu_case(&ref, eng, n_eng, x, n, "[-6,6)");
        ck_fill(&r, x, n, -1e4f, 1e4f); /* x³ overflows float for |x| > ~7e12 only */
        gelu_case(&ref, eng, n_eng, x, n, "[-1e4,1e4)");
        ck_fill(&r, x, n, -1e-3f, 1e-3f);
        gelu_case(&ref, eng, n_eng, x, n, "[-1e-3,1e-3)");
        ck_free(x);
    }
}

/* NaN stays NaN in its own lane; +inf gives +inf, like the reference. */
Test(gelu, nan_inf) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int ns[] = {1, 3, 9, 17, 33};
    for (int li = 0; li < LEN(ns); li++) {
        int n = ns[li];
        float *x = ck_alloc(n), *y = ck_alloc(n), *want = ck_alloc(n);
        ck_fill(&r, x, n, -3.0f, 3.0f);
        int in = ck_randi(&r, 0, n - 1), ii = ck_randi(&r, 0, n - 1);
        x[ii] = INFINITY;
        x[in] = NAN;
        ref.k.gelu(want, x, n);
        for (int e = 0; e < n_eng; e++) {
            eng[e].k.gelu(y, x, n);
            cr_expect(isnan(y[in]), "gelu %s n=%d: NaN lost", tg_isa_name(eng[e].isa), n);
            if (ii != in)
                cr_expect(y[ii] == INFINITY, "gelu %s n=%d: gelu(+inf) = %g",
                          tg_isa_name(eng[e].isa), n, (double)y[ii]);
            for (int i = 0; i < n; i++)
                if (i != in && i != ii)
                    cr_expect(isfinite(y[i]), "gelu %s n=%d: NaN leaked to [%d]",
                              tg_isa_name(eng[e].isa), n, i);
        }
        ck_free(x);
        ck_free(y);
        ck_free(want);
    }
}

/* ---- add --------------------------------------------------------------------- */

/* One rounding per element: every ISA is bit-identical to the reference,
 * also in place (y == a and y == b). */
Test(add, lengths_and_aliasing) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int li = 0; li < LEN(lens); li++) {
        int n = lens[li];
        float *a = ck_alloc(n), *b = ck_alloc(n), *want = ck_alloc(n), *got = ck_alloc(n);
        ck_fill(&r, a, n, -100.0f, 100.0f);
        ck_fill(&r, b, n, -1.0f, 1.0f);
        a[ck_randi(&r, 0, n - 1)] = NAN;
        b[ck_randi(&r, 0, n - 1)] = INFINITY;
        ref.k.add(want, a, b, n);
        for (int e = 0; e < n_eng; e++) {
            const char *isa = tg_isa_name(eng[e].isa);
            ck_poison(got, n);
            eng[e].k.add(got, a, b, n);
            CK_EXPECT_GUARDS(got, "add %s n=%d", isa, n);
            CK_EXPECT_BITEQUAL(got, want, n, "add %s n=%d", isa, n);
            memcpy(got, a, n * sizeof *a);
            eng[e].k.add(got, got, b, n);
            CK_EXPECT_BITEQUAL(got, want, n, "add %s n=%d y == a", isa, n);
            memcpy(got, b, n * sizeof *b);
            eng[e].k.add(got, a, got, n);
            CK_EXPECT_BITEQUAL(got, want, n, "add %s n=%d y == b", isa, n);
            CK_EXPECT_GUARDS(got, "add %s n=%d in place", isa, n);
        }
        ck_free(a);
        ck_free(b);
        ck_free(want);
        ck_free(got);
    }
}
