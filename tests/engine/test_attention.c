/* test_attention.c — the attention core of one head (scores, mix, decode,
 * tiled causal prefill) on every ISA against the C reference, the reference
 * against a double-precision oracle written here, and prefill against decode
 * applied query by query. Strided K/V/Q/O as the model lays them out (all
 * heads of a position contiguous), guard bytes, masked (-inf) keys and NaN. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/engine/checkasm.h"

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define EPS ((double)FLT_EPSILON)

static const int head_sizes[] = {1,  2,  3,  4,  5,  7,  8,   9,   15,  16,  17,  24, 31,
                                 32, 33, 48, 63, 64, 65, 80, 96, 127, 128, 129, 200, 256};
static const int positions[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 64, 100, 127, 129, 257, 512,
                                1000};

static double *dalloc(size_t n) {
    double *p = malloc((n ? n : 1) * sizeof *p);
    cr_assert(p, "out of memory");
    return p;
}

/* ---- the double-precision oracle ------------------------------------------- */

/* One query against P keys, exactly (double):
 *   s_j = scale·q·k_j,  p = softmax(s),  o = p·V.
 * Tolerances, for any float evaluation order: a score is off by at most
 * ds = (HS + 8)·eps·max_j A_j with A_j = scale·Σ|q k_j| (masked keys, whose
 * score is -inf, excluded); that moves log p_j by 2·ds, and the softmax sum
 * adds (P + 8)·eps, so p_tol = p·(2ds + (P + 8)eps) (+ 2 denormal ulps);
 * o_i moves by Σ_j p_j|v_ji| times that, plus the mix's own (P + 8)·eps. */
typedef struct attn_exact {
    float *p, *p_tol; /* [P] */
    float *o, *o_tol; /* [HS] */
} attn_exact;

static void attn_oracle(attn_exact *x, const float *q, const float *k, const float *v,
                        int n_pos, int hs, int ldk, float scale) {
    double *s = dalloc(n_pos), *p = dalloc(n_pos);
    double max = -INFINITY, max_a = 0.0, sum = 0.0;
    for (int j = 0; j < n_pos; j++) {
        const float *kj = k + (size_t)j * ldk;
        double dot = 0.0, a = 0.0;
        for (int i = 0; i < hs; i++) {
            dot += (double)q[i] * kj[i];
            a += fabs((double)q[i] * kj[i]);
        }
        s[j] = scale * dot;
        if (s[j] != -INFINITY && scale * a > max_a) max_a = scale * a;
        if (s[j] > max) max = s[j];
    }
    for (int j = 0; j < n_pos; j++) sum += max == -INFINITY ? 0.0 : exp(s[j] - max);
    double ds = (hs + 8) * EPS * max_a, rel = 2.0 * ds + (n_pos + 8) * EPS;
    for (int j = 0; j < n_pos; j++) {
        p[j] = max == -INFINITY ? 0.0 : exp(s[j] - max) / sum;
        x->p[j] = (float)p[j];
        x->p_tol[j] = (float)(p[j] * rel + 2.0 * FLT_TRUE_MIN);
    }
    for (int i = 0; i < hs; i++) {
        double o = 0.0, oabs = 0.0;
        for (int j = 0; j < n_pos; j++) {
            double pv = p[j] * v[(size_t)j * ldk + i];
            o += pv;
            oabs += fabs(pv);
        }
        x->o[i] = (float)o;
        x->o_tol[i] = (float)(oabs * (rel + (n_pos + 8) * EPS));
    }
    free(s);
    free(p);
}

static attn_exact exact_new(int n_pos, int hs) {
    attn_exact x = {ck_alloc(n_pos), ck_alloc(n_pos), ck_alloc(hs), ck_alloc(hs)};
    return x;
}

static void exact_free(attn_exact *x) {
    ck_free(x->p);
    ck_free(x->p_tol);
    ck_free(x->o);
    ck_free(x->o_tol);
}

/* ---- one head's worth of cache ----------------------------------------------- */

/* K and V for P positions of one head inside a cache row of ldk floats (the
 * head starts at column `off`), and a query. */
typedef struct head_case {
    float *kbuf, *vbuf, *q; /* kbuf/vbuf [P, LDK]; q [HS] */
    const float *k, *v;     /* kbuf + off, vbuf + off */
    int n_pos, hs, ldk;
    float scale;
} head_case;

/* contiguous: rows back to back (ldk == hs, the head-major KV cache, which
 * the kernels special-case: head size VL/2 packs two keys per vector);
 * else a random padding, sometimes none. */
static head_case head_make(ck_rng *r, int n_pos, int hs, int contiguous) {
    head_case c;
    int pad = contiguous || ck_randi(r, 0, 2) == 0 ? 0 : ck_randi(r, 1, 2 * hs + 3);
    int off = pad ? ck_randi(r, 0, pad) : 0;
    c.n_pos = n_pos;
    c.hs = hs;
    c.ldk = hs + pad;
    c.scale = 1.0f / sqrtf((float)hs);
    size_t nkv = (size_t)(n_pos - 1) * c.ldk + off + hs; /* the last row ends at its head */
    c.kbuf = ck_alloc(nkv);
    c.vbuf = ck_alloc(nkv);
    c.q = ck_alloc(hs);
    ck_fill(r, c.kbuf, nkv, -1.0f, 1.0f);
    ck_fill(r, c.vbuf, nkv, -1.0f, 1.0f);
    ck_fill(r, c.q, hs, -2.0f, 2.0f);
    c.k = c.kbuf + off;
    c.v = c.vbuf + off;
    return c;
}

static void head_free(head_case *c) {
    ck_free(c->kbuf);
    ck_free(c->vbuf);
    ck_free(c->q);
}

/* ---- scores and mix ---------------------------------------------------------- */

Test(attn, scores) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int contig = 0; contig < 2; contig++)
    for (int hi = 0; hi < LEN(head_sizes); hi++)
        for (int pi = 0; pi < LEN(positions); pi++) {
            int hs = head_sizes[hi], P = positions[pi];
            head_case c = head_make(&r, P, hs, contig);
            float *want = ck_alloc(P), *got = ck_alloc(P), *tol = ck_alloc(P), *exact = ck_alloc(P);
            /* tol_j = (HS + 8)·eps·scale·Σ|q k_j| */
            for (int j = 0; j < P; j++) {
                double dot = 0.0, a = 0.0;
                for (int i = 0; i < hs; i++) {
                    double t = (double)c.q[i] * c.k[(size_t)j * c.ldk + i];
                    dot += t;
                    a += fabs(t);
                }
                exact[j] = (float)(c.scale * dot);
                tol[j] = (float)((hs + 8) * EPS * c.scale * a);
            }
            ref.k.attn_scores(want, c.q, c.k, P, hs, c.ldk, c.scale);
            CK_EXPECT_CLOSE(want, exact, tol, P, "attn_scores reference vs double P=%d hs=%d", P, hs);
            for (int e = 0; e < n_eng; e++) {
                ck_poison(got, P);
                eng[e].k.attn_scores(got, c.q, c.k, P, hs, c.ldk, c.scale);
                CK_EXPECT_GUARDS(got, "attn_scores %s P=%d hs=%d", tg_isa_name(eng[e].isa), P, hs);
                CK_EXPECT_CLOSE(got, want, tol, P, "attn_scores %s P=%d hs=%d ldk=%d",
                                tg_isa_name(eng[e].isa), P, hs, c.ldk);
            }
            ck_free(want);
            ck_free(got);
            ck_free(tol);
            ck_free(exact);
            head_free(&c);
        }
}

Test(attn, mix) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int contig = 0; contig < 2; contig++)
    for (int hi = 0; hi < LEN(head_sizes); hi++)
        for (int pi = 0; pi < LEN(positions); pi++) {
            int hs = head_sizes[hi], P = positions[pi];
            head_case c = head_make(&r, P, hs, contig);
            float *p = ck_alloc(P);
            ck_fill(&r, p, P, 0.0f, 1.0f);
            float *want = ck_alloc(hs), *got = ck_alloc(hs), *tol = ck_alloc(hs), *exact = ck_alloc(hs);
            /* tol_i = (P + 8)·eps·Σ_j |p_j v_ji| */
            for (int i = 0; i < hs; i++) {
                double o = 0.0, a = 0.0;
                for (int j = 0; j < P; j++) {
                    double t = (double)p[j] * c.v[(size_t)j * c.ldk + i];
                    o += t;
                    a += fabs(t);
                }
                exact[i] = (float)o;
                tol[i] = (float)((P + 8) * EPS * a);
            }
            ref.k.attn_mix(want, p, c.v, P, hs, c.ldk);
            CK_EXPECT_CLOSE(want, exact, tol, hs, "attn_mix reference vs double P=%d hs=%d", P, hs);
            for (int e = 0; e < n_eng; e++) {
                ck_poison(got, hs);
                eng[e].k.attn_mix(got, p, c.v, P, hs, c.ldk);
                CK_EXPECT_GUARDS(got, "attn_mix %s P=%d hs=%d", tg_isa_name(eng[e].isa), P, hs);
                CK_EXPECT_CLOSE(got, want, tol, hs, "attn_mix %s P=%d hs=%d ldk=%d",
                                tg_isa_name(eng[e].isa), P, hs, c.ldk);
            }
            ck_free(p);
            ck_free(want);
            ck_free(got);
            ck_free(tol);
            ck_free(exact);
            head_free(&c);
        }
}

/* ---- decode ------------------------------------------------------------------ */

/* Every engine's decode on one case: p and o within the oracle's tolerances
 * of the reference (which is itself checked against the oracle). */
static void decode_check(const tg_engine *ref, const tg_engine *eng, int n_eng, const head_case *c,
                         const char *kind) {
    int P = c->n_pos, hs = c->hs;
    attn_exact x = exact_new(P, hs);
    attn_oracle(&x, c->q, c->k, c->v, P, hs, c->ldk, c->scale);
    float *p_want = ck_alloc(P), *o_want = ck_alloc(hs), *p = ck_alloc(P), *o = ck_alloc(hs);
    float *ps = ck_alloc(P), *os = ck_alloc(hs);
    ref->k.attn_decode(o_want, p_want, c->q, c->k, c->v, P, hs, c->ldk, c->scale);
    CK_EXPECT_CLOSE(p_want, x.p, x.p_tol, P, "attn_decode reference p vs double P=%d hs=%d %s", P,
                    hs, kind);
    CK_EXPECT_CLOSE(o_want, x.o, x.o_tol, hs, "attn_decode reference o vs double P=%d hs=%d %s", P,
                    hs, kind);
    for (int e = 0; e < n_eng; e++) {
        const char *isa = tg_isa_name(eng[e].isa);
        ck_poison(p, P);
        ck_poison(o, hs);
        eng[e].k.attn_decode(o, p, c->q, c->k, c->v, P, hs, c->ldk, c->scale);
        CK_EXPECT_GUARDS(p, "attn_decode %s p P=%d hs=%d", isa, P, hs);
        CK_EXPECT_GUARDS(o, "attn_decode %s o P=%d hs=%d", isa, P, hs);
        CK_EXPECT_CLOSE(p, p_want, x.p_tol, P, "attn_decode %s p P=%d hs=%d ldk=%d %s", isa, P, hs,
                        c->ldk, kind);
        CK_EXPECT_CLOSE(o, o_want, x.o_tol, hs, "attn_decode %s o P=%d hs=%d ldk=%d %s", isa, P, hs,
                        c->ldk, kind);
        /* the streaming entry: the same kernel with prefetches, the same bits */
        ck_poison(ps, P);
        ck_poison(os, hs);
        eng[e].k.attn_decode_stream(os, ps, c->q, c->k, c->v, P, hs, c->ldk, c->scale);
        CK_EXPECT_GUARDS(ps, "attn_decode_stream %s p P=%d hs=%d", isa, P, hs);
        CK_EXPECT_GUARDS(os, "attn_decode_stream %s o P=%d hs=%d", isa, P, hs);
        CK_EXPECT_BITEQUAL(ps, p, P, "attn_decode_stream %s p vs attn_decode P=%d hs=%d ldk=%d %s",
                           isa, P, hs, c->ldk, kind);
        CK_EXPECT_BITEQUAL(os, o, hs, "attn_decode_stream %s o vs attn_decode P=%d hs=%d ldk=%d %s",
                           isa, P, hs, c->ldk, kind);
    }
    ck_free(ps);
    ck_free(os);
    ck_free(p_want);
    ck_free(o_want);
    ck_free(p);
    ck_free(o);
    exact_free(&x);
}

Test(attn, decode) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int contig = 0; contig < 2; contig++)
    for (int hi = 0; hi < LEN(head_sizes); hi++)
        for (int pi = 0; pi < LEN(positions); pi++) {
            head_case c = head_make(&r, positions[pi], head_sizes[hi], contig);
            decode_check(&ref, eng, n_eng, &c, contig ? "head-major" : "random");
            head_free(&c);
        }
}

/* Make key j's score -inf: k_j[0] = -inf against a positive q[0]. */
static void mask_key(head_case *c, int j) {
    c->q[0] = fabsf(c->q[0]) + 0.5f;
    ((float *)c->k)[(size_t)j * c->ldk] = -INFINITY;
}

/* Masked keys get weight exactly 0; all keys masked gives p = 0, o = 0. */
Test(attn, decode_masked) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int hss[] = {1, 2, 4, 7, 8, 16, 24, 33, 64};
    static const int Ps[] = {1, 3, 17, 64, 129};
    for (int hi = 0; hi < LEN(hss); hi++)
        for (int pi = 0; pi < LEN(Ps); pi++) {
            int hs = hss[hi], P = Ps[pi];
            head_case c = head_make(&r, P, hs, (hi + pi) % 2);
            for (int j = 0; j < P; j++)
                if (ck_randi(&r, 0, 2) == 0) mask_key(&c, j);
            decode_check(&ref, eng, n_eng, &c, "some keys masked");
            for (int j = 0; j < P; j++) mask_key(&c, j);
            decode_check(&ref, eng, n_eng, &c, "all keys masked");
            float *p = ck_alloc(P), *o = ck_alloc(hs);
            for (int e = 0; e < n_eng; e++) {
                eng[e].k.attn_decode(o, p, c.q, c.k, c.v, P, hs, c.ldk, c.scale);
                int zero = 1;
                for (int j = 0; j < P; j++) zero &= p[j] == 0.0f;
                for (int i = 0; i < hs; i++) zero &= o[i] == 0.0f;
                cr_expect(zero, "attn_decode %s P=%d hs=%d: all keys masked is not all 0",
                          tg_isa_name(eng[e].isa), P, hs);
            }
            ck_free(p);
            ck_free(o);
            head_free(&c);
        }
}

/* A NaN in q poisons everything; a NaN in one value row poisons that
 * column of o only. */
Test(attn, decode_nan) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int hss[] = {1, 2, 4, 7, 8, 16, 24, 33, 64};
    static const int Ps[] = {1, 3, 17, 64, 129};
    for (int hi = 0; hi < LEN(hss); hi++)
        for (int pi = 0; pi < LEN(Ps); pi++) {
            int hs = hss[hi], P = Ps[pi];
            head_case c = head_make(&r, P, hs, (hi + pi) % 2);
            float *p = ck_alloc(P), *o = ck_alloc(hs);
            int jn = ck_randi(&r, 0, P - 1), in = ck_randi(&r, 0, hs - 1);
            ((float *)c.v)[(size_t)jn * c.ldk + in] = NAN;
            for (int e = 0; e < n_eng; e++) {
                const char *isa = tg_isa_name(eng[e].isa);
                eng[e].k.attn_decode(o, p, c.q, c.k, c.v, P, hs, c.ldk, c.scale);
                int ok = 1;
                for (int i = 0; i < hs; i++) ok &= (isnan(o[i]) != 0) == (i == in);
                cr_expect(ok, "attn_decode %s P=%d hs=%d: NaN in V[%d][%d] not confined to o[%d]",
                          isa, P, hs, jn, in, in);
            }
            c.q[ck_randi(&r, 0, hs - 1)] = NAN;
            for (int e = 0; e < n_eng; e++) {
                eng[e].k.attn_decode(o, p, c.q, c.k, c.v, P, hs, c.ldk, c.scale);
                int ok = 1;
                for (int j = 0; j < P; j++) ok &= isnan(p[j]) != 0;
                for (int i = 0; i < hs; i++) ok &= isnan(o[i]) != 0;
                cr_expect(ok, "attn_decode %s P=%d hs=%d: NaN in q not propagated",
                          tg_isa_name(eng[e].isa), P, hs);
            }
            ck_free(p);
            ck_free(o);
            head_free(&c);
        }
}

/* ---- prefill ----------------------------------------------------------------- */

/* T queries of one head at cache positions pos0..pos0+T-1, laid out as the
 * model does: q rows ldq apart, K/V rows ldk apart, o rows ldo apart, with
 * the head at a column offset; the gaps of o belong to other heads. */
typedef struct prefill_case {
    float *qbuf, *kbuf, *vbuf, *obuf;
    const float *q, *k, *v;
    int T, pos0, hs, ldq, ldk, ldo, off_o;
    float scale;
} prefill_case;

static prefill_case prefill_new(ck_rng *r, int T, int pos0, int hs) {
    prefill_case c;
    int heads = ck_randi(r, 1, 3), h = ck_randi(r, 0, heads - 1);
    c.T = T;
    c.pos0 = pos0;
    c.hs = hs;
    c.ldk = heads * hs;
    c.ldq = 3 * heads * hs; /* q inside a fused qkv row */
    c.ldo = heads * hs + ck_randi(r, 0, 3);
    c.off_o = h * hs;
    c.scale = 1.0f / sqrtf((float)hs);
    int P = pos0 + T;
    size_t nkv = (size_t)(P - 1) * c.ldk + h * hs + hs, nq = (size_t)(T - 1) * c.ldq + h * hs + hs;
    c.kbuf = ck_alloc(nkv);
    c.vbuf = ck_alloc(nkv);
    c.qbuf = ck_alloc(nq);
    c.obuf = ck_alloc((size_t)(T - 1) * c.ldo + c.off_o + hs);
    ck_fill(r, c.kbuf, nkv, -1.0f, 1.0f);
    ck_fill(r, c.vbuf, nkv, -1.0f, 1.0f);
    ck_fill(r, c.qbuf, nq, -2.0f, 2.0f);
    c.k = c.kbuf + h * hs;
    c.v = c.vbuf + h * hs;
    c.q = c.qbuf + h * hs;
    return c;
}

static void prefill_free(prefill_case *c) {
    ck_free(c->qbuf);
    ck_free(c->kbuf);
    ck_free(c->vbuf);
    ck_free(c->obuf);
}

static void prefill_run(const tg_engine *e, prefill_case *c) {
    ck_poison(c->obuf, ck_len(c->obuf));
    e->k.attn_prefill(c->obuf + c->off_o, c->q, c->k, c->v, c->T, c->pos0, c->hs, c->ldq, c->ldk,
                      c->ldo, c->scale);
}

/* Writes nothing outside the head's columns of each output row. */
static int prefill_gaps_untouched(const prefill_case *c, const char *what) {
    size_t n = ck_len(c->obuf);
    for (int t = 0; t < c->T; t++) {
        size_t row0 = (size_t)t * c->ldo + c->off_o;
        size_t prev_end = t == 0 ? 0 : (size_t)(t - 1) * c->ldo + c->off_o + c->hs;
        if (!ck_untouched(c->obuf, prev_end, row0, what)) return 0;
    }
    return ck_untouched(c->obuf, (size_t)(c->T - 1) * c->ldo + c->off_o + c->hs, n, what);
}

/* One prefill case: the reference against the oracle row by row; every
 * engine against the reference, and against its own decode applied query
 * by query (query t over pos0 + t + 1 keys). */
static void prefill_check(const tg_engine *ref, const tg_engine *eng, int n_eng, prefill_case *c,
                          const char *kind) {
    int T = c->T, hs = c->hs, P = c->pos0 + T;
    size_t no = ck_len(c->obuf);
    float *want = ck_alloc(no), *o_dec = ck_alloc(hs), *p_dec = ck_alloc(P);
    float *tol = ck_alloc((size_t)T * hs);
    prefill_run(ref, c);
    memcpy(want, c->obuf, no * sizeof *want);
    for (int t = 0; t < T; t++) {
        int n_pos = c->pos0 + t + 1;
        attn_exact x = exact_new(n_pos, hs);
        attn_oracle(&x, c->q + (size_t)t * c->ldq, c->k, c->v, n_pos, hs, c->ldk, c->scale);
        memcpy(tol + (size_t)t * hs, x.o_tol, hs * sizeof *tol);
        CK_EXPECT_CLOSE(want + (size_t)t * c->ldo + c->off_o, x.o, x.o_tol, hs,
                        "attn_prefill reference vs double T=%d pos0=%d hs=%d row %d %s", T,
                        c->pos0, hs, t, kind);
        exact_free(&x);
    }
    for (int e = 0; e < n_eng; e++) {
        const char *isa = tg_isa_name(eng[e].isa);
        char what[200];
        snprintf(what, sizeof what, "attn_prefill %s T=%d pos0=%d hs=%d ldq=%d ldk=%d ldo=%d %s",
                 isa, T, c->pos0, hs, c->ldq, c->ldk, c->ldo, kind);
        prefill_run(&eng[e], c);
        CK_EXPECT_GUARDS(c->obuf, "%s", what);
        cr_expect(prefill_gaps_untouched(c, what), "%s: wrote outside the head", what);
        int ok = 1;
        for (int t = 0; t < T; t++) {
            const float *got = c->obuf + (size_t)t * c->ldo + c->off_o;
            ok &= ck_close(got, want + (size_t)t * c->ldo + c->off_o, tol + (size_t)t * hs, hs, what);
            eng[e].k.attn_decode(o_dec, p_dec, c->q + (size_t)t * c->ldq, c->k, c->v,
                                 c->pos0 + t + 1, hs, c->ldk, c->scale);
            char dwhat[240];
            snprintf(dwhat, sizeof dwhat, "%s row %d vs its decode", what, t);
            ok &= ck_close(got, o_dec, tol + (size_t)t * hs, hs, dwhat);
        }
        cr_expect(ok, "%s (seed %llu)", what, (unsigned long long)ck_seed());
    }
    ck_free(want);
    ck_free(o_dec);
    ck_free(p_dec);
    ck_free(tol);
}

Test(attn, prefill) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int Ts[] = {1, 2, 3, 7, 8, 9, 16, 17, 33, 64, 65, 128};
    static const int pos0s[] = {0, 1, 5, 63, 64, 100, 300, 900};
    /* 320: past the SIMD tile's largest head (PF_HS_MAX 256), the per-query path */
    static const int hss[] = {1, 3, 4, 7, 8, 16, 17, 24, 32, 33, 64, 80, 128, 256, 320};
    for (int ti = 0; ti < LEN(Ts); ti++)
        for (int pi = 0; pi < LEN(pos0s); pi++)
            for (int hi = 0; hi < LEN(hss); hi++) {
                int T = Ts[ti], pos0 = pos0s[pi], hs = hss[hi];
                /* the double oracle is O(T·P·HS): keep the suite fast */
                double work = (double)T * (pos0 + T) * hs;
                if (work > 4e5 && (ti + pi + hi) % 4 != 0) continue;
                if (work > 3e6) continue;
                prefill_case c = prefill_new(&r, T, pos0, hs);
                prefill_check(&ref, eng, n_eng, &c, "random");
                prefill_free(&c);
            }
}

/* Masked keys (score -inf) and a NaN in a value row, as decode sees them. */
Test(attn, prefill_masked_nan) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int shapes[][3] = {/* T, pos0, HS */
        {1, 0, 1}, {3, 2, 7}, {9, 0, 16}, {17, 64, 33}, {65, 10, 64}, {33, 100, 128},
        {20, 70, 8}, {9, 5, 4}, {40, 30, 24}};
    for (int s = 0; s < LEN(shapes); s++) {
        int T = shapes[s][0], pos0 = shapes[s][1], hs = shapes[s][2];
        prefill_case c = prefill_new(&r, T, pos0, hs);
        /* key j masked for every query: k_j[0] = -inf, q_t[0] > 0 */
        for (int t = 0; t < T; t++) {
            float *qt = (float *)c.q + (size_t)t * c.ldq;
            qt[0] = fabsf(qt[0]) + 0.5f;
        }
        for (int j = 0; j < pos0 + T; j++)
            if (ck_randi(&r, 0, 2) == 0) ((float *)c.k)[(size_t)j * c.ldk] = -INFINITY;
        prefill_check(&ref, eng, n_eng, &c, "some keys masked");
        /* every key masked: each output row is 0 */
        for (int j = 0; j < pos0 + T; j++) ((float *)c.k)[(size_t)j * c.ldk] = -INFINITY;
        for (int e = 0; e < n_eng; e++) {
            prefill_run(&eng[e], &c);
            int zero = 1;
            for (int t = 0; t < T; t++)
                for (int i = 0; i < hs; i++) zero &= c.obuf[(size_t)t * c.ldo + c.off_o + i] == 0.0f;
            cr_expect(zero, "attn_prefill %s T=%d pos0=%d hs=%d: all keys masked is not 0",
                      tg_isa_name(eng[e].isa), T, pos0, hs);
        }
        prefill_free(&c);

        /* NaN in V[j][i]: exactly the queries that see key j get NaN in column i */
        c = prefill_new(&r, T, pos0, hs);
        int jn = ck_randi(&r, 0, pos0 + T - 1), in = ck_randi(&r, 0, hs - 1);
        ((float *)c.v)[(size_t)jn * c.ldk + in] = NAN;
        for (int e = 0; e < n_eng; e++) {
            prefill_run(&eng[e], &c);
            int ok = 1;
            for (int t = 0; t < T; t++)
                for (int i = 0; i < hs; i++) {
                    int nan_expected = i == in && jn <= pos0 + t;
                    ok &= (isnan(c.obuf[(size_t)t * c.ldo + c.off_o + i]) != 0) == nan_expected;
                }
            cr_expect(ok, "attn_prefill %s T=%d pos0=%d hs=%d: NaN in V[%d][%d] misplaced",
                      tg_isa_name(eng[e].isa), T, pos0, hs, jn, in);
        }
        prefill_free(&c);
    }
}

/* Row t of a prefill does not depend on how the T queries are split into
 * calls (the model hands blocks of queries to threads, and prefills a
 * prompt in chunks): the whole in one call == pieces at pos0 + t0, bit for
 * bit, on every ISA. */
Test(attn, prefill_split_bitidentical) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int shapes[][3] = {/* T, pos0, HS */
        {5, 0, 3}, {17, 3, 16}, {40, 0, 32}, {70, 20, 64}, {129, 0, 64}, {100, 200, 33},
        {45, 70, 48}, {40, 10, 300}};
    for (int s = 0; s < LEN(shapes); s++) {
        int T = shapes[s][0], pos0 = shapes[s][1], hs = shapes[s][2];
        prefill_case c = prefill_new(&r, T, pos0, hs);
        size_t no = ck_len(c.obuf);
        float *whole = ck_alloc(no);
        for (int e = 0; e < n_eng; e++) {
            prefill_run(&eng[e], &c);
            memcpy(whole, c.obuf, no * sizeof *whole);
            ck_poison(c.obuf, no);
            for (int t0 = 0; t0 < T;) {
                int t1 = t0 + ck_randi(&r, 1, 20);
                if (t1 > T) t1 = T;
                eng[e].k.attn_prefill(c.obuf + (size_t)t0 * c.ldo + c.off_o, c.q + (size_t)t0 * c.ldq,
                                      c.k, c.v, t1 - t0, pos0 + t0, hs, c.ldq, c.ldk, c.ldo, c.scale);
                t0 = t1;
            }
            CK_EXPECT_GUARDS(c.obuf, "attn_prefill %s T=%d pos0=%d hs=%d pieces",
                             tg_isa_name(eng[e].isa), T, pos0, hs);
            CK_EXPECT_BITEQUAL(c.obuf, whole, no, "attn_prefill %s T=%d pos0=%d hs=%d whole vs pieces",
                               tg_isa_name(eng[e].isa), T, pos0, hs);
        }
        ck_free(whole);
        prefill_free(&c);
    }
}

/* ---- grouped-query decode ----------------------------------------------------- */

/* G queries sharing one K/V head (head-major rows, ldk == hs): every query's
 * weights and output against the double oracle of that query alone, the
 * reference and every ISA, guard bytes around o[G,HS] and p[G,P]. */
static void gqa_check(const tg_engine *ref, const tg_engine *eng, int n_eng, ck_rng *r, int P,
                      int hs, int g) {
    float *k = ck_alloc((size_t)P * hs), *v = ck_alloc((size_t)P * hs), *q = ck_alloc((size_t)g * hs);
    ck_fill(r, k, (size_t)P * hs, -1.0f, 1.0f);
    ck_fill(r, v, (size_t)P * hs, -1.0f, 1.0f);
    ck_fill(r, q, (size_t)g * hs, -2.0f, 2.0f);
    float scale = 1.0f / sqrtf((float)hs);
    float *pt = ck_alloc((size_t)g * P), *ot = ck_alloc((size_t)g * hs);
    float *pw = ck_alloc((size_t)g * P), *ow = ck_alloc((size_t)g * hs);
    float *pe = ck_alloc((size_t)g * P), *oe = ck_alloc((size_t)g * hs);
    float *p = ck_alloc((size_t)g * P), *o = ck_alloc((size_t)g * hs);
    float *ps = ck_alloc((size_t)g * P), *os = ck_alloc((size_t)g * hs);
    for (int i = 0; i < g; i++) {
        attn_exact x = exact_new(P, hs);
        attn_oracle(&x, q + (size_t)i * hs, k, v, P, hs, hs, scale);
        memcpy(pe + (size_t)i * P, x.p, (size_t)P * sizeof(float));
        memcpy(pt + (size_t)i * P, x.p_tol, (size_t)P * sizeof(float));
        memcpy(oe + (size_t)i * hs, x.o, (size_t)hs * sizeof(float));
        memcpy(ot + (size_t)i * hs, x.o_tol, (size_t)hs * sizeof(float));
        exact_free(&x);
    }
    ref->k.attn_decode_gqa(ow, pw, q, k, v, P, hs, g, scale);
    CK_EXPECT_CLOSE(pw, pe, pt, (size_t)g * P, "attn_decode_gqa reference p vs double P=%d hs=%d G=%d", P, hs, g);
    CK_EXPECT_CLOSE(ow, oe, ot, (size_t)g * hs, "attn_decode_gqa reference o vs double P=%d hs=%d G=%d", P, hs, g);
    for (int e = 0; e < n_eng; e++) {
        const char *isa = tg_isa_name(eng[e].isa);
        ck_poison(p, (size_t)g * P);
        ck_poison(o, (size_t)g * hs);
        eng[e].k.attn_decode_gqa(o, p, q, k, v, P, hs, g, scale);
        CK_EXPECT_GUARDS(p, "attn_decode_gqa %s p P=%d hs=%d G=%d", isa, P, hs, g);
        CK_EXPECT_GUARDS(o, "attn_decode_gqa %s o P=%d hs=%d G=%d", isa, P, hs, g);
        CK_EXPECT_CLOSE(p, pw, pt, (size_t)g * P, "attn_decode_gqa %s p P=%d hs=%d G=%d", isa, P, hs, g);
        CK_EXPECT_CLOSE(o, ow, ot, (size_t)g * hs, "attn_decode_gqa %s o P=%d hs=%d G=%d", isa, P, hs, g);
        ck_poison(ps, (size_t)g * P);
        ck_poison(os, (size_t)g * hs);
        eng[e].k.attn_decode_gqa_stream(os, ps, q, k, v, P, hs, g, scale);
        CK_EXPECT_GUARDS(ps, "attn_decode_gqa_stream %s p P=%d hs=%d G=%d", isa, P, hs, g);
        CK_EXPECT_GUARDS(os, "attn_decode_gqa_stream %s o P=%d hs=%d G=%d", isa, P, hs, g);
        CK_EXPECT_BITEQUAL(ps, p, (size_t)g * P, "attn_decode_gqa_stream %s p vs attn_decode_gqa P=%d hs=%d G=%d",
                           isa, P, hs, g);
        CK_EXPECT_BITEQUAL(os, o, (size_t)g * hs, "attn_decode_gqa_stream %s o vs attn_decode_gqa P=%d hs=%d G=%d",
                           isa, P, hs, g);
    }
    float *bufs[] = {k, v, q, pt, ot, pw, ow, pe, oe, p, o, ps, os};
    for (int i = 0; i < LEN(bufs); i++) ck_free(bufs[i]);
}

Test(attn, decode_gqa) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int groups[] = {1, 2, 3, 4, 8};
    static const int hss[] = {1, 2, 4, 5, 8, 12, 16, 17, 24, 32, 64, 65, 128};
    static const int ps[] = {1, 2, 15, 16, 17, 63, 64, 65, 129, 300, 512};
    for (int gi = 0; gi < LEN(groups); gi++)
        for (int hi = 0; hi < LEN(hss); hi++)
            for (int pi = 0; pi < LEN(ps); pi++)
                gqa_check(&ref, eng, n_eng, &r, ps[pi], hss[hi], groups[gi]);
}

/* ---- the f16 KV cache --------------------------------------------------------- */

/* n random values rounded to IEEE half: h[n] (in a float buffer with guards)
 * and w[n], their exact f32 widening. */
static void half_fill(ck_rng *r, uint16_t *h, float *w, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) {
        h[i] = tg_f32_to_f16(ck_randf(r, lo, hi));
        w[i] = tg_f16_to_f32(h[i]);
    }
}

/* G queries over an f16 K/V head: the reference against the double oracle
 * of the widened K/V; every ISA bit-identical to its own f32 kernel on the
 * widened K/V, guard bytes around o, p and the scratch. */
Test(attn, decode_gqa_f16) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int groups[] = {1, 2, 4};
    static const int hss[] = {1, 4, 8, 16, 24, 33, 48, 64, 80, 128};
    static const int ps[] = {1, 2, 17, 63, 64, 65, 129, 512};
    for (int gi = 0; gi < LEN(groups); gi++)
        for (int hi = 0; hi < LEN(hss); hi++)
            for (int pi = 0; pi < LEN(ps); pi++) {
                int g = groups[gi], hs = hss[hi], P = ps[pi];
                size_t n = (size_t)P * hs;
                float *kh = ck_alloc(n / 2 + 1), *vh = ck_alloc(n / 2 + 1);
                float *k = ck_alloc(n), *v = ck_alloc(n), *q = ck_alloc((size_t)g * hs);
                half_fill(&r, (uint16_t *)kh, k, n, -1.0f, 1.0f);
                half_fill(&r, (uint16_t *)vh, v, n, -1.0f, 1.0f);
                ck_fill(&r, q, (size_t)g * hs, -2.0f, 2.0f);
                float scale = 1.0f / sqrtf((float)hs);
                float *pw = ck_alloc((size_t)g * P), *ow = ck_alloc((size_t)g * hs);
                float *p = ck_alloc((size_t)g * P), *o = ck_alloc((size_t)g * hs);
                float *p32 = ck_alloc((size_t)g * P), *o32 = ck_alloc((size_t)g * hs);
                float *ws = ck_alloc(TG_KV16_WS(hs));
                ref.k.attn_decode_gqa_f16(ow, pw, q, (uint16_t *)kh, (uint16_t *)vh, P, hs, g, scale, ws);
                for (int i = 0; i < g; i++) {
                    attn_exact x = exact_new(P, hs);
                    attn_oracle(&x, q + (size_t)i * hs, k, v, P, hs, hs, scale);
                    CK_EXPECT_CLOSE(pw + (size_t)i * P, x.p, x.p_tol, P,
                                    "attn_decode_gqa_f16 reference p vs double P=%d hs=%d G=%d", P, hs, g);
                    CK_EXPECT_CLOSE(ow + (size_t)i * hs, x.o, x.o_tol, hs,
                                    "attn_decode_gqa_f16 reference o vs double P=%d hs=%d G=%d", P, hs, g);
                    exact_free(&x);
                }
                for (int e = 0; e < n_eng; e++) {
                    const char *isa = tg_isa_name(eng[e].isa);
                    eng[e].k.attn_decode_gqa(o32, p32, q, k, v, P, hs, g, scale);
                    /* the plain and the streaming entry: the same bits as f32 */
                    const struct {
                        const char *name;
                        __typeof__(eng[e].k.attn_decode_gqa_f16) fn;
                    } fns[] = {{"attn_decode_gqa_f16", eng[e].k.attn_decode_gqa_f16},
                               {"attn_decode_gqa_f16_stream", eng[e].k.attn_decode_gqa_f16_stream}};
                    for (int f = 0; f < LEN(fns); f++) {
                        const char *fn = fns[f].name;
                        ck_poison(p, (size_t)g * P);
                        ck_poison(o, (size_t)g * hs);
                        fns[f].fn(o, p, q, (uint16_t *)kh, (uint16_t *)vh, P, hs, g, scale, ws);
                        CK_EXPECT_GUARDS(p, "%s %s p P=%d hs=%d G=%d", fn, isa, P, hs, g);
                        CK_EXPECT_GUARDS(o, "%s %s o P=%d hs=%d G=%d", fn, isa, P, hs, g);
                        CK_EXPECT_GUARDS(ws, "%s %s ws P=%d hs=%d G=%d", fn, isa, P, hs, g);
                        CK_EXPECT_BITEQUAL(p, p32, (size_t)g * P,
                                           "%s %s p vs f32 on the widened K/V P=%d hs=%d G=%d", fn,
                                           isa, P, hs, g);
                        CK_EXPECT_BITEQUAL(o, o32, (size_t)g * hs,
                                           "%s %s o vs f32 on the widened K/V P=%d hs=%d G=%d", fn,
                                           isa, P, hs, g);
                    }
                }
                float *bufs[] = {kh, vh, k, v, q, pw, ow, p, o, p32, o32, ws};
                for (int i = 0; i < LEN(bufs); i++) ck_free(bufs[i]);
            }
}

/* T causal queries over an f16 K/V head: the reference bit-identical to
 * the f32 reference on the widened K/V (the same recurrence on the same
 * values), every ISA to its own f32 prefill; guards around o and ws. */
Test(attn, prefill_f16) {
    tg_engine ref, eng[TG_ISA_COUNT + 1];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    eng[n_eng++] = ref;
    ck_rng r = ck_rng_new(__func__);
    static const int shapes[][3] = {/* T, pos0, HS */
        {1, 0, 1}, {3, 2, 7}, {9, 0, 8}, {17, 64, 16}, {20, 70, 8}, {40, 30, 24}, {65, 10, 64},
        {33, 100, 128}, {70, 0, 4}, {8, 300, 64}, {12, 5, 272}};
    for (int sh = 0; sh < LEN(shapes); sh++) {
        int T = shapes[sh][0], pos0 = shapes[sh][1], hs = shapes[sh][2], P = pos0 + T;
        int ldq = 3 * hs, ldo = hs + ck_randi(&r, 0, 3);
        size_t n = (size_t)P * hs;
        float *kh = ck_alloc(n / 2 + 1), *vh = ck_alloc(n / 2 + 1), *k = ck_alloc(n), *v = ck_alloc(n);
        half_fill(&r, (uint16_t *)kh, k, n, -1.0f, 1.0f);
        half_fill(&r, (uint16_t *)vh, v, n, -1.0f, 1.0f);
        float *q = ck_alloc((size_t)(T - 1) * ldq + hs);
        ck_fill(&r, q, ck_len(q), -2.0f, 2.0f);
        size_t no = (size_t)(T - 1) * ldo + hs;
        float *o = ck_alloc(no), *o32 = ck_alloc(no), *ws = ck_alloc(TG_KV16_WS(hs));
        float scale = 1.0f / sqrtf((float)hs);
        for (int e = 0; e < n_eng; e++) {
            const char *isa = eng[e].isa == TG_ISA_SCALAR ? "reference" : tg_isa_name(eng[e].isa);
            ck_poison(o, no);
            memset(o32, 0, no * sizeof *o32);
            memset(o, 0, no * sizeof *o);
            eng[e].k.attn_prefill_f16(o, q, (uint16_t *)kh, (uint16_t *)vh, T, pos0, hs, ldq, ldo,
                                      scale, ws);
            eng[e].k.attn_prefill(o32, q, k, v, T, pos0, hs, ldq, hs, ldo, scale);
            CK_EXPECT_GUARDS(o, "attn_prefill_f16 %s T=%d pos0=%d hs=%d", isa, T, pos0, hs);
            CK_EXPECT_GUARDS(ws, "attn_prefill_f16 %s ws T=%d pos0=%d hs=%d", isa, T, pos0, hs);
            CK_EXPECT_BITEQUAL(o, o32, no, "attn_prefill_f16 %s vs f32 on the widened K/V T=%d pos0=%d hs=%d",
                               isa, T, pos0, hs);
        }
        float *bufs[] = {kh, vh, k, v, q, o, o32, ws};
        for (int i = 0; i < LEN(bufs); i++) ck_free(bufs[i]);
    }
}

/* f32 -> f16 into the cache: every ISA gives tg_f32_to_f16's bits (finite
 * values of every magnitude, half subnormals, overflow to inf, ±0, ±inf);
 * a NaN stays a NaN. */
Test(attn, f32_to_f16) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int n = 1; n <= 67; n += (n < 20 ? 1 : 7)) {
        float *x = ck_alloc((size_t)n);
        for (int i = 0; i < n; i++) {
            float m = ck_randf(&r, -1.0f, 1.0f);
            switch (ck_randi(&r, 0, 7)) {
            case 0: x[i] = m * 1e-6f; break;   /* half subnormals */
            case 1: x[i] = m * 7e4f; break;    /* past 65504: inf */
            case 2: x[i] = i % 2 ? -0.0f : 0.0f; break;
            case 3: x[i] = i % 2 ? -INFINITY : INFINITY; break;
            case 4: x[i] = m * 65504.0f; break;
            default: x[i] = ldexpf(m, ck_randi(&r, -20, 15)); break;
            }
        }
        uint16_t want[67];
        for (int i = 0; i < n; i++) want[i] = tg_f32_to_f16(x[i]);
        float *y = ck_alloc((size_t)n / 2 + 1);
        for (int e = 0; e < n_eng; e++) {
            ck_poison(y, (size_t)n / 2 + 1);
            eng[e].k.f32_to_f16((uint16_t *)y, x, n);
            CK_EXPECT_GUARDS(y, "f32_to_f16 %s n=%d", tg_isa_name(eng[e].isa), n);
            cr_expect(!memcmp(y, want, (size_t)n * sizeof(uint16_t)), "f32_to_f16 %s n=%d: bits differ",
                      tg_isa_name(eng[e].isa), n);
            float x0 = x[0];
            x[0] = NAN;
            eng[e].k.f32_to_f16((uint16_t *)y, x, n);
            cr_expect(isnan(tg_f16_to_f32(((uint16_t *)y)[0])), "f32_to_f16 %s: NaN not kept",
                      tg_isa_name(eng[e].isa));
            x[0] = x0;
        }
        ck_free(x);
        ck_free(y);
    }
}
