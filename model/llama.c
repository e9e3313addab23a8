/* llama.c — the Llama architecture (Touvron et al. 2023) for the shared
 * forward pass (model/gpt.c): token embedding, pre-RMSNorm blocks
 * (rotary-embedded Q/K, grouped-query causal attention, SwiGLU MLP, each
 * added to the residual stream), a final RMSNorm and the classifier. No
 * biases, no learned positions.
 *
 * Per layer, with legend L, E, H, KVH, HS, F of model/gpt.h:
 *   h = rmsnorm(x) · attn_norm
 *   q = rope(h·wqᵀ) [T, H·HS],  k = rope(h·wkᵀ) [T, KVH·HS],  v = h·wvᵀ
 *   x = x + attention(q, K, V) · woᵀ
 *   h = rmsnorm(x) · ffn_norm
 *   x = x + (silu(h·w1ᵀ) ⊙ h·w3ᵀ) · w2ᵀ
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/mem.h"
#include "model/gpt_internal.h"

static tg_status check(const tg_model *m, tg_err *err) {
    const tg_model_config *c = &m->cfg;
    const char *path = m->path ? m->path : "model";
    char where[512];
    snprintf(where, sizeof where, "gpt: %s", path);
    tg_status s = tg_llama_config_check(c, where, err);
    if (s) return s;
    const tg_llama_weights *w = &m->llama;
    if (!w->tok_embd.data || !w->layers || !w->out_norm || !w->output.data)
        return tg_fail(err, TG_ERR_FORMAT, "gpt: %s lacks a required tensor", path);
    int E = c->n_embd, F = c->n_ff, V = c->n_vocab, HS = tg_config_head_dim(c);
    int Q = c->n_head * HS, KV = tg_config_n_kv_head(c) * HS;
    int ok = tg_view_ok(&w->tok_embd, V, E) && tg_view_ok(&w->output, V, E);
    for (int l = 0; l < c->n_layer && ok; l++) {
        const tg_llama_layer *y = &w->layers[l];
        ok = y->attn_norm && y->ffn_norm && tg_view_ok(&y->wq, Q, E) && tg_view_ok(&y->wk, KV, E) &&
             tg_view_ok(&y->wv, KV, E) && tg_view_ok(&y->wo, E, Q) && tg_view_ok(&y->w1, F, E) &&
             tg_view_ok(&y->w3, F, E) && tg_view_ok(&y->w2, E, F);
    }
    if (!ok)
        return tg_fail(err, TG_ERR_FORMAT, "gpt: %s: a weight is missing or not a view of its shape",
                       path);
    return TG_OK;
}

/* cos and sin of pos · θ^(-2i/D) for every position of the cache and pair
 * i < D/2, computed in double once. */
static tg_status prepare(tg_gpt *g, tg_err *err) {
    int half = g->cfg.rope_dim / 2;
    size_t n = (size_t)g->n_ctx * (size_t)half;
    g->rope_cos = malloc(n * sizeof(float));
    g->rope_sin = malloc(n * sizeof(float));
    if (!g->rope_cos || !g->rope_sin)
        return tg_fail(err, TG_ERR_NOMEM, "gpt: out of memory for the RoPE tables");
    double theta = g->cfg.rope_theta;
    for (int i = 0; i < half; i++) {
        double freq = pow(theta, -2.0 * i / g->cfg.rope_dim);
        for (int p = 0; p < g->n_ctx; p++) {
            double a = p * freq;
            g->rope_cos[(size_t)p * half + i] = (float)cos(a);
            g->rope_sin[(size_t)p * half + i] = (float)sin(a);
        }
    }
    return TG_OK;
}

static void release(tg_gpt *g) {
    free(g->rope_cos);
    free(g->rope_sin);
    g->rope_cos = g->rope_sin = NULL;
}

/* x[t] = tok_embd[tokens[t]] (positions enter through RoPE) */
static void embed(tg_gpt *g, const int *tokens, int T, int pos) {
    (void)pos;
    size_t E = (size_t)g->cfg.n_embd;
    for (int t = 0; t < T; t++) tg_embed_row(g, g->x + t * E, &g->lw.tok_embd, tokens[t]);
}

/* x[T, n_head·HS] rotated at positions pos..pos+T-1 */
static void rope_rows(tg_gpt *g, float *x, int T, int pos, int n_head) {
    int half = g->cfg.rope_dim / 2, HS = g->head_dim;
    int halves = g->cfg.rope_pairs == TG_ROPE_HALVES;
    for (int t = 0; t < T; t++) {
        size_t at = (size_t)(pos + t) * half;
        g->eng.k.rope(x + (size_t)t * n_head * HS, g->rope_cos + at, g->rope_sin + at, n_head,
                      HS, g->cfg.rope_dim, halves);
    }
}

static void block(tg_gpt *g, int l, int pos, int T) {
    const tg_llama_layer *w = &g->lw.layers[l];
    int E = g->cfg.n_embd, F = g->cfg.n_ff, H = g->cfg.n_head, KVH = g->n_kv_head;
    int HS = g->head_dim;
    float *q = g->qkv, *k = q + (size_t)T * H * HS, *v = k + (size_t)T * KVH * HS;

    tg_probe_begin(g, TG_OP_LN1, l, -1, 0);
    tg_rows_rmsnorm(g, g->xn, g->x, w->attn_norm, T, E);
    tg_probe_end(g, TG_OP_LN1, l, -1, 0);

    tg_probe_begin(g, TG_OP_QKV, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, q, g->xn, &w->wq, NULL, T, g->xq);
    tg_matmul_w(&g->eng, g->pool, k, g->xn, &w->wk, NULL, T, g->xq);
    tg_matmul_w(&g->eng, g->pool, v, g->xn, &w->wv, NULL, T, g->xq);
    rope_rows(g, q, T, pos, H);
    rope_rows(g, k, T, pos, KVH);
    tg_store_kv(g, l, pos, T, k, v, KVH * HS);
    tg_probe_end(g, TG_OP_QKV, l, -1, 0);

    tg_attention(g, l, pos, T, q, H * HS);
    tg_mask_heads(g, l, T);

    tg_probe_begin(g, TG_OP_ATTN_PROJ, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, g->tmp, g->att, &w->wo, NULL, T, g->xq);
    tg_rows_add(g, g->x, g->tmp, T, E);
    tg_probe_end(g, TG_OP_ATTN_PROJ, l, -1, 0);

    tg_probe_begin(g, TG_OP_LN2, l, -1, 0);
    tg_rows_rmsnorm(g, g->xn, g->x, w->ffn_norm, T, E);
    tg_probe_end(g, TG_OP_LN2, l, -1, 0);

    tg_probe_begin(g, TG_OP_MLP_UP, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, g->act, g->xn, &w->w1, NULL, T, g->xq);
    tg_matmul_w(&g->eng, g->pool, g->up, g->xn, &w->w3, NULL, T, g->xq);
    tg_probe_end(g, TG_OP_MLP_UP, l, -1, 0);

    tg_probe_begin(g, TG_OP_GELU, l, -1, 0);
    tg_rows_silu_mul(g, g->act, g->act, g->up, T, F);
    tg_probe_end(g, TG_OP_GELU, l, -1, 0);

    tg_probe_begin(g, TG_OP_MLP_DOWN, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, g->tmp, g->act, &w->w2, NULL, T, g->xq);
    tg_rows_add(g, g->x, g->tmp, T, E);
    tg_probe_end(g, TG_OP_MLP_DOWN, l, -1, 0);
}

static void final_norm(tg_gpt *g, float *y, const float *x, int rows) {
    tg_rows_rmsnorm(g, y, x, g->lw.out_norm, rows, g->cfg.n_embd);
}

static const tg_weight *lm_head(const tg_gpt *g) { return &g->lw.output; }

static double step_weight_bytes(const tg_model *m) {
    double sum = tg_weight_bytes(&m->llama.output);
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const tg_llama_layer *y = &m->llama.layers[l];
        sum += tg_weight_bytes(&y->wq) + tg_weight_bytes(&y->wk) + tg_weight_bytes(&y->wv) +
               tg_weight_bytes(&y->wo) + tg_weight_bytes(&y->w1) + tg_weight_bytes(&y->w2) +
               tg_weight_bytes(&y->w3);
    }
    return sum;
}

static const char *const labels[TG_OP_COUNT] = {
    [TG_OP_EMBED] = "embed",        [TG_OP_LN1] = "attn_norm",     [TG_OP_QKV] = "qkv_rope",
    [TG_OP_ATTN_PROJ] = "attn_output", [TG_OP_LN2] = "ffn_norm",   [TG_OP_MLP_UP] = "gate_up",
    [TG_OP_GELU] = "swiglu",        [TG_OP_MLP_DOWN] = "ffn_down", [TG_OP_LNF] = "output_norm",
    [TG_OP_LM_HEAD] = "output",
};

const tg_arch_ops tg_llama_ops = {
    .arch = TG_ARCH_LLAMA,
    .check = check,
    .prepare = prepare,
    .release = release,
    .embed = embed,
    .block = block,
    .final_norm = final_norm,
    .lm_head = lm_head,
    .step_weight_bytes = step_weight_bytes,
    .op_labels = labels,
};
