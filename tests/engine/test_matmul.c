/* test_matmul.c — Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b on every ISA against
 * the C reference: awkward shapes, with and without bias, column sub-ranges,
 * guard bytes, NaN propagation, range independence and bit-identity across
 * thread counts. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "tests/engine/checkasm.h"

static const int Ts[] = {1, 2, 3, 4, 5, 7, 8, 17, 33, 128};
static const int dims[] = {1, 3, 7, 17, 31, 33, 127, 129, 768, 3072};
#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* tol[T,OUT] = (IN + 8) · eps · (Σ_i |x_i w_i| + |b|) for columns o0..o1-1:
 * the worst-case rounding of a length-IN sum in any order (both the
 * reference and the kernel round, hence the slack), never relative to |y|. */
static void matmul_tol(float *tol, const float *x, const float *w, const float *b, int T,
                       int in, int out, int o0, int o1) {
    for (int t = 0; t < T; t++)
        for (int o = o0; o < o1; o++) {
            double s = b ? fabs(b[o]) : 0.0;
            for (int i = 0; i < in; i++)
                s += fabs((double)x[(size_t)t * in + i] * w[(size_t)o * in + i]);
            tol[(size_t)t * out + o] = (float)((in + 8) * (double)FLT_EPSILON * s);
        }
}

typedef struct mm_case {
    float *x, *w, *b; /* x[T,IN], w[OUT,IN], b[OUT] or NULL */
    int T, in, out;
} mm_case;

static mm_case mm_new(ck_rng *r, int T, int in, int out, int bias) {
    mm_case c = {ck_alloc((size_t)T * in), ck_alloc((size_t)out * in),
                 bias ? ck_alloc((size_t)out) : NULL, T, in, out};
    ck_fill(r, c.x, (size_t)T * in, -1.0f, 1.0f);
    ck_fill(r, c.w, (size_t)out * in, -1.0f, 1.0f);
    if (bias) ck_fill(r, c.b, (size_t)out, -1.0f, 1.0f);
    return c;
}

static void mm_free(mm_case *c) {
    ck_free(c->x);
    ck_free(c->w);
    ck_free(c->b);
}

/* Every engine against the reference on columns o0..o1-1 of one case. */
static void check_case(const tg_engine *ref, const tg_engine *eng, int n_eng, const mm_case *c,
                       int o0, int o1) {
    int T = c->T, in = c->in, out = c->out;
    size_t ny = (size_t)T * out;
    float *want = ck_alloc(ny), *tol = ck_alloc(ny), *got = ck_alloc(ny);
    ref->k.matmul(want, c->x, c->w, c->b, T, in, out, o0, o1);
    matmul_tol(tol, c->x, c->w, c->b, T, in, out, o0, o1);
    for (int e = 0; e < n_eng; e++) {
        ck_poison(got, ny);
        eng[e].k.matmul(got, c->x, c->w, c->b, T, in, out, o0, o1);
        char what[160];
        snprintf(what, sizeof what, "matmul %s T=%d in=%d out=%d cols %d..%d %s",
                 tg_isa_name(eng[e].isa), T, in, out, o0, o1, c->b ? "bias" : "no bias");
        CK_EXPECT_GUARDS(got, "%s", what);
        int ok = 1;
        for (int t = 0; t < T && ok; t++) {
            size_t row = (size_t)t * out;
            ok = ck_untouched(got, row, row + o0, what) &&
                 ck_untouched(got, row + o1, row + out, what) &&
                 ck_close(got + row + o0, want + row + o0, tol + row + o0, (size_t)(o1 - o0), what);
        }
        cr_expect(ok, "%s (seed %llu)", what, (unsigned long long)ck_seed());
    }
    ck_free(want);
    ck_free(tol);
    ck_free(got);
}

/* Every T × IN × OUT from the awkward lists, within a work budget so the
 * suite stays fast (the scalar oracle runs too). Small cases are tried with
 * and without bias; larger ones alternate. */
Test(matmul, shapes) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    int n = 0;
    for (int a = 0; a < LEN(dims); a++)
        for (int b = 0; b < LEN(dims); b++)
            for (int ti = 0; ti < LEN(Ts); ti++) {
                int in = dims[a], out = dims[b], T = Ts[ti];
                double work = (double)T * in * out;
                if (work > 1.2e7 && T > 1) continue;
                for (int bias = 0; bias < 2; bias++) {
                    if (work > 2e5 && bias != (n & 1)) continue;
                    mm_case c = mm_new(&r, T, in, out, bias);
                    check_case(&ref, eng, n_eng, &c, 0, out);
                    mm_free(&c);
                }
                n++;
            }
}

/* Around the GEMM's blocking: token blocks of 128 (T = 127..257), K blocks
 * of 256 (IN = 255..513) and 16/32-column panels, so that every edge of
 * every block is crossed at least once. */
Test(matmul, block_edges) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int shapes[][3] = {/* T, IN, OUT */
        {127, 255, 33}, {128, 256, 32}, {129, 257, 31}, {257, 513, 65},
        {200, 300, 47}, {6, 512, 96},   {9, 1000, 17},  {130, 64, 129}};
    for (int s = 0; s < LEN(shapes); s++) {
        mm_case c = mm_new(&r, shapes[s][0], shapes[s][1], shapes[s][2], s & 1);
        check_case(&ref, eng, n_eng, &c, 0, shapes[s][2]);
        mm_free(&c);
    }
}

/* The GPT-2 vocabulary projection: OUT = 50257 with a small T. */
Test(matmul, vocab) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int ins[] = {1, 3, 7, 17, 31, 33, 127, 129, 768};
    static const int Tv[] = {1, 2, 3};
    for (int a = 0; a < LEN(ins); a++)
        for (int ti = 0; ti < LEN(Tv); ti++) {
            mm_case c = mm_new(&r, Tv[ti], ins[a], 50257, (a + ti) & 1);
            check_case(&ref, eng, n_eng, &c, 0, 50257);
            mm_free(&c);
        }
}

/* Column sub-ranges as the pool hands them out: o0 a multiple of
 * TG_ROW_BLOCK, o1 a multiple of it or OUT. Nothing outside is written. */
Test(matmul, subranges) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int shapes[][3] = {/* T, IN, OUT */
        {1, 33, 17},  {1, 129, 127},  {2, 31, 129}, {3, 768, 50},  {4, 17, 3072},
        {5, 127, 33}, {7, 129, 768}, {8, 3, 200},  {17, 64, 129}, {33, 100, 97},
        {128, 33, 65}, {128, 129, 255},
        {1, 129, 1000}, {1, 1001, 70}}; /* T = 1 above 256 KB: the AVX-512 streaming GEMV */
    for (int s = 0; s < LEN(shapes); s++) {
        int T = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
        int blocks = (out + TG_ROW_BLOCK - 1) / TG_ROW_BLOCK;
        for (int rep = 0; rep < 4; rep++) {
            int b0 = ck_randi(&r, 0, blocks - 1), b1 = ck_randi(&r, b0 + 1, blocks);
            int o0 = b0 * TG_ROW_BLOCK, o1 = b1 * TG_ROW_BLOCK < out ? b1 * TG_ROW_BLOCK : out;
            mm_case c = mm_new(&r, T, in, out, rep & 1);
            check_case(&ref, eng, n_eng, &c, o0, o1);
            mm_free(&c);
        }
    }
}

/* The value of each output must not depend on the range it was computed in:
 * the whole matrix in one call == the same matrix in TG_ROW_BLOCK-aligned
 * pieces, bit for bit, on every ISA. */
Test(matmul, range_independent) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int shapes[][3] = {{1, 768, 300}, {2, 129, 97}, {7, 33, 250},
                                    {33, 127, 129}, {128, 64, 200}, {128, 768, 64},
                                    {1, 33, 3000}};
    for (int s = 0; s < LEN(shapes); s++) {
        int T = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
        mm_case c = mm_new(&r, T, in, out, s & 1);
        size_t ny = (size_t)T * out;
        float *whole = ck_alloc(ny), *parts = ck_alloc(ny);
        for (int e = 0; e < n_eng; e++) {
            eng[e].k.matmul(whole, c.x, c.w, c.b, T, in, out, 0, out);
            ck_poison(parts, ny);
            for (int o0 = 0; o0 < out;) {
                int o1 = o0 + TG_ROW_BLOCK * ck_randi(&r, 1, 5);
                if (o1 > out) o1 = out;
                eng[e].k.matmul(parts, c.x, c.w, c.b, T, in, out, o0, o1);
                o0 = o1;
            }
            CK_EXPECT_GUARDS(parts, "matmul %s T=%d in=%d out=%d pieces", tg_isa_name(eng[e].isa),
                             T, in, out);
            CK_EXPECT_BITEQUAL(whole, parts, ny, "matmul %s T=%d in=%d out=%d whole vs pieces",
                               tg_isa_name(eng[e].isa), T, in, out);
        }
        ck_free(whole);
        ck_free(parts);
        mm_free(&c);
    }
}

/* tg_matmul over pools of 1, 2, 3 and 4 threads gives the same bits. */
Test(matmul, threads_bitidentical) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    tg_pool *pools[4];
    for (int p = 0; p < 4; p++) {
        tg_err err;
        cr_assert(tg_pool_create(&pools[p], p + 1, &err) == TG_OK, "%s", err.msg);
    }
    static const int shapes[][3] = {{1, 768, 2304}, {1, 129, 50257}, {3, 768, 1000},
                                    {33, 129, 1000}, {128, 768, 300}, {128, 128, 512}};
    for (int s = 0; s < LEN(shapes); s++) {
        int T = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
        mm_case c = mm_new(&r, T, in, out, !(s & 1));
        size_t ny = (size_t)T * out;
        float *y1 = ck_alloc(ny), *yn = ck_alloc(ny);
        for (int e = 0; e < n_eng; e++) {
            tg_matmul(&eng[e], pools[0], y1, c.x, c.w, c.b, T, in, out);
            for (int p = 1; p < 4; p++) {
                ck_poison(yn, ny);
                tg_matmul(&eng[e], pools[p], yn, c.x, c.w, c.b, T, in, out);
                CK_EXPECT_GUARDS(yn, "tg_matmul %s %d threads", tg_isa_name(eng[e].isa), p + 1);
                CK_EXPECT_BITEQUAL(y1, yn, ny, "tg_matmul %s T=%d in=%d out=%d: 1 vs %d threads",
                                   tg_isa_name(eng[e].isa), T, in, out, p + 1);
            }
        }
        ck_free(y1);
        ck_free(yn);
        mm_free(&c);
    }
    for (int p = 0; p < 4; p++) tg_pool_free(pools[p]);
}

/* A NaN in row t of X makes all of row t of Y NaN (and no other row); an
 * infinite weight gives ±inf (or NaN) in its column exactly as the
 * reference does. */
Test(matmul, nan_inf) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int shapes[][3] = {{1, 33, 17}, {3, 129, 40}, {17, 768, 33}, {128, 31, 70}};
    for (int s = 0; s < LEN(shapes); s++) {
        int T = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
        mm_case c = mm_new(&r, T, in, out, 1);
        int tn = ck_randi(&r, 0, T - 1), on = ck_randi(&r, 0, out - 1);
        c.x[(size_t)tn * in + ck_randi(&r, 0, in - 1)] = NAN;
        c.w[(size_t)on * in + ck_randi(&r, 0, in - 1)] = INFINITY;
        check_case(&ref, eng, n_eng, &c, 0, out);
        size_t ny = (size_t)T * out;
        float *y = ck_alloc(ny);
        for (int e = 0; e < n_eng; e++) {
            eng[e].k.matmul(y, c.x, c.w, c.b, T, in, out, 0, out);
            int nan_row_ok = 1;
            for (int o = 0; o < out; o++) nan_row_ok &= isnan(y[(size_t)tn * out + o]) != 0;
            cr_expect(nan_row_ok, "matmul %s T=%d in=%d out=%d: NaN in x row %d not propagated",
                      tg_isa_name(eng[e].isa), T, in, out, tn);
        }
        ck_free(y);
        mm_free(&c);
    }
}

/* The harness itself catches what it is meant to catch. */
Test(checkasm, catches_errors) {
    float *p = ck_alloc(7);
    cr_expect(ck_guards_ok(p, "fresh"));
    cr_expect(ck_untouched(p, 0, 7, "fresh"));
    p[7] = 1.0f; /* one past the end: lands in the trailing guard */
    cr_expect(!ck_guards_ok(p, "overrun (expected failure)"));
    ck_free(p);
    p = ck_alloc(5);
    p[-1] = 1.0f;
    cr_expect(!ck_guards_ok(p, "underrun (expected failure)"));
    ck_free(p);
    float want[3] = {1.0f, NAN, INFINITY}, tol[3] = {1e-3f, 0, 0};
    float good[3] = {1.0005f, NAN, INFINITY}, far[3] = {1.01f, NAN, INFINITY};
    float nonan[3] = {1.0f, 0.0f, INFINITY}, neginf[3] = {1.0f, NAN, -INFINITY};
    cr_expect(ck_close(good, want, tol, 3, "good"));
    cr_expect(!ck_close(far, want, tol, 3, "far (expected failure)"));
    cr_expect(!ck_close(nonan, want, tol, 3, "missing NaN (expected failure)"));
    cr_expect(!ck_close(want, nonan, tol, 3, "extra NaN (expected failure)"));
    cr_expect(!ck_close(neginf, want, tol, 3, "wrong infinity (expected failure)"));
}
