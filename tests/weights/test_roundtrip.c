/* test_roundtrip.c — write a random GPT-2 to GGUF, read it back, compare
 * tensor by tensor, config and tokenizer; f16/bf16/Q8_0 against independent
 * conversions; Hugging Face vocab folders. */
#include <criterion/criterion.h>
#include <math.h>

#include "tests/weights/testutil.h"
#include "weights/gguf.h"

#define SAME_BITS(name, a, b, n)                                                        \
    do {                                                                               \
        cr_assert((a) && (b), "%s missing", name);                                     \
        cr_assert(!memcmp((a), (b), (n) * sizeof(float)), "%s differs", name);         \
    } while (0)

static int f32_bits_eq(float a, float b) { return !memcmp(&a, &b, 4); }

static void check_vocab(const tg_vocab *a, const tg_vocab *b) {
    cr_assert_eq(a->n_tokens, b->n_tokens);
    for (int i = 0; i < a->n_tokens; i++) cr_assert_str_eq(a->tokens[i], b->tokens[i], "token %d", i);
    cr_assert_eq(a->n_merges, b->n_merges);
    for (int i = 0; i < a->n_merges; i++) cr_assert_str_eq(a->merges[i], b->merges[i]);
    cr_assert_eq(a->bos_id, b->bos_id);
    cr_assert_eq(a->eos_id, b->eos_id);
    cr_assert(b->token_type);
    for (int i = 0; i < a->n_tokens; i++) cr_assert_eq(a->token_type[i], b->token_type[i]);
    cr_assert_str_eq(b->pre, "gpt-2");
}

static void roundtrip(int tied) {
    test_model t;
    test_model_make(&t, 2, 2, 8, 16, tied);
    char *dir = test_tmpdir(), path[512];
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    tg_err err = {{0}};
    cr_assert_eq(tg_gpt2_save(path, &t.cfg, &t.w, &t.vocab, TG_DTYPE_F32, &err), TG_OK, "%s", err.msg);
    tg_gpt2_model m;
    cr_assert_eq(tg_gpt2_load(&m, path, 0, &err), TG_OK, "%s", err.msg);
    cr_assert(m.has_weights);
    cr_assert(!memcmp(&m.cfg, &t.cfg, sizeof m.cfg), "config differs");
    TEST_FOR_EACH_TENSOR(&t.cfg, &t.w, &m.w, SAME_BITS);
    cr_assert_eq(m.w.tied, tied);
    if (tied) cr_assert_eq(m.w.lm_head.data, m.w.wte.data);
    check_vocab(&t.vocab, &m.vocab);
    cr_assert_eq(tg_gpt2_n_params(&m.cfg, m.w.tied), tg_gpt2_n_params(&t.cfg, tied));
    /* the file follows llama.cpp's layout: v3, 32-byte alignment, output.weight present */
    const tg_gguf *g = tg_gpt2_gguf(&m);
    cr_assert(g);
    cr_assert_eq(tg_gguf_version(g), 3);
    cr_assert_eq(tg_gguf_alignment(g), 32);
    cr_assert(tg_gguf_find_tensor(g, "output.weight"));
    cr_assert_eq(tg_gguf_n_tensors(g), 5 + 12 * 2);
    tg_gpt2_free(&m);

    /* vocab-only load of the same file */
    cr_assert_eq(tg_gpt2_load(&m, path, 1, &err), TG_OK, "%s", err.msg);
    cr_assert(!m.has_weights);
    cr_assert_null(m.w.wte.data);
    check_vocab(&t.vocab, &m.vocab);
    tg_gpt2_free(&m);
    test_rmdir(dir);
    free(dir);
    test_model_free(&t);
}

Test(roundtrip, f32_tied) { roundtrip(1); }
Test(roundtrip, f32_untied) { roundtrip(0); }

Test(roundtrip, overwrite_is_atomic) {
    /* a failed save leaves the old file intact and no temporary behind */
    test_model t;
    test_model_make(&t, 1, 1, 4, 4, 1);
    char *dir = test_tmpdir(), path[512];
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    tg_err err;
    cr_assert_eq(tg_gpt2_save(path, &t.cfg, &t.w, &t.vocab, TG_DTYPE_F32, &err), TG_OK, "%s", err.msg);
    tg_weight keep = t.w.layers[0].up_w;
    t.w.layers[0].up_w.data = NULL; /* makes the writer fail before writing */
    cr_assert_neq(tg_gpt2_save(path, &t.cfg, &t.w, &t.vocab, TG_DTYPE_F32, &err), TG_OK);
    cr_assert(strstr(err.msg, "blk.0.ffn_up.weight"), "%s", err.msg);
    t.w.layers[0].up_w = keep;
    tg_gpt2_model m;
    cr_assert_eq(tg_gpt2_load(&m, path, 0, &err), TG_OK, "%s", err.msg);
    tg_gpt2_free(&m);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 1", dir);
    cr_assert_eq(system(cmd), 0, "a temporary file was left behind");
    /* an unwritable destination is an i/o error, not a crash */
    cr_assert_eq(tg_gpt2_save("/nonexistent-dir/x.gguf", &t.cfg, &t.w, &t.vocab, TG_DTYPE_F32, &err), TG_ERR_IO);
    test_rmdir(dir);
    free(dir);
    test_model_free(&t);
}

/* f16: every half value survives f16 -> f32 -> f16, and f32 -> f16 rounds
 * like the compiler's _Float16 conversion (IEEE round-to-nearest-even). */
Test(convert, f16_exhaustive) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tg_f16_to_f32((uint16_t)h);
        _Float16 ref;
        uint16_t hb = (uint16_t)h;
        memcpy(&ref, &hb, 2);
        if (isnan(f)) {
            cr_assert(isnan((float)ref));
            continue;
        }
        cr_assert_eq(f32_bits_eq(f, (float)ref), 1, "half %04x -> %a, compiler says %a", h, f, (float)ref);
        cr_assert_eq(tg_f32_to_f16(f), h, "half %04x does not round-trip", h);
    }
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = (uint32_t)(test_randf() * 2147483647.0f) * 2u + (uint32_t)i;
        float f;
        memcpy(&f, &u, 4);
        if (isnan(f)) continue;
        _Float16 ref = (_Float16)f;
        uint16_t rb;
        memcpy(&rb, &ref, 2);
        cr_assert_eq(tg_f32_to_f16(f), rb, "%a -> %04x, compiler says %04x", f, tg_f32_to_f16(f), rb);
    }
}

/* bf16: against rounding decided in double arithmetic (nearest, ties to even) */
Test(convert, bf16) {
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = (uint32_t)(test_randf() * 2147483647.0f) * 2u + (uint32_t)i;
        if (i < 65536) u = (uint32_t)i << 16 | 0x8000u; /* exact ties */
        float f;
        memcpy(&f, &u, 4);
        if (isnan(f) || isinf(f)) continue;
        uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
        float flo, fhi;
        memcpy(&flo, &lo, 4);
        memcpy(&fhi, &hi, 4);
        if (isinf(fhi) || isnan(fhi)) continue;
        double dl = fabs((double)f - flo), dh = fabs((double)fhi - f);
        uint16_t want = (uint16_t)((dl < dh || (dl == dh && !((lo >> 16) & 1))) ? lo >> 16 : hi >> 16);
        cr_assert_eq(tg_f32_to_bf16(f), want, "%a -> %04x, want %04x", f, tg_f32_to_bf16(f), want);
        cr_assert(f32_bits_eq(tg_bf16_to_f32(want), want == lo >> 16 ? flo : fhi));
    }
}

/* A Hugging Face tokenizer folder: vocab.json + merges.txt (with the
 * #version header and CRLF line ends), no config.json. */
Test(hf, vocab_only) {
    char *dir = test_tmpdir();
    const char *vj = "{\"!\": 0, \"\\u0120t\": 2, \"h\": 1, \"he\": 3, \"<|endoftext|>\": 5}";
    test_write(dir, "vocab.json", vj, strlen(vj));
    const char *mt = "#version: 0.2\r\n\u0120 t\r\nh e\r\n";
    test_write(dir, "merges.txt", mt, strlen(mt));
    tg_gpt2_model m;
    tg_err err;
    cr_assert_eq(tg_gpt2_load(&m, dir, 1, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(m.vocab.n_tokens, 6);
    cr_assert_str_eq(m.vocab.tokens[0], "!");
    cr_assert_str_eq(m.vocab.tokens[1], "h");
    cr_assert_str_eq(m.vocab.tokens[2], "\xc4\xa0t");
    cr_assert_str_eq(m.vocab.tokens[3], "he");
    cr_assert_str_eq(m.vocab.tokens[4], "[PAD4]");
    cr_assert_eq(m.vocab.token_type[4], 4);
    cr_assert_str_eq(m.vocab.tokens[5], "<|endoftext|>");
    cr_assert_eq(m.vocab.token_type[5], 3);
    cr_assert_eq(m.vocab.bos_id, 5);
    cr_assert_eq(m.vocab.eos_id, 5);
    cr_assert_eq(m.vocab.n_merges, 2);
    cr_assert_str_eq(m.vocab.merges[0], "\xc4\xa0 t");
    cr_assert_str_eq(m.vocab.merges[1], "h e");
    cr_assert_str_eq(m.vocab.pre, "gpt-2");
    cr_assert(!m.has_weights);
    tg_gpt2_free(&m);

    /* without the version line, every line is a merge; a malformed line fails */
    test_write(dir, "merges.txt", "a b\nc d", strlen("a b\nc d"));
    cr_assert_eq(tg_gpt2_load(&m, dir, 1, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(m.vocab.n_merges, 2);
    cr_assert_str_eq(m.vocab.merges[1], "c d");
    tg_gpt2_free(&m);
    test_write(dir, "merges.txt", "a b\ncd\n", strlen("a b\ncd\n"));
    cr_assert_eq(tg_gpt2_load(&m, dir, 1, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "line 2"), "%s", err.msg);
    /* duplicate ids and non-integer ids are errors */
    test_write(dir, "merges.txt", "a b\n", strlen("a b\n"));
    test_write(dir, "vocab.json", "{\"a\": 0, \"b\": 0}", strlen("{\"a\": 0, \"b\": 0}"));
    cr_assert_eq(tg_gpt2_load(&m, dir, 1, &err), TG_ERR_FORMAT);
    test_write(dir, "vocab.json", "{\"a\": 0.5}", strlen("{\"a\": 0.5}"));
    cr_assert_eq(tg_gpt2_load(&m, dir, 1, &err), TG_ERR_FORMAT);
    test_write(dir, "vocab.json", "[1, 2]", strlen("[1, 2]"));
    cr_assert_eq(tg_gpt2_load(&m, dir, 1, &err), TG_ERR_FORMAT);
    /* the full model needs config.json */
    test_write(dir, "vocab.json", "{\"a\": 0}", strlen("{\"a\": 0}"));
    cr_assert_neq(tg_gpt2_load(&m, dir, 0, &err), TG_OK);
    cr_assert(strstr(err.msg, "config.json"), "%s", err.msg);
    test_rmdir(dir);
    free(dir);
}

/* F16 storage: matrices rounded exactly as the compiler's _Float16 does,
 * 1-D tensors kept F32. */
Test(roundtrip, f16) {
    test_model t;
    test_model_make(&t, 2, 2, 8, 16, 1);
    char *dir = test_tmpdir(), path[512];
    snprintf(path, sizeof path, "%s/h.gguf", dir);
    tg_err err;
    cr_assert_eq(tg_gpt2_save(path, &t.cfg, &t.w, &t.vocab, TG_DTYPE_F16, &err), TG_OK, "%s", err.msg);
    tg_gpt2_model m;
    cr_assert_eq(tg_gpt2_load(&m, path, 0, &err), TG_OK, "%s", err.msg);
    const tg_gguf *g = tg_gpt2_gguf(&m);
    cr_assert_eq(tg_gguf_find_tensor(g, "blk.0.attn_qkv.weight")->type, TG_GGML_F16);
    cr_assert_eq(tg_gguf_find_tensor(g, "blk.0.attn_qkv.bias")->type, TG_GGML_F32);
    cr_assert_eq(tg_gguf_find_tensor(g, "output.weight")->type, TG_GGML_F16);
#define F16_SAME(name, a, b, n)                                                            \
    for (size_t i_ = 0; i_ < (n); i_++) {                                                  \
        float want_ = (n) == (size_t)t.cfg.n_embd || (n) == 3u * t.cfg.n_embd || (n) == (size_t)t.cfg.n_ff \
                          ? (a)[i_] : (float)(_Float16)(a)[i_];                             \
        cr_assert(f32_bits_eq((b)[i_], want_), "%s[%zu]: %a vs %a", name, i_, (b)[i_], want_); \
    }
    TEST_FOR_EACH_TENSOR(&t.cfg, &t.w, &m.w, F16_SAME);
#undef F16_SAME
    cr_assert(m.w.tied);
    tg_gpt2_free(&m);
    test_rmdir(dir);
    free(dir);
    test_model_free(&t);
}

/* Q8_0 and BF16 through the generic writer and reader: Q8_0 error is at most
 * half a quantisation step per element, BF16 matches the bf16 rounding. */
Test(roundtrip, q8_0_bf16) {
    enum { N = 32 * 40 };
    static float x[N];
    for (int i = 0; i < N; i++) x[i] = test_randf() * (i % 64 == 0 ? 100.0f : 1.0f);
    for (int i = 64; i < 96; i++) x[i] = 0; /* an all-zero block */
    char *dir = test_tmpdir(), path[512];
    snprintf(path, sizeof path, "%s/q.gguf", dir);
    tg_err err;
    tg_gguf_writer *w;
    cr_assert_eq(tg_gguf_writer_new(&w, &err), TG_OK);
    int64_t ne[2] = {64, N / 64};
    cr_assert_eq(tg_gguf_add_tensor_f32(w, "q", 2, ne, x, TG_GGML_Q8_0, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(tg_gguf_add_tensor_f32(w, "b", 2, ne, x, TG_GGML_BF16, &err), TG_OK, "%s", err.msg);
    int64_t bad[1] = {33};
    cr_assert_eq(tg_gguf_add_tensor_f32(w, "bad", 1, bad, x, TG_GGML_Q8_0, &err), TG_ERR_ARG);
    cr_assert_eq(tg_gguf_add_tensor_f32(w, "q", 2, ne, x, TG_GGML_F32, &err), TG_ERR_ARG); /* duplicate */
    cr_assert_eq(tg_gguf_write(w, path, &err), TG_OK, "%s", err.msg);
    tg_gguf_writer_free(w);
    tg_gguf *g;
    cr_assert_eq(tg_gguf_open(&g, path, &err), TG_OK, "%s", err.msg);
    const tg_gguf_tensor *q = tg_gguf_find_tensor(g, "q"), *b = tg_gguf_find_tensor(g, "b");
    cr_assert_eq(q->nbytes, (uint64_t)N / 32 * 34);
    static float y[N];
    cr_assert_eq(tg_gguf_tensor_to_f32(q, y, &err), TG_OK);
    for (int blk = 0; blk < N / 32; blk++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[blk * 32 + j]));
        float step = amax / 127.0f;
        for (int j = 0; j < 32; j++) {
            int i = blk * 32 + j;
            /* half a step, plus the f16 rounding of the scale times 127 */
            float tol = 0.5f * step + 127.0f * step * 0x1p-11f + 1e-30f;
            cr_assert(fabsf(y[i] - x[i]) <= tol, "q[%d]: %g vs %g (tol %g)", i, y[i], x[i], tol);
        }
    }
    cr_assert_eq(tg_gguf_tensor_to_f32(b, y, &err), TG_OK);
    for (int i = 0; i < N; i++) cr_assert(f32_bits_eq(y[i], tg_bf16_to_f32(tg_f32_to_bf16(x[i]))));
    tg_gguf_close(g);
    test_rmdir(dir);
    free(dir);
}

/* A vocab-only GGUF (tokenizer keys, no tensors): valid for tokenizing, a
 * clear error as a model; inspect calls it vocab-only. */
Test(roundtrip, vocab_only_file) {
    test_model t;
    test_model_make(&t, 1, 1, 4, 4, 1);
    char *dir = test_tmpdir(), path[512];
    snprintf(path, sizeof path, "%s/v.gguf", dir);
    tg_err err;
    cr_assert_eq(tg_gpt2_save(path, &t.cfg, NULL, &t.vocab, TG_DTYPE_F32, &err), TG_OK, "%s", err.msg);
    tg_gpt2_model m;
    cr_assert_eq(tg_gpt2_load(&m, path, 1, &err), TG_OK, "%s", err.msg);
    check_vocab(&t.vocab, &m.vocab);
    cr_assert_eq(m.cfg.n_vocab, 257);
    cr_assert_eq(tg_gguf_n_tensors(tg_gpt2_gguf(&m)), 0);
    tg_gpt2_free(&m);
    cr_assert_eq(tg_gpt2_load(&m, path, 0, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "gpt2.block_count"), "%s", err.msg);
    test_rmdir(dir);
    free(dir);
    test_model_free(&t);
}

/* Q8_0 matrices through the gpt2 binding: each weight within half a
 * quantisation step of the original. */
Test(roundtrip, q8_0_model) {
    test_model t;
    test_model_make(&t, 1, 2, 32, 8, 1);
    char *dir = test_tmpdir(), path[512];
    snprintf(path, sizeof path, "%s/q.gguf", dir);
    tg_err err;
    /* the gpt2 layout by hand, matrices stored Q8_0 */
    tg_gguf_writer *q;
    tg_gguf_writer_new(&q, &err);
    cr_assert_eq(tg_gpt2_to_gguf(q, &t.cfg, NULL, &t.vocab, TG_DTYPE_F32, &err), TG_OK);
    tg_gguf_set_u32(q, "gpt2.context_length", 8, &err);
    tg_gguf_set_u32(q, "gpt2.embedding_length", 32, &err);
    tg_gguf_set_u32(q, "gpt2.feed_forward_length", 128, &err);
    tg_gguf_set_u32(q, "gpt2.block_count", 1, &err);
    tg_gguf_set_u32(q, "gpt2.attention.head_count", 2, &err);
    tg_gguf_set_f32(q, "gpt2.attention.layer_norm_epsilon", 1e-5f, &err);
    const tg_gpt2_layer *y = &t.w.layers[0];
    struct { const char *name; const float *x; int64_t rows, cols; } mats[] = {
        {"token_embd.weight", test_f32(&t.w.wte), 257, 32}, {"position_embd.weight", t.w.wpe, 8, 32},
        {"blk.0.attn_qkv.weight", test_f32(&y->qkv_w), 96, 32}, {"blk.0.attn_output.weight", test_f32(&y->proj_w), 32, 32},
        {"blk.0.ffn_up.weight", test_f32(&y->up_w), 128, 32}, {"blk.0.ffn_down.weight", test_f32(&y->down_w), 32, 128}};
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
        int64_t ne[2] = {mats[i].cols, mats[i].rows};
        cr_assert_eq(tg_gguf_add_tensor_f32(q, mats[i].name, 2, ne, mats[i].x, TG_GGML_Q8_0, &err), TG_OK, "%s", err.msg);
    }
    struct { const char *name; const float *x; int64_t n; } vecs[] = {
        {"blk.0.attn_norm.weight", y->ln1_w, 32}, {"blk.0.attn_norm.bias", y->ln1_b, 32},
        {"blk.0.attn_qkv.bias", y->qkv_b, 96}, {"blk.0.attn_output.bias", y->proj_b, 32},
        {"blk.0.ffn_norm.weight", y->ln2_w, 32}, {"blk.0.ffn_norm.bias", y->ln2_b, 32},
        {"blk.0.ffn_up.bias", y->up_b, 128}, {"blk.0.ffn_down.bias", y->down_b, 32},
        {"output_norm.weight", t.w.lnf_w, 32}, {"output_norm.bias", t.w.lnf_b, 32}};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++)
        cr_assert_eq(tg_gguf_add_tensor_f32(q, vecs[i].name, 1, &vecs[i].n, vecs[i].x, TG_GGML_F32, &err), TG_OK);
    cr_assert_eq(tg_gguf_write(q, path, &err), TG_OK, "%s", err.msg);
    tg_gguf_writer_free(q);
    tg_gpt2_model m;
    cr_assert_eq(tg_gpt2_load(&m, path, 0, &err), TG_OK, "%s", err.msg);
    cr_assert(m.w.tied);
    /* the matrices stay Q8_0 (decoded here), the position embedding became f32 */
    cr_assert_eq(m.w.layers[0].up_w.type, TG_WTYPE_Q8_0);
    const float *got[] = {test_f32(&m.w.wte), m.w.wpe, test_f32(&m.w.layers[0].qkv_w), test_f32(&m.w.layers[0].proj_w),
                          test_f32(&m.w.layers[0].up_w), test_f32(&m.w.layers[0].down_w)};
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
        size_t n = (size_t)(mats[i].rows * mats[i].cols);
        for (size_t b = 0; b < n / 32; b++) {
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(mats[i].x[b * 32 + j]));
            float tol = 0.5f * amax / 127 + amax * 0x1p-11f;
            for (int j = 0; j < 32; j++)
                cr_assert(fabsf(got[i][b * 32 + j] - mats[i].x[b * 32 + j]) <= tol, "%s[%zu]", mats[i].name, b * 32 + j);
        }
    }
    cr_assert(!memcmp(m.w.layers[0].up_b, y->up_b, 128 * sizeof(float)));
    tg_gpt2_free(&m);
    test_rmdir(dir);
    free(dir);
    test_model_free(&t);
}

/* Ids may leave gaps (padded), but a tiny vocab.json must not make millions
 * of padding tokens (fuzz_hf: 16 M from 100 bytes). */
Test(hf, sparse_ids_are_bounded) {
    char *dir = test_tmpdir();
    tg_gpt2_model m;
    tg_err err;
    test_write(dir, "merges.txt", "", 0);
    const char *vj = "{\"a\": 0, \"b\": 15682700}";
    test_write(dir, "vocab.json", vj, strlen(vj));
    cr_assert_eq(tg_gpt2_load(&m, dir, 1, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "more than 65536 missing"), "%s", err.msg);
    vj = "{\"a\": 0, \"b\": 65537}"; /* 65536 missing: still padded */
    test_write(dir, "vocab.json", vj, strlen(vj));
    cr_assert_eq(tg_gpt2_load(&m, dir, 1, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(m.vocab.n_tokens, 65538);
    tg_gpt2_free(&m);
    test_rmdir(dir);
    free(dir);
}
