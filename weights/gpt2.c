/* gpt2.c — the `gpt2` binding of GGUF (llama.cpp's conventions): config
 * from metadata, weights looked up by name and checked against the config,
 * the tokenizer, and the writer side. */
#include "weights/gpt2.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/mem.h"
#include "weights/file.h"
#include "weights/finite.h"
#include "weights/gguf.h"
#include "weights/internal.h"

/* ---- shared helpers -------------------------------------------------------- */

float *store_alloc(gpt2_store *st, size_t n) {
    if (st->n_bufs == st->cap_bufs) {
        size_t cap = st->cap_bufs ? st->cap_bufs * 2 : 64;
        float **b = realloc(st->bufs, cap * sizeof *b);
        if (!b) return NULL;
        st->bufs = b;
        st->cap_bufs = cap;
    }
    float *p = tg_alloc_large(n ? n * sizeof(float) : sizeof(float)); /* huge pages */
    if (p) st->bufs[st->n_bufs++] = p;
    return p;
}

char *wt_read_file(const char *path, size_t max, size_t *len, tg_err *err) {
    struct stat st;
    int fd = wt_open_regular(path, &st, err);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path), NULL;
    }
    if ((uint64_t)st.st_size > max) {
        fclose(f);
        tg_fail(err, TG_ERR_FORMAT, "%s: %lld bytes is more than the %zu allowed", path,
                (long long)st.st_size, max);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    char *b = malloc(n + 1);
    if (!b) {
        fclose(f);
        tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    size_t got = fread(b, 1, n, f);
    int bad = ferror(f) || got != n;
    fclose(f);
    if (bad) {
        free(b);
        tg_fail(err, TG_ERR_IO, "%s: read error", path);
        return NULL;
    }
    b[n] = 0;
    *len = n;
    return b;
}

void gpt2_byte_token(int b, char out[3]) {
    /* bytes_to_unicode(): printable Latin-1 bytes map to themselves, the rest
     * (0-32, 127-160, 173) to 256, 257, ... in byte order */
    int printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    int cp = b;
    if (!printable) {
        int n = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= '!' && x <= '~') || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff))) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        out[2] = 0;
    }
}

/* ---- the tensor layout ------------------------------------------------------ */

static const char *const layer_parts[12] = {
    "attn_norm.weight", "attn_norm.bias", "attn_qkv.weight", "attn_qkv.bias",
    "attn_output.weight", "attn_output.bias", "ffn_norm.weight", "ffn_norm.bias",
    "ffn_up.weight", "ffn_up.bias", "ffn_down.weight", "ffn_down.bias"};

int gpt2_n_slots(const tg_gpt2_config *cfg) { return 5 + 12 * cfg->n_layer; }

static void slot(gpt2_slot *s, const char *name, int layer, const char *part, const float **dst,
                 tg_weight *wdst, int64_t rows, int64_t cols) {
    snprintf(s->name, sizeof s->name, "%s", name);
    s->layer = layer;
    s->part = part;
    s->dst = dst;
    s->wdst = wdst;
    s->n_dims = cols ? 2 : 1;
    s->shape[0] = rows;
    s->shape[1] = cols;
}

int gpt2_slots(const tg_gpt2_config *c, tg_gpt2_weights *w, gpt2_slot *s) {
    int64_t E = c->n_embd, F = c->n_ff, V = c->n_vocab, C = c->n_ctx;
    int n = 0;
    slot(&s[n++], "token_embd.weight", -1, "token_embd.weight", NULL, &w->wte, V, E);
    slot(&s[n++], "position_embd.weight", -1, "position_embd.weight", &w->wpe, NULL, C, E);
    for (int l = 0; l < c->n_layer; l++) {
        tg_gpt2_layer *L = &w->layers[l];
        const float **dst[12] = {&L->ln1_w, &L->ln1_b, NULL, &L->qkv_b, NULL, &L->proj_b,
                                 &L->ln2_w, &L->ln2_b, NULL, &L->up_b, NULL, &L->down_b};
        tg_weight *wdst[12] = {NULL, NULL, &L->qkv_w, NULL, &L->proj_w, NULL,
                               NULL, NULL, &L->up_w, NULL, &L->down_w, NULL};
        const int64_t rows[12] = {E, E, 3 * E, 3 * E, E, E, E, E, F, F, E, E};
        const int64_t cols[12] = {0, 0, E, 0, E, 0, 0, 0, E, 0, F, 0};
        for (int k = 0; k < 12; k++) {
            char name[48];
            snprintf(name, sizeof name, "blk.%d.%s", l, layer_parts[k]);
            slot(&s[n++], name, l, layer_parts[k], dst[k], wdst[k], rows[k], cols[k]);
        }
    }
    slot(&s[n++], "output_norm.weight", -1, "output_norm.weight", &w->lnf_w, NULL, E, 0);
    slot(&s[n++], "output_norm.bias", -1, "output_norm.bias", &w->lnf_b, NULL, E, 0);
    slot(&s[n++], "output.weight", -1, "output.weight", NULL, &w->lm_head, V, E);
    return n;
}

void gpt2_slot_set_f32(const gpt2_slot *s, const float *data) {
    if (s->wdst) *s->wdst = tg_weight_f32(data, (int)s->shape[0], (int)s->shape[1]);
    else *s->dst = data;
}

const void *gpt2_slot_data(const gpt2_slot *s) { return s->wdst ? s->wdst->data : *s->dst; }

size_t tg_gpt2_n_params(const tg_gpt2_config *c, int tied) {
    size_t E = (size_t)c->n_embd, F = (size_t)c->n_ff, V = (size_t)c->n_vocab, C = (size_t)c->n_ctx;
    size_t per_layer = 2 * E + 3 * E * E + 3 * E + E * E + E + 2 * E + F * E + F + E * F + E;
    return V * E + C * E + (size_t)c->n_layer * per_layer + 2 * E + (tied ? 0 : V * E);
}

tg_status tg_gpt2_config_check(const tg_gpt2_config *c, const char *where, tg_err *err) {
    if (c->n_layer < 1 || c->n_layer > 4096)
        return tg_fail(err, TG_ERR_FORMAT, "%s: block count %d outside [1, 4096]", where, c->n_layer);
    if (c->n_head < 1 || c->n_head > 4096)
        return tg_fail(err, TG_ERR_FORMAT, "%s: head count %d outside [1, 4096]", where, c->n_head);
    if (c->n_embd < 1 || c->n_embd > (1 << 16))
        return tg_fail(err, TG_ERR_FORMAT, "%s: embedding length %d outside [1, 65536]", where, c->n_embd);
    if (c->n_embd % c->n_head)
        return tg_fail(err, TG_ERR_FORMAT, "%s: embedding length %d is not a multiple of the head count %d",
                       where, c->n_embd, c->n_head);
    if (c->n_ctx < 1 || c->n_ctx > (1 << 20))
        return tg_fail(err, TG_ERR_FORMAT, "%s: context length %d outside [1, 1048576]", where, c->n_ctx);
    if (c->n_ff < 1 || c->n_ff > (1 << 20))
        return tg_fail(err, TG_ERR_FORMAT, "%s: feed-forward length %d outside [1, 1048576]", where, c->n_ff);
    if (c->n_vocab < 1 || c->n_vocab > (1 << 24))
        return tg_fail(err, TG_ERR_FORMAT, "%s: vocabulary size %d outside [1, 16777216]", where, c->n_vocab);
    if (!(c->ln_eps > 0 && c->ln_eps < 1))
        return tg_fail(err, TG_ERR_FORMAT, "%s: layer_norm_epsilon %g outside (0, 1)", where, (double)c->ln_eps);
    return TG_OK;
}

/* ---- vocabulary ------------------------------------------------------------- */

tg_status tg_vocab_bytes(tg_vocab *v, tg_err *err) {
    memset(v, 0, sizeof *v);
    v->bos_id = v->eos_id = 256;
    v->tokens = calloc(257, sizeof *v->tokens);
    v->token_type = calloc(257, sizeof *v->token_type);
    v->pre = strdup("gpt-2");
    if (!v->tokens || !v->token_type || !v->pre) goto oom;
    v->n_tokens = 257;
    for (int b = 0; b < 256; b++) {
        char t[3];
        gpt2_byte_token(b, t);
        if (!(v->tokens[b] = strdup(t))) goto oom;
        v->token_type[b] = 1;
    }
    if (!(v->tokens[256] = strdup("<|endoftext|>"))) goto oom;
    v->token_type[256] = 3;
    return TG_OK;
oom:
    tg_vocab_free(v);
    return tg_fail(err, TG_ERR_NOMEM, "byte vocabulary: out of memory");
}

/* tokenizer.ggml.* -> vocab (weights/vocab.c reads gpt2 and llama ones). */
tg_status wt_vocab_from_gguf(tg_vocab *v, const tg_gguf *g, const char *path, int required, tg_err *err) {
    tg_status s = tg_vocab_from_gguf(v, g, path, err);
    if (!s && required && v->n_tokens == 0)
        return tg_fail(err, TG_ERR_FORMAT, "%s: no tokenizer (key 'tokenizer.ggml.model' missing)", path);
    return s;
}

/* ---- GGUF -> model ---------------------------------------------------------- */

static tg_status get_int_key(const tg_gguf *g, const char *key, int *out, const char *path, tg_err *err) {
    uint64_t v;
    if (!tg_gguf_find_kv(g, key)) return tg_fail(err, TG_ERR_FORMAT, "%s: key '%s' is missing", path, key);
    tg_status s = tg_gguf_get_uint(g, key, &v, err);
    if (s) return s;
    if (v > INT32_MAX) return tg_fail(err, TG_ERR_FORMAT, "%s: key '%s' = %" PRIu64 " is too large", path, key, v);
    *out = (int)v;
    return TG_OK;
}

static tg_status config_from_gguf(tg_gpt2_config *c, const tg_gguf *g, const char *path, tg_err *err) {
    const char *arch;
    size_t len;
    tg_status s = tg_gguf_get_str(g, "general.architecture", &arch, &len, err);
    if (s == TG_ERR_ARG) return tg_fail(err, TG_ERR_FORMAT, "%s: key 'general.architecture' is missing", path);
    if (s) return s;
    if (len != 4 || memcmp(arch, "gpt2", 4))
        return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: architecture '%.*s' is not supported (gpt2, llama)", path,
                       (int)(len > 64 ? 64 : len), arch);
    struct { const char *key; int *dst; } keys[] = {
        {"gpt2.block_count", &c->n_layer},         {"gpt2.context_length", &c->n_ctx},
        {"gpt2.embedding_length", &c->n_embd},     {"gpt2.feed_forward_length", &c->n_ff},
        {"gpt2.attention.head_count", &c->n_head},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if ((s = get_int_key(g, keys[i].key, keys[i].dst, path, err))) return s;
    double eps;
    if (!tg_gguf_find_kv(g, "gpt2.attention.layer_norm_epsilon"))
        return tg_fail(err, TG_ERR_FORMAT, "%s: key 'gpt2.attention.layer_norm_epsilon' is missing", path);
    if ((s = tg_gguf_get_float(g, "gpt2.attention.layer_norm_epsilon", &eps, err))) return s;
    c->ln_eps = (float)eps;
    return TG_OK;
}

/* Finds a tensor and checks its shape (numpy order) against the config. */
static tg_status find_checked(const tg_gguf *g, const gpt2_slot *sl, const char *path,
                              const tg_gguf_tensor **out, tg_err *err) {
    const tg_gguf_tensor *t = tg_gguf_find_tensor(g, sl->name);
    *out = t;
    if (!t) return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' is missing", path, sl->name);
    /* GGUF stores innermost first: numpy [rows, cols] is ne = {cols, rows} */
    int64_t want0 = sl->n_dims == 2 ? sl->shape[1] : sl->shape[0];
    int64_t want1 = sl->n_dims == 2 ? sl->shape[0] : 1;
    int nd = t->n_dims;
    int ok = nd >= 1 && t->ne[0] == want0 && t->ne[1] == want1 && t->ne[2] == 1 && t->ne[3] == 1 && nd <= 2;
    if (sl->n_dims == 2 && nd != 2) ok = 0;
    if (!ok) {
        char want[64];
        if (sl->n_dims == 2) snprintf(want, sizeof want, "[%" PRId64 ", %" PRId64 "]", sl->shape[0], sl->shape[1]);
        else snprintf(want, sizeof want, "[%" PRId64 "]", sl->shape[0]);
        char got[96] = "[";
        for (int d = nd - 1; d >= 0; d--) {
            size_t l = strlen(got);
            snprintf(got + l, sizeof got - l, "%" PRId64 "%s", t->ne[d], d ? ", " : "");
        }
        strcat(got, "]");
        return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected %s from the metadata", path,
                       sl->name, got, want);
    }
    if (!tg_ggml_type_to_f32_ok(t->type))
        return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s (F32, F16, BF16, Q8_0, Q4_0 load)", path,
                       sl->name, tg_ggml_type_name(t->type));
    return TG_OK;
}

tg_status gpt2_check_finite(uint32_t type, const void *data, uint64_t n, const char *path,
                            const char *name, tg_err *err) {
    const char *what = "";
    int64_t at = tg_find_nonfinite(type, data, n, &what);
    if (at < 0) return TG_OK; /* -2: a type without a scan; none of the types that load */
    return tg_fail(err, TG_ERR_NUMERIC,
                   "%s: tensor '%s' holds a non-finite value (%s) at index %" PRId64
                   " (--no-check loads it anyway)",
                   path, name, what, at);
}

/* The engine's type for a ggml type that loads. */
static tg_wtype wtype_of(uint32_t ggml_type) {
    switch (ggml_type) {
    case TG_GGML_F16: return TG_WTYPE_F16;
    case TG_GGML_BF16: return TG_WTYPE_BF16;
    case TG_GGML_Q8_0: return TG_WTYPE_Q8_0;
    case TG_GGML_Q4_0: return TG_WTYPE_Q4_0;
    default: return TG_WTYPE_F32;
    }
}

/* A matrix as a typed view into the mapping, in the file's type (a
 * misaligned F32/F16/BF16 tensor, possible only at alignments GGUF writers
 * never use, is converted to f32 instead). */
static tg_status matrix_view(gpt2_store *st, const tg_gguf_tensor *t, const gpt2_slot *sl, const char *path,
                             tg_err *err) {
    tg_wtype wt = wtype_of(t->type);
    int rows = (int)sl->shape[0], cols = (int)sl->shape[1];
    size_t rb = tg_wtype_row_bytes(wt, cols);
    if (!rb || rb * (size_t)rows != t->nbytes) /* the reader checked it; never trust twice-derived sizes */
        return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s': %" PRIu64 " bytes do not hold [%d, %d] %s", path,
                       t->name, t->nbytes, rows, cols, tg_wtype_name(wt));
    size_t align = wt == TG_WTYPE_F32 ? 4 : 2;
    if ((uintptr_t)t->data % align == 0) {
        tg_weight v = {wt, t->data, rows, cols, rb};
        *sl->wdst = v;
        return TG_OK;
    }
    float *p = store_alloc(st, (size_t)t->n_elements);
    if (!p) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory for tensor '%s'", path, t->name);
    tg_status s = tg_gguf_tensor_to_f32(t, p, err);
    gpt2_slot_set_f32(sl, p);
    return s;
}

/* A tensor's values as f32: in place when it is aligned F32, else converted. */
static tg_status tensor_view(gpt2_store *st, const tg_gguf_tensor *t, const float **out, const char *path, tg_err *err) {
    if (t->type == TG_GGML_F32 && ((uintptr_t)t->data % sizeof(float)) == 0) {
        *out = t->data;
        return TG_OK;
    }
    float *p = store_alloc(st, (size_t)t->n_elements);
    if (!p) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory for tensor '%s'", path, t->name);
    tg_status s = tg_gguf_tensor_to_f32(t, p, err);
    *out = p;
    return s;
}

/* Binds an opened GGUF (owned by the store from here on) to m. */
tg_status gpt2_bind_gguf(tg_gpt2_model *m, const char *path, int flags, tg_err *err) {
    int vocab_only = flags & TG_LOAD_VOCAB_ONLY;
    gpt2_store *st = m->priv;
    tg_status s;
    const tg_gguf *g = st->gguf;
    if ((s = wt_vocab_from_gguf(&m->vocab, g, path, vocab_only, err))) return s;
    if (vocab_only) {
        /* the config is informative only here; a vocab-only file may lack it */
        if (tg_gguf_find_kv(g, "general.architecture") && tg_gguf_find_kv(g, "gpt2.block_count")) {
            tg_err ignored;
            if (config_from_gguf(&m->cfg, g, path, &ignored)) memset(&m->cfg, 0, sizeof m->cfg);
        }
        m->cfg.n_vocab = m->vocab.n_tokens;
        return TG_OK;
    }
    if ((s = config_from_gguf(&m->cfg, g, path, err))) return s;
    /* the vocabulary size comes from token_embd (ne = {E, V}) */
    const tg_gguf_tensor *te = tg_gguf_find_tensor(g, "token_embd.weight");
    if (!te) return tg_fail(err, TG_ERR_FORMAT, "%s: tensor 'token_embd.weight' is missing", path);
    if (te->n_dims != 2 || te->ne[1] < 1 || te->ne[1] > (1 << 24))
        return tg_fail(err, TG_ERR_FORMAT, "%s: tensor 'token_embd.weight' is not a [V, E] matrix", path);
    m->cfg.n_vocab = (int)te->ne[1];
    if ((s = tg_gpt2_config_check(&m->cfg, path, err))) return s;
    if (m->vocab.n_tokens && m->vocab.n_tokens != m->cfg.n_vocab)
        return tg_fail(err, TG_ERR_FORMAT, "%s: the tokenizer has %d tokens but token_embd.weight has %d rows", path,
                       m->vocab.n_tokens, m->cfg.n_vocab);

    /* tensors of layers past the block count: the metadata and the weights disagree */
    for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
        const char *nm = tg_gguf_tensor_at(g, i)->name;
        int layer;
        if (sscanf(nm, "blk.%d.", &layer) == 1 && layer >= m->cfg.n_layer)
            return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' is for layer %d but gpt2.block_count is %d", path,
                           nm, layer, m->cfg.n_layer);
    }
    if (!(m->w.layers = calloc((size_t)m->cfg.n_layer, sizeof *m->w.layers)))
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    int n = gpt2_n_slots(&m->cfg);
    gpt2_slot *slots = malloc((size_t)n * sizeof *slots);
    if (!slots) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    gpt2_slots(&m->cfg, &m->w, slots);
    const tg_gguf_tensor *out_t = NULL;
    for (int i = 0; i < n && !s; i++) {
        const tg_gguf_tensor *t;
        int is_output = i == n - 1;
        if (is_output && !tg_gguf_find_tensor(g, slots[i].name)) break; /* absent: tied */
        if ((s = find_checked(g, &slots[i], path, &t, err))) break;
        if (is_output) out_t = t;
        if (!(flags & TG_LOAD_NO_CHECK) &&
            (s = gpt2_check_finite(t->type, t->data, t->n_elements, path, t->name, err)))
            break;
        s = slots[i].wdst ? matrix_view(st, t, &slots[i], path, err)
                          : tensor_view(st, t, slots[i].dst, path, err);
    }
    free(slots);
    if (s) return s;
    m->w.tied = out_t == NULL;
    if (out_t) {
        /* written tied by us: share token_embd again if the bytes agree */
        int tied = 0;
        const tg_gguf_kv *kv = tg_gguf_find_kv(g, "tinygpt.tied_embeddings");
        if (kv && kv->type == TG_GGUF_BOOL && kv->data[0] && out_t->type == te->type &&
            out_t->nbytes == te->nbytes && !memcmp(out_t->data, te->data, (size_t)te->nbytes))
            tied = 1;
        if (tied) {
            m->w.lm_head = m->w.wte;
            m->w.tied = 1;
        }
    } else {
        m->w.lm_head = m->w.wte;
    }
    m->has_weights = 1;
    return TG_OK;
}


tg_status gpt2_load_gguf_buffer(tg_gpt2_model *m, const void *buf, size_t len, int flags, tg_err *err) {
    memset(m, 0, sizeof *m);
    m->vocab.bos_id = m->vocab.eos_id = -1;
    tg_status s;
    if (!(m->path = strdup("<memory>")) || !(m->priv = calloc(1, sizeof(gpt2_store)))) {
        s = tg_fail(err, TG_ERR_NOMEM, "out of memory");
    } else {
        gpt2_store *st = m->priv;
        s = tg_gguf_parse(&st->gguf, buf, len, m->path, err);
        if (!s) s = wt_bind_gguf(m, m->path, flags, err);
    }
    if (s) tg_gpt2_free(m);
    return s;
}

tg_status tg_gpt2_load(tg_gpt2_model *m, const char *path, int flags, tg_err *err) {
    tg_status s = tg_model_load(m, path, flags, err);
    if (s || m->cfg.arch == TG_ARCH_GPT2) return s;
    s = tg_fail(err, TG_ERR_UNSUPPORTED, "%s: a %s model; this needs a gpt2 model", path,
                tg_arch_name(m->cfg.arch));
    tg_gpt2_free(m);
    return s;
}

void tg_gpt2_free(tg_gpt2_model *m) {
    if (!m) return;
    gpt2_store *st = m->priv;
    if (st) {
        tg_gguf_close(st->gguf);
        if (st->reader_close) st->reader_close(st->reader);
        for (size_t i = 0; i < st->n_bufs; i++) free(st->bufs[i]);
        free(st->bufs);
        free(st);
    }
    tg_vocab_free(&m->vocab);
    free(m->w.layers);
    free(m->llama.layers);
    free(m->path);
    memset(m, 0, sizeof *m);
    m->vocab.bos_id = m->vocab.eos_id = -1;
}

const struct tg_gguf *tg_gpt2_gguf(const tg_gpt2_model *m) {
    return m && m->priv ? ((const gpt2_store *)m->priv)->gguf : NULL;
}

/* ---- model -> GGUF ---------------------------------------------------------- */

tg_status wt_vocab_to_gguf(tg_gguf_writer *gw, const tg_vocab *v, tg_err *err) {
    return tg_vocab_to_gguf(gw, v, err); /* gpt2 or llama conventions (weights/vocab.c) */
}

tg_status tg_dtype_parse(const char *name, tg_dtype *out) {
    static const struct { const char *name; tg_dtype d; } map[] = {
        {"f32", TG_DTYPE_F32}, {"f16", TG_DTYPE_F16}, {"bf16", TG_DTYPE_BF16},
        {"q8_0", TG_DTYPE_Q8_0}, {"q4_0", TG_DTYPE_Q4_0}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (name && !strcmp(name, map[i].name)) {
            *out = map[i].d;
            return TG_OK;
        }
    return TG_ERR_ARG;
}

/* llama.cpp's general.file_type (llama_ftype) for a dtype */
static uint32_t file_type(tg_dtype d) {
    switch (d) {
    case TG_DTYPE_F16: return 1;  /* MOSTLY_F16 */
    case TG_DTYPE_Q4_0: return 2; /* MOSTLY_Q4_0 */
    case TG_DTYPE_Q8_0: return 7; /* MOSTLY_Q8_0 */
    case TG_DTYPE_BF16: return 32; /* MOSTLY_BF16 */
    default: return 0;            /* ALL_F32 */
    }
}

int wt_pick_dtype(int dt, int cols, int fallback, int *n) {
    if ((dt != TG_DTYPE_Q8_0 && dt != TG_DTYPE_Q4_0) || cols % 32 == 0 || !fallback) return dt;
    if (n) (*n)++;
    return TG_DTYPE_F16;
}

tg_status tg_gpt2_to_gguf(tg_gguf_writer *gw, const tg_gpt2_config *cfg, const tg_gpt2_weights *w,
                          const tg_vocab *vocab, tg_dtype dtype, tg_err *err) {
    return tg_gpt2_to_gguf_ex(gw, cfg, w, vocab, dtype, dtype, 0, NULL, err);
}

tg_status tg_gpt2_to_gguf_ex(tg_gguf_writer *gw, const tg_gpt2_config *cfg, const tg_gpt2_weights *w,
                             const tg_vocab *vocab, tg_dtype dtype, tg_dtype out_dtype, int flags, int *n_fallback,
                             tg_err *err) {
    tg_status s;
    if (n_fallback) *n_fallback = 0;
    int fallback = flags & TG_WRITE_F16_FALLBACK;
    if (out_dtype != TG_DTYPE_F32 && out_dtype != TG_DTYPE_F16 && out_dtype != TG_DTYPE_BF16 &&
        out_dtype != TG_DTYPE_Q8_0 && out_dtype != TG_DTYPE_Q4_0)
        return tg_fail(err, TG_ERR_ARG, "gpt2 writer: unknown output dtype %d", (int)out_dtype);
    if (dtype != TG_DTYPE_F32 && dtype != TG_DTYPE_F16 && dtype != TG_DTYPE_BF16 && dtype != TG_DTYPE_Q8_0 &&
        dtype != TG_DTYPE_Q4_0)
        return tg_fail(err, TG_ERR_ARG, "gpt2 writer: unknown dtype %d", (int)dtype);
    int block = dtype == TG_DTYPE_Q8_0 || dtype == TG_DTYPE_Q4_0;
    int out_block = out_dtype == TG_DTYPE_Q8_0 || out_dtype == TG_DTYPE_Q4_0;
    if (w && !fallback && (block || out_block) && (cfg->n_embd % 32 || cfg->n_ff % 32))
        return tg_fail(err, TG_ERR_ARG, "gpt2 writer: %s needs the width (%d) and feed-forward length (%d) to be multiples of 32",
                       tg_ggml_type_name(block ? dtype : out_dtype), cfg->n_embd, cfg->n_ff);
    if (w && (s = tg_gpt2_config_check(cfg, "gpt2 writer", err))) return s;
    if (vocab && vocab->n_tokens) {
        if (w && vocab->n_tokens != cfg->n_vocab)
            return tg_fail(err, TG_ERR_ARG, "gpt2 writer: the vocabulary has %d tokens but the config says %d",
                           vocab->n_tokens, cfg->n_vocab);
        for (int i = 0; i < vocab->n_tokens; i++)
            if (!vocab->tokens[i]) return tg_fail(err, TG_ERR_ARG, "gpt2 writer: token %d is NULL", i);
        for (int i = 0; vocab->merges && i < vocab->n_merges; i++)
            if (!vocab->merges[i]) return tg_fail(err, TG_ERR_ARG, "gpt2 writer: merge %d is NULL", i);
    }
    if ((s = tg_gguf_set_str(gw, "general.architecture", "gpt2", err))) return s;
    if ((s = tg_gguf_set_str(gw, "general.name", "tinygpt", err))) return s;
    if (w) {
        if ((s = tg_gguf_set_u32(gw, "gpt2.context_length", (uint32_t)cfg->n_ctx, err)) ||
            (s = tg_gguf_set_u32(gw, "gpt2.embedding_length", (uint32_t)cfg->n_embd, err)) ||
            (s = tg_gguf_set_u32(gw, "gpt2.feed_forward_length", (uint32_t)cfg->n_ff, err)) ||
            (s = tg_gguf_set_u32(gw, "gpt2.block_count", (uint32_t)cfg->n_layer, err)) ||
            (s = tg_gguf_set_u32(gw, "gpt2.attention.head_count", (uint32_t)cfg->n_head, err)) ||
            (s = tg_gguf_set_f32(gw, "gpt2.attention.layer_norm_epsilon", cfg->ln_eps, err)) ||
            (s = tg_gguf_set_u32(gw, "general.file_type", file_type(dtype), err)))
            return s;
        if (w->tied && (s = tg_gguf_set_bool(gw, "tinygpt.tied_embeddings", 1, err))) return s;
    }
    if (vocab && vocab->n_tokens && (s = wt_vocab_to_gguf(gw, vocab, err))) return s;
    if (!w) return TG_OK;
    if (!w->layers) return tg_fail(err, TG_ERR_ARG, "gpt2 writer: weights have no layers");

    int n = gpt2_n_slots(cfg);
    gpt2_slot *slots = malloc((size_t)n * sizeof *slots);
    tg_gpt2_weights wc = *w; /* slots point into a copy; only read here */
    if (!slots) return tg_fail(err, TG_ERR_NOMEM, "gpt2 writer: out of memory");
    gpt2_slots(cfg, &wc, slots);
    for (int i = 0; i < n && !s; i++) {
        const gpt2_slot *sl = &slots[i];
        int64_t ne[2] = {sl->n_dims == 2 ? sl->shape[1] : sl->shape[0], sl->shape[0]};
        if (!sl->wdst) { /* 1-D, and the position embedding (a matrix only for f16/bf16) */
            const float *data = *sl->dst;
            if (!data) {
                s = tg_fail(err, TG_ERR_ARG, "gpt2 writer: tensor '%s' is NULL", sl->name);
                break;
            }
            uint32_t type = sl->n_dims == 2 && !block ? (uint32_t)dtype : TG_GGML_F32;
            s = tg_gguf_add_tensor_f32(gw, sl->name, sl->n_dims, ne, data, type, err);
            continue;
        }
        tg_weight v = *sl->wdst;
        tg_dtype dt = (tg_dtype)wt_pick_dtype(i == n - 1 ? out_dtype : dtype, (int)sl->shape[1], fallback, n_fallback);
        if (i == n - 1 && (w->tied || !v.data)) v = w->wte; /* llama.cpp wants output.weight */
        if (!v.data) {
            s = tg_fail(err, TG_ERR_ARG, "gpt2 writer: tensor '%s' is NULL", sl->name);
            break;
        }
        if (v.rows != sl->shape[0] || v.cols != sl->shape[1] ||
            v.row_bytes != tg_wtype_row_bytes(v.type, v.cols)) {
            s = tg_fail(err, TG_ERR_ARG, "gpt2 writer: tensor '%s' is a [%d, %d] view, expected [%" PRId64 ", %" PRId64 "]",
                        sl->name, v.rows, v.cols, sl->shape[0], sl->shape[1]);
            break;
        }
        if (v.type == TG_WTYPE_F32)
            s = tg_gguf_add_tensor_f32(gw, sl->name, 2, ne, v.data, (uint32_t)dt, err);
        else if (wtype_of((uint32_t)dt) == v.type)
            s = tg_gguf_add_tensor_raw(gw, sl->name, 2, ne, (uint32_t)dt, v.data, err);
        else { /* another type: decoded to f32 (exact), then encoded */
            float *f = malloc(sizeof(float) * (size_t)v.rows * (size_t)v.cols);
            if (!f) {
                s = tg_fail(err, TG_ERR_NOMEM, "gpt2 writer: out of memory for '%s'", sl->name);
                break;
            }
            for (int r = 0; r < v.rows; r++)
                tg_dequantize_row(v.type, f + (size_t)r * v.cols, (const char *)v.data + (size_t)r * v.row_bytes,
                                  v.cols);
            s = tg_gguf_add_tensor_f32_owned(gw, sl->name, 2, ne, f, (uint32_t)dt, err);
        }
    }
    free(slots);
    return s;
}

tg_status tg_gpt2_save(const char *path, const tg_gpt2_config *cfg, const tg_gpt2_weights *w,
                       const tg_vocab *vocab, tg_dtype dtype, tg_err *err) {
    tg_gguf_writer *gw;
    tg_status s = tg_gguf_writer_new(&gw, err);
    if (s) return s;
    s = tg_gpt2_to_gguf(gw, cfg, w, vocab, dtype, err);
    if (!s) s = tg_gguf_write(gw, path, err);
    tg_gguf_writer_free(gw);
    return s;
}
