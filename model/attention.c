/* attention.c — causal multi-head self-attention over the KV cache:
 *   for each head h and query t:  o = softmax(q·Kᵀ / sqrt(HS)) · V
 * over positions 0..pos+t, K and V those of KV head h / G (G = H/KVH query
 * heads per KV head: MHA G = 1, GQA, MQA KVH = 1). Heads are independent
 * work items for the pool (a GQA decode: KV groups, so that each shared K/V
 * row is read once for the G queries);
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

enum { QBLOCK = 16 }; /* prefill queries per work item (the SIMD prefill tile is 16 queries) */

typedef struct attn_job {
    tg_gpt *g;
    int layer, pos, T;
    int n_qblocks;  /* ceil(T / QBLOCK) */
    float scale;    /* 1/sqrt(HS) */
    const float *q; /* queries: row t at q + t·ldq, heads HS apart */
    int ldq;
    int group;      /* G = H / KVH */
} attn_job;

/* The cache of query head h's KV head in layer l: [C, HS] for K (and V). */
static size_t kv_at(const tg_gpt *g, int l, int h, int group) {
    return ((size_t)l * g->n_kv_head + (size_t)(h / group)) * g->n_ctx * g->head_dim;
}

/* f16 cache: thread ith's widening scratch (TG_KV16_WS(HS) floats), then
 * room for a whole head's K and V widened ([2, C, HS]). */
static float *kv16_ws(const tg_gpt *g, int ith) {
    return g->kv_ws + (size_t)ith * (TG_KV16_WS(g->head_dim) + 2 * (size_t)g->n_ctx * g->head_dim);
}

/* Head h, queries t0..t1-1, unfused: scores, softmax, mix per query. */
static void attend_probed(const attn_job *j, int h, int t0, int t1, int ith) {
    tg_gpt *g = j->g;
    const tg_kernels *k = &g->eng.k;
    int HS = g->head_dim, ldo = g->cfg.n_head * HS, l = j->layer;
    size_t at = kv_at(g, l, h, j->group); /* head-major cache */
    const float *kc, *vc;
    if (g->kv_type != TG_WTYPE_F16) {
        kc = g->k_cache + at, vc = g->v_cache + at;
    } else { /* the head widened once, inside the scores' time */
        int n = j->pos + t1; /* keys the last query sees */
        float *kw = kv16_ws(g, ith) + TG_KV16_WS(HS), *vw = kw + (size_t)g->n_ctx * HS;
        tg_probe_begin(g, TG_OP_ATTN_SCORES, l, h, ith);
        k->dequant[TG_WTYPE_F16](kw, g->k_h + at, n * HS);
        k->dequant[TG_WTYPE_F16](vw, g->v_h + at, n * HS);
        tg_probe_end(g, TG_OP_ATTN_SCORES, l, h, ith);
        kc = kw, vc = vw;
    }
    float *p = g->p + (size_t)ith * j->group * g->n_ctx;
    /* One chain of spans per work item: each op ends where the next begins,
     * so the probe's own cost between them is not left outside every op. */
    tg_probe_begin(g, TG_OP_ATTN_SCORES, l, h, ith);
    for (int t = t0; t < t1; t++) {
        int n_pos = j->pos + t + 1;
        const float *q = j->q + (size_t)t * j->ldq + (size_t)h * HS;
        float *o = g->att + (size_t)t * ldo + (size_t)h * HS;
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
    int HS = g->head_dim, ldo = g->cfg.n_head * HS;
    size_t at = kv_at(g, j->layer, h, j->group);
    const float *q = j->q + (size_t)t0 * j->ldq + (size_t)h * HS;
    float *o = g->att + (size_t)t0 * ldo + (size_t)h * HS;
    if (g->kv_type == TG_WTYPE_F16) {
        const uint16_t *kh = g->k_h + at, *vh = g->v_h + at;
        if (j->T == 1)
            (g->kv_stream ? k->attn_decode_gqa_f16_stream : k->attn_decode_gqa_f16)(
                o, g->p + (size_t)ith * j->group * g->n_ctx, q, kh, vh, j->pos + 1, HS, 1,
                j->scale, kv16_ws(g, ith));
        else
            k->attn_prefill_f16(o, q, kh, vh, t1 - t0, j->pos + t0, HS, j->ldq, ldo, j->scale,
                                kv16_ws(g, ith));
        return;
    }
    const float *kc = g->k_cache + at, *vc = g->v_cache + at;
    if (j->T == 1)
        (g->kv_stream ? k->attn_decode_stream : k->attn_decode)(
            o, g->p + (size_t)ith * j->group * g->n_ctx, q, kc, vc, j->pos + 1, HS, HS, j->scale);
    else
        k->attn_prefill(o, q, kc, vc, t1 - t0, j->pos + t0, HS, j->ldq, HS, ldo, j->scale);
}

/* KV heads [i0, i1) of a GQA decode: the G query heads of each at once. */
static void attn_group_range(void *ctx, int i0, int i1, int ith) {
    const attn_job *j = ctx;
    tg_gpt *g = j->g;
    int HS = g->head_dim, G = j->group;
    for (int kh = i0; kh < i1; kh++) {
        size_t at = kv_at(g, j->layer, kh * G, G);
        if (g->kv_type == TG_WTYPE_F16) {
            (g->kv_stream ? g->eng.k.attn_decode_gqa_f16_stream : g->eng.k.attn_decode_gqa_f16)(
                                         g->att + (size_t)kh * G * HS,
                                         g->p + (size_t)ith * G * g->n_ctx, j->q + (size_t)kh * G * HS,
                                         g->k_h + at, g->v_h + at, j->pos + 1, HS, G, j->scale,
                                         kv16_ws(g, ith));
            continue;
        }
        (g->kv_stream ? g->eng.k.attn_decode_gqa_stream : g->eng.k.attn_decode_gqa)(
                                 g->att + (size_t)kh * G * HS, g->p + (size_t)ith * G * g->n_ctx,
                                 j->q + (size_t)kh * G * HS, g->k_cache + at, g->v_cache + at,
                                 j->pos + 1, HS, G, j->scale);
    }
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

void tg_attention(tg_gpt *g, int layer, int pos, int T, const float *q, int ldq) {
    int H = g->cfg.n_head, HS = g->head_dim, G = H / g->n_kv_head;
    attn_job j = {g, layer, pos, T, (T + QBLOCK - 1) / QBLOCK, 1.0f / sqrtf((float)HS), q, ldq, G};
    /* q·k and p·v over the causal triangle: 4 flops per (query, key, dim). */
    double flops = 4.0 * T * (pos + 0.5 * T + 1) * H * HS;
    if (T == 1 && G > 1 && !TG_PROBED(g))
        tg_parallel_for(g->pool, g->n_kv_head, 1, flops, attn_group_range, &j);
    else
        tg_parallel_for(g->pool, H * j.n_qblocks, 1, flops, attn_range, &j);
}
