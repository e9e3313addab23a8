/* testutil.h — a small random GPT-2 in memory and a temp directory, shared
 * by the weights tests. */
#ifndef TINYGPT_TESTS_WEIGHTS_UTIL_H
#define TINYGPT_TESTS_WEIGHTS_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weights/gpt2.h"

typedef struct test_model {
    tg_gpt2_config cfg;
    tg_gpt2_weights w;
    tg_vocab vocab;
    float *arena;
} test_model;

static uint64_t test_rng = 0x9e3779b97f4a7c15ull;
static inline float test_randf(void) { /* xorshift64*, uniform in [-1, 1) */
    test_rng ^= test_rng >> 12;
    test_rng ^= test_rng << 25;
    test_rng ^= test_rng >> 27;
    return (float)((test_rng * 0x2545f4914f6cdd1dull) >> 40) / (float)(1 << 23) - 1.0f;
}

/* L layers, H heads, E width, C context, byte vocabulary (V = 257). */
static inline void test_model_make(test_model *t, int L, int H, int E, int C, int tied) {
    memset(t, 0, sizeof *t);
    tg_err err;
    if (tg_vocab_bytes(&t->vocab, &err)) abort();
    t->cfg = (tg_gpt2_config){.n_layer = L, .n_head = H, .n_embd = E, .n_ctx = C,
                              .n_vocab = t->vocab.n_tokens, .n_ff = 4 * E, .ln_eps = 1e-5f};
    size_t n = tg_gpt2_n_params(&t->cfg, tied);
    t->arena = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) t->arena[i] = test_randf() * 0.5f;
    t->w.layers = calloc((size_t)L, sizeof *t->w.layers);
    float *p = t->arena;
    size_t V = (size_t)t->cfg.n_vocab, F = (size_t)t->cfg.n_ff, e = (size_t)E;
#define TAKE(dst, cnt) do { (dst) = p; p += (cnt); } while (0)
#define TAKEW(dst, r, c) do { (dst) = tg_weight_f32(p, (int)(r), (int)(c)); p += (r) * (c); } while (0)
    TAKEW(t->w.wte, V, e);
    TAKE(t->w.wpe, (size_t)C * e);
    for (int l = 0; l < L; l++) {
        tg_gpt2_layer *ly = &t->w.layers[l];
        TAKE(ly->ln1_w, e); TAKE(ly->ln1_b, e);
        TAKEW(ly->qkv_w, 3 * e, e); TAKE(ly->qkv_b, 3 * e);
        TAKEW(ly->proj_w, e, e); TAKE(ly->proj_b, e);
        TAKE(ly->ln2_w, e); TAKE(ly->ln2_b, e);
        TAKEW(ly->up_w, F, e); TAKE(ly->up_b, F);
        TAKEW(ly->down_w, e, F); TAKE(ly->down_b, e);
    }
    TAKE(t->w.lnf_w, e);
    TAKE(t->w.lnf_b, e);
    if (tied) t->w.lm_head = t->w.wte;
    else TAKEW(t->w.lm_head, V, e);
#undef TAKE
#undef TAKEW
    t->w.tied = tied;
    /* a few merges so the tokenizer round trip has content */
    const char *mg[] = {"Ġ t", "h e", "Ġt he"};
    t->vocab.merges = calloc(3, sizeof *t->vocab.merges);
    for (int i = 0; i < 3; i++) t->vocab.merges[i] = strdup(mg[i]);
    t->vocab.n_merges = 3;
}

/* A matrix's values as f32: its data when it is f32, else a decoded copy
 * (kept until test_f32_release). */
static float *test_f32_bufs[4096];
static int test_f32_n;
static inline const float *test_f32(const tg_weight *v) {
    if (!v->data || v->type == TG_WTYPE_F32) return v->data;
    if (test_f32_n == 4096) abort();
    float *p = malloc(sizeof(float) * (size_t)v->rows * (size_t)v->cols);
    if (!p) abort();
    for (int r = 0; r < v->rows; r++)
        tg_dequantize_row(v->type, p + (size_t)r * v->cols, (const char *)v->data + (size_t)r * v->row_bytes,
                          v->cols);
    return test_f32_bufs[test_f32_n++] = p;
}
static inline void test_f32_release(void) {
    while (test_f32_n) free(test_f32_bufs[--test_f32_n]);
}

static inline void test_model_free(test_model *t) {
    test_f32_release();
    free(t->arena);
    free(t->w.layers);
    tg_vocab_free(&t->vocab);
}

/* fn(name, a, b, n) on two matrices' values (each decoded once) */
#define TEST_FN_MATRIX(fn, name, va, vb, n)                                                     \
    do {                                                                                        \
        const float *fa_ = test_f32(va), *fb_ = test_f32(vb);                                   \
        fn(name, fa_, fb_, n);                                                                  \
    } while (0)

/* Calls fn(name, a, b, n) for every tensor of two weight sets. */
#define TEST_FOR_EACH_TENSOR(cfg, wa, wb, fn)                                                   \
    do {                                                                                        \
        size_t E_ = (size_t)(cfg)->n_embd, F_ = (size_t)(cfg)->n_ff, V_ = (size_t)(cfg)->n_vocab; \
        TEST_FN_MATRIX(fn, "wte", &(wa)->wte, &(wb)->wte, V_ * E_);                          \
        fn("wpe", (wa)->wpe, (wb)->wpe, (size_t)(cfg)->n_ctx * E_);                             \
        for (int l_ = 0; l_ < (cfg)->n_layer; l_++) {                                           \
            const tg_gpt2_layer *a_ = &(wa)->layers[l_], *b_ = &(wb)->layers[l_];               \
            fn("ln1_w", a_->ln1_w, b_->ln1_w, E_); fn("ln1_b", a_->ln1_b, b_->ln1_b, E_);       \
            TEST_FN_MATRIX(fn, "qkv_w", &a_->qkv_w, &b_->qkv_w, 3 * E_ * E_);              \
            fn("qkv_b", a_->qkv_b, b_->qkv_b, 3 * E_);                                          \
            TEST_FN_MATRIX(fn, "proj_w", &a_->proj_w, &b_->proj_w, E_ * E_);                \
            fn("proj_b", a_->proj_b, b_->proj_b, E_);                                           \
            fn("ln2_w", a_->ln2_w, b_->ln2_w, E_); fn("ln2_b", a_->ln2_b, b_->ln2_b, E_);       \
            TEST_FN_MATRIX(fn, "up_w", &a_->up_w, &b_->up_w, F_ * E_);                      \
            fn("up_b", a_->up_b, b_->up_b, F_);                                                 \
            TEST_FN_MATRIX(fn, "down_w", &a_->down_w, &b_->down_w, E_ * F_);                \
            fn("down_b", a_->down_b, b_->down_b, E_);                                           \
        }                                                                                       \
        fn("lnf_w", (wa)->lnf_w, (wb)->lnf_w, E_);                                              \
        fn("lnf_b", (wa)->lnf_b, (wb)->lnf_b, E_);                                              \
        TEST_FN_MATRIX(fn, "lm_head", &(wa)->lm_head, &(wb)->lm_head, V_ * E_);              \
    } while (0)

/* A fresh temporary directory (removed by the caller with test_rmdir). */
static inline char *test_tmpdir(void) {
    char *d = strdup("/tmp/tinygpt-weights-XXXXXX");
    if (!mkdtemp(d)) abort();
    return d;
}
static inline void test_rmdir(const char *d) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd)) {}
}
static inline void test_write(const char *dir, const char *name, const void *data, size_t n) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(data, 1, n, f) != n) abort();
    fclose(f);
}

#endif
