/* test_train_kernels.c — the training kernels (gemm, layernorm/GELU/softmax
 * backward) on every ISA against the C reference: awkward shapes, every
 * operand layout the trainer uses, row sub-ranges, accumulation, guard
 * bytes, and the gemm's promise that a row's result does not depend on the
 * range it was computed in. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/engine/checkasm.h"

#define EPS ((double)FLT_EPSILON)

/* ---- gemm ---------------------------------------------------------------------- */

typedef struct gemm_case {
    int M, N, K, ta, tb; /* ta: A stored [K,M] (read transposed); tb: B stored [N,K] */
    int tri;             /* tg_tri */
} gemm_case;

/* Is A's (m, k) outside a triangular A (taken as 0 by the kernel)? */
static int tri_a_missing(int tri, int m, int k) {
    return (tri == TG_TRI_A_LOWER && k > m) || (tri == TG_TRI_A_UPPER && k < m);
}

/* One gemm case on every engine, rows m0..m1, starting from 0, from C
 * (accumulation) and from a bias row. A triangular A holds NaN where it has
 * no entries (none may leak into C); the part of C a lower C leaves alone
 * must come back unchanged (the reference leaves it, and untouched
 * elements are compared exactly). */
static void gemm_check(const tg_engine *ref, const tg_engine *eng, int n_eng, ck_rng *rng,
                       gemm_case c, int m0, int m1) {
    int M = c.M, N = c.N, K = c.K, ldc = N + 3;
    float *a = ck_alloc((size_t)M * K), *b = ck_alloc((size_t)K * N);
    ck_fill(rng, a, (size_t)M * K, -1, 1);
    ck_fill(rng, b, (size_t)K * N, -1, 1);
    ptrdiff_t rsa = c.ta ? 1 : K, csa = c.ta ? M : 1, rsb = c.tb ? 1 : N, csb = c.tb ? K : 1;
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++)
            if (tri_a_missing(c.tri, m, k)) a[m * rsa + k * csa] = NAN;
    size_t nc = (size_t)M * ldc;
    float *c0 = ck_alloc(nc), *want = ck_alloc(nc), *got = ck_alloc(nc), *tol = ck_alloc(nc);
    float *ws = ck_alloc(TG_GEMM_WS), *bias0 = ck_alloc(N);
    ck_fill(rng, c0, nc, -1, 1);
    ck_fill(rng, bias0, N, -1, 1);
    for (int start = 0; start < 3; start++) { /* 0, the old C, the bias */
        int acc = start == 1;
        const float *bias = start == 2 ? bias0 : NULL;
        memcpy(want, c0, nc * sizeof(float));
        ref->k.gemm(want, ldc, a, rsa, csa, b, rsb, csb, M, N, K, c.tri, m0, m1, acc, bias, NULL);
        /* tol = (K + 2)·eps·(Σ|a·b| + |start|) on the computed rows, exact elsewhere */
        for (size_t i = 0; i < nc; i++) tol[i] = 0.0f;
        for (int m = m0; m < m1; m++)
            for (int n = 0; n < N; n++) {
                if (c.tri == TG_TRI_C_LOWER && n > m) continue; /* untouched: exact */
                double s = acc ? fabs(c0[(size_t)m * ldc + n]) : bias ? fabs(bias[n]) : 0.0;
                for (int k = 0; k < K; k++)
                    if (!tri_a_missing(c.tri, m, k)) s += fabs(a[m * rsa + k * csa] * b[k * rsb + n * csb]);
                tol[(size_t)m * ldc + n] = (float)((K + 2) * EPS * s);
            }
        for (int e = 0; e < n_eng; e++) {
            memcpy(got, c0, nc * sizeof(float));
            ck_poison(ws, TG_GEMM_WS);
            eng[e].k.gemm(got, ldc, a, rsa, csa, b, rsb, csb, M, N, K, c.tri, m0, m1, acc, bias, ws);
            CK_EXPECT_GUARDS(got, "gemm %s M%d N%d K%d ta%d tb%d tri%d rows %d..%d start%d",
                             tg_isa_name(eng[e].isa), M, N, K, c.ta, c.tb, c.tri, m0, m1, start);
            CK_EXPECT_GUARDS(ws, "gemm %s workspace", tg_isa_name(eng[e].isa));
            CK_EXPECT_CLOSE(got, want, tol, nc, "gemm %s M%d N%d K%d ta%d tb%d tri%d rows %d..%d start%d",
                            tg_isa_name(eng[e].isa), M, N, K, c.ta, c.tb, c.tri, m0, m1, start);
            /* the same rows computed in two pieces are bit-identical */
            if (m1 - m0 >= 2) {
                float *split = ck_alloc(nc);
                memcpy(split, c0, nc * sizeof(float));
                int mid = m0 + (m1 - m0) / 2 + 1;
                if (mid >= m1) mid = m1 - 1;
                eng[e].k.gemm(split, ldc, a, rsa, csa, b, rsb, csb, M, N, K, c.tri, m0, mid, acc, bias, ws);
                eng[e].k.gemm(split, ldc, a, rsa, csa, b, rsb, csb, M, N, K, c.tri, mid, m1, acc, bias, ws);
                CK_EXPECT_BITEQUAL(split, got, nc, "gemm %s M%d N%d K%d split at %d",
                                   tg_isa_name(eng[e].isa), M, N, K, mid);
                ck_free(split);
            }
        }
    }
    ck_free(a), ck_free(b), ck_free(c0), ck_free(want), ck_free(got), ck_free(tol), ck_free(ws);
    ck_free(bias0);
}

Test(train_kernels, gemm) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng rng = ck_rng_new(__func__);
    /* small and awkward shapes, the K/N block edges (256), all four layouts */
    const int Ms[] = {1, 5, 6, 7, 13, 97, 200}, Ns[] = {1, 8, 15, 16, 17, 40, 257, 300};
    const int Ks[] = {1, 3, 16, 33, 255, 256, 300, 520};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int i = 0; i < 7; i++) {
                gemm_case c = {Ms[i], Ns[(i + ta + 2 * tb) % 8], Ks[(i * 3 + ta) % 8], ta, tb, 0};
                gemm_check(&ref, eng, n_eng, &rng, c, 0, c.M);
                if (c.M > 4) gemm_check(&ref, eng, n_eng, &rng, c, 2, c.M - 1);
            }
    /* K == 0: C = 0, unchanged with acc, the bias with one */
    gemm_check(&ref, eng, n_eng, &rng, (gemm_case){9, 20, 0, 0, 0, 0}, 0, 9);
    gemm_check(&ref, eng, n_eng, &rng, (gemm_case){9, 20, 0, 0, 0, TG_TRI_C_LOWER}, 0, 9);
}

/* The triangular cases on square and oblong shapes, across the K slices
 * (K > 256), both orientations of A and B, and row ranges that start and
 * end inside tiles. */
Test(train_kernels, gemm_triangular) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng rng = ck_rng_new(__func__);
    const int Ts[] = {1, 7, 9, 33, 70, 130, 300};
    for (int tri = TG_TRI_C_LOWER; tri <= TG_TRI_A_UPPER; tri++)
        for (int i = 0; i < 7; i++) {
            int T = Ts[i], ta = i % 2, tb = (i / 2) % 2;
            /* C lower: [T,T] = [T,HS]·[HS,T]; A lower/upper: [T,HS] = [T,T]·[T,HS] */
            gemm_case c = tri == TG_TRI_C_LOWER ? (gemm_case){T, T, 32, ta, tb, tri}
                                                : (gemm_case){T, 32 + i, T, ta, tb, tri};
            gemm_check(&ref, eng, n_eng, &rng, c, 0, T);
            if (T > 4) gemm_check(&ref, eng, n_eng, &rng, c, 3, T - 1);
        }
    /* oblong: more rows than K, more K than rows */
    gemm_check(&ref, eng, n_eng, &rng, (gemm_case){100, 40, 60, 0, 0, TG_TRI_A_LOWER}, 0, 100);
    gemm_check(&ref, eng, n_eng, &rng, (gemm_case){60, 40, 300, 1, 0, TG_TRI_A_UPPER}, 5, 60);
    gemm_check(&ref, eng, n_eng, &rng, (gemm_case){60, 300, 20, 0, 1, TG_TRI_C_LOWER}, 0, 60);
}

/* The trainer's shapes: the causal attention calls (A/B rows 3E apart)
 * and a [BT,E]·[E,3E] projection. */
Test(train_kernels, gemm_trainer_shapes) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng rng = ck_rng_new(__func__);
    gemm_check(&ref, eng, n_eng, &rng, (gemm_case){128, 384, 128, 0, 1, 0}, 0, 128);
    gemm_check(&ref, eng, n_eng, &rng, (gemm_case){256, 256, 32, 0, 1, TG_TRI_C_LOWER}, 0, 256);
    gemm_check(&ref, eng, n_eng, &rng, (gemm_case){256, 32, 256, 0, 0, TG_TRI_A_LOWER}, 0, 256);
    gemm_check(&ref, eng, n_eng, &rng, (gemm_case){256, 32, 256, 1, 0, TG_TRI_A_UPPER}, 0, 256);
}

/* ---- layernorm backward ----------------------------------------------------------- */

Test(train_kernels, layernorm_bwd) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng rng = ck_rng_new(__func__);
    const int ns[] = {1, 7, 8, 9, 31, 64, 128, 129, 384, 1000};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        int n = ns[k], T = 5;
        size_t sz = (size_t)T * n;
        float *x = ck_alloc(sz), *dy = ck_alloc(sz), *g = ck_alloc(n), *dx0 = ck_alloc(sz);
        float *dg0 = ck_alloc(n), *db0 = ck_alloc(n);
        ck_fill(&rng, x, sz, -2, 3), ck_fill(&rng, dy, sz, -1, 1), ck_fill(&rng, g, n, 0.5f, 1.5f);
        ck_fill(&rng, dx0, sz, -1, 1), ck_fill(&rng, dg0, n, -1, 1), ck_fill(&rng, db0, n, -1, 1);
        float *wdx = ck_alloc(sz), *wdg = ck_alloc(n), *wdb = ck_alloc(n);
        memcpy(wdx, dx0, sz * 4), memcpy(wdg, dg0, n * 4), memcpy(wdb, db0, n * 4);
        ref.k.layernorm_bwd(wdx, wdg, wdb, dy, x, g, T, n, 1e-5f);
        /* tolerances: every term's magnitude times (n + 8)·eps, in double */
        float *tdx = ck_alloc(sz), *tdg = ck_alloc(n), *tdb = ck_alloc(n);
        for (int i = 0; i < n; i++) tdg[i] = (float)(EPS * fabs(dg0[i])), tdb[i] = (float)(EPS * fabs(db0[i]));
        for (int t = 0; t < T; t++) {
            const float *xt = x + (size_t)t * n, *dyt = dy + (size_t)t * n;
            double mean = 0, var = 0, su = 0, sux = 0;
            for (int i = 0; i < n; i++) mean += xt[i];
            mean /= n;
            for (int i = 0; i < n; i++) var += (xt[i] - mean) * (xt[i] - mean);
            double rstd = 1.0 / sqrt(var / n + 1e-5);
            for (int i = 0; i < n; i++) {
                double xh = (xt[i] - mean) * rstd;
                su += fabs(g[i] * dyt[i]), sux += fabs(g[i] * dyt[i] * xh);
                tdg[i] += (float)((n + 8) * EPS * fabs(dyt[i] * xh) * (1 + fabs(xh))) * 4;
                tdb[i] += (float)((T + 2) * EPS * fabs(dyt[i]));
            }
            for (int i = 0; i < n; i++) {
                double xh = (xt[i] - mean) * rstd;
                double mag = rstd * (fabs(g[i] * dyt[i]) + su / n + fabs(xh) * sux / n);
                tdx[(size_t)t * n + i] = (float)(4 * (n + 8) * EPS * mag * (1 + fabs(xh)) +
                                                 2 * EPS * fabs(dx0[(size_t)t * n + i]));
            }
        }
        /* dg/db sums run over T rows: scale by T */
        for (int i = 0; i < n; i++) tdg[i] *= T, tdb[i] *= 2;
        for (int e = 0; e < n_eng; e++) {
            float *dx = ck_alloc(sz), *dg = ck_alloc(n), *db = ck_alloc(n);
            memcpy(dx, dx0, sz * 4), memcpy(dg, dg0, n * 4), memcpy(db, db0, n * 4);
            eng[e].k.layernorm_bwd(dx, dg, db, dy, x, g, T, n, 1e-5f);
            CK_EXPECT_GUARDS(dx, "layernorm_bwd %s n=%d dx", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_GUARDS(dg, "layernorm_bwd %s n=%d dg", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_GUARDS(db, "layernorm_bwd %s n=%d db", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_CLOSE(dx, wdx, tdx, sz, "layernorm_bwd %s n=%d dx", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_CLOSE(dg, wdg, tdg, n, "layernorm_bwd %s n=%d dg", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_CLOSE(db, wdb, tdb, n, "layernorm_bwd %s n=%d db", tg_isa_name(eng[e].isa), n);
            ck_free(dx), ck_free(dg), ck_free(db);
        }
        ck_free(x), ck_free(dy), ck_free(g), ck_free(dx0), ck_free(dg0), ck_free(db0);
        ck_free(wdx), ck_free(wdg), ck_free(wdb), ck_free(tdx), ck_free(tdg), ck_free(tdb);
    }
}

/* ---- GELU and softmax backward ------------------------------------------------------ */

Test(train_kernels, gelu_bwd) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng rng = ck_rng_new(__func__);
    const int ns[] = {1, 7, 8, 9, 63, 1000, 4099};
    const double c = sqrt(2.0 / M_PI);
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        int n = ns[k];
        float *x = ck_alloc(n), *dy = ck_alloc(n), *want = ck_alloc(n), *tol = ck_alloc(n);
        ck_fill(&rng, x, n, -6, 6), ck_fill(&rng, dy, n, -1, 1);
        ref.k.gelu_bwd(want, x, dy, n);
        /* u and tanh(u) to a few ulps: δ(GELU') ≤ |dy|·(1 + |x|·du·(1 + |u|))·16·eps */
        for (int i = 0; i < n; i++) {
            double v = x[i], u = c * (v + 0.044715 * v * v * v), du = c * (1 + 3 * 0.044715 * v * v);
            tol[i] = (float)(16 * EPS * fabs(dy[i]) * (1 + fabs(v) * du * (1 + fabs(u))));
        }
        for (int e = 0; e < n_eng; e++) {
            float *got = ck_alloc(n);
            eng[e].k.gelu_bwd(got, x, dy, n);
            CK_EXPECT_GUARDS(got, "gelu_bwd %s n=%d", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_CLOSE(got, want, tol, n, "gelu_bwd %s n=%d", tg_isa_name(eng[e].isa), n);
            /* in place over dy */
            float *inplace = ck_alloc(n);
            memcpy(inplace, dy, n * 4);
            eng[e].k.gelu_bwd(inplace, x, inplace, n);
            CK_EXPECT_BITEQUAL(inplace, got, n, "gelu_bwd %s n=%d in place", tg_isa_name(eng[e].isa), n);
            ck_free(got), ck_free(inplace);
        }
        ck_free(x), ck_free(dy), ck_free(want), ck_free(tol);
    }
}

Test(train_kernels, softmax_bwd) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng rng = ck_rng_new(__func__);
    const int ns[] = {1, 2, 7, 8, 9, 64, 65, 256, 1000};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        int n = ns[k];
        float *p = ck_alloc(n), *dy = ck_alloc(n), *want = ck_alloc(n), *tol = ck_alloc(n);
        ck_fill(&rng, p, n, -3, 3), ck_fill(&rng, dy, n, -1, 1);
        ref.k.softmax(p, n);
        float scale = 0.125f;
        ref.k.softmax_bwd(want, p, dy, n, scale);
        double s = 0;
        for (int i = 0; i < n; i++) s += fabs(p[i] * dy[i]);
        for (int i = 0; i < n; i++) tol[i] = (float)((n + 8) * EPS * scale * p[i] * (fabs(dy[i]) + s) * 2);
        for (int e = 0; e < n_eng; e++) {
            float *got = ck_alloc(n);
            memcpy(got, dy, n * 4);
            eng[e].k.softmax_bwd(got, p, got, n, scale); /* in place, as the trainer calls it */
            CK_EXPECT_GUARDS(got, "softmax_bwd %s n=%d", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_CLOSE(got, want, tol, n, "softmax_bwd %s n=%d", tg_isa_name(eng[e].isa), n);
            ck_free(got);
        }
        ck_free(p), ck_free(dy), ck_free(want), ck_free(tol);
    }
}

/* ---- RMSNorm and SwiGLU backward (Llama training) --------------------------------- */

/* Every ISA (the C reference among them) against the formula in double. */
Test(train_kernels, rmsnorm_bwd) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng rng = ck_rng_new(__func__);
    const int ns[] = {1, 7, 8, 9, 31, 64, 129, 288, 1000};
    const float eps = 1e-5f;
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        int n = ns[k], T = 5;
        size_t sz = (size_t)T * n;
        float *x = ck_alloc(sz), *dy = ck_alloc(sz), *g = ck_alloc(n), *dx0 = ck_alloc(sz);
        float *dg0 = ck_alloc(n);
        ck_fill(&rng, x, sz, -2, 3), ck_fill(&rng, dy, sz, -1, 1), ck_fill(&rng, g, n, 0.5f, 1.5f);
        ck_fill(&rng, dx0, sz, -1, 1), ck_fill(&rng, dg0, n, -1, 1);
        float *wdx = ck_alloc(sz), *wdg = ck_alloc(n), *tdx = ck_alloc(sz), *tdg = ck_alloc(n);
        double *dg = calloc(n, sizeof(double)), *mg = calloc(n, sizeof(double));
        for (int t = 0; t < T; t++) {
            const float *xt = x + (size_t)t * n, *dyt = dy + (size_t)t * n;
            double ss = 0, sux = 0, sa = 0;
            for (int i = 0; i < n; i++) ss += (double)xt[i] * xt[i];
            double r = 1.0 / sqrt(ss / n + eps);
            for (int i = 0; i < n; i++) {
                sux += (double)g[i] * dyt[i] * xt[i], sa += fabs((double)g[i] * dyt[i] * xt[i]);
                dg[i] += (double)dyt[i] * xt[i] * r, mg[i] += fabs((double)dyt[i] * xt[i] * r);
            }
            for (int i = 0; i < n; i++) {
                size_t j = (size_t)t * n + i;
                double u = (double)g[i] * dyt[i];
                wdx[j] = (float)(dx0[j] + r * u - xt[i] * r * r * r * sux / n);
                /* r to (n + 8)·eps relative (r³: three times that), each term's size */
                double mag = r * fabs(u) + fabs(xt[i]) * r * r * r * sa / n;
                tdx[j] = (float)(4 * (n + 8) * EPS * mag + 2 * EPS * fabs(dx0[j]));
            }
        }
        for (int i = 0; i < n; i++) {
            wdg[i] = (float)(dg0[i] + dg[i]);
            tdg[i] = (float)(4 * (n + T + 8) * EPS * mg[i] + 2 * EPS * fabs(dg0[i]));
        }
        for (int e = 0; e < n_eng; e++) {
            float *gx = ck_alloc(sz), *gg = ck_alloc(n);
            memcpy(gx, dx0, sz * 4), memcpy(gg, dg0, n * 4);
            eng[e].k.rmsnorm_bwd(gx, gg, dy, x, g, T, n, eps);
            CK_EXPECT_GUARDS(gx, "rmsnorm_bwd %s n=%d dx", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_GUARDS(gg, "rmsnorm_bwd %s n=%d dg", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_CLOSE(gx, wdx, tdx, sz, "rmsnorm_bwd %s n=%d dx", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_CLOSE(gg, wdg, tdg, n, "rmsnorm_bwd %s n=%d dg", tg_isa_name(eng[e].isa), n);
            ck_free(gx), ck_free(gg);
        }
        free(dg), free(mg);
        ck_free(x), ck_free(dy), ck_free(g), ck_free(dx0), ck_free(dg0);
        ck_free(wdx), ck_free(wdg), ck_free(tdx), ck_free(tdg);
    }
}

Test(train_kernels, silu_mul_bwd) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng rng = ck_rng_new(__func__);
    const int ns[] = {1, 7, 8, 9, 63, 768, 4099};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        int n = ns[k];
        float *a = ck_alloc(n), *b = ck_alloc(n), *dy = ck_alloc(n);
        float *wa = ck_alloc(n), *wb = ck_alloc(n), *ta = ck_alloc(n), *tb = ck_alloc(n);
        ck_fill(&rng, a, n, -12, 12), ck_fill(&rng, b, n, -2, 2), ck_fill(&rng, dy, n, -1, 1);
        if (n > 3) a[0] = -100.0f, a[1] = 100.0f, a[2] = -1.2785f; /* e^(-a) = inf; σ = 1; silu' ~ 0 */
        for (int i = 0; i < n; i++) {
            double s = 1.0 / (1.0 + exp(-(double)a[i]));
            wa[i] = (float)(dy[i] * (double)b[i] * s * (1.0 + a[i] * (1.0 - s)));
            wb[i] = (float)(dy[i] * (double)a[i] * s);
            /* σ to a few ulps; 1 + a(1-σ) may cancel: its terms' size 1 + |a| */
            ta[i] = (float)(16 * EPS * fabs(dy[i] * (double)b[i]) * s * (1.0 + fabs(a[i])) + FLT_MIN);
            tb[i] = (float)(8 * EPS * fabs(wb[i]) + FLT_MIN);
        }
        for (int e = 0; e < n_eng; e++) {
            float *ga = ck_alloc(n), *gb = ck_alloc(n);
            eng[e].k.silu_mul_bwd(ga, gb, a, b, dy, n);
            CK_EXPECT_GUARDS(ga, "silu_mul_bwd %s n=%d da", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_GUARDS(gb, "silu_mul_bwd %s n=%d db", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_CLOSE(ga, wa, ta, n, "silu_mul_bwd %s n=%d da", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_CLOSE(gb, wb, tb, n, "silu_mul_bwd %s n=%d db", tg_isa_name(eng[e].isa), n);
            /* in place: da over a, db over b */
            float *ia = ck_alloc(n), *ib = ck_alloc(n);
            memcpy(ia, a, n * 4), memcpy(ib, b, n * 4);
            eng[e].k.silu_mul_bwd(ia, ib, ia, ib, dy, n);
            CK_EXPECT_BITEQUAL(ia, ga, n, "silu_mul_bwd %s n=%d in place da", tg_isa_name(eng[e].isa), n);
            CK_EXPECT_BITEQUAL(ib, gb, n, "silu_mul_bwd %s n=%d in place db", tg_isa_name(eng[e].isa), n);
            ck_free(ga), ck_free(gb), ck_free(ia), ck_free(ib);
        }
        ck_free(a), ck_free(b), ck_free(dy), ck_free(wa), ck_free(wb), ck_free(ta), ck_free(tb);
    }
}

/* ---- AdamW and the gradient's sum of squares ---------------------------------------- */

Test(train_kernels, adamw) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng rng = ck_rng_new(__func__);
    const int ns[] = {1, 3, 8, 15, 16, 17, 100, 1000, 4099};
    /* a warm-up step (t = 1) and a later one, with and without decay/clipping */
    const tg_adamw_coef cs[] = {{1.0f, 1.0f, 0.9f, 0.95f, 1e-3f / 0.1f, 0.2236068f, 1e-8f},
                                {0.37f, 1.0f - 1e-4f, 0.9f, 0.95f, 6e-4f, 0.9f, 1e-8f}};
    for (size_t ci = 0; ci < sizeof cs / sizeof *cs; ci++)
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
            const tg_adamw_coef *c = &cs[ci];
            size_t n = (size_t)ns[k];
            float *p0 = ck_alloc(n), *m0 = ck_alloc(n), *v0 = ck_alloc(n), *g = ck_alloc(n);
            ck_fill(&rng, p0, n, -0.1f, 0.1f), ck_fill(&rng, m0, n, -1e-3f, 1e-3f);
            ck_fill(&rng, v0, n, 0, 1e-5f), ck_fill(&rng, g, n, -1e-2f, 1e-2f);
            if (n > 3) v0[1] = m0[1] = g[1] = 0.0f; /* a parameter with no gradient yet */
            float *wp = ck_alloc(n), *wm = ck_alloc(n), *wv = ck_alloc(n);
            memcpy(wp, p0, n * 4), memcpy(wm, m0, n * 4), memcpy(wv, v0, n * 4);
            ref.k.adamw(wp, wm, wv, g, n, c);
            /* each result to a few roundings of its terms' magnitudes */
            float *tp = ck_alloc(n), *tm = ck_alloc(n), *tv = ck_alloc(n);
            for (size_t i = 0; i < n; i++) {
                double gr = fabs((double)g[i] * c->gscale);
                tm[i] = (float)(4 * EPS * (c->beta1 * fabs(m0[i]) + (1 - c->beta1) * gr));
                tv[i] = (float)(4 * EPS * (c->beta2 * v0[i] + (1 - c->beta2) * gr * gr));
                double den = sqrt(wv[i]) / c->bc2s + c->eps;
                tp[i] = (float)(4 * EPS * fabs(p0[i]) + 8 * EPS * c->step * fabs(wm[i]) / den);
            }
            for (int e = 0; e < n_eng; e++) {
                float *p = ck_alloc(n), *m = ck_alloc(n), *v = ck_alloc(n);
                memcpy(p, p0, n * 4), memcpy(m, m0, n * 4), memcpy(v, v0, n * 4);
                eng[e].k.adamw(p, m, v, g, n, c);
                const char *isa = tg_isa_name(eng[e].isa);
                CK_EXPECT_GUARDS(p, "adamw %s n=%zu p", isa, n);
                CK_EXPECT_GUARDS(m, "adamw %s n=%zu m", isa, n);
                CK_EXPECT_GUARDS(v, "adamw %s n=%zu v", isa, n);
                CK_EXPECT_CLOSE(m, wm, tm, n, "adamw %s n=%zu case %zu m", isa, n, ci);
                CK_EXPECT_CLOSE(v, wv, tv, n, "adamw %s n=%zu case %zu v", isa, n, ci);
                CK_EXPECT_CLOSE(p, wp, tp, n, "adamw %s n=%zu case %zu p", isa, n, ci);
                ck_free(p), ck_free(m), ck_free(v);
            }
            ck_free(p0), ck_free(m0), ck_free(v0), ck_free(g), ck_free(wp), ck_free(wm);
            ck_free(wv), ck_free(tp), ck_free(tm), ck_free(tv);
        }
}

Test(train_kernels, sumsq) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng rng = ck_rng_new(__func__);
    const size_t ns[] = {0, 1, 7, 33, TG_SUMSQ_BLOCK - 1, TG_SUMSQ_BLOCK, TG_SUMSQ_BLOCK + 1,
                         5000, 100003};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        size_t n = ns[k];
        float *x = ck_alloc(n);
        ck_fill(&rng, x, n, -1e-2f, 3e-2f);
        double want = ref.k.sumsq(x, n);
        /* float sums within a block, at least 8 lanes (two NEON vectors) side by
         * side: (block / 8 + 8)·eps of the sum (all terms ≥ 0) */
        size_t blk = n < TG_SUMSQ_BLOCK ? n : TG_SUMSQ_BLOCK;
        double tol = (blk / 8 + 8) * EPS * want;
        for (int e = 0; e < n_eng; e++) {
            double got = eng[e].k.sumsq(x, n);
            cr_expect(fabs(got - want) <= tol, "sumsq %s n=%zu: %.17g vs %.17g (tol %.3g)",
                      tg_isa_name(eng[e].isa), n, got, want, tol);
            if (n == 0) cr_expect(got == 0.0, "sumsq %s of nothing: %g", tg_isa_name(eng[e].isa), got);
        }
        ck_free(x);
    }
}
