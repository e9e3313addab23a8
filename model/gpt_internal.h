/* gpt_internal.h — the run-time state behind tg_gpt, shared by gpt.c and
 * attention.c (not part of the public contract). Shapes use the legend of
 * model/gpt.h. */
#ifndef TINYGPT_MODEL_GPT_INTERNAL_H
#define TINYGPT_MODEL_GPT_INTERNAL_H

#include "model/gpt.h"

struct tg_gpt {
    tg_gpt2_config cfg;
    tg_gpt2_weights w;     /* views into the caller's model (not owned) */
    tg_engine eng;
    tg_pool *pool;
    int n_threads;
    int n_ctx;             /* C: KV cache length (<= cfg.n_ctx) */

    /* KV cache, head-major: per layer and head [C, HS] for K and for V, so
     * a head's decode walks one contiguous stream (which the hardware
     * prefetcher follows far better than HS-wide slices E apart). Head h
     * of layer l, position j is at ((l*H + h)*C + j)*HS. */
    float *k_cache, *v_cache; /* [L, H, C, HS] */
    int n_pos;                /* P: positions 0..P-1 of the cache are filled */

    /* Activations for up to cap_t tokens (grown on demand, at most C). */
    int cap_t;
    float *x;      /* [T, E]  residual stream */
    float *xn;     /* [T, E]  layernormed input of a sub-block */
    float *qkv;    /* [T, 3E] fused projection: q | k | v, each head-major */
    float *att;    /* [T, E]  heads concatenated, before the projection */
    float *tmp;    /* [T, E]  projection output before the residual add */
    float *up;     /* [T, F]  MLP hidden pre-activation */
    float *act;    /* [T, F]  GELU(up) */
    float *p;      /* [n_threads, C] attention weights (unfused path) */
    void *xq;      /* [T, max(E,F)/32] Q8_0 blocks: the integer matmuls' activations */

    tg_probe probe_store;
    const tg_probe *probe; /* &probe_store, or NULL when off */
    uint8_t *head_mask;    /* [L*H], or NULL: every head on */
};

/* att[T,E] = causal multi-head attention of the T queries in qkv[T,3E]
 * (positions pos..pos+T-1) over the cache of `layer`, which already holds
 * positions 0..pos+T-1. Heads (and, in prefill, fixed blocks of queries)
 * are the pool's work items. */
void tg_attention(tg_gpt *g, int layer, int pos, int T);

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
