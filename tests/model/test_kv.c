/* test_kv.c — the KV cache's bookkeeping (model/gpt.c): the positions it
 * holds, refusing a gap, rewriting from an earlier position, truncation, and
 * snapshot/restore to fork a context. A forked continuation must give the
 * logits of a fresh run of the same tokens bit for bit (the same kernels on
 * the same inputs), including after the cache was overwritten from
 * position 0 (a context shift) in between. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt.h"

enum { L = 2, H = 2, E = 32, C = 24, V = 50, F = 64 };

typedef struct rand_model {
    tg_gpt2_model m;
    tg_gpt2_layer layers[L];
    float *blob;
} rand_model;

static uint64_t rng = 12345;
static float frand(float scale) { /* uniform in [-scale, scale) */
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return scale * ((float)(rng >> 40) / (float)(1u << 24) * 2.0f - 1.0f);
}

static void make_model(rand_model *r, int n_head) {
    memset(r, 0, sizeof *r);
    size_t per_layer = 2 * E + 3 * E * E + 3 * E + E * E + E + 2 * E + F * E + F + E * F + E;
    size_t n = 2 * (size_t)V * E + (size_t)C * E + L * per_layer + 2 * E;
    float *p = r->blob = malloc(n * sizeof *p);
    cr_assert(p);
    for (size_t i = 0; i < n; i++) p[i] = frand(0.5f);
    tg_gpt2_config *c = &r->m.cfg;
    *c = (tg_gpt2_config){.n_layer = L, .n_head = n_head, .n_embd = E, .n_ctx = C, .n_vocab = V, .n_ff = F, .ln_eps = 1e-5f};
    tg_gpt2_weights *w = &r->m.w;
    w->wte = tg_weight_f32(p, V, E), p += V * E;
    w->wpe = p, p += C * E;
    for (int l = 0; l < L; l++) {
        tg_gpt2_layer *y = &r->layers[l];
        y->ln1_w = p, p += E;
        y->ln1_b = p, p += E;
        y->qkv_w = tg_weight_f32(p, 3 * E, E), p += 3 * E * E;
        y->qkv_b = p, p += 3 * E;
        y->proj_w = tg_weight_f32(p, E, E), p += E * E;
        y->proj_b = p, p += E;
        y->ln2_w = p, p += E;
        y->ln2_b = p, p += E;
        y->up_w = tg_weight_f32(p, F, E), p += F * E;
        y->up_b = p, p += F;
        y->down_w = tg_weight_f32(p, E, F), p += E * F;
        y->down_b = p, p += E;
    }
    w->layers = r->layers;
    w->lnf_w = p, p += E;
    w->lnf_b = p, p += E;
    w->lm_head = tg_weight_f32(p, V, E);
    r->m.has_weights = 1;
}

static tg_gpt *create(const rand_model *r, int n_ctx) {
    tg_gpt *g;
    tg_err err;
    tg_gpt_opts o = {1, NULL, n_ctx, TG_WTYPE_F32};
    cr_assert_eq(tg_gpt_create(&g, &r->m, &o, &err), TG_OK, "%s", err.msg);
    return g;
}

static const int prompt[10] = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7};

/* logits after prefilling the prompt and decoding x at position 10 */
static void fresh(const rand_model *r, int x, float *out) {
    tg_gpt *g = create(r, 0);
    tg_err err;
    float *tmp = malloc(V * sizeof *tmp);
    cr_assert_eq(tg_gpt_forward(g, prompt, 10, 0, tmp, 0, &err), TG_OK);
    cr_assert_eq(tg_gpt_forward(g, &x, 1, 10, out, 0, &err), TG_OK);
    free(tmp);
    tg_gpt_free(g);
}

Test(kv, positions_held) {
    rand_model r;
    make_model(&r, H);
    tg_gpt *g = create(&r, 0);
    tg_err err;
    float logits[V];
    cr_assert_eq(tg_gpt_n_pos(g), 0);
    /* a gap is refused with both numbers, and changes nothing */
    cr_assert_eq(tg_gpt_forward(g, prompt, 1, 5, logits, 0, &err), TG_ERR_RANGE);
    cr_assert(strstr(err.msg, "position 5") && strstr(err.msg, "the 0 positions"), "%s", err.msg);
    cr_assert_eq(tg_gpt_forward(g, prompt, 10, 0, logits, 0, &err), TG_OK);
    cr_assert_eq(tg_gpt_n_pos(g), 10);
    cr_assert_eq(tg_gpt_forward(g, prompt, 1, 11, logits, 0, &err), TG_ERR_RANGE);
    cr_assert(strstr(err.msg, "position 11") && strstr(err.msg, "the 10 positions"), "%s",
              err.msg);
    int bad = V;
    cr_assert_eq(tg_gpt_forward(g, &bad, 1, 10, logits, 0, &err), TG_ERR_ARG);
    cr_assert_eq(tg_gpt_n_pos(g), 10, "a failed call leaves the cache as it was");
    /* rewriting from an earlier position forgets the rest */
    cr_assert_eq(tg_gpt_forward(g, prompt, 2, 4, logits, 0, &err), TG_OK);
    cr_assert_eq(tg_gpt_n_pos(g), 6);
    cr_assert_eq(tg_gpt_truncate(g, 7, &err), TG_ERR_RANGE);
    cr_assert_eq(tg_gpt_truncate(g, 3, &err), TG_OK);
    cr_assert_eq(tg_gpt_n_pos(g), 3);
    cr_assert_eq(tg_gpt_forward(g, prompt, 1, 4, logits, 0, &err), TG_ERR_RANGE);
    tg_gpt_free(g);
    free(r.blob);
}

Test(kv, fork_equals_a_fresh_run) {
    rand_model r;
    make_model(&r, H);
    tg_gpt *g = create(&r, 0);
    tg_err err;
    float logits[V], want[V], got[V];
    cr_assert_eq(tg_gpt_forward(g, prompt, 10, 0, logits, 0, &err), TG_OK);
    tg_kv_snapshot *s;
    cr_assert_eq(tg_gpt_snapshot(g, &s, &err), TG_OK);
    cr_assert_eq(tg_kv_snapshot_n_pos(s), 10);
    for (int x = 0; x < 3; x++) {
        /* a continuation, then a context shift that rewrites from 0 */
        int cont[8] = {1, 2, 3, 4, 5, 6, 7, 8}, shifted[20];
        for (int i = 0; i < 20; i++) shifted[i] = (7 * i + x) % V;
        cr_assert_eq(tg_gpt_forward(g, cont, 8, 10, logits, 0, &err), TG_OK);
        cr_assert_eq(tg_gpt_forward(g, shifted, 20, 0, logits, 0, &err), TG_OK);
        cr_assert_eq(tg_gpt_restore(g, s, &err), TG_OK, "%s", err.msg);
        cr_assert_eq(tg_gpt_n_pos(g), 10);
        int tok = 40 + x;
        cr_assert_eq(tg_gpt_forward(g, &tok, 1, 10, got, 0, &err), TG_OK);
        fresh(&r, tok, want);
        cr_assert(!memcmp(got, want, sizeof got), "fork %d: logits differ from a fresh run", x);
    }
    /* into another tg_gpt of the same model, with a shorter context */
    tg_gpt *g2 = create(&r, 12);
    cr_assert_eq(tg_gpt_restore(g2, s, &err), TG_OK, "%s", err.msg);
    int tok = 41;
    cr_assert_eq(tg_gpt_forward(g2, &tok, 1, 10, got, 0, &err), TG_OK);
    fresh(&r, tok, want);
    cr_assert(!memcmp(got, want, sizeof got), "restored into another handle");
    tg_gpt_free(g2);
    /* a context too short for it, or another shape, is refused */
    tg_gpt *g3 = create(&r, 8);
    cr_assert_eq(tg_gpt_restore(g3, s, &err), TG_ERR_RANGE);
    cr_assert(strstr(err.msg, "10-position") && strstr(err.msg, "8-position"), "%s", err.msg);
    tg_gpt_free(g3);
    rand_model r4;
    make_model(&r4, 4);
    tg_gpt *g4 = create(&r4, 0);
    cr_assert_eq(tg_gpt_restore(g4, s, &err), TG_ERR_ARG);
    tg_gpt_free(g4);
    free(r4.blob);
    /* an empty snapshot restores an empty cache */
    tg_kv_snapshot *e;
    tg_gpt *g5 = create(&r, 0);
    cr_assert_eq(tg_gpt_snapshot(g5, &e, &err), TG_OK);
    cr_assert_eq(tg_gpt_restore(g, e, &err), TG_OK);
    cr_assert_eq(tg_gpt_n_pos(g), 0);
    tg_kv_snapshot_free(e);
    tg_gpt_free(g5);
    tg_kv_snapshot_free(s);
    tg_gpt_free(g);
    free(r.blob);
}

static tg_gpt *create_kv(const rand_model *r, tg_wtype kv) {
    tg_gpt *g;
    tg_err err;
    tg_gpt_opts o = {1, NULL, 0, kv};
    cr_assert_eq(tg_gpt_create(&g, &r->m, &o, &err), TG_OK, "%s", err.msg);
    return g;
}

/* The f16 cache: half the bytes; a fork equals a fresh f16 run bit for bit;
 * a snapshot restored into a cache of the other type is rounded to half or
 * widened (the next step's logits then within f16 rounding, 2^-11, of the
 * f16 run's, scaled by the largest logit and the layers: from the second
 * layer on the two caches held different values anyway); a type other
 * than f32/f16 is refused. */
Test(kv, f16_cache) {
    rand_model r;
    make_model(&r, H);
    tg_err err;
    tg_gpt *g32 = create_kv(&r, TG_WTYPE_F32), *g16 = create_kv(&r, TG_WTYPE_F16);
    cr_assert_eq(tg_gpt_kv_type(g16), TG_WTYPE_F16);
    cr_assert_eq(tg_gpt_kv_bytes(g16) * 2, tg_gpt_kv_bytes(g32));
    float l32[V], l16[V], got[V];
    int x = 21;
    cr_assert_eq(tg_gpt_forward(g32, prompt, 10, 0, l32, 0, &err), TG_OK);
    cr_assert_eq(tg_gpt_forward(g16, prompt, 10, 0, l16, 0, &err), TG_OK);
    tg_kv_snapshot *s32, *s16;
    cr_assert_eq(tg_gpt_snapshot(g32, &s32, &err), TG_OK);
    cr_assert_eq(tg_gpt_snapshot(g16, &s16, &err), TG_OK);
    cr_assert_eq(tg_gpt_forward(g16, &x, 1, 10, l16, 0, &err), TG_OK);
    cr_assert_eq(tg_gpt_forward(g32, &x, 1, 10, l32, 0, &err), TG_OK);
    int differ = 0;
    for (int i = 0; i < V; i++) differ |= l16[i] != l32[i];
    cr_assert(differ, "the f16 cache gave the f32 cache's logits");

    /* a fork of the f16 cache, after the cache moved on */
    cr_assert_eq(tg_gpt_forward(g16, prompt, 5, 0, got, 0, &err), TG_OK);
    cr_assert_eq(tg_gpt_restore(g16, s16, &err), TG_OK);
    cr_assert_eq(tg_gpt_forward(g16, &x, 1, 10, got, 0, &err), TG_OK);
    cr_assert(!memcmp(got, l16, sizeof got), "f16 fork differs from the f16 run");

    float amax = 0;
    for (int i = 0; i < V; i++) amax = fmaxf(amax, fabsf(l16[i]));
    const float tol16 = 16.0f * 0x1p-11f * amax * L;
    /* f32 snapshot into the f16 cache: rounded to half */
    cr_assert_eq(tg_gpt_restore(g16, s32, &err), TG_OK);
    cr_assert_eq(tg_gpt_n_pos(g16), 10);
    cr_assert_eq(tg_gpt_forward(g16, &x, 1, 10, got, 0, &err), TG_OK);
    for (int i = 0; i < V; i++)
        cr_expect(fabsf(got[i] - l16[i]) <= tol16, "logit %d: %g from an f32 snapshot vs %g", i,
                  got[i], l16[i]);
    /* f16 snapshot into the f32 cache: the widened values */
    cr_assert_eq(tg_gpt_restore(g32, s16, &err), TG_OK);
    cr_assert_eq(tg_gpt_forward(g32, &x, 1, 10, got, 0, &err), TG_OK);
    for (int i = 0; i < V; i++)
        cr_expect(fabsf(got[i] - l16[i]) <= tol16, "logit %d: %g widened into f32 vs %g in f16", i,
                  got[i], l16[i]);
    /* and back: the f32 cache restored from its own snapshot is the f32 run */
    cr_assert_eq(tg_gpt_restore(g32, s32, &err), TG_OK);
    cr_assert_eq(tg_gpt_forward(g32, &x, 1, 10, got, 0, &err), TG_OK);
    cr_assert(!memcmp(got, l32, sizeof got), "f32 fork differs from the f32 run");

    tg_gpt *bad;
    tg_gpt_opts o = {1, NULL, 0, TG_WTYPE_Q8_0};
    cr_assert_eq(tg_gpt_create(&bad, &r.m, &o, &err), TG_ERR_ARG);
    cr_assert(strstr(err.msg, "q8_0"), "%s", err.msg);
    tg_kv_snapshot_free(s32);
    tg_kv_snapshot_free(s16);
    tg_gpt_free(g32);
    tg_gpt_free(g16);
    free(r.blob);
}
