/* llama.c — the `llama` binding (llama.cpp's names and metadata): config
 * from llama.* keys, typed views from any reader's tensor set, each checked
 * against the config, and the llama GGUF writer. */
#include "weights/llama.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weights/gguf.h"
#include "weights/internal.h"
#include "weights/model.h"

/* ---- config ------------------------------------------------------------------ */

tg_status tg_llama_config_check(const tg_model_config *c, const char *where, tg_err *err) {
    if (c->n_layer < 1 || c->n_layer > 4096)
        return tg_fail(err, TG_ERR_FORMAT, "%s: block count %d outside [1, 4096]", where, c->n_layer);
    if (c->n_head < 1 || c->n_head > 4096)
        return tg_fail(err, TG_ERR_FORMAT, "%s: head count %d outside [1, 4096]", where, c->n_head);
    int kvh = tg_config_n_kv_head(c), hs = tg_config_head_dim(c), d = tg_config_rope_dim(c);
    if (kvh < 1 || kvh > c->n_head || c->n_head % kvh)
        return tg_fail(err, TG_ERR_FORMAT, "%s: %d key/value heads do not divide the %d query heads",
                       where, kvh, c->n_head);
    if (c->n_embd < 1 || c->n_embd > (1 << 16))
        return tg_fail(err, TG_ERR_FORMAT, "%s: embedding length %d outside [1, 65536]", where, c->n_embd);
    if (c->head_dim <= 0 && c->n_embd % c->n_head)
        return tg_fail(err, TG_ERR_FORMAT, "%s: embedding length %d is not a multiple of the head count %d",
                       where, c->n_embd, c->n_head);
    if (hs < 2 || hs > 1024 || hs % 2 || (long)hs * c->n_head > (1L << 16))
        return tg_fail(err, TG_ERR_FORMAT, "%s: head size %d (x %d heads) is not even within [2, 1024]",
                       where, hs, c->n_head);
    if (d < 2 || d > hs || d % 2)
        return tg_fail(err, TG_ERR_FORMAT, "%s: rope dimension count %d is not even within [2, %d]",
                       where, d, hs);
    if (c->n_ctx < 1 || c->n_ctx > (1 << 20))
        return tg_fail(err, TG_ERR_FORMAT, "%s: context length %d outside [1, 1048576]", where, c->n_ctx);
    if (c->n_ff < 1 || c->n_ff > (1 << 20))
        return tg_fail(err, TG_ERR_FORMAT, "%s: feed-forward length %d outside [1, 1048576]", where, c->n_ff);
    if (c->n_vocab < 1 || c->n_vocab > (1 << 24))
        return tg_fail(err, TG_ERR_FORMAT, "%s: vocabulary size %d outside [1, 16777216]", where, c->n_vocab);
    if (!(c->ln_eps > 0 && c->ln_eps < 1))
        return tg_fail(err, TG_ERR_FORMAT, "%s: rms norm epsilon %g outside (0, 1)", where, (double)c->ln_eps);
    float th = c->rope_theta == 0.0f ? tg_config_rope_theta(c) : c->rope_theta; /* 0: the default; NaN is not */
    if (!(th > 1.0f) || !isfinite(th))
        return tg_fail(err, TG_ERR_FORMAT, "%s: rope base %g is not a finite number > 1", where, (double)th);
    if (c->rope_pairs != TG_ROPE_ADJACENT && c->rope_pairs != TG_ROPE_HALVES)
        return tg_fail(err, TG_ERR_FORMAT, "%s: unknown rope pair convention %d", where, (int)c->rope_pairs);
    return TG_OK;
}

static tg_status get_int(const tg_gguf *g, const char *key, int required, int *out, const char *path,
                         tg_err *err) {
    if (!tg_gguf_find_kv(g, key))
        return required ? tg_fail(err, TG_ERR_FORMAT, "%s: key '%s' is missing", path, key) : TG_OK;
    uint64_t v;
    tg_status s = tg_gguf_get_uint(g, key, &v, err);
    if (s) return s;
    if (v > INT32_MAX) return tg_fail(err, TG_ERR_FORMAT, "%s: key '%s' = %" PRIu64 " is too large", path, key, v);
    *out = (int)v;
    return TG_OK;
}

static tg_status get_float(const tg_gguf *g, const char *key, float *out, const char *path, tg_err *err) {
    (void)path;
    if (!tg_gguf_find_kv(g, key)) return TG_OK;
    double v;
    tg_status s = tg_gguf_get_float(g, key, &v, err);
    if (!s) *out = (float)v;
    return s;
}

tg_status tg_llama_config_from_gguf(tg_model_config *c, const tg_gguf *g, const char *path, tg_err *err) {
    memset(c, 0, sizeof *c);
    c->arch = TG_ARCH_LLAMA;
    c->rope_pairs = TG_ROPE_ADJACENT; /* what GGUF llama means (llama.cpp permuted HF's rows) */
    c->ln_eps = 1e-5f;
    c->rope_theta = 10000.0f;
    int key_len = 0, val_len = 0;
    tg_status s;
    struct { const char *key; int *dst; int req; } keys[] = {
        {"llama.block_count", &c->n_layer, 1},          {"llama.context_length", &c->n_ctx, 1},
        {"llama.embedding_length", &c->n_embd, 1},      {"llama.feed_forward_length", &c->n_ff, 1},
        {"llama.attention.head_count", &c->n_head, 1},  {"llama.attention.head_count_kv", &c->n_kv_head, 0},
        {"llama.rope.dimension_count", &c->rope_dim, 0}, {"llama.vocab_size", &c->n_vocab, 0},
        {"llama.attention.key_length", &key_len, 0},    {"llama.attention.value_length", &val_len, 0},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if ((s = get_int(g, keys[i].key, keys[i].req, keys[i].dst, path, err))) return s;
    if (key_len != val_len && key_len && val_len)
        return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: key length %d differs from value length %d", path,
                       key_len, val_len);
    c->head_dim = key_len ? key_len : val_len;
    if ((s = get_float(g, "llama.attention.layer_norm_rms_epsilon", &c->ln_eps, path, err)) ||
        (s = get_float(g, "llama.rope.freq_base", &c->rope_theta, path, err)))
        return s;
    if (tg_gguf_find_kv(g, "llama.rope.scaling.type")) {
        const char *t;
        size_t len;
        if (!tg_gguf_get_str(g, "llama.rope.scaling.type", &t, &len, err) && !(len == 4 && !memcmp(t, "none", 4)))
            return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: rope scaling '%.*s' is not supported", path,
                           (int)(len > 32 ? 32 : len), t);
    }
    /* the resolved values, so that tg_gpt_config reports them */
    c->n_kv_head = tg_config_n_kv_head(c);
    c->head_dim = tg_config_head_dim(c);
    c->rope_dim = c->rope_dim ? c->rope_dim : c->head_dim;
    return TG_OK;
}

size_t tg_llama_n_params(const tg_model_config *c, int tied) {
    size_t E = (size_t)c->n_embd, F = (size_t)c->n_ff, V = (size_t)c->n_vocab;
    size_t Q = (size_t)c->n_head * (size_t)tg_config_head_dim(c);
    size_t KV = (size_t)tg_config_n_kv_head(c) * (size_t)tg_config_head_dim(c);
    size_t per_layer = 2 * E + Q * E + 2 * KV * E + E * Q + 3 * F * E;
    return V * E + (size_t)c->n_layer * per_layer + E + (tied ? 0 : V * E);
}

/* ---- binding ------------------------------------------------------------------- */

/* One tensor of the llama layout: name, numpy-order shape, destination. */
typedef struct llama_slot {
    char name[48];
    int rows, cols;          /* cols == 0: 1-D of `rows` */
    const float **dst;       /* 1-D gains */
    tg_weight *wdst;         /* matrices */
} llama_slot;

static int n_slots(const tg_model_config *c) { return 3 + 9 * c->n_layer; }

static void slot(llama_slot *s, const char *name, int rows, int cols, const float **dst, tg_weight *wdst) {
    snprintf(s->name, sizeof s->name, "%s", name);
    s->rows = rows, s->cols = cols, s->dst = dst, s->wdst = wdst;
}

/* Fills the slots, output.weight last. */
static int fill_slots(const tg_model_config *c, tg_llama_weights *w, llama_slot *s) {
    int E = c->n_embd, F = c->n_ff, V = c->n_vocab, HS = tg_config_head_dim(c);
    int Q = c->n_head * HS, KV = tg_config_n_kv_head(c) * HS, n = 0;
    char nm[48];
    slot(&s[n++], "token_embd.weight", V, E, NULL, &w->tok_embd);
    for (int l = 0; l < c->n_layer; l++) {
        tg_llama_layer *y = &w->layers[l];
        struct { const char *part; int rows, cols; const float **d; tg_weight *wd; } parts[] = {
            {"attn_norm", E, 0, &y->attn_norm, NULL}, {"attn_q", Q, E, NULL, &y->wq},
            {"attn_k", KV, E, NULL, &y->wk},          {"attn_v", KV, E, NULL, &y->wv},
            {"attn_output", E, Q, NULL, &y->wo},      {"ffn_norm", E, 0, &y->ffn_norm, NULL},
            {"ffn_gate", F, E, NULL, &y->w1},         {"ffn_up", F, E, NULL, &y->w3},
            {"ffn_down", E, F, NULL, &y->w2},
        };
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, parts[i].part);
            slot(&s[n++], nm, parts[i].rows, parts[i].cols, parts[i].d, parts[i].wd);
        }
    }
    slot(&s[n++], "output_norm.weight", E, 0, &w->out_norm, NULL);
    slot(&s[n++], "output.weight", V, E, NULL, &w->output);
    return n;
}

static tg_wtype wtype_of(uint32_t t) {
    switch (t) {
    case TG_GGML_F16: return TG_WTYPE_F16;
    case TG_GGML_BF16: return TG_WTYPE_BF16;
    case TG_GGML_Q8_0: return TG_WTYPE_Q8_0;
    case TG_GGML_Q4_0: return TG_WTYPE_Q4_0;
    default: return TG_WTYPE_F32;
    }
}

static tg_status view_to_f32(const tg_tensor_view *v, float *out, tg_err *err) {
    tg_gguf_tensor t = {.name = v->name, .n_dims = v->n_dims, .type = v->type, .nbytes = v->nbytes,
                        .data = v->data, .n_elements = 1};
    memcpy(t.ne, v->ne, sizeof t.ne);
    for (int d = 0; d < TG_GGUF_MAX_DIMS; d++) t.n_elements *= (uint64_t)v->ne[d];
    return tg_gguf_tensor_to_f32(&t, out, err);
}

/* Whether bind_one uses t's bytes where they are (else it copies them to f32). */
static int kept_in_place(const tg_tensor_view *t, int matrix) {
    if (matrix) return (uintptr_t)t->data % (wtype_of(t->type) == TG_WTYPE_F32 ? 4 : 2) == 0;
    return t->type == TG_GGML_F32 && (uintptr_t)t->data % 4 == 0;
}

static tg_status bind_one(gpt2_store *st, const tg_tensor_view *t, const llama_slot *sl, const char *path,
                          int flags, tg_err *err) {
    int want_dims = sl->cols ? 2 : 1;
    int64_t want0 = sl->cols ? sl->cols : sl->rows, want1 = sl->cols ? sl->rows : 1;
    if (t->n_dims < 1 || t->n_dims > want_dims || (sl->cols && t->n_dims != 2) || t->ne[0] != want0 ||
        t->ne[1] != want1 || t->ne[2] != 1 || t->ne[3] != 1) {
        char want[64];
        if (sl->cols) snprintf(want, sizeof want, "[%d, %d]", sl->rows, sl->cols);
        else snprintf(want, sizeof want, "[%d]", sl->rows);
        return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' has shape [%" PRId64 ", %" PRId64 "] (ne, innermost "
                       "first), expected %s from the metadata", path, sl->name, t->ne[1], t->ne[0], want);
    }
    if (!tg_ggml_type_to_f32_ok(t->type) || (!sl->cols && t->type != TG_GGML_F32 && t->type != TG_GGML_F16 &&
                                             t->type != TG_GGML_BF16))
        return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s (F32, F16, BF16%s load)", path,
                       sl->name, tg_ggml_type_name(t->type) ? tg_ggml_type_name(t->type) : "?",
                       sl->cols ? ", Q8_0, Q4_0" : "");
    uint64_t n = (uint64_t)want0 * (uint64_t)want1;
    if (!(flags & TG_LOAD_NO_CHECK)) {
        tg_status s = gpt2_check_finite(t->type, t->data, n, path, sl->name, err);
        if (s) return s;
    }
    tg_wtype wt = wtype_of(t->type);
    if (sl->cols) {
        size_t rb = tg_wtype_row_bytes(wt, sl->cols);
        if (!rb || rb * (size_t)sl->rows != t->nbytes)
            return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s': %" PRIu64 " bytes do not hold [%d, %d] %s", path,
                           sl->name, t->nbytes, sl->rows, sl->cols, tg_wtype_name(wt));
        if (kept_in_place(t, 1)) {
            *sl->wdst = (tg_weight){wt, t->data, sl->rows, sl->cols, rb};
            return TG_OK;
        }
    } else if (kept_in_place(t, 0)) {
        *sl->dst = t->data;
        return TG_OK;
    }
    float *p = store_alloc(st, (size_t)n);
    if (!p) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory for tensor '%s'", path, sl->name);
    tg_status s = view_to_f32(t, p, err);
    if (sl->cols) *sl->wdst = tg_weight_f32(p, sl->rows, sl->cols);
    else *sl->dst = p;
    return s;
}

tg_status tg_llama_bind(tg_model *m, const tg_tensor_set *ts, int flags, tg_err *err) {
    const char *path = m->path ? m->path : "model";
    gpt2_store *st = m->priv;
    tg_model_config *c = &m->cfg;
    tg_status s;
    c->arch = TG_ARCH_LLAMA;
    const tg_tensor_view *te = tg_tensor_set_find(ts, "token_embd.weight");
    if (!te) return tg_fail(err, TG_ERR_FORMAT, "%s: tensor 'token_embd.weight' is missing", path);
    if (te->n_dims != 2 || te->ne[1] < 1 || te->ne[1] > (1 << 24))
        return tg_fail(err, TG_ERR_FORMAT, "%s: tensor 'token_embd.weight' is not a [V, E] matrix", path);
    if (c->n_vocab && c->n_vocab != te->ne[1])
        return tg_fail(err, TG_ERR_FORMAT, "%s: the metadata says %d tokens but token_embd.weight has %" PRId64
                       " rows", path, c->n_vocab, te->ne[1]);
    c->n_vocab = (int)te->ne[1];
    if ((s = tg_llama_config_check(c, path, err))) return s;
    c->n_kv_head = tg_config_n_kv_head(c);
    c->head_dim = tg_config_head_dim(c);
    c->rope_dim = tg_config_rope_dim(c);
    c->rope_theta = tg_config_rope_theta(c);
    for (int i = 0; i < ts->n; i++) {
        int layer;
        if (sscanf(ts->t[i].name, "blk.%d.", &layer) == 1 && (layer < 0 || layer >= c->n_layer))
            return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' is for layer %d but the block count is %d", path,
                           ts->t[i].name, layer, c->n_layer);
    }
    if (!st) return tg_fail(err, TG_ERR_ARG, "%s: the model has no store", path);
    tg_llama_weights *w = &m->llama;
    if (!(w->layers = calloc((size_t)c->n_layer, sizeof *w->layers)))
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    int n = n_slots(c);
    llama_slot *slots = malloc((size_t)n * sizeof *slots);
    if (!slots) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    fill_slots(c, w, slots);
    w->tied = 0;
    for (int i = 0; i < n && !s; i++) {
        const tg_tensor_view *t = tg_tensor_set_find(ts, slots[i].name);
        if (!t && i == n - 1) {
            w->tied = 1;
            break;
        }
        if (!t) s = tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' is missing", path, slots[i].name);
        else s = bind_one(st, t, &slots[i], path, flags, err);
    }
    free(slots);
    if (s) return s;
    if (w->tied) w->output = w->tok_embd;
    m->has_weights = 1;
    return TG_OK;
}

tg_status tg_llama_resident(const tg_model_config *c, const tg_tensor_set *ts, uint64_t *out,
                            tg_err *err) {
    if (c->n_layer < 0 || c->n_layer > (1 << 16))
        return tg_fail(err, TG_ERR_ARG, "llama: %d layers", c->n_layer);
    tg_llama_weights w = {0};
    int n = n_slots(c);
    llama_slot *slots = malloc((size_t)n * sizeof *slots);
    w.layers = calloc(c->n_layer ? (size_t)c->n_layer : 1, sizeof *w.layers);
    if (!slots || !w.layers) {
        free(slots), free(w.layers);
        return tg_fail(err, TG_ERR_NOMEM, "llama: out of memory");
    }
    fill_slots(c, &w, slots);
    for (int i = 0; i < ts->n; i++) {
        const tg_tensor_view *t = &ts->t[i];
        const llama_slot *sl = NULL;
        for (int k = 0; k < n && !sl; k++)
            if (!strcmp(slots[k].name, t->name)) sl = &slots[k];
        uint64_t ne = 1;
        for (int d = 0; d < 4; d++) ne *= (uint64_t)t->ne[d];
        out[i] = !sl ? 0 : kept_in_place(t, sl->cols > 0) ? t->nbytes : 4 * ne;
    }
    free(slots);
    free(w.layers);
    return TG_OK;
}

tg_status llama_bind_gguf(tg_model *m, const char *path, int flags, tg_err *err) {
    const tg_gguf *g = ((gpt2_store *)m->priv)->gguf;
    tg_status s;
    int vocab_only = flags & TG_LOAD_VOCAB_ONLY;
    if ((s = wt_vocab_from_gguf(&m->vocab, g, path, vocab_only, err))) return s;
    if ((s = tg_llama_config_from_gguf(&m->cfg, g, path, err))) {
        if (!vocab_only) return s;
        memset(&m->cfg, 0, sizeof m->cfg); /* informative only for a vocab-only load */
        m->cfg.arch = TG_ARCH_LLAMA;
    }
    if (vocab_only) {
        if (m->vocab.n_tokens) m->cfg.n_vocab = m->vocab.n_tokens;
        return TG_OK;
    }
    tg_tensor_set ts;
    if ((s = tg_tensor_set_gguf(&ts, g, err))) return s;
    s = tg_llama_bind(m, &ts, flags, err);
    tg_tensor_set_free(&ts);
    if (s) return s;
    if (m->vocab.n_tokens && m->vocab.n_tokens != m->cfg.n_vocab)
        return tg_fail(err, TG_ERR_FORMAT, "%s: the tokenizer has %d tokens but token_embd.weight has %d rows", path,
                       m->vocab.n_tokens, m->cfg.n_vocab);
    return TG_OK;
}

/* ---- writer ------------------------------------------------------------------ */

static uint32_t file_type(int d) {
    switch (d) {
    case TG_DTYPE_F16: return 1;
    case TG_DTYPE_Q4_0: return 2;
    case TG_DTYPE_Q8_0: return 7;
    case TG_DTYPE_BF16: return 32;
    default: return 0;
    }
}

/* The source row of adjacent-order row r of a [n_heads·HS, IN] Q or K
 * matrix stored in halves order: within a head's first D rows, adjacent
 * row 2i + j is halves row j·D/2 + i (llama.cpp's permute); rows from D on
 * are not rotated and keep their place. */
static int halves_row(int r, int hs, int d) {
    int h = r / hs, i = r % hs;
    if (i >= d) return r;
    return h * hs + (i % 2) * (d / 2) + i / 2;
}

static int known_dtype(int d) {
    return d == TG_DTYPE_F32 || d == TG_DTYPE_F16 || d == TG_DTYPE_BF16 || d == TG_DTYPE_Q8_0 || d == TG_DTYPE_Q4_0;
}

static int block_dtype(int d) { return d == TG_DTYPE_Q8_0 || d == TG_DTYPE_Q4_0; }

#define pick_dtype wt_pick_dtype

/* Adds a matrix in type dt; perm_hs > 0 permutes its rows from halves order. */
static tg_status add_matrix(tg_gguf_writer *gw, const char *name, const tg_weight *v, int rows, int cols, int dt,
                            int perm_hs, int perm_d, tg_err *err) {
    if (!v->data) return tg_fail(err, TG_ERR_ARG, "llama writer: tensor '%s' is NULL", name);
    if (v->rows != rows || v->cols != cols || (unsigned)v->type >= TG_WTYPE_COUNT ||
        v->row_bytes < tg_wtype_row_bytes(v->type, cols) || !tg_wtype_row_bytes(v->type, cols))
        return tg_fail(err, TG_ERR_ARG, "llama writer: tensor '%s' is a [%d, %d] view, expected [%d, %d]", name,
                       v->rows, v->cols, rows, cols);
    int64_t ne[2] = {cols, rows};
    size_t rb = tg_wtype_row_bytes(v->type, cols);
    if (wtype_of((uint32_t)dt) == v->type && !perm_hs && v->row_bytes == rb) /* as it is */
        return tg_gguf_add_tensor_raw(gw, name, 2, ne, (uint32_t)dt, v->data, err);
    float *f = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
    if (!f) return tg_fail(err, TG_ERR_NOMEM, "llama writer: out of memory for '%s'", name);
    for (int r = 0; r < rows; r++) {
        int src = perm_hs ? halves_row(r, perm_hs, perm_d) : r;
        tg_dequantize_row(v->type, f + (size_t)r * cols, (const char *)v->data + (size_t)src * v->row_bytes, cols);
    }
    return tg_gguf_add_tensor_f32_owned(gw, name, 2, ne, f, (uint32_t)dt, err);
}

tg_status tg_llama_to_gguf(tg_gguf_writer *gw, const tg_model_config *cfg, const tg_llama_weights *w,
                           const tg_vocab *vocab, int dtype, tg_err *err) {
    return tg_llama_to_gguf_ex(gw, cfg, w, vocab, dtype, dtype, 0, NULL, err);
}

tg_status tg_llama_to_gguf_ex(tg_gguf_writer *gw, const tg_model_config *cfg, const tg_llama_weights *w,
                              const tg_vocab *vocab, int dtype, int out_dtype, int flags, int *n_fallback,
                              tg_err *err) {
    tg_status s;
    if (n_fallback) *n_fallback = 0;
    if (!known_dtype(dtype)) return tg_fail(err, TG_ERR_ARG, "llama writer: unknown dtype %d", dtype);
    if (!known_dtype(out_dtype)) return tg_fail(err, TG_ERR_ARG, "llama writer: unknown output dtype %d", out_dtype);
    if ((s = tg_llama_config_check(cfg, "llama writer", err))) return s;
    int E = cfg->n_embd, F = cfg->n_ff, V = cfg->n_vocab, HS = tg_config_head_dim(cfg);
    int H = cfg->n_head, KVH = tg_config_n_kv_head(cfg), D = tg_config_rope_dim(cfg);
    int block = block_dtype(dtype) || block_dtype(out_dtype);
    int fallback = flags & TG_LLAMA_WRITE_F16_FALLBACK;
    if (block && !fallback && (E % 32 || F % 32 || (H * HS) % 32))
        return tg_fail(err, TG_ERR_ARG, "llama writer: %s needs the width (%d), feed-forward length (%d) and "
                       "H·HS (%d) to be multiples of 32",
                       tg_ggml_type_name((uint32_t)(block_dtype(dtype) ? dtype : out_dtype)), E, F, H * HS);
    if (!w || !w->layers || !w->out_norm) return tg_fail(err, TG_ERR_ARG, "llama writer: incomplete weights");
    if (vocab && vocab->n_tokens && vocab->n_tokens != V)
        return tg_fail(err, TG_ERR_ARG, "llama writer: the vocabulary has %d tokens but the config says %d",
                       vocab->n_tokens, V);
    if ((s = tg_gguf_set_str(gw, "general.architecture", "llama", err)) ||
        (s = tg_gguf_set_str(gw, "general.name", "tinygpt", err)) ||
        (s = tg_gguf_set_u32(gw, "general.file_type", file_type(dtype), err)) ||
        (s = tg_gguf_set_u32(gw, "llama.context_length", (uint32_t)cfg->n_ctx, err)) ||
        (s = tg_gguf_set_u32(gw, "llama.embedding_length", (uint32_t)E, err)) ||
        (s = tg_gguf_set_u32(gw, "llama.block_count", (uint32_t)cfg->n_layer, err)) ||
        (s = tg_gguf_set_u32(gw, "llama.feed_forward_length", (uint32_t)F, err)) ||
        (s = tg_gguf_set_u32(gw, "llama.attention.head_count", (uint32_t)H, err)) ||
        (s = tg_gguf_set_u32(gw, "llama.attention.head_count_kv", (uint32_t)KVH, err)) ||
        (s = tg_gguf_set_f32(gw, "llama.attention.layer_norm_rms_epsilon", cfg->ln_eps, err)) ||
        (s = tg_gguf_set_f32(gw, "llama.rope.freq_base", tg_config_rope_theta(cfg), err)) ||
        (s = tg_gguf_set_u32(gw, "llama.rope.dimension_count", (uint32_t)D, err)) ||
        (s = tg_gguf_set_u32(gw, "llama.vocab_size", (uint32_t)V, err)))
        return s;
    if (HS * H != E && ((s = tg_gguf_set_u32(gw, "llama.attention.key_length", (uint32_t)HS, err)) ||
                        (s = tg_gguf_set_u32(gw, "llama.attention.value_length", (uint32_t)HS, err))))
        return s;
    /* the tokenizer: whatever the vocabulary writer of weights/ writes (l11b
     * extends it for tokenizer.ggml.model = llama) */
    if (vocab && vocab->n_tokens && (s = wt_vocab_to_gguf(gw, vocab, err))) return s;

    int perm = cfg->rope_pairs == TG_ROPE_HALVES ? HS : 0;
    /* a tied model has no output.weight: token_embd is the LM head too and
     * takes its type (llama.cpp's quantize does the same) */
    int tok_dt = pick_dtype(w->tied ? out_dtype : dtype, E, fallback, n_fallback);
    if ((s = add_matrix(gw, "token_embd.weight", &w->tok_embd, V, E, tok_dt, 0, 0, err))) return s;
    char nm[48];
    for (int l = 0; l < cfg->n_layer && !s; l++) {
        const tg_llama_layer *y = &w->layers[l];
        const float *gains[2] = {y->attn_norm, y->ffn_norm};
        const char *gnames[2] = {"attn_norm", "ffn_norm"};
        for (int k = 0; k < 2 && !s; k++) {
            snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, gnames[k]);
            if (!gains[k]) return tg_fail(err, TG_ERR_ARG, "llama writer: tensor '%s' is NULL", nm);
            int64_t ne[1] = {E};
            s = tg_gguf_add_tensor_f32(gw, nm, 1, ne, gains[k], TG_GGML_F32, err);
        }
        struct { const char *part; const tg_weight *v; int rows, cols, perm; } mats[] = {
            {"attn_q", &y->wq, H * HS, E, perm},   {"attn_k", &y->wk, KVH * HS, E, perm},
            {"attn_v", &y->wv, KVH * HS, E, 0},    {"attn_output", &y->wo, E, H * HS, 0},
            {"ffn_gate", &y->w1, F, E, 0},         {"ffn_up", &y->w3, F, E, 0},
            {"ffn_down", &y->w2, E, F, 0},
        };
        for (size_t i = 0; i < sizeof mats / sizeof mats[0] && !s; i++) {
            snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, mats[i].part);
            int dt = pick_dtype(dtype, mats[i].cols, fallback, n_fallback);
            s = add_matrix(gw, nm, mats[i].v, mats[i].rows, mats[i].cols, dt, mats[i].perm, D, err);
        }
    }
    if (s) return s;
    int64_t ne[1] = {E};
    if ((s = tg_gguf_add_tensor_f32(gw, "output_norm.weight", 1, ne, w->out_norm, TG_GGML_F32, err))) return s;
    if (!w->tied)
        s = add_matrix(gw, "output.weight", &w->output, V, E, pick_dtype(out_dtype, E, fallback, n_fallback), 0, 0,
                       err);
    return s;
}

tg_status tg_llama_save(const char *path, const tg_model_config *cfg, const tg_llama_weights *w,
                        const tg_vocab *vocab, int dtype, tg_err *err) {
    tg_gguf_writer *gw;
    tg_status s = tg_gguf_writer_new(&gw, err);
    if (s) return s;
    s = tg_llama_to_gguf(gw, cfg, w, vocab, dtype, err);
    if (!s) s = tg_gguf_write(gw, path, err);
    tg_gguf_writer_free(gw);
    return s;
}
