/* llama2c.c — see llama2c.h. One description of each layout (walk) both
 * sizes a file from its header, before anything is allocated, and places
 * the tensors. */
#include "weights/llama2c.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "weights/file.h"
#include "weights/finite.h"
#include "weights/gguf.h"

static int32_t rd_i32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* ---- the header ---------------------------------------------------------- */

/* The header's config from the first n bytes; version from the magic. A
 * message (without the file name) on failure. */
static tg_status read_header(const uint8_t *p, size_t n, tg_l2c_config *c, char *why, size_t cap) {
    memset(c, 0, sizeof *c);
    const uint8_t *ints;
    if (n >= 4 && (uint32_t)rd_i32(p) == TG_L2C_MAGIC) {
        if (n < 8) return snprintf(why, cap, "truncated: %zu bytes, an ak42 header is %d", n, TG_L2C_HEADER), TG_ERR_FORMAT;
        int32_t v = rd_i32(p + 4);
        if (v != 1 && v != 2)
            return snprintf(why, cap, "ak42 version %" PRId32 " is not one we know (1 fp32, 2 int8)", v),
                   TG_ERR_UNSUPPORTED;
        if (n < TG_L2C_HEADER)
            return snprintf(why, cap, "truncated: %zu bytes, an ak42 header is %d", n, TG_L2C_HEADER), TG_ERR_FORMAT;
        c->version = (tg_l2c_version)v;
        ints = p + 8;
        if (p[36] > 1)
            return snprintf(why, cap, "ak42 shared_classifier flag %u is not 0 or 1", p[36]), TG_ERR_FORMAT;
        c->shared = p[36];
        if (v == 2) c->group_size = rd_i32(p + 37);
    } else {
        if (n < TG_L2C_LEGACY_HEADER)
            return snprintf(why, cap, "truncated: %zu bytes, a llama2.c header is %d", n, TG_L2C_LEGACY_HEADER),
                   TG_ERR_FORMAT;
        c->version = TG_L2C_LEGACY;
        ints = p;
    }
    int32_t h[7];
    for (int i = 0; i < 7; i++) h[i] = rd_i32(ints + 4 * i);
    static const char *const names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size",
                                         "seq_len"};
    for (int i = 0; i < 7; i++) {
        int32_t x = h[i];
        /* the legacy vocab_size may be negative: an untied classifier */
        if (i == 5 && c->version == TG_L2C_LEGACY && x < 0 && x != INT32_MIN) x = -x;
        if (x <= 0) return snprintf(why, cap, "%s %" PRId32 " is not positive", names[i], h[i]), TG_ERR_FORMAT;
        if (x > TG_L2C_MAX_DIM)
            return snprintf(why, cap, "%s %" PRId32 " is above the limit %d", names[i], h[i], TG_L2C_MAX_DIM),
                   TG_ERR_FORMAT;
    }
    c->dim = h[0], c->hidden_dim = h[1], c->n_layers = h[2], c->n_heads = h[3], c->n_kv_heads = h[4];
    c->vocab_size = h[5] < 0 ? -h[5] : h[5], c->seq_len = h[6];
    if (c->version == TG_L2C_LEGACY) c->shared = h[5] > 0;
    if (c->dim % c->n_heads)
        return snprintf(why, cap, "dim %d is not a multiple of n_heads %d", c->dim, c->n_heads), TG_ERR_FORMAT;
    if ((c->dim / c->n_heads) % 2)
        return snprintf(why, cap, "head size %d (dim %d / n_heads %d) is odd: rotary embeddings rotate pairs",
                        c->dim / c->n_heads, c->dim, c->n_heads),
               TG_ERR_FORMAT;
    if (c->n_heads % c->n_kv_heads)
        return snprintf(why, cap, "n_kv_heads %d does not divide n_heads %d", c->n_kv_heads, c->n_heads),
               TG_ERR_FORMAT;
    if (c->version == TG_L2C_V2 && (c->group_size <= 0 || c->group_size > TG_L2C_MAX_DIM))
        return snprintf(why, cap, "ak42 v2 group_size %d is not in 1..%d", c->group_size, TG_L2C_MAX_DIM),
               TG_ERR_FORMAT;
    return TG_OK;
}

/* ---- the layouts ------------------------------------------------------------ */

typedef struct walker {
    const tg_l2c_config *cfg;
    uint64_t off;        /* bytes so far */
    int overflow;        /* a size did not fit in 64 bits */
    const char *bad_group; /* v2: a tensor whose size is not a multiple of the group */
    tg_l2c *emit;        /* non-NULL: place tensors (capacity checked by the caller) */
} walker;

static void advance(walker *w, uint64_t n_elem, uint64_t elem_bytes) {
    uint64_t b;
    if (__builtin_mul_overflow(n_elem, elem_bytes, &b) || __builtin_add_overflow(w->off, b, &w->off)) w->overflow = 1;
}

/* One tensor [rows, cols] (cols 0: a vector of rows) at the cursor. */
static void put(walker *w, const char *part, int layer, int64_t rows, int64_t cols, tg_l2c_kind kind) {
    uint64_t n = (uint64_t)rows * (uint64_t)(cols ? cols : 1); /* each < 2^20: no overflow */
    uint64_t at = w->off;
    uint64_t scales = 0;
    if (kind == TG_L2C_Q8G) {
        uint64_t gs = (uint64_t)w->cfg->group_size;
        if (n % gs && !w->bad_group) w->bad_group = part;
        advance(w, n, 1);
        scales = w->off;
        advance(w, n / gs, 4);
    } else {
        advance(w, n, 4);
    }
    if (!w->emit || w->overflow) return;
    tg_l2c_tensor *t = &w->emit->tensors[w->emit->n_tensors++];
    if (layer >= 0)
        snprintf(t->name, sizeof t->name, "blk.%d.%s.weight", layer, part);
    else
        snprintf(t->name, sizeof t->name, "%s.weight", part);
    t->n_dims = cols ? 2 : 1;
    t->shape[0] = rows;
    t->shape[1] = cols ? cols : 1;
    t->n_elements = n;
    t->kind = kind;
    t->offset = at;
    t->data = w->emit->base + at;
    t->scales = kind == TG_L2C_Q8G ? w->emit->base + scales : NULL;
}

/* The same tensor for every layer. */
static void put_layers(walker *w, const char *part, int64_t rows, int64_t cols, tg_l2c_kind kind) {
    for (int l = 0; l < w->cfg->n_layers; l++) put(w, part, l, rows, cols, kind);
}

/* Walks the file after its header; w->off ends at the expected size. */
static void walk(walker *w) {
    const tg_l2c_config *c = w->cfg;
    int64_t E = c->dim, F = c->hidden_dim, V = c->vocab_size;
    int64_t hs = c->dim / c->n_heads, KV = (int64_t)c->n_kv_heads * hs;
    w->off = c->version == TG_L2C_LEGACY ? TG_L2C_LEGACY_HEADER : TG_L2C_HEADER;
    if (c->version == TG_L2C_LEGACY) { /* run.c's memory_map_weights */
        put(w, "token_embd", -1, V, E, TG_L2C_F32);
        put_layers(w, "attn_norm", E, 0, TG_L2C_F32);
        put_layers(w, "attn_q", E, E, TG_L2C_F32);
        put_layers(w, "attn_k", KV, E, TG_L2C_F32);
        put_layers(w, "attn_v", KV, E, TG_L2C_F32);
        put_layers(w, "attn_output", E, E, TG_L2C_F32);
        put_layers(w, "ffn_norm", E, 0, TG_L2C_F32);
        put_layers(w, "ffn_gate", F, E, TG_L2C_F32); /* w1 */
        put_layers(w, "ffn_down", E, F, TG_L2C_F32); /* w2 */
        put_layers(w, "ffn_up", F, E, TG_L2C_F32);   /* w3 */
        put(w, "output_norm", -1, E, 0, TG_L2C_F32);
        advance(w, (uint64_t)c->seq_len * (uint64_t)(hs / 2), 2 * 4); /* freq_cis_real, _imag */
        if (!c->shared) put(w, "output", -1, V, E, TG_L2C_F32);
        return;
    }
    /* export.py's version1_export / version2_export */
    tg_l2c_kind k = c->version == TG_L2C_V2 ? TG_L2C_Q8G : TG_L2C_F32;
    put_layers(w, "attn_norm", E, 0, TG_L2C_F32);
    put_layers(w, "ffn_norm", E, 0, TG_L2C_F32);
    put(w, "output_norm", -1, E, 0, TG_L2C_F32);
    put(w, "token_embd", -1, V, E, k);
    put_layers(w, "attn_q", E, E, k);
    put_layers(w, "attn_k", KV, E, k);
    put_layers(w, "attn_v", KV, E, k);
    put_layers(w, "attn_output", E, E, k);
    put_layers(w, "ffn_gate", F, E, k);
    put_layers(w, "ffn_down", E, F, k);
    put_layers(w, "ffn_up", F, E, k);
    if (!c->shared) put(w, "output", -1, V, E, k);
}

static int n_tensors_of(const tg_l2c_config *c) { return 2 + 9 * c->n_layers + !c->shared; }

/* The file size the header implies; 0 when it does not fit in 64 bits. */
static uint64_t expected_size(const tg_l2c_config *c, const char **bad_group) {
    walker w = {.cfg = c};
    walk(&w);
    if (bad_group) *bad_group = w.bad_group;
    return w.overflow ? 0 : w.off;
}

int tg_l2c_sniff(const void *head, size_t n, uint64_t file_size) {
    const uint8_t *p = head;
    if (n >= 4 && (uint32_t)rd_i32(p) == TG_L2C_MAGIC) {
        if (n < 8) return -1;
        int32_t v = rd_i32(p + 4);
        return v == 1 || v == 2 ? v : -2;
    }
    tg_l2c_config c;
    char why[160];
    if (read_header(p, n, &c, why, sizeof why) != TG_OK) return -1;
    return expected_size(&c, NULL) == file_size ? TG_L2C_LEGACY : -1;
}

void tg_l2c_legacy_why(const void *head, size_t n, uint64_t file_size, char *out, size_t cap) {
    tg_l2c_config c;
    const uint8_t *p = head;
    if (n >= 4 && (uint32_t)rd_i32(p) == TG_L2C_MAGIC) {
        snprintf(out, cap, "it starts with llama2.c's ak42 magic");
        return;
    }
    if (read_header(p, n, &c, out, cap) != TG_OK) return;
    uint64_t want = expected_size(&c, NULL);
    if (!want)
        snprintf(out, cap, "its 7-int header implies more than 2^64 bytes");
    else
        snprintf(out, cap, "its 7-int header implies %" PRIu64 " bytes, the file has %" PRIu64, want, file_size);
}

/* ---- open / parse ------------------------------------------------------------ */

static tg_status finish(tg_l2c **out, tg_l2c *c, tg_err *err) {
    char why[256];
    tg_status s = read_header(c->base, c->size, &c->cfg, why, sizeof why);
    if (s != TG_OK) {
        tg_fail(err, s, "%s: llama2.c checkpoint: %s", c->name, why);
        tg_l2c_close(c);
        return s;
    }
    const char *bad_group = NULL;
    uint64_t want = expected_size(&c->cfg, &bad_group);
    const char *what = c->cfg.version == TG_L2C_LEGACY ? "llama2.c checkpoint" : "llama2.c ak42 checkpoint";
    if (bad_group) {
        tg_fail(err, TG_ERR_FORMAT, "%s: %s: %s has a size that is not a multiple of group_size %d", c->name, what,
                bad_group, c->cfg.group_size);
        tg_l2c_close(c);
        return TG_ERR_FORMAT;
    }
    if (want != c->size) {
        if (!want)
            tg_fail(err, TG_ERR_FORMAT, "%s: %s: the header's sizes overflow 64 bits", c->name, what);
        else if (want > c->size)
            tg_fail(err, TG_ERR_FORMAT, "%s: %s truncated: the header implies %" PRIu64 " bytes, the file has %zu",
                    c->name, what, want, c->size);
        else
            tg_fail(err, TG_ERR_FORMAT,
                    "%s: %s: %zu bytes after the last tensor (the header implies %" PRIu64 " bytes, the file has %zu)",
                    c->name, what, c->size - (size_t)want, want, c->size);
        tg_l2c_close(c);
        return TG_ERR_FORMAT;
    }
    /* the size agrees, so the tensor count is bounded by the file */
    int n = n_tensors_of(&c->cfg);
    if (!(c->tensors = calloc((size_t)n, sizeof *c->tensors))) {
        tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", c->name);
        tg_l2c_close(c);
        return TG_ERR_NOMEM;
    }
    walker w = {.cfg = &c->cfg, .emit = c};
    walk(&w);
    *out = c;
    return TG_OK;
}

tg_status tg_l2c_parse(tg_l2c **out, const void *buf, size_t len, const char *name, tg_err *err) {
    *out = NULL;
    tg_l2c *c = calloc(1, sizeof *c);
    if (c) c->map.fd = -1;
    if (!c || !(c->name = strdup(name ? name : "llama2.c"))) {
        free(c);
        return tg_fail(err, TG_ERR_NOMEM, "llama2.c: out of memory");
    }
    static const uint8_t empty[1];
    c->base = len ? buf : empty;
    c->size = len;
    return finish(out, c, err);
}

tg_status tg_l2c_open(tg_l2c **out, const char *path, tg_err *err) {
    *out = NULL;
    struct stat st;
    int fd = wt_open_regular(path, &st, err);
    if (fd < 0) return TG_ERR_IO;
    tg_l2c *c = calloc(1, sizeof *c);
    if (c) c->map.fd = -1;
    if (!c || !(c->name = strdup(path))) {
        free(c);
        close(fd);
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    }
    static const uint8_t empty[1];
    c->base = empty;
    c->size = (size_t)st.st_size;
    tg_status s = wt_map_open(&c->map, fd, c->size, path, err);
    if (s) {
        tg_l2c_close(c);
        return s;
    }
    if (c->map.addr) c->base = c->map.addr;
    return finish(out, c, err);
}

void tg_l2c_close(tg_l2c *c) {
    if (!c) return;
    for (int i = 0; i < c->n_deq; i++) free(c->deq[i]);
    free(c->deq);
    free(c->tensors);
    wt_map_close(&c->map);
    free(c->name);
    free(c);
}

const tg_l2c_tensor *tg_l2c_find(const tg_l2c *c, const char *name) {
    for (int i = 0; i < c->n_tensors; i++)
        if (!strcmp(c->tensors[i].name, name)) return &c->tensors[i];
    return NULL;
}

tg_status tg_l2c_to_f32(const tg_l2c *c, const tg_l2c_tensor *t, float *out, tg_err *err) {
    (void)err;
    if (t->kind == TG_L2C_F32) {
        memcpy(out, t->data, (size_t)t->n_elements * 4);
        return TG_OK;
    }
    const int8_t *q = t->data;
    uint64_t gs = (uint64_t)c->cfg.group_size;
    for (uint64_t g = 0; g < t->n_elements / gs; g++) {
        float s;
        memcpy(&s, t->scales + 4 * g, 4);
        for (uint64_t j = g * gs; j < (g + 1) * gs; j++) out[j] = (float)q[j] * s;
    }
    return TG_OK;
}

tg_status tg_l2c_check_finite(const tg_l2c *c, tg_err *err) {
    for (int i = 0; i < c->n_tensors; i++) {
        const tg_l2c_tensor *t = &c->tensors[i];
        uint64_t gs = t->kind == TG_L2C_Q8G ? (uint64_t)c->cfg.group_size : 1;
        const char *what = NULL;
        int64_t bad = tg_find_nonfinite(TG_GGML_F32, t->kind == TG_L2C_Q8G ? (const void *)t->scales : t->data,
                                        t->n_elements / gs, &what);
        if (bad >= 0)
            return tg_fail(err, TG_ERR_NUMERIC, "%s: tensor '%s': %s at index %" PRId64 "%s", c->name, t->name, what,
                           bad * (int64_t)gs, gs > 1 ? " (a group scale)" : "");
    }
    return TG_OK;
}

/* Group g's fp32 scale. */
static float group_scale(const tg_l2c_tensor *t, uint64_t g) {
    float s;
    memcpy(&s, t->scales + 4 * g, 4);
    return s;
}

/* Can a v2 tensor run as ggml Q8_0? Each 32-block must lie inside one group
 * and one row (group_size and the row length multiples of 32), and every
 * group's scale s must round to an f16 s' with |s' - s| <= 2^-11 |s| (the
 * half's unit roundoff: s zero or in the normal range; a subnormal or
 * overflowing half would lose more). The int8 values are kept exactly, so
 * each weight q·s becomes q·s', off by at most 2^-11 of itself. */
int tg_l2c_q8_0_fits(const tg_l2c *c, const tg_l2c_tensor *t) {
    uint64_t gs = (uint64_t)c->cfg.group_size;
    if (t->kind != TG_L2C_Q8G || gs % TG_QK || t->n_dims != 2 || t->shape[1] % TG_QK) return 0;
    for (uint64_t g = 0; g < t->n_elements / gs; g++) {
        float s = group_scale(t, g), h = tg_f16_to_f32(tg_f32_to_f16(s));
        if (!(fabsf(h - s) <= 0x1p-11f * fabsf(s))) return 0; /* also NaN / inf */
    }
    return 1;
}

/* A v2 tensor as Q8_0 blocks: 32 int8 values each, the group's scale as f16. */
static void repack_q8_0(const tg_l2c *c, const tg_l2c_tensor *t, tg_block_q8_0 *b) {
    const int8_t *q = t->data;
    uint64_t gs = (uint64_t)c->cfg.group_size;
    for (uint64_t k = 0; k < t->n_elements / TG_QK; k++) {
        b[k].d = tg_f32_to_f16(group_scale(t, k * TG_QK / gs));
        memcpy(b[k].qs, q + k * TG_QK, TG_QK);
    }
}

tg_status tg_l2c_tensor_set(tg_l2c *c, tg_model_config *cfg, tg_tensor_set *ts, tg_err *err) {
    const tg_l2c_config *h = &c->cfg;
    memset(cfg, 0, sizeof *cfg);
    cfg->n_layer = h->n_layers;
    cfg->n_head = h->n_heads;
    cfg->n_embd = h->dim;
    cfg->n_ctx = h->seq_len;
    cfg->n_vocab = h->vocab_size;
    cfg->n_ff = h->hidden_dim;
    cfg->ln_eps = 1e-5f;       /* model.py's norm_eps, run.c's rmsnorm */
    cfg->arch = TG_ARCH_LLAMA;
    cfg->n_kv_head = h->n_kv_heads;
    cfg->head_dim = h->dim / h->n_heads;
    cfg->rope_theta = 10000.0f; /* precompute_freqs_cis's default, run.c's constant */
    cfg->rope_dim = cfg->head_dim;
    cfg->rope_pairs = TG_ROPE_ADJACENT;
    ts->n = 0;
    for (int i = 0; i < c->n_deq; i++) free(c->deq[i]); /* a second call starts over */
    c->n_deq = 0;
    c->n_repacked = 0;
    if (!(ts->t = calloc((size_t)c->n_tensors, sizeof *ts->t))) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", c->name);
    if (!c->deq && !(c->deq = calloc((size_t)c->n_tensors, sizeof *c->deq))) {
        free(ts->t), ts->t = NULL, ts->n = 0;
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", c->name);
    }
    for (int i = 0; i < c->n_tensors; i++) {
        const tg_l2c_tensor *t = &c->tensors[i];
        tg_tensor_view *v = &ts->t[ts->n++];
        v->name = t->name;
        v->n_dims = t->n_dims;
        v->ne[0] = t->n_dims == 2 ? t->shape[1] : t->shape[0];
        v->ne[1] = t->n_dims == 2 ? t->shape[0] : 1;
        v->ne[2] = v->ne[3] = 1;
        v->type = TG_GGML_F32;
        v->nbytes = t->n_elements * 4;
        v->data = t->data;
        if (t->kind == TG_L2C_Q8G && tg_l2c_q8_0_fits(c, t)) {
            tg_block_q8_0 *b = malloc((size_t)(t->n_elements / TG_QK) * sizeof *b);
            if (!b) {
                free(ts->t), ts->t = NULL, ts->n = 0;
                return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", c->name);
            }
            c->deq[c->n_deq++] = (float *)(void *)b; /* freed as any buffer of deq */
            repack_q8_0(c, t, b);
            v->type = TG_GGML_Q8_0;
            v->nbytes = t->n_elements / TG_QK * sizeof *b;
            v->data = b;
            c->n_repacked++;
        } else if (t->kind == TG_L2C_Q8G) {
            float *x = malloc((size_t)t->n_elements * sizeof *x);
            if (!x) {
                free(ts->t), ts->t = NULL, ts->n = 0;
                return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", c->name);
            }
            c->deq[c->n_deq++] = x;
            tg_l2c_to_f32(c, t, x, err);
            v->data = x;
        }
    }
    return TG_OK;
}
