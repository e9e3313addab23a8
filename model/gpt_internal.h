/* gpt_internal.h — the run-time state behind tg_gpt, shared by gpt.c and
 * attention.c (not part of the public contract). Shapes use the legend of
 * model/gpt.h. */
#ifndef TINYGPT_MODEL_GPT_INTERNAL_H
#define TINYGPT_MODEL_GPT_INTERNAL_H

#include "model/arch.h"
#include "model/gpt.h"

struct tg_gpt {
    tg_gpt2_config cfg;    /* with n_kv_head, head_dim, rope_* resolved */
    tg_gpt2_weights w;     /* GPT-2's views into the caller's model (not owned) */
    tg_llama_weights lw;   /* Llama's views (not owned) */
    const tg_model *model;
    const struct tg_arch_ops *ops; /* the architecture (model/arch.h) */
    tg_engine eng;
    tg_pool *pool;
    int n_threads;
    int n_ctx;             /* C: KV cache length (<= cfg.n_ctx) */
    int n_kv_head;         /* KVH */
    int head_dim;          /* HS */

    /* KV cache, head-major: per layer and KV head [C, HS] for K and for V,
     * so a head's decode walks one contiguous stream (which the hardware
     * prefetcher follows far better than HS-wide slices apart). KV head h
     * of layer l, position j is at ((l*KVH + h)*C + j)*HS. */
    float *k_cache, *v_cache; /* [L, KVH, C, HS] f32 (NULL when f16) */
    tg_wtype kv_type;         /* TG_WTYPE_F32 or TG_WTYPE_F16 */
    uint16_t *k_h, *v_h;      /* [L, KVH, C, HS] IEEE half (NULL when f32) */
    float *kv_ws;             /* f16: [n_threads, TG_KV16_WS(HS)] widening scratch
                                 and [n_threads, 2·C·HS] a whole head widened
                                 for the probed (unfused) path */
    int n_pos;                /* P: positions 0..P-1 of the cache are filled */
    int kv_stream;            /* a decode step's weights exceed the LLC, so the cache
                                 is read from memory: the *_stream attention kernels */

    /* Activations for up to cap_t tokens (grown on demand, at most C). */
    int cap_t;
    float *x;      /* [T, E]  residual stream */
    float *xn;     /* [T, E]  normed input of a sub-block */
    float *qkv;    /* [T·(H + 2·KVH)·HS] projections: GPT-2 per token q | k | v
                      (its fused matmul's rows); Llama planar q[T, H·HS],
                      then k[T, KVH·HS], then v[T, KVH·HS] */
    float *att;    /* [T, H·HS] heads concatenated, before the projection */
    float *tmp;    /* [T, E]  projection output before the residual add */
    float *up;     /* [T, F]  MLP hidden (GPT-2 pre-GELU; Llama x·w3ᵀ) */
    float *act;    /* [T, F]  GELU(up), or Llama's silu(x·w1ᵀ)·up */
    float *p;      /* [n_threads, G·C] attention weights (unfused path, GQA decode) */
    void *xq;      /* tg_matmul_w's scratch (tg_matmul_ws, the largest over the types): the
                    * integer matmuls' Q8_0 activations, then each worker's panels */

    float *rope_cos, *rope_sin; /* Llama: [C, D/2] per position and pair */

    tg_probe probe_store;
    const tg_probe *probe; /* &probe_store, or NULL when off */
    uint8_t *head_mask;    /* [L*H], or NULL: every head on */
    int (*interrupt)(void *ctx); /* asked before each forward pass; NULL: never */
    void *interrupt_ctx;
};

/* att[T, H·HS] = causal attention of the T queries q (row t at q + t·ldq,
 * heads HS apart; positions pos..pos+T-1) over the cache of `layer`, which
 * already holds positions 0..pos+T-1. Query head h reads KV head
 * h / (H/KVH). Heads (and, in prefill, fixed blocks of queries; in a GQA
 * decode, KV groups) are the pool's work items. */
void tg_attention(tg_gpt *g, int layer, int pos, int T, const float *q, int ldq);

/* Appends keys k[T] and values v[T] (rows ld floats apart, KVH heads of HS
 * each) to the cache of `layer` at pos..pos+T-1. */
void tg_store_kv(tg_gpt *g, int layer, int pos, int T, const float *k, const float *v, int ld);

/* Zeroes the output (att) of the query heads the mask switches off. */
void tg_mask_heads(tg_gpt *g, int layer, int T);

/* The row-parallel elementwise ops, split over the pool by rows for a large
 * prefill (results do not depend on the split): */
void tg_rows_layernorm(tg_gpt *g, float *y, const float *x, const float *gain, const float *bias,
                       int T, int n);                                   /* y = LN(x)·g + b */
void tg_rows_rmsnorm(tg_gpt *g, float *y, const float *x, const float *gain, int T, int n);
void tg_rows_gelu(tg_gpt *g, float *y, const float *x, int T, int n);
void tg_rows_silu_mul(tg_gpt *g, float *y, const float *a, const float *b, int T, int n);
void tg_rows_add(tg_gpt *g, float *x, const float *d, int T, int n);      /* x += d */

/* Is v a [rows, cols] view of a known type? */
int tg_view_ok(const tg_weight *v, int rows, int cols);
/* The bytes of a weight view's rows, in its type. */
static inline double tg_weight_bytes(const tg_weight *w) {
    return (double)w->rows * (double)w->row_bytes;
}

/* y[E] = row `token` of a typed embedding matrix, as f32. */
void tg_embed_row(const tg_gpt *g, float *y, const tg_weight *emb, int token);

/* Is a probe attached? Built with -DTG_NO_PROBE (bench/probe_overhead only)
 * every probe call compiles to nothing: the baseline showing that an unset
 * probe costs nothing measurable. */
#ifdef TG_NO_PROBE
#define TG_PROBED(g) 0
#else
#define TG_PROBED(g) ((g)->probe != NULL)
#endif

static inline void tg_probe_begin(const tg_gpt *g, tg_op op, int layer, int head, int ith) {
    if (TG_PROBED(g) && g->probe->op_begin) g->probe->op_begin(g->probe->user, op, layer, head, ith);
}
static inline void tg_probe_end(const tg_gpt *g, tg_op op, int layer, int head, int ith) {
    if (TG_PROBED(g) && g->probe->op_end) g->probe->op_end(g->probe->user, op, layer, head, ith);
}
/* Ends `prev` and begins `next` (same layer, head and thread) with no gap. */
static inline void tg_probe_next(const tg_gpt *g, tg_op prev, tg_op next, int layer, int head,
                                 int ith) {
    if (!TG_PROBED(g)) return;
    if (g->probe->op_next) {
        g->probe->op_next(g->probe->user, prev, next, layer, head, ith);
        return;
    }
    tg_probe_end(g, prev, layer, head, ith);
    tg_probe_begin(g, next, layer, head, ith);
}

#endif
