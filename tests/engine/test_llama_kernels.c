/* test_llama_kernels.c — RMSNorm, SiLU·mul and RoPE (both pair conventions)
 * on every ISA against the C reference, and the reference against double-
 * precision oracles written here; awkward lengths, guard bytes, aliasing.
 * (The grouped-query decode is in test_attention.c, beside its oracle.) */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/engine/checkasm.h"

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define EPS ((double)FLT_EPSILON)

static const int lens[] = {1,  2,  3,  4,  5,  7,   8,   9,   15,  16,   17,  31, 32,
                           33, 63, 64, 65, 127, 128, 129, 172, 288, 768, 1000, 4096};

/* ---- RMSNorm ----------------------------------------------------------------- */

/* y = x·r·g, r = 1/sqrt(mean(x²) + eps), in double. The float sum of the n
 * squares is off by at most n·eps of itself (positive terms), which moves r
 * by half that; the two products and the square root add a few ulps. So
 * tol = (n/2 + 8)·eps·|y| (+ denormal slack). */
static void rms_oracle(float *want, float *tol, const float *x, const float *g, int T, int n,
                       float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n;
        double ss = 0.0;
        for (int i = 0; i < n; i++) ss += (double)xt[i] * xt[i];
        double r = 1.0 / sqrt(ss / n + (double)eps);
        for (int i = 0; i < n; i++) {
            double y = xt[i] * r * g[i];
            want[(size_t)t * n + i] = (float)y;
            tol[(size_t)t * n + i] = (float)((0.5 * n + 8) * EPS * fabs(y) + 2.0 * FLT_TRUE_MIN);
        }
    }
}

Test(rmsnorm, lengths) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int li = 0; li < LEN(lens); li++)
        for (int T = 1; T <= 3; T += 2) {
            int n = lens[li];
            size_t nt = (size_t)T * n;
            float *x = ck_alloc(nt), *g = ck_alloc(n), *want = ck_alloc(nt), *exact = ck_alloc(nt);
            float *tol = ck_alloc(nt), *got = ck_alloc(nt);
            float lo = li % 2 ? -3.0f : 100.0f, hi = li % 2 ? 3.0f : 101.0f; /* and a large mean */
            ck_fill(&r, x, nt, lo, hi);
            ck_fill(&r, g, n, 0.5f, 1.5f);
            float eps = li % 3 ? 1e-5f : 1e-6f;
            rms_oracle(exact, tol, x, g, T, n, eps);
            ref.k.rmsnorm(want, x, g, T, n, eps);
            CK_EXPECT_CLOSE(want, exact, tol, nt, "rmsnorm reference vs double T=%d n=%d", T, n);
            for (int e = 0; e < n_eng; e++) {
                ck_poison(got, nt);
                eng[e].k.rmsnorm(got, x, g, T, n, eps);
                CK_EXPECT_GUARDS(got, "rmsnorm %s T=%d n=%d", tg_isa_name(eng[e].isa), T, n);
                CK_EXPECT_CLOSE(got, want, tol, nt, "rmsnorm %s T=%d n=%d", tg_isa_name(eng[e].isa), T, n);
                /* in place (the model never aliases, the contract allows it) */
                memcpy(got, x, nt * sizeof(float));
                eng[e].k.rmsnorm(got, got, g, T, n, eps);
                CK_EXPECT_CLOSE(got, want, tol, nt, "rmsnorm %s in place T=%d n=%d", tg_isa_name(eng[e].isa), T, n);
            }
            float *bufs[] = {x, g, want, exact, tol, got};
            for (int i = 0; i < LEN(bufs); i++) ck_free(bufs[i]);
        }
}

/* ---- SiLU · mul ----------------------------------------------------------------- */

/* y = a/(1 + e^-a)·b in double. exp is within an ulp, the division and the
 * products add three roundings: tol = 8·eps·|y| (the sigmoid is a ratio of
 * positive numbers, no cancellation). */
Test(silu_mul, lengths_and_aliasing) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int li = 0; li < LEN(lens); li++) {
        int n = lens[li];
        float *a = ck_alloc(n), *b = ck_alloc(n), *want = ck_alloc(n), *exact = ck_alloc(n);
        float *tol = ck_alloc(n), *got = ck_alloc(n);
        ck_fill(&r, a, n, -20.0f, 20.0f);
        ck_fill(&r, b, n, -3.0f, 3.0f);
        for (int i = 0; i < n; i++) {
            double y = a[i] / (1.0 + exp(-(double)a[i])) * b[i];
            exact[i] = (float)y;
            tol[i] = (float)(8.0 * EPS * fabs(y) + 2.0 * FLT_TRUE_MIN);
        }
        ref.k.silu_mul(want, a, b, n);
        CK_EXPECT_CLOSE(want, exact, tol, n, "silu_mul reference vs double n=%d", n);
        for (int e = 0; e < n_eng; e++) {
            const char *isa = tg_isa_name(eng[e].isa);
            ck_poison(got, n);
            eng[e].k.silu_mul(got, a, b, n);
            CK_EXPECT_GUARDS(got, "silu_mul %s n=%d", isa, n);
            CK_EXPECT_CLOSE(got, want, tol, n, "silu_mul %s n=%d", isa, n);
            memcpy(got, a, n * sizeof(float)); /* y aliases a, as the model calls it */
            eng[e].k.silu_mul(got, got, b, n);
            CK_EXPECT_CLOSE(got, want, tol, n, "silu_mul %s y == a n=%d", isa, n);
            memcpy(got, b, n * sizeof(float));
            eng[e].k.silu_mul(got, a, got, n);
            CK_EXPECT_CLOSE(got, want, tol, n, "silu_mul %s y == b n=%d", isa, n);
        }
        float *bufs[] = {a, b, want, exact, tol, got};
        for (int i = 0; i < LEN(bufs); i++) ck_free(bufs[i]);
    }
}

/* ---- RoPE --------------------------------------------------------------------- */

/* One position's rotation of n_head heads in double: a pair (x0, x1) with
 * angle (c, s) becomes (x0·c - x1·s, x0·s + x1·c); each output is two
 * products and a sum, so tol = 4·eps·(sum of the two products' sizes). Dimensions d..HS-1
 * must come back bit for bit (tol 0). */
static void rope_case(const tg_engine *ref, const tg_engine *eng, int n_eng, ck_rng *r, int n_head,
                      int hs, int d, int halves) {
    size_t n = (size_t)n_head * hs;
    int half = d / 2;
    float *x = ck_alloc(n), *cs = ck_alloc(half), *sn = ck_alloc(half), *exact = ck_alloc(n);
    float *tol = ck_alloc(n), *want = ck_alloc(n), *got = ck_alloc(n);
    ck_fill(r, x, n, -4.0f, 4.0f);
    for (int i = 0; i < half; i++) {
        double a = ck_randf(r, -100.0f, 100.0f);
        cs[i] = (float)cos(a);
        sn[i] = (float)sin(a);
    }
    memcpy(exact, x, n * sizeof(float));
    for (size_t i = 0; i < n; i++) tol[i] = 0.0f;
    for (int h = 0; h < n_head; h++)
        for (int i = 0; i < half; i++) {
            size_t a = (size_t)h * hs + (halves ? i : 2 * i), b = (size_t)h * hs + (halves ? i + half : 2 * i + 1);
            double x0 = x[a], x1 = x[b], c = cs[i], s = sn[i];
            exact[a] = (float)(x0 * c - x1 * s);
            exact[b] = (float)(x0 * s + x1 * c);
            tol[a] = (float)(4.0 * EPS * (fabs(x0 * c) + fabs(x1 * s)) + 2.0 * FLT_TRUE_MIN);
            tol[b] = (float)(4.0 * EPS * (fabs(x0 * s) + fabs(x1 * c)) + 2.0 * FLT_TRUE_MIN);
        }
    memcpy(want, x, n * sizeof(float));
    ref->k.rope(want, cs, sn, n_head, hs, d, halves);
    CK_EXPECT_CLOSE(want, exact, tol, n, "rope reference vs double heads=%d hs=%d d=%d %s", n_head, hs,
                    d, halves ? "halves" : "adjacent");
    for (int e = 0; e < n_eng; e++) {
        const char *isa = tg_isa_name(eng[e].isa);
        memcpy(got, x, n * sizeof(float));
        eng[e].k.rope(got, cs, sn, n_head, hs, d, halves);
        CK_EXPECT_GUARDS(got, "rope %s heads=%d hs=%d d=%d", isa, n_head, hs, d);
        CK_EXPECT_CLOSE(got, want, tol, n, "rope %s heads=%d hs=%d d=%d %s", isa, n_head, hs, d,
                        halves ? "halves" : "adjacent");
    }
    float *bufs[] = {x, cs, sn, exact, tol, want, got};
    for (int i = 0; i < LEN(bufs); i++) ck_free(bufs[i]);
}

Test(rope, both_conventions) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int hss[] = {2, 4, 6, 8, 10, 12, 16, 18, 32, 34, 48, 64, 80, 96, 128, 130, 256};
    static const int heads[] = {1, 2, 3, 6, 8};
    for (int hi = 0; hi < LEN(hss); hi++)
        for (int ni = 0; ni < LEN(heads); ni++)
            for (int halves = 0; halves < 2; halves++) {
                int hs = hss[hi];
                rope_case(&ref, eng, n_eng, &r, heads[ni], hs, hs, halves);  /* all dims */
                int d = 2 * ck_randi(&r, 1, hs / 2);                         /* partial */
                rope_case(&ref, eng, n_eng, &r, heads[ni], hs, d, halves);
            }
}
