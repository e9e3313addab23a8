/* test_llama2c.c — llama2.c checkpoints (legacy .bin, ak42 v1 and v2):
 * valid files place every tensor where export.py / run.c put it, and
 * hostile ones (truncated at every byte, sizes past the end, zero or
 * negative dims, n_kv_heads not dividing n_heads, bad versions and group
 * sizes) give a one-line error naming the problem, never a crash (run under
 * ASan+UBSan too).
 *
 * Files are built byte by byte here with the sizes computed from the
 * format's definition, independently of weights/llama2c.c's walker. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weights/llama2c.h"

typedef struct hdr {
    int32_t dim, hidden, layers, heads, kv, vocab, seq; /* vocab < 0: untied (legacy) */
    int version;                                        /* 0 legacy, 1, 2 */
    int shared;                                         /* ak42 flag */
    int32_t gs;                                         /* v2 */
} hdr;

/* dim 8, hidden 12, 2 layers, 4 heads, 2 kv heads, vocab 16, seq 6 */
static hdr small(int version) {
    return (hdr){8, 12, 2, 4, 2, 16, 6, version, 1, version == 2 ? 4 : 0};
}

/* The file length from the format's definition. */
static size_t file_len(const hdr *h) {
    size_t E = (size_t)h->dim, F = (size_t)h->hidden, L = (size_t)h->layers, V = (size_t)abs(h->vocab);
    size_t hs = E / (size_t)h->heads, KV = (size_t)h->kv * hs;
    int untied = h->version == 0 ? h->vocab < 0 : !h->shared;
    size_t norms = 2 * L * E + E;
    size_t mats[] = {V * E, L * E * E, L * KV * E, L * KV * E, L * E * E, L * F * E, L * E * F, L * F * E,
                     untied ? V * E : 0};
    size_t n_mat = 0;
    for (size_t i = 0; i < sizeof mats / sizeof *mats; i++) n_mat += mats[i];
    if (h->version == 0) return 28 + 4 * (norms + n_mat + (size_t)h->seq * hs);
    if (h->version == 1) return 256 + 4 * (norms + n_mat);
    /* v2: per matrix int8 then fp32 scales; each layer's matrix on its own */
    return 256 + 4 * norms + n_mat + 4 * (n_mat / (size_t)h->gs);
}

/* A file with h's header and `len` bytes in all (values: a ramp of small
 * floats, so every f32 is finite; v2 scales are finite too). */
static uint8_t *make(const hdr *h, size_t len) {
    uint8_t *p = calloc(1, len > 256 ? len : 256);
    int32_t ints[7] = {h->dim, h->hidden, h->layers, h->heads, h->kv, h->vocab, h->seq};
    size_t at = 0;
    if (h->version) {
        uint32_t magic = TG_L2C_MAGIC;
        int32_t v = h->version;
        memcpy(p, &magic, 4), memcpy(p + 4, &v, 4);
        at = 8;
    }
    memcpy(p + at, ints, sizeof ints);
    at += sizeof ints;
    if (h->version) {
        p[at++] = (uint8_t)h->shared;
        if (h->version == 2) memcpy(p + at, &h->gs, 4);
        at = 256;
    }
    for (size_t i = at; i + 4 <= len; i += 4) {
        float f = (float)((i / 4) % 97) / 128.0f;
        memcpy(p + i, &f, 4);
    }
    return p;
}

/* Parses len bytes of h's file; expects failure with code s and `needle`
 * (and the file name) in a one-line message. */
static void expect_fail(const hdr *h, size_t len, tg_status s, const char *needle) {
    uint8_t *p = make(h, len);
    tg_l2c *c = (tg_l2c *)1;
    tg_err err = {{0}};
    tg_status got = tg_l2c_parse(&c, p, len, "t.bin", &err);
    cr_expect_eq(got, s, "len %zu: status %d, want %d (%s)", len, got, s, err.msg);
    cr_expect_null(c);
    cr_expect(strstr(err.msg, needle) != NULL, "len %zu: '%s' lacks '%s'", len, err.msg, needle);
    cr_expect(strncmp(err.msg, "t.bin: ", 7) == 0, "'%s' does not name the file", err.msg);
    cr_expect(strchr(err.msg, '\n') == NULL, "'%s' is not one line", err.msg);
    free(p);
}

static tg_l2c *expect_ok(const hdr *h, uint8_t **buf) {
    size_t len = file_len(h);
    *buf = make(h, len);
    tg_l2c *c = NULL;
    tg_err err = {{0}};
    cr_assert_eq(tg_l2c_parse(&c, *buf, len, "t.bin", &err), TG_OK, "%s", err.msg);
    return c;
}

Test(llama2c, legacy_layout_tied_and_untied) {
    for (int untied = 0; untied < 2; untied++) {
        hdr h = small(0);
        if (untied) h.vocab = -h.vocab;
        uint8_t *buf;
        tg_l2c *c = expect_ok(&h, &buf);
        cr_expect_eq(c->cfg.version, TG_L2C_LEGACY);
        cr_expect_eq(c->cfg.vocab_size, 16);
        cr_expect_eq(c->cfg.shared, !untied);
        cr_expect_eq(c->n_tensors, 2 + 9 * 2 + untied);
        const tg_l2c_tensor *t = tg_l2c_find(c, "token_embd.weight");
        cr_assert_not_null(t);
        cr_expect_eq(t->offset, 28);
        cr_expect_eq(t->shape[0], 16); cr_expect_eq(t->shape[1], 8);
        /* run.c's order: embedding, 2 attention norms, then wq of layer 0 */
        t = tg_l2c_find(c, "blk.0.attn_q.weight");
        cr_assert_not_null(t);
        cr_expect_eq(t->offset, 28 + 4 * (16 * 8 + 2 * 8));
        t = tg_l2c_find(c, "blk.1.attn_k.weight");
        cr_assert_not_null(t);
        cr_expect_eq(t->shape[0], 4); cr_expect_eq(t->shape[1], 8); /* 2 kv heads x head size 2 */
        t = tg_l2c_find(c, "blk.1.ffn_down.weight");
        cr_assert_not_null(t);
        cr_expect_eq(t->shape[0], 8); cr_expect_eq(t->shape[1], 12);
        t = tg_l2c_find(c, "output.weight");
        if (untied) {
            cr_assert_not_null(t);
            cr_expect_eq(t->offset + 4 * 16 * 8, file_len(&h)); /* last, after the rope tables */
        } else {
            cr_expect_null(t);
        }
        t = tg_l2c_find(c, "output_norm.weight");
        cr_assert_not_null(t);
        cr_expect_eq(t->offset + 4 * 8 + 4 * 6 * 2, file_len(&h) - (untied ? 4 * 16 * 8 : 0));
        tg_err err;
        cr_expect_eq(tg_l2c_check_finite(c, &err), TG_OK, "%s", err.msg);
        tg_l2c_close(c);
        free(buf);
    }
}

Test(llama2c, v1_v2_layout) {
    for (int v = 1; v <= 2; v++)
        for (int shared = 0; shared < 2; shared++) {
            hdr h = small(v);
            h.shared = shared;
            uint8_t *buf;
            tg_l2c *c = expect_ok(&h, &buf);
            cr_expect_eq((int)c->cfg.version, v);
            cr_expect_eq(c->n_tensors, 2 + 9 * 2 + !shared);
            /* the norms come first, fp32, then the embedding */
            const tg_l2c_tensor *t = tg_l2c_find(c, "blk.0.attn_norm.weight");
            cr_expect_eq(t->offset, 256);
            cr_expect_eq(t->kind, TG_L2C_F32);
            cr_expect_eq(tg_l2c_find(c, "blk.0.ffn_norm.weight")->offset, 256 + 4 * 2 * 8);
            t = tg_l2c_find(c, "token_embd.weight");
            cr_expect_eq(t->offset, 256 + 4 * (2 * 2 * 8 + 8));
            cr_expect_eq(t->kind, v == 2 ? TG_L2C_Q8G : TG_L2C_F32);
            if (v == 2) {
                cr_expect_eq(t->scales, t->data + 16 * 8); /* int8 q, then its scales */
                cr_expect_eq(tg_l2c_find(c, "blk.0.attn_q.weight")->offset, t->offset + 16 * 8 + 4 * 16 * 8 / 4);
            }
            tg_l2c_close(c);
            free(buf);
        }
}

Test(llama2c, v2_dequantizes_q_times_scale) {
    hdr h = small(2);
    size_t len = file_len(&h);
    uint8_t *p = make(&h, len);
    tg_l2c *c;
    tg_err err;
    cr_assert_eq(tg_l2c_parse(&c, p, len, "t.bin", &err), TG_OK, "%s", err.msg);
    const tg_l2c_tensor *t = tg_l2c_find(c, "blk.1.ffn_up.weight"); /* [12, 8]: 24 groups of 4 */
    int8_t *q = (int8_t *)(p + t->offset);
    for (int i = 0; i < 96; i++) q[i] = (int8_t)(i % 2 ? -127 + i : 127 - i);
    for (int g = 0; g < 24; g++) {
        float s = 0.25f + (float)g * 0.001f;
        memcpy(p + t->offset + 96 + 4 * g, &s, 4); /* unaligned is fine */
    }
    float out[96];
    cr_assert_eq(tg_l2c_to_f32(c, t, out, &err), TG_OK);
    for (int i = 0; i < 96; i++) {
        float s = 0.25f + (float)(i / 4) * 0.001f;
        cr_expect_eq(out[i], (float)q[i] * s, "element %d", i);
    }
    /* a NaN scale is found and named */
    float nan = NAN;
    memcpy(p + t->offset + 96 + 4 * 5, &nan, 4);
    cr_expect_eq(tg_l2c_check_finite(c, &err), TG_ERR_NUMERIC);
    cr_expect(strstr(err.msg, "blk.1.ffn_up.weight") && strstr(err.msg, "index 20"), "%s", err.msg);
    tg_l2c_close(c);
    free(p);
}

Test(llama2c, truncated_at_every_byte) {
    for (int v = 0; v <= 2; v++) {
        hdr h = small(v);
        size_t full = file_len(&h);
        for (size_t len = 0; len < full; len++) expect_fail(&h, len, TG_ERR_FORMAT, "truncated");
    }
}

Test(llama2c, bytes_after_the_end) {
    for (int v = 0; v <= 2; v++) {
        hdr h = small(v);
        size_t full = file_len(&h);
        expect_fail(&h, full + 1, TG_ERR_FORMAT, "1 bytes after the last tensor");
        expect_fail(&h, full + 4, TG_ERR_FORMAT, "4 bytes after the last tensor");
    }
}

Test(llama2c, zero_and_negative_dims) {
    static const char *const names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size",
                                         "seq_len"};
    static const int32_t bad[] = {0, -1, -8, INT32_MIN};
    for (int v = 0; v <= 2; v++)
        for (int f = 0; f < 7; f++)
            for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
                hdr h = small(v);
                int32_t *field[7] = {&h.dim, &h.hidden, &h.layers, &h.heads, &h.kv, &h.vocab, &h.seq};
                /* a negative legacy vocab_size is the untied flag, not an error */
                if (v == 0 && f == 5 && bad[b] < 0 && bad[b] != INT32_MIN) continue;
                *field[f] = bad[b];
                char want[64];
                snprintf(want, sizeof want, "%s %d is not positive", names[f], (int)bad[b]);
                expect_fail(&h, 4096, TG_ERR_FORMAT, want);
            }
}

Test(llama2c, dims_above_the_limit_or_past_the_end) {
    hdr h = small(0);
    h.vocab = TG_L2C_MAX_DIM + 1;
    expect_fail(&h, 4096, TG_ERR_FORMAT, "vocab_size 1048577 is above the limit");
    /* each size allowed, their products far past the file: no allocation */
    h = small(1);
    h.dim = h.hidden = h.layers = h.vocab = h.seq = TG_L2C_MAX_DIM;
    h.heads = h.kv = 1024;
    expect_fail(&h, 4096, TG_ERR_FORMAT, "the header's sizes overflow 64 bits");
    h.version = 0;
    expect_fail(&h, 4096, TG_ERR_FORMAT, "the header's sizes overflow 64 bits");
    h.layers = 1;
    expect_fail(&h, 4096, TG_ERR_FORMAT, "truncated: the header implies");
    h.version = 2, h.gs = 64;
    expect_fail(&h, 4096, TG_ERR_FORMAT, "truncated: the header implies");
}

Test(llama2c, head_shapes) {
    hdr h = small(0);
    h.kv = 3;
    expect_fail(&h, 4096, TG_ERR_FORMAT, "n_kv_heads 3 does not divide n_heads 4");
    h = small(1);
    h.heads = 3;
    h.kv = 3;
    expect_fail(&h, 4096, TG_ERR_FORMAT, "dim 8 is not a multiple of n_heads 3");
    h = small(2);
    h.heads = 8, h.kv = 8; /* head size 1 */
    expect_fail(&h, 4096, TG_ERR_FORMAT, "head size 1 (dim 8 / n_heads 8) is odd");
    h = small(0);
    h.kv = 8; /* more kv heads than heads */
    expect_fail(&h, 4096, TG_ERR_FORMAT, "n_kv_heads 8 does not divide n_heads 4");
}

Test(llama2c, ak42_versions_flags_and_groups) {
    static const int32_t versions[] = {0, 3, -1, 255};
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++) {
        hdr h = small(1);
        uint8_t *p = make(&h, 4096);
        memcpy(p + 4, &versions[i], 4);
        tg_l2c *c;
        tg_err err;
        cr_expect_eq(tg_l2c_parse(&c, p, 4096, "t.bin", &err), TG_ERR_UNSUPPORTED);
        char want[64];
        snprintf(want, sizeof want, "ak42 version %d is not one we know", (int)versions[i]);
        cr_expect(strstr(err.msg, want), "%s", err.msg);
        cr_expect_eq(tg_l2c_sniff(p, 4096, 4096), -2);
        free(p);
    }
    hdr h = small(1);
    h.shared = 2;
    expect_fail(&h, file_len(&(hdr){8, 12, 2, 4, 2, 16, 6, 1, 0, 0}), TG_ERR_FORMAT, "shared_classifier flag 2");
    static const int32_t bad_gs[] = {0, -4, INT32_MIN};
    for (size_t i = 0; i < sizeof bad_gs / sizeof *bad_gs; i++) {
        h = small(2);
        h.gs = bad_gs[i];
        char want[64];
        snprintf(want, sizeof want, "group_size %d is not in 1..", (int)bad_gs[i]);
        expect_fail(&h, 4096, TG_ERR_FORMAT, want);
    }
    /* 5 divides none of the 2-layer matrices' sizes (dim 8): named */
    h = small(2);
    h.gs = 5;
    expect_fail(&h, 4096, TG_ERR_FORMAT, "is not a multiple of group_size 5");
    /* a group size the matrices allow, but not the file size it implies */
    h = small(2);
    h.gs = 8;
    expect_fail(&h, file_len(&(hdr){8, 12, 2, 4, 2, 16, 6, 2, 1, 4}), TG_ERR_FORMAT, "bytes after the last tensor");
}

Test(llama2c, sniff_and_why) {
    hdr h = small(0);
    size_t full = file_len(&h);
    uint8_t *p = make(&h, full);
    cr_expect_eq(tg_l2c_sniff(p, 28, full), TG_L2C_LEGACY);
    cr_expect_eq(tg_l2c_sniff(p, 28, full - 1), -1);
    cr_expect_eq(tg_l2c_sniff(p, 28, full + 4), -1);
    cr_expect_eq(tg_l2c_sniff(p, 27, full), -1);
    char why[160];
    tg_l2c_legacy_why(p, 28, full + 4, why, sizeof why);
    char want[160];
    snprintf(want, sizeof want, "its 7-int header implies %zu bytes, the file has %zu", full, full + 4);
    cr_expect_str_eq(why, want);
    memcpy(p, "GGUF", 4); /* dim = a huge number */
    cr_expect_eq(tg_l2c_sniff(p, 28, full), -1);
    tg_l2c_legacy_why(p, 28, full, why, sizeof why);
    cr_expect(strstr(why, "dim ") && strstr(why, "above the limit"), "%s", why);
    free(p);
    h = small(2);
    p = make(&h, 256);
    cr_expect_eq(tg_l2c_sniff(p, 256, 1), TG_L2C_V2);
    tg_l2c_legacy_why(p, 256, 1, why, sizeof why);
    cr_expect(strstr(why, "ak42"), "%s", why);
    free(p);
}

Test(llama2c, open_files) {
    char dir[] = "/tmp/tg_l2c_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/m.bin", dir);
    hdr h = small(0);
    h.vocab = -16;
    size_t len = file_len(&h);
    uint8_t *p = make(&h, len);
    FILE *f = fopen(path, "wb");
    cr_assert_eq(fwrite(p, 1, len, f), len);
    fclose(f);
    tg_l2c *c;
    tg_err err;
    cr_assert_eq(tg_l2c_open(&c, path, &err), TG_OK, "%s", err.msg);
    cr_expect_eq(memcmp(tg_l2c_find(c, "output.weight")->data, p + len - 4 * 16 * 8, 4 * 16 * 8), 0);
    tg_l2c_close(c);
    cr_expect_eq(tg_l2c_open(&c, dir, &err), TG_ERR_IO);
    cr_expect(strstr(err.msg, "is a directory"), "%s", err.msg);
    char fifo[64];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_expect_eq(tg_l2c_open(&c, fifo, &err), TG_ERR_IO); /* refused, not blocked on */
    cr_expect(strstr(err.msg, "FIFO"), "%s", err.msg);
    f = fopen(path, "wb"); /* empty */
    fclose(f);
    cr_expect_eq(tg_l2c_open(&c, path, &err), TG_ERR_FORMAT);
    cr_expect(strstr(err.msg, "truncated: 0 bytes"), "%s", err.msg);
    unlink(path), unlink(fifo), rmdir(dir);
    free(p);
}
