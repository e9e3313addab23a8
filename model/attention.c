/* attention.c — causal multi-head self-attention over the KV cache:
 *   for each head h and query t:  o = softmax(q·Kᵀ / sqrt(HS)) · V
 * over positions 0..pos+t. Heads are independent work items for the pool;
 * a prefill also splits each head's queries into fixed blocks of QBLOCK so
 * that two threads share even one head's causal triangle. Items are fixed
 * by the shape alone, never by the thread count, so results are
 * bit-identical for any number of threads.
 *
 * Fused (no probe): decode calls attn_decode, prefill attn_prefill (online
 * softmax, no T×P buffer). Probed: scores, softmax and mix run one query at
 * a time, each timed, and the weights are handed to probe->attn. */
#include <math.h>

#include "model/gpt_internal.h"

enum { QBLOCK = 16 }; /* prefill queries per work item */

typedef struct attn_job {
    tg_gpt *g;
    int layer, pos, T;
    int n_qblocks;  /* ceil(T / QBLOCK) */
    float scale;    /* 1/sqrt(HS) */
} attn_job;

/* Head h, queries t0..t1-1, unfused: scores, softmax, mix per query. */
static void attend_probed(const attn_job *j, int h, int t0, int t1, int ith) {
    tg_gpt *g = j->g;
    const tg_kernels *k = &g->eng.k;
    int E = g->cfg.n_embd, HS = E / g->cfg.n_head, l = j->layer;
    size_t at = ((size_t)l * g->cfg.n_head + h) * g->n_ctx * HS; /* head-major cache */
    const float *kc = g->k_cache + at, *vc = g->v_cache + at;
    float *p = g->p + (size_t)ith * g->n_ctx;
    /* One chain of spans per work item: each op ends where the next begins,
     * so the probe's own cost between them is not left outside every op. */
    tg_probe_begin(g, TG_OP_ATTN_SCORES, l, h, ith);
    for (int t = t0; t < t1; t++) {
        int n_pos = j->pos + t + 1;
        const float *q = g->qkv + (size_t)t * 3 * E + (size_t)h * HS;
        float *o = g->att + (size_t)t * E + (size_t)h * HS;
        if (t > t0) tg_probe_next(g, TG_OP_ATTN_MIX, TG_OP_ATTN_SCORES, l, h, ith);
        k->attn_scores(p, q, kc, n_pos, HS, HS, j->scale);
        tg_probe_next(g, TG_OP_ATTN_SCORES, TG_OP_ATTN_SOFTMAX, l, h, ith);
        k->softmax(p, n_pos);
        if (g->probe->attn) {
            tg_probe_end(g, TG_OP_ATTN_SOFTMAX, l, h, ith);
            g->probe->attn(g->probe->user, l, h, j->pos + t, p, n_pos);
            tg_probe_begin(g, TG_OP_ATTN_MIX, l, h, ith);
        } else {
            tg_probe_next(g, TG_OP_ATTN_SOFTMAX, TG_OP_ATTN_MIX, l, h, ith);
        }
        k->attn_mix(o, p, vc, n_pos, HS, HS);
    }
    tg_probe_end(g, TG_OP_ATTN_MIX, l, h, ith);
}

/* Head h, queries t0..t1-1, fused kernels. */
static void attend_fused(const attn_job *j, int h, int t0, int t1, int ith) {
    tg_gpt *g = j->g;
    const tg_kernels *k = &g->eng.k;
    int E = g->cfg.n_embd, HS = E / g->cfg.n_head;
    size_t at = ((size_t)j->layer * g->cfg.n_head + h) * g->n_ctx * HS;
    const float *kc = g->k_cache + at, *vc = g->v_cache + at;
    const float *q = g->qkv + (size_t)t0 * 3 * E + (size_t)h * HS;
    float *o = g->att + (size_t)t0 * E + (size_t)h * HS;
    if (j->T == 1)
        k->attn_decode(o, g->p + (size_t)ith * g->n_ctx, q, kc, vc, j->pos + 1, HS, HS,
                       j->scale);
    else
        k->attn_prefill(o, q, kc, vc, t1 - t0, j->pos + t0, HS, 3 * E, HS, E, j->scale);
}

/* Work items [i0, i1): item i is head i / n_qblocks, query block i % n_qblocks. */
static void attn_range(void *ctx, int i0, int i1, int ith) {
    const attn_job *j = ctx;
    for (int i = i0; i < i1; i++) {
        int h = i / j->n_qblocks, b = i % j->n_qblocks;
        int t0 = b * QBLOCK, t1 = t0 + QBLOCK < j->T ? t0 + QBLOCK : j->T;
        if (TG_PROBED(j->g))
            attend_probed(j, h, t0, t1, ith);
        else
            attend_fused(j, h, t0, t1, ith);
    }
}

void tg_attention(tg_gpt *g, int layer, int pos, int T) {
    int H = g->cfg.n_head, E = g->cfg.n_embd;
    attn_job j = {g, layer, pos, T, (T + QBLOCK - 1) / QBLOCK, 1.0f / sqrtf((float)(E / H))};
    /* q·k and p·v over the causal triangle: 4 flops per (query, key, dim). */
    double flops = 4.0 * T * (pos + 0.5 * T + 1) * E;
    tg_parallel_for(g->pool, H * j.n_qblocks, 1, flops, attn_range, &j);
}
