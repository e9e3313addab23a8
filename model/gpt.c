/* gpt.c — the GPT-2 forward pass (Radford et al. 2019): token + position
 * embedding, L pre-LayerNorm blocks (causal self-attention, GELU MLP, each
 * added to the residual stream), a final LayerNorm and the LM head, on the
 * engine's kernels. Prefill runs T tokens as one batch (the GEMM path);
 * decode is the same code with T = 1 against the KV cache. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/finite.h"
#include "engine/mem.h"
#include "model/gpt_internal.h"

static const char *const op_names[TG_OP_COUNT] = {
    "embed", "ln_1", "qkv", "attn_scores", "attn_softmax", "attn_mix", "attn_proj",
    "ln_2", "mlp_up", "gelu", "mlp_down", "ln_f", "lm_head", "sample"};

const char *tg_op_name(tg_op op) {
    return (unsigned)op < TG_OP_COUNT ? op_names[op] : "unknown";
}

/* ---- memory ---------------------------------------------------------------- */

/* 64-byte aligned (a cache line, a ZMM register), zero-filled; large ones
 * (the KV cache) on huge pages (engine/mem.h). */
static float *alloc_floats(size_t n) {
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    float *p = tg_alloc_large(bytes ? bytes : 64);
    if (p) memset(p, 0, bytes);
    return p;
}

static void free_activations(tg_gpt *g) {
    float **bufs[] = {&g->x, &g->xn, &g->qkv, &g->att, &g->tmp, &g->up, &g->act};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(*bufs[i]);
        *bufs[i] = NULL;
    }
    free(g->xq);
    g->xq = NULL;
    g->cap_t = 0;
}

/* Makes room for T tokens of activations (T <= C). */
static tg_status reserve(tg_gpt *g, int T, tg_err *err) {
    if (T <= g->cap_t) return TG_OK;
    int cap = (T + 15) / 16 * 16; /* a few sizes only, not one per prompt length */
    if (cap > g->n_ctx) cap = g->n_ctx;
    free_activations(g);
    size_t E = (size_t)g->cfg.n_embd, F = (size_t)g->cfg.n_ff, n = (size_t)cap;
    g->x = alloc_floats(n * E);
    g->xn = alloc_floats(n * E);
    g->qkv = alloc_floats(n * 3 * E);
    g->att = alloc_floats(n * E);
    g->tmp = alloc_floats(n * E);
    g->up = alloc_floats(n * F);
    g->act = alloc_floats(n * F);
    /* the largest IN is E or F; any matrix may be an integer type */
    size_t ws = tg_matmul_ws(TG_WTYPE_Q8_0, cap, (int)(E > F ? E : F) / TG_QK * TG_QK);
    g->xq = alloc_floats(ws / sizeof(float) + 1);
    if (!g->x || !g->xn || !g->qkv || !g->att || !g->tmp || !g->up || !g->act || !g->xq) {
        free_activations(g);
        return tg_fail(err, TG_ERR_NOMEM, "gpt: out of memory for %d tokens of activations", T);
    }
    g->cap_t = cap;
    return TG_OK;
}

/* ---- create / free ------------------------------------------------------- */

/* Is v a [rows, cols] matrix of a known type? */
static int view_ok(const tg_weight *v, int rows, int cols) {
    return v->data && (unsigned)v->type < TG_WTYPE_COUNT && v->rows == rows && v->cols == cols &&
           tg_wtype_row_bytes(v->type, cols) && v->row_bytes >= tg_wtype_row_bytes(v->type, cols);
}

static tg_status check_config(const tg_gpt2_model *m, tg_err *err) {
    const tg_gpt2_config *c = &m->cfg;
    if (!m->has_weights)
        return tg_fail(err, TG_ERR_ARG, "gpt: %s holds no weights (vocabulary only)",
                       m->path ? m->path : "model");
    if (c->n_layer < 1 || c->n_head < 1 || c->n_embd < 1 || c->n_ctx < 1 || c->n_vocab < 1 ||
        c->n_ff < 1 || c->n_embd % c->n_head != 0)
        return tg_fail(err, TG_ERR_FORMAT,
                       "gpt: bad shape L=%d H=%d E=%d C=%d V=%d F=%d (E must divide by H)",
                       c->n_layer, c->n_head, c->n_embd, c->n_ctx, c->n_vocab, c->n_ff);
    if (!(c->ln_eps > 0.0f) || !isfinite(c->ln_eps))
        return tg_fail(err, TG_ERR_FORMAT, "gpt: layer norm epsilon %g is not positive",
                       (double)c->ln_eps);
    if (!m->w.wte.data || !m->w.wpe || !m->w.layers || !m->w.lnf_w || !m->w.lnf_b ||
        !m->w.lm_head.data)
        return tg_fail(err, TG_ERR_FORMAT, "gpt: %s lacks a required tensor",
                       m->path ? m->path : "model");
    /* every matrix a view of the shape the config says (the binding checked
     * the file; this checks whoever built m) */
    int E = c->n_embd, ok = view_ok(&m->w.wte, c->n_vocab, E) && view_ok(&m->w.lm_head, c->n_vocab, E);
    for (int l = 0; l < c->n_layer && ok; l++) {
        const tg_gpt2_layer *ly = &m->w.layers[l];
        ok = view_ok(&ly->qkv_w, 3 * E, E) && view_ok(&ly->proj_w, E, E) &&
             view_ok(&ly->up_w, c->n_ff, E) && view_ok(&ly->down_w, E, c->n_ff);
    }
    if (!ok)
        return tg_fail(err, TG_ERR_FORMAT, "gpt: %s: a weight matrix is not a view of its shape",
                       m->path ? m->path : "model");
    return TG_OK;
}

tg_status tg_gpt_create(tg_gpt **out, const tg_gpt2_model *m, const tg_gpt_opts *opts,
                        tg_err *err) {
    *out = NULL;
    tg_gpt_opts def = {1, NULL, 0};
    if (!opts) opts = &def;
    tg_status s = check_config(m, err);
    if (s) return s;
    if (opts->n_threads < 1 || opts->n_threads > 1024)
        return tg_fail(err, TG_ERR_ARG, "gpt: %d threads requested (allowed 1..1024)",
                       opts->n_threads);
    if (opts->n_ctx < 0 || opts->n_ctx > m->cfg.n_ctx)
        return tg_fail(err, TG_ERR_RANGE, "gpt: context %d requested, the model has %d",
                       opts->n_ctx, m->cfg.n_ctx);
    tg_isa isa;
    if ((s = tg_isa_select(opts->isa, &isa, err))) return s;

    tg_gpt *g = calloc(1, sizeof *g);
    if (!g) return tg_fail(err, TG_ERR_NOMEM, "gpt: out of memory");
    g->cfg = m->cfg;
    g->w = m->w;
    g->n_threads = opts->n_threads;
    g->n_ctx = opts->n_ctx ? opts->n_ctx : m->cfg.n_ctx;
    if ((s = tg_engine_init(&g->eng, isa, err))) goto fail;
    if ((s = tg_pool_create(&g->pool, g->n_threads, err))) goto fail;
    size_t cache = (size_t)g->cfg.n_layer * (size_t)g->n_ctx * (size_t)g->cfg.n_embd;
    g->k_cache = alloc_floats(cache);
    g->v_cache = alloc_floats(cache);
    g->p = alloc_floats((size_t)g->n_threads * (size_t)g->n_ctx);
    if (!g->k_cache || !g->v_cache || !g->p) {
        s = tg_fail(err, TG_ERR_NOMEM, "gpt: out of memory for a %d-position KV cache",
                    g->n_ctx);
        goto fail;
    }
    *out = g;
    return TG_OK;
fail:
    tg_gpt_free(g);
    return s;
}

void tg_gpt_free(tg_gpt *g) {
    if (!g) return;
    tg_pool_free(g->pool);
    free_activations(g);
    free(g->k_cache);
    free(g->v_cache);
    free(g->p);
    free(g->xq);
    free(g->head_mask);
    free(g);
}

const tg_gpt2_config *tg_gpt_config(const tg_gpt *g) { return &g->cfg; }
const tg_gpt2_weights *tg_gpt_weights(const tg_gpt *g) { return &g->w; }
const tg_engine *tg_gpt_engine(const tg_gpt *g) { return &g->eng; }
tg_pool *tg_gpt_pool(tg_gpt *g) { return g->pool; }
int tg_gpt_n_ctx(const tg_gpt *g) { return g->n_ctx; }
int tg_gpt_n_pos(const tg_gpt *g) { return g->n_pos; }

tg_status tg_gpt_truncate(tg_gpt *g, int n_pos, tg_err *err) {
    if (n_pos < 0 || n_pos > g->n_pos)
        return tg_fail(err, TG_ERR_RANGE, "gpt: cannot truncate to %d positions: the KV cache "
                       "holds %d", n_pos, g->n_pos);
    g->n_pos = n_pos;
    return TG_OK;
}

/* ---- KV snapshots ------------------------------------------------------------ */

struct tg_kv_snapshot {
    int n_layer, n_head, head_size, n_pos;
    float *k, *v; /* [L, H, P, HS] */
};

/* Copies P positions of every (layer, head) stream between caches whose
 * stream lengths (positions between two heads' starts) are cd and cs. */
static void copy_streams(float *dst, int cd, const float *src, int cs, int LH, int P, int HS) {
    for (int i = 0; i < LH; i++)
        memcpy(dst + (size_t)i * cd * HS, src + (size_t)i * cs * HS,
               (size_t)P * HS * sizeof(float));
}

tg_status tg_gpt_snapshot(const tg_gpt *g, tg_kv_snapshot **out, tg_err *err) {
    *out = NULL;
    tg_kv_snapshot *s = calloc(1, sizeof *s);
    int LH = g->cfg.n_layer * g->cfg.n_head, HS = g->cfg.n_embd / g->cfg.n_head;
    size_t n = (size_t)LH * (size_t)g->n_pos * (size_t)HS;
    if (s) {
        s->k = malloc((n ? n : 1) * sizeof(float));
        s->v = malloc((n ? n : 1) * sizeof(float));
    }
    if (!s || !s->k || !s->v) {
        tg_kv_snapshot_free(s);
        return tg_fail(err, TG_ERR_NOMEM, "gpt: out of memory for a %d-position KV snapshot",
                       g->n_pos);
    }
    *s = (tg_kv_snapshot){g->cfg.n_layer, g->cfg.n_head, HS, g->n_pos, s->k, s->v};
    copy_streams(s->k, s->n_pos, g->k_cache, g->n_ctx, LH, s->n_pos, HS);
    copy_streams(s->v, s->n_pos, g->v_cache, g->n_ctx, LH, s->n_pos, HS);
    *out = s;
    return TG_OK;
}

tg_status tg_gpt_restore(tg_gpt *g, const tg_kv_snapshot *s, tg_err *err) {
    int HS = g->cfg.n_embd / g->cfg.n_head, LH = g->cfg.n_layer * g->cfg.n_head;
    if (s->n_layer != g->cfg.n_layer || s->n_head != g->cfg.n_head || s->head_size != HS)
        return tg_fail(err, TG_ERR_ARG, "gpt: a KV snapshot of L=%d H=%d HS=%d does not fit "
                       "L=%d H=%d HS=%d", s->n_layer, s->n_head, s->head_size,
                       g->cfg.n_layer, g->cfg.n_head, HS);
    if (s->n_pos > g->n_ctx)
        return tg_fail(err, TG_ERR_RANGE, "gpt: a %d-position KV snapshot does not fit the "
                       "%d-position context", s->n_pos, g->n_ctx);
    copy_streams(g->k_cache, g->n_ctx, s->k, s->n_pos, LH, s->n_pos, HS);
    copy_streams(g->v_cache, g->n_ctx, s->v, s->n_pos, LH, s->n_pos, HS);
    g->n_pos = s->n_pos;
    return TG_OK;
}

int tg_kv_snapshot_n_pos(const tg_kv_snapshot *s) { return s->n_pos; }

void tg_kv_snapshot_free(tg_kv_snapshot *s) {
    if (!s) return;
    free(s->k);
    free(s->v);
    free(s);
}

void tg_gpt_set_probe(tg_gpt *g, const tg_probe *probe) {
    if (probe) {
        g->probe_store = *probe;
        g->probe = &g->probe_store;
    } else {
        g->probe = NULL;
    }
}

tg_status tg_gpt_set_head_mask(tg_gpt *g, const uint8_t *mask, tg_err *err) {
    if (!mask) {
        free(g->head_mask);
        g->head_mask = NULL;
        return TG_OK;
    }
    size_t n = (size_t)g->cfg.n_layer * (size_t)g->cfg.n_head;
    if (!g->head_mask && !(g->head_mask = malloc(n)))
        return tg_fail(err, TG_ERR_NOMEM, "gpt: out of memory for the head mask");
    memcpy(g->head_mask, mask, n);
    return TG_OK;
}

/* ---- row-parallel elementwise ops ----------------------------------------- */

/* Layernorm, GELU and the residual add are split over the pool by rows for a
 * large prefill (each row's result does not depend on the split). */
typedef enum row_op { ROW_LAYERNORM, ROW_GELU, ROW_ADD } row_op;

typedef struct row_job {
    const tg_kernels *k;
    row_op op;
    float *y;
    const float *a, *b;   /* inputs; for layernorm a = x, (g, bias) below */
    const float *gain, *bias;
    int n;                /* row length */
    float eps;
} row_job;

static void rows_range(void *ctx, int r0, int r1, int ith) {
    (void)ith;
    const row_job *j = ctx;
    size_t off = (size_t)r0 * (size_t)j->n;
    int rows = r1 - r0;
    switch (j->op) {
    case ROW_LAYERNORM:
        j->k->layernorm(j->y + off, j->a + off, j->gain, j->bias, rows, j->n, j->eps);
        break;
    case ROW_GELU:
        j->k->gelu(j->y + off, j->a + off, rows * j->n);
        break;
    case ROW_ADD:
        j->k->add(j->y + off, j->a + off, j->b + off, rows * j->n);
        break;
    }
}

static void run_rows(tg_gpt *g, row_job *j, int T, double flops_per_elem) {
    j->k = &g->eng.k;
    tg_parallel_for(g->pool, T, 1, flops_per_elem * T * j->n, rows_range, j);
}

/* y[T,N] = layernorm(x[T,N]) · gain + bias */
static void layernorm(tg_gpt *g, float *y, const float *x, const float *gain,
                      const float *bias, int T, int n) {
    row_job j = {.op = ROW_LAYERNORM, .y = y, .a = x, .gain = gain, .bias = bias, .n = n,
                 .eps = g->cfg.ln_eps};
    run_rows(g, &j, T, 8.0);
}

/* y[T,N] = GELU(x[T,N]) */
static void gelu(tg_gpt *g, float *y, const float *x, int T, int n) {
    row_job j = {.op = ROW_GELU, .y = y, .a = x, .n = n};
    run_rows(g, &j, T, 20.0);
}

/* x[T,N] += d[T,N] (the residual connection) */
static void residual_add(tg_gpt *g, float *x, const float *d, int T, int n) {
    row_job j = {.op = ROW_ADD, .y = x, .a = x, .b = d, .n = n};
    run_rows(g, &j, T, 1.0);
}

/* ---- the forward pass ------------------------------------------------------ */

/* x[t] = wte[tokens[t]] + wpe[pos + t]  (a typed wte row is decoded first) */
static void embed(tg_gpt *g, const int *tokens, int T, int pos) {
    size_t E = (size_t)g->cfg.n_embd;
    const tg_weight *wte = &g->w.wte;
    for (int t = 0; t < T; t++) {
        const char *row = (const char *)wte->data + (size_t)tokens[t] * wte->row_bytes;
        const float *pe = g->w.wpe + (size_t)(pos + t) * E;
        if (wte->type == TG_WTYPE_F32) {
            g->eng.k.add(g->x + t * E, (const float *)row, pe, (int)E);
        } else {
            g->eng.k.dequant[wte->type](g->x + t * E, row, (int)E);
            g->eng.k.add(g->x + t * E, g->x + t * E, pe, (int)E);
        }
    }
}

/* Appends the keys and values of qkv[T,3E] to the head-major cache at
 * pos..pos+T-1. */
static void store_kv(tg_gpt *g, int layer, int pos, int T) {
    size_t E = (size_t)g->cfg.n_embd, H = (size_t)g->cfg.n_head, HS = E / H;
    for (size_t h = 0; h < H; h++) {
        size_t at = (((size_t)layer * H + h) * g->n_ctx + pos) * HS;
        float *kc = g->k_cache + at, *vc = g->v_cache + at;
        for (int t = 0; t < T; t++) {
            const float *row = g->qkv + t * 3 * E + h * HS;
            memcpy(kc + t * HS, row + E, HS * sizeof(float));
            memcpy(vc + t * HS, row + 2 * E, HS * sizeof(float));
        }
    }
}

/* Zeroes the output of the heads the mask switches off in this layer. */
static void mask_heads(tg_gpt *g, int layer, int T) {
    if (!g->head_mask) return;
    int H = g->cfg.n_head, HS = g->cfg.n_embd / H;
    for (int h = 0; h < H; h++) {
        if (g->head_mask[layer * H + h]) continue;
        for (int t = 0; t < T; t++)
            memset(g->att + (size_t)t * g->cfg.n_embd + (size_t)h * HS, 0, HS * sizeof(float));
    }
}

/* One transformer block, pre-LN:
 *   x = x + proj(attention(ln_1(x)));   x = x + down(gelu(up(ln_2(x)))) */
static void block(tg_gpt *g, int l, int pos, int T) {
    const tg_gpt2_layer *w = &g->w.layers[l];
    int E = g->cfg.n_embd, F = g->cfg.n_ff;

    tg_probe_begin(g, TG_OP_LN1, l, -1, 0);
    layernorm(g, g->xn, g->x, w->ln1_w, w->ln1_b, T, E);
    tg_probe_end(g, TG_OP_LN1, l, -1, 0);

    tg_probe_begin(g, TG_OP_QKV, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, g->qkv, g->xn, &w->qkv_w, w->qkv_b, T, g->xq);
    store_kv(g, l, pos, T);
    tg_probe_end(g, TG_OP_QKV, l, -1, 0);

    tg_attention(g, l, pos, T); /* timed per head and part inside, when probed */
    mask_heads(g, l, T);

    tg_probe_begin(g, TG_OP_ATTN_PROJ, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, g->tmp, g->att, &w->proj_w, w->proj_b, T, g->xq);
    residual_add(g, g->x, g->tmp, T, E);
    tg_probe_end(g, TG_OP_ATTN_PROJ, l, -1, 0);

    tg_probe_begin(g, TG_OP_LN2, l, -1, 0);
    layernorm(g, g->xn, g->x, w->ln2_w, w->ln2_b, T, E);
    tg_probe_end(g, TG_OP_LN2, l, -1, 0);

    tg_probe_begin(g, TG_OP_MLP_UP, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, g->up, g->xn, &w->up_w, w->up_b, T, g->xq);
    tg_probe_end(g, TG_OP_MLP_UP, l, -1, 0);

    tg_probe_begin(g, TG_OP_GELU, l, -1, 0);
    gelu(g, g->act, g->up, T, F);
    tg_probe_end(g, TG_OP_GELU, l, -1, 0);

    tg_probe_begin(g, TG_OP_MLP_DOWN, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, g->tmp, g->act, &w->down_w, w->down_b, T, g->xq);
    residual_add(g, g->x, g->tmp, T, E);
    tg_probe_end(g, TG_OP_MLP_DOWN, l, -1, 0);
}

tg_status tg_gpt_forward(tg_gpt *g, const int *tokens, int T, int pos, float *logits,
                         int all_logits, tg_err *err) {
    const tg_gpt2_config *c = &g->cfg;
    if (T < 1 || !tokens || !logits)
        return tg_fail(err, TG_ERR_ARG, "gpt: forward of %d tokens%s", T,
                       tokens && logits ? "" : " without a token or logits buffer");
    if (pos < 0 || pos > g->n_ctx - T)
        return tg_fail(err, TG_ERR_RANGE,
                       "gpt: positions %d..%d do not fit the %d-position context", pos,
                       pos + T - 1, g->n_ctx);
    if (pos > g->n_pos)
        return tg_fail(err, TG_ERR_RANGE,
                       "gpt: position %d is past the %d position%s the KV cache holds (the "
                       "next position is %d, or an earlier one to rewrite from there)",
                       pos, g->n_pos, g->n_pos == 1 ? "" : "s", g->n_pos);
    for (int t = 0; t < T; t++)
        if (tokens[t] < 0 || tokens[t] >= c->n_vocab)
            return tg_fail(err, TG_ERR_ARG, "gpt: token %d at index %d is outside [0, %d)",
                           tokens[t], t, c->n_vocab);
    tg_status s = reserve(g, T, err);
    if (s) return s;
    int E = c->n_embd, V = c->n_vocab;

    tg_probe_begin(g, TG_OP_EMBED, -1, -1, 0);
    embed(g, tokens, T, pos);
    tg_probe_end(g, TG_OP_EMBED, -1, -1, 0);

    g->n_pos = pos; /* from here on the cache holds new positions from pos */
    for (int l = 0; l < c->n_layer; l++) block(g, l, pos, T);
    g->n_pos = pos + T;

    /* Only the rows whose logits are wanted go through ln_f and the head. */
    int rows = all_logits ? T : 1;
    const float *last = g->x + (size_t)(T - rows) * E;
    tg_probe_begin(g, TG_OP_LNF, -1, -1, 0);
    layernorm(g, g->xn, last, g->w.lnf_w, g->w.lnf_b, rows, E);
    tg_probe_end(g, TG_OP_LNF, -1, -1, 0);

    tg_probe_begin(g, TG_OP_LM_HEAD, -1, -1, 0);
    tg_matmul_w(&g->eng, g->pool, logits, g->xn, &g->w.lm_head, NULL, rows, g->xq);
    tg_probe_end(g, TG_OP_LM_HEAD, -1, -1, 0);

    /* A NaN or inf logit means the weights (loaded with --no-check) or the
     * activations are not finite: stop at the first one rather than sample
     * or score garbage. One pass over rows * V floats, next to the LM head's
     * rows * V * E multiply-adds. */
    const char *what = "";
    int64_t bad = tg_f32_find_nonfinite(logits, (uint64_t)rows * (uint64_t)V, &what);
    if (bad >= 0) {
        int t = T - rows + (int)(bad / V);
        return tg_fail(err, TG_ERR_NUMERIC,
                       "gpt: logit %d of the token at position %d is %s: the model's weights or "
                       "activations are not finite",
                       (int)(bad % V), pos + t, what);
    }
    return TG_OK;
}
