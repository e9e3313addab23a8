/* gpt.c — the forward pass every architecture shares: the handle, the KV
 * cache (KVH heads), snapshots, probes, head mask, the row-parallel
 * elementwise ops, and the driver
 *     embed -> block(l) for each layer -> final norm -> LM head
 * over one architecture's ops table (model/arch.h: model/gpt2.c,
 * model/llama.c). Prefill runs T tokens as one batch (the GEMM path);
 * decode is the same code with T = 1 against the KV cache. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/finite.h"
#include "engine/mem.h"
#include "engine/roofline.h"
#include "model/gpt_internal.h"

static const char *const op_names[TG_OP_COUNT] = {
    "embed", "ln_1", "qkv", "attn_scores", "attn_softmax", "attn_mix", "attn_proj",
    "ln_2", "mlp_up", "gelu", "mlp_down", "ln_f", "lm_head", "sample"};

const char *tg_op_name(tg_op op) {
    return (unsigned)op < TG_OP_COUNT ? op_names[op] : "unknown";
}

static const tg_arch_ops *ops_of(tg_arch a) {
    return a == TG_ARCH_LLAMA ? &tg_llama_ops : &tg_gpt2_ops;
}

const char *tg_op_label(tg_arch arch, tg_op op) {
    const tg_arch_ops *o = ops_of(arch);
    if ((unsigned)op < TG_OP_COUNT && o->op_labels && o->op_labels[op]) return o->op_labels[op];
    return tg_op_name(op);
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
    size_t Q = (size_t)g->cfg.n_head * (size_t)g->head_dim;
    size_t QKV = Q + 2 * (size_t)g->n_kv_head * (size_t)g->head_dim;
    g->x = alloc_floats(n * E);
    g->xn = alloc_floats(n * E);
    g->qkv = alloc_floats(n * QKV);
    g->att = alloc_floats(n * Q);
    g->tmp = alloc_floats(n * E);
    g->up = alloc_floats(n * F);
    g->act = alloc_floats(n * F);
    /* the largest IN is E, F or H·HS; any matrix may be of any type: the
     * typed matmuls' scratch for the largest (X's Q8_0 blocks, each worker's
     * packed panels), so that no matmul allocates */
    size_t in = E > F ? E : F;
    in = in > Q ? in : Q;
    size_t ws = 0;
    for (int t = 0; t < TG_WTYPE_COUNT; t++) {
        int n = tg_wtype_q8_act((tg_wtype)t) ? (int)in / TG_QK * TG_QK : (int)in;
        size_t b = tg_matmul_ws((tg_wtype)t, cap, n, tg_pool_size(g->pool));
        ws = b > ws ? b : ws;
    }
    g->xq = alloc_floats(ws / sizeof(float) + 1);
    if (!g->x || !g->xn || !g->qkv || !g->att || !g->tmp || !g->up || !g->act || !g->xq) {
        free_activations(g);
        return tg_fail(err, TG_ERR_NOMEM, "gpt: out of memory for %d tokens of activations", T);
    }
    g->cap_t = cap;
    return TG_OK;
}

/* ---- create / free ------------------------------------------------------- */

int tg_view_ok(const tg_weight *v, int rows, int cols) {
    return v->data && (unsigned)v->type < TG_WTYPE_COUNT && v->rows == rows && v->cols == cols &&
           tg_wtype_row_bytes(v->type, cols) && v->row_bytes >= tg_wtype_row_bytes(v->type, cols);
}

enum { KV_STREAM_MIN = 32 << 20 }; /* bytes: see kv_stream below */

tg_status tg_gpt_create(tg_gpt **out, const tg_model *m, const tg_gpt_opts *opts,
                        tg_err *err) {
    *out = NULL;
    tg_gpt_opts def = {1, NULL, 0, TG_WTYPE_F32};
    if (!opts) opts = &def;
    if ((unsigned)m->cfg.arch >= TG_ARCH_COUNT)
        return tg_fail(err, TG_ERR_ARG, "gpt: unknown architecture %d", (int)m->cfg.arch);
    const tg_arch_ops *ops = ops_of(m->cfg.arch);
    if (!m->has_weights)
        return tg_fail(err, TG_ERR_ARG, "gpt: %s holds no weights (vocabulary only)",
                       m->path ? m->path : "model");
    tg_status s = ops->check(m, err);
    if (s) return s;
    if (opts->n_threads < 1 || opts->n_threads > 1024)
        return tg_fail(err, TG_ERR_ARG, "gpt: %d threads requested (allowed 1..1024)",
                       opts->n_threads);
    if (opts->n_ctx < 0 || opts->n_ctx > m->cfg.n_ctx)
        return tg_fail(err, TG_ERR_RANGE, "gpt: context %d requested, the model has %d",
                       opts->n_ctx, m->cfg.n_ctx);
    if (opts->kv_type != TG_WTYPE_F32 && opts->kv_type != TG_WTYPE_F16)
        return tg_fail(err, TG_ERR_ARG, "gpt: a KV cache of type %s (allowed f32, f16)",
                       tg_wtype_name(opts->kv_type));
    tg_isa isa;
    if ((s = tg_isa_select(opts->isa, &isa, err))) return s;

    tg_gpt *g = calloc(1, sizeof *g);
    if (!g) return tg_fail(err, TG_ERR_NOMEM, "gpt: out of memory");
    g->cfg = m->cfg;
    g->w = m->w;
    g->lw = m->llama;
    g->model = m;
    g->ops = ops;
    g->n_kv_head = g->cfg.n_kv_head = tg_config_n_kv_head(&m->cfg);
    g->head_dim = g->cfg.head_dim = tg_config_head_dim(&m->cfg);
    g->cfg.rope_theta = tg_config_rope_theta(&m->cfg);
    g->cfg.rope_dim = tg_config_rope_dim(&m->cfg);
    g->n_threads = opts->n_threads;
    g->n_ctx = opts->n_ctx ? opts->n_ctx : m->cfg.n_ctx;
    if ((s = tg_engine_init(&g->eng, isa, err))) goto fail;
    if ((s = tg_pool_create(&g->pool, g->n_threads, err))) goto fail;
    size_t cache = (size_t)g->cfg.n_layer * (size_t)g->n_ctx * (size_t)g->n_kv_head *
                   (size_t)g->head_dim;
    size_t group = (size_t)(g->cfg.n_head / g->n_kv_head);
    g->kv_type = opts->kv_type;
    int kv_ok;
    if (g->kv_type == TG_WTYPE_F16) { /* halves: two per float of the allocation */
        g->k_h = (uint16_t *)alloc_floats((cache + 1) / 2);
        g->v_h = (uint16_t *)alloc_floats((cache + 1) / 2);
        g->kv_ws = alloc_floats((size_t)g->n_threads *
                                (TG_KV16_WS(g->head_dim) + 2 * (size_t)g->n_ctx * g->head_dim));
        kv_ok = g->k_h && g->v_h && g->kv_ws;
    } else {
        g->k_cache = alloc_floats(cache);
        g->v_cache = alloc_floats(cache);
        kv_ok = g->k_cache && g->v_cache;
    }
    g->p = alloc_floats((size_t)g->n_threads * group * (size_t)g->n_ctx);
    if (!kv_ok || !g->p) {
        s = tg_fail(err, TG_ERR_NOMEM, "gpt: out of memory for a %d-position KV cache",
                    g->n_ctx);
        goto fail;
    }
    if (ops->prepare && (s = ops->prepare(g, err))) goto fail;
    /* Every decode step reads all the weights once: past the LLC, they
     * evict the KV cache between its reads (gpt2-small's 73-500 MB, not the
     * tiny models' few MB, whose cache stays in L2/L3 and would only pay for
     * the prefetches). The LLC may read as the L2 where a VM's cpuid hides
     * the L3 (1 MiB on the Zen 5 we measure on: the tiny model's 3.2 MB of
     * f32 then took the prefetching kernels and decoded 11% slower), so
     * weights under KV_STREAM_MIN, which any server L3 of ours holds, never
     * stream. */
    const double llc = (double)tg_llc_bytes();
    g->kv_stream = ops->step_weight_bytes(m) > (llc > KV_STREAM_MIN ? llc : KV_STREAM_MIN);
    *out = g;
    return TG_OK;
fail:
    tg_gpt_free(g);
    return s;
}

void tg_gpt_free(tg_gpt *g) {
    if (!g) return;
    if (g->ops && g->ops->release) g->ops->release(g);
    tg_pool_free(g->pool);
    free_activations(g);
    free(g->k_cache);
    free(g->v_cache);
    free(g->k_h);
    free(g->v_h);
    free(g->kv_ws);
    free(g->p);
    free(g->xq);
    free(g->head_mask);
    free(g);
}

const tg_gpt2_config *tg_gpt_config(const tg_gpt *g) { return &g->cfg; }
const tg_gpt2_weights *tg_gpt_weights(const tg_gpt *g) { return &g->w; }
const tg_model *tg_gpt_model(const tg_gpt *g) { return g->model; }
tg_arch tg_gpt_arch(const tg_gpt *g) { return g->cfg.arch; }
/* bytes of one cache element */
static size_t kv_elem(const tg_gpt *g) { return g->kv_type == TG_WTYPE_F16 ? 2 : sizeof(float); }

size_t tg_gpt_kv_bytes_per_token(const tg_gpt *g) {
    return (size_t)g->cfg.n_layer * 2 * (size_t)g->n_kv_head * (size_t)g->head_dim * kv_elem(g);
}
tg_wtype tg_gpt_kv_type(const tg_gpt *g) { return g->kv_type; }
size_t tg_gpt_kv_bytes(const tg_gpt *g) { return tg_gpt_kv_bytes_per_token(g) * (size_t)g->n_ctx; }
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
    int n_layer, n_head, head_size, n_pos; /* n_head: the KV heads */
    float *k, *v; /* [L, KVH, P, HS] f32 (NULL when f16) */
    tg_wtype type; /* of the cache it was taken from, which it keeps */
    uint16_t *kh, *vh; /* [L, KVH, P, HS] IEEE half (NULL when f32) */
};

/* Copies P positions of every (layer, head) stream between caches whose
 * stream lengths (positions between two heads' starts) are cd and cs;
 * elements of es bytes. */
static void copy_streams(void *dst, int cd, const void *src, int cs, int LH, int P, int HS,
                         size_t es) {
    for (int i = 0; i < LH; i++)
        memcpy((char *)dst + (size_t)i * cd * HS * es, (const char *)src + (size_t)i * cs * HS * es,
               (size_t)P * HS * es);
}

/* The same between an f16 and an f32 cache: each stream widened or rounded
 * (round to nearest even) on the way. */
static void convert_streams(tg_gpt *g, void *dst, int cd, const void *src, int cs, int LH, int P,
                            int HS, int to_f16) {
    for (int i = 0; i < LH; i++) {
        size_t od = (size_t)i * cd * HS, os = (size_t)i * cs * HS, n = (size_t)P * HS;
        if (to_f16)
            g->eng.k.f32_to_f16((uint16_t *)dst + od, (const float *)src + os, (int)n);
        else
            g->eng.k.dequant[TG_WTYPE_F16]((float *)dst + od, (const uint16_t *)src + os, (int)n);
    }
}

tg_status tg_gpt_snapshot(const tg_gpt *g, tg_kv_snapshot **out, tg_err *err) {
    *out = NULL;
    tg_kv_snapshot *s = calloc(1, sizeof *s);
    int LH = g->cfg.n_layer * g->n_kv_head, HS = g->head_dim;
    size_t n = (size_t)LH * (size_t)g->n_pos * (size_t)HS, es = kv_elem(g);
    void *k = NULL, *v = NULL;
    if (s) {
        k = malloc((n ? n : 1) * es);
        v = malloc((n ? n : 1) * es);
    }
    if (!s || !k || !v) {
        free(k);
        free(v);
        free(s);
        return tg_fail(err, TG_ERR_NOMEM, "gpt: out of memory for a %d-position KV snapshot",
                       g->n_pos);
    }
    *s = (tg_kv_snapshot){g->cfg.n_layer, g->n_kv_head, HS, g->n_pos, NULL, NULL, g->kv_type,
                          NULL, NULL};
    if (g->kv_type == TG_WTYPE_F16) {
        s->kh = k, s->vh = v;
        copy_streams(s->kh, s->n_pos, g->k_h, g->n_ctx, LH, s->n_pos, HS, es);
        copy_streams(s->vh, s->n_pos, g->v_h, g->n_ctx, LH, s->n_pos, HS, es);
    } else {
        s->k = k, s->v = v;
        copy_streams(s->k, s->n_pos, g->k_cache, g->n_ctx, LH, s->n_pos, HS, es);
        copy_streams(s->v, s->n_pos, g->v_cache, g->n_ctx, LH, s->n_pos, HS, es);
    }
    *out = s;
    return TG_OK;
}

tg_status tg_gpt_restore(tg_gpt *g, const tg_kv_snapshot *s, tg_err *err) {
    int HS = g->head_dim, LH = g->cfg.n_layer * g->n_kv_head;
    if (s->n_layer != g->cfg.n_layer || s->n_head != g->n_kv_head || s->head_size != HS)
        return tg_fail(err, TG_ERR_ARG, "gpt: a KV snapshot of L=%d KVH=%d HS=%d does not fit "
                       "L=%d KVH=%d HS=%d", s->n_layer, s->n_head, s->head_size,
                       g->cfg.n_layer, g->n_kv_head, HS);
    if (s->n_pos > g->n_ctx)
        return tg_fail(err, TG_ERR_RANGE, "gpt: a %d-position KV snapshot does not fit the "
                       "%d-position context", s->n_pos, g->n_ctx);
    int h16 = g->kv_type == TG_WTYPE_F16, s16 = s->type == TG_WTYPE_F16;
    void *gk = h16 ? (void *)g->k_h : (void *)g->k_cache, *gv = h16 ? (void *)g->v_h : (void *)g->v_cache;
    const void *sk = s16 ? (const void *)s->kh : (const void *)s->k;
    const void *sv = s16 ? (const void *)s->vh : (const void *)s->v;
    if (h16 == s16) {
        copy_streams(gk, g->n_ctx, sk, s->n_pos, LH, s->n_pos, HS, kv_elem(g));
        copy_streams(gv, g->n_ctx, sv, s->n_pos, LH, s->n_pos, HS, kv_elem(g));
    } else { /* into a cache of the other type: widened, or rounded to half */
        convert_streams(g, gk, g->n_ctx, sk, s->n_pos, LH, s->n_pos, HS, h16);
        convert_streams(g, gv, g->n_ctx, sv, s->n_pos, LH, s->n_pos, HS, h16);
    }
    g->n_pos = s->n_pos;
    return TG_OK;
}

int tg_kv_snapshot_n_pos(const tg_kv_snapshot *s) { return s->n_pos; }

void tg_kv_snapshot_free(tg_kv_snapshot *s) {
    if (!s) return;
    free(s->k);
    free(s->v);
    free(s->kh);
    free(s->vh);
    free(s);
}

void tg_gpt_set_interrupt(tg_gpt *g, int (*fn)(void *ctx), void *ctx) {
    g->interrupt = fn;
    g->interrupt_ctx = ctx;
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

/* Norms, activations and the residual add are split over the pool by rows
 * for a large prefill (each row's result does not depend on the split). */
typedef enum row_op { ROW_LAYERNORM, ROW_RMSNORM, ROW_GELU, ROW_SILU_MUL, ROW_ADD } row_op;

typedef struct row_job {
    const tg_kernels *k;
    row_op op;
    float *y;
    const float *a, *b;   /* inputs; for the norms a = x, (gain, bias) below */
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
    case ROW_RMSNORM:
        j->k->rmsnorm(j->y + off, j->a + off, j->gain, rows, j->n, j->eps);
        break;
    case ROW_GELU:
        j->k->gelu(j->y + off, j->a + off, rows * j->n);
        break;
    case ROW_SILU_MUL:
        j->k->silu_mul(j->y + off, j->a + off, j->b + off, rows * j->n);
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

void tg_rows_layernorm(tg_gpt *g, float *y, const float *x, const float *gain, const float *bias,
                       int T, int n) {
    row_job j = {.op = ROW_LAYERNORM, .y = y, .a = x, .gain = gain, .bias = bias, .n = n,
                 .eps = g->cfg.ln_eps};
    run_rows(g, &j, T, 8.0);
}

void tg_rows_rmsnorm(tg_gpt *g, float *y, const float *x, const float *gain, int T, int n) {
    row_job j = {.op = ROW_RMSNORM, .y = y, .a = x, .gain = gain, .n = n, .eps = g->cfg.ln_eps};
    run_rows(g, &j, T, 4.0);
}

void tg_rows_gelu(tg_gpt *g, float *y, const float *x, int T, int n) {
    row_job j = {.op = ROW_GELU, .y = y, .a = x, .n = n};
    run_rows(g, &j, T, 20.0);
}

void tg_rows_silu_mul(tg_gpt *g, float *y, const float *a, const float *b, int T, int n) {
    row_job j = {.op = ROW_SILU_MUL, .y = y, .a = a, .b = b, .n = n};
    run_rows(g, &j, T, 20.0);
}

void tg_rows_add(tg_gpt *g, float *x, const float *d, int T, int n) {
    row_job j = {.op = ROW_ADD, .y = x, .a = x, .b = d, .n = n};
    run_rows(g, &j, T, 1.0);
}

/* ---- shared parts of a block ------------------------------------------------- */

void tg_embed_row(const tg_gpt *g, float *y, const tg_weight *emb, int token) {
    const char *row = (const char *)emb->data + (size_t)token * emb->row_bytes;
    if (emb->type == TG_WTYPE_F32) memcpy(y, row, (size_t)emb->cols * sizeof(float));
    else g->eng.k.dequant[emb->type](y, row, emb->cols);
}

void tg_store_kv(tg_gpt *g, int layer, int pos, int T, const float *k, const float *v, int ld) {
    size_t KVH = (size_t)g->n_kv_head, HS = (size_t)g->head_dim;
    for (size_t h = 0; h < KVH; h++) {
        size_t at = (((size_t)layer * KVH + h) * g->n_ctx + pos) * HS;
        if (g->kv_type == TG_WTYPE_F16) {
            for (int t = 0; t < T; t++) {
                g->eng.k.f32_to_f16(g->k_h + at + t * HS, k + (size_t)t * ld + h * HS, (int)HS);
                g->eng.k.f32_to_f16(g->v_h + at + t * HS, v + (size_t)t * ld + h * HS, (int)HS);
            }
            continue;
        }
        float *kc = g->k_cache + at, *vc = g->v_cache + at;
        for (int t = 0; t < T; t++) {
            memcpy(kc + t * HS, k + (size_t)t * ld + h * HS, HS * sizeof(float));
            memcpy(vc + t * HS, v + (size_t)t * ld + h * HS, HS * sizeof(float));
        }
    }
}

void tg_mask_heads(tg_gpt *g, int layer, int T) {
    if (!g->head_mask) return;
    int H = g->cfg.n_head, HS = g->head_dim;
    for (int h = 0; h < H; h++) {
        if (g->head_mask[layer * H + h]) continue;
        for (int t = 0; t < T; t++)
            memset(g->att + (size_t)t * H * HS + (size_t)h * HS, 0, HS * sizeof(float));
    }
}

/* ---- the forward pass ------------------------------------------------------ */

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
    if (g->interrupt && g->interrupt(g->interrupt_ctx))
        return tg_fail(err, TG_ERR_INTERRUPTED, "gpt: interrupted by the caller");
    tg_status s = reserve(g, T, err);
    if (s) return s;
    int E = c->n_embd, V = c->n_vocab;

    tg_probe_begin(g, TG_OP_EMBED, -1, -1, 0);
    g->ops->embed(g, tokens, T, pos);
    tg_probe_end(g, TG_OP_EMBED, -1, -1, 0);

    g->n_pos = pos; /* from here on the cache holds new positions from pos */
    for (int l = 0; l < c->n_layer; l++) g->ops->block(g, l, pos, T);
    g->n_pos = pos + T;

    /* Only the rows whose logits are wanted go through ln_f and the head. */
    int rows = all_logits ? T : 1;
    const float *last = g->x + (size_t)(T - rows) * E;
    tg_probe_begin(g, TG_OP_LNF, -1, -1, 0);
    g->ops->final_norm(g, g->xn, last, rows);
    tg_probe_end(g, TG_OP_LNF, -1, -1, 0);

    tg_probe_begin(g, TG_OP_LM_HEAD, -1, -1, 0);
    tg_matmul_w(&g->eng, g->pool, logits, g->xn, g->ops->lm_head(g), NULL, rows, g->xq);
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
