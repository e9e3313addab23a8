/* gpt2.c — GPT-2's architecture (Radford et al. 2019) for the shared forward
 * pass (model/gpt.c): token + position embedding, pre-LayerNorm blocks
 * (fused-QKV causal self-attention, GELU MLP, each added to the residual
 * stream), a final LayerNorm and the LM head. */
#include <math.h>
#include <string.h>

#include "model/gpt_internal.h"

static tg_status check(const tg_model *m, tg_err *err) {
    const tg_gpt2_config *c = &m->cfg;
    if (c->n_layer < 1 || c->n_head < 1 || c->n_embd < 1 || c->n_ctx < 1 || c->n_vocab < 1 ||
        c->n_ff < 1 || c->n_embd % c->n_head != 0)
        return tg_fail(err, TG_ERR_FORMAT,
                       "gpt: bad shape L=%d H=%d E=%d C=%d V=%d F=%d (E must divide by H)",
                       c->n_layer, c->n_head, c->n_embd, c->n_ctx, c->n_vocab, c->n_ff);
    if ((c->n_kv_head && c->n_kv_head != c->n_head) ||
        (c->head_dim && c->head_dim != c->n_embd / c->n_head))
        return tg_fail(err, TG_ERR_FORMAT, "gpt: GPT-2 has %d KV heads of size %d, not %d of %d",
                       c->n_head, c->n_embd / c->n_head, c->n_kv_head, c->head_dim);
    if (!(c->ln_eps > 0.0f) || !isfinite(c->ln_eps))
        return tg_fail(err, TG_ERR_FORMAT, "gpt: layer norm epsilon %g is not positive",
                       (double)c->ln_eps);
    if (!m->w.wte.data || !m->w.wpe || !m->w.layers || !m->w.lnf_w || !m->w.lnf_b ||
        !m->w.lm_head.data)
        return tg_fail(err, TG_ERR_FORMAT, "gpt: %s lacks a required tensor",
                       m->path ? m->path : "model");
    /* every matrix a view of the shape the config says (the binding checked
     * the file; this checks whoever built m) */
    int E = c->n_embd;
    int ok = tg_view_ok(&m->w.wte, c->n_vocab, E) && tg_view_ok(&m->w.lm_head, c->n_vocab, E);
    for (int l = 0; l < c->n_layer && ok; l++) {
        const tg_gpt2_layer *ly = &m->w.layers[l];
        ok = tg_view_ok(&ly->qkv_w, 3 * E, E) && tg_view_ok(&ly->proj_w, E, E) &&
             tg_view_ok(&ly->up_w, c->n_ff, E) && tg_view_ok(&ly->down_w, E, c->n_ff);
    }
    if (!ok)
        return tg_fail(err, TG_ERR_FORMAT, "gpt: %s: a weight matrix is not a view of its shape",
                       m->path ? m->path : "model");
    return TG_OK;
}

/* x[t] = wte[tokens[t]] + wpe[pos + t]  (a typed wte row is decoded first) */
static void embed(tg_gpt *g, const int *tokens, int T, int pos) {
    size_t E = (size_t)g->cfg.n_embd;
    const tg_weight *wte = &g->w.wte;
    for (int t = 0; t < T; t++) {
        const float *pe = g->w.wpe + (size_t)(pos + t) * E;
        if (wte->type == TG_WTYPE_F32) {
            const char *row = (const char *)wte->data + (size_t)tokens[t] * wte->row_bytes;
            g->eng.k.add(g->x + t * E, (const float *)row, pe, (int)E);
        } else {
            tg_embed_row(g, g->x + t * E, wte, tokens[t]);
            g->eng.k.add(g->x + t * E, g->x + t * E, pe, (int)E);
        }
    }
}

/* One transformer block, pre-LN:
 *   x = x + proj(attention(ln_1(x)));   x = x + down(gelu(up(ln_2(x)))) */
static void block(tg_gpt *g, int l, int pos, int T) {
    const tg_gpt2_layer *w = &g->w.layers[l];
    int E = g->cfg.n_embd, F = g->cfg.n_ff;

    tg_probe_begin(g, TG_OP_LN1, l, -1, 0);
    tg_rows_layernorm(g, g->xn, g->x, w->ln1_w, w->ln1_b, T, E);
    tg_probe_end(g, TG_OP_LN1, l, -1, 0);

    tg_probe_begin(g, TG_OP_QKV, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, g->qkv, g->xn, &w->qkv_w, w->qkv_b, T, g->xq);
    tg_store_kv(g, l, pos, T, g->qkv + E, g->qkv + 2 * E, 3 * E); /* rows q | k | v */
    tg_probe_end(g, TG_OP_QKV, l, -1, 0);

    tg_attention(g, l, pos, T, g->qkv, 3 * E); /* timed per head and part inside, when probed */
    tg_mask_heads(g, l, T);

    tg_probe_begin(g, TG_OP_ATTN_PROJ, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, g->tmp, g->att, &w->proj_w, w->proj_b, T, g->xq);
    tg_rows_add(g, g->x, g->tmp, T, E);
    tg_probe_end(g, TG_OP_ATTN_PROJ, l, -1, 0);

    tg_probe_begin(g, TG_OP_LN2, l, -1, 0);
    tg_rows_layernorm(g, g->xn, g->x, w->ln2_w, w->ln2_b, T, E);
    tg_probe_end(g, TG_OP_LN2, l, -1, 0);

    tg_probe_begin(g, TG_OP_MLP_UP, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, g->up, g->xn, &w->up_w, w->up_b, T, g->xq);
    tg_probe_end(g, TG_OP_MLP_UP, l, -1, 0);

    tg_probe_begin(g, TG_OP_GELU, l, -1, 0);
    tg_rows_gelu(g, g->act, g->up, T, F);
    tg_probe_end(g, TG_OP_GELU, l, -1, 0);

    tg_probe_begin(g, TG_OP_MLP_DOWN, l, -1, 0);
    tg_matmul_w(&g->eng, g->pool, g->tmp, g->act, &w->down_w, w->down_b, T, g->xq);
    tg_rows_add(g, g->x, g->tmp, T, E);
    tg_probe_end(g, TG_OP_MLP_DOWN, l, -1, 0);
}

static void final_norm(tg_gpt *g, float *y, const float *x, int rows) {
    tg_rows_layernorm(g, y, x, g->w.lnf_w, g->w.lnf_b, rows, g->cfg.n_embd);
}

static const tg_weight *lm_head(const tg_gpt *g) { return &g->w.lm_head; }

static double step_weight_bytes(const tg_model *m) {
    double sum = tg_weight_bytes(&m->w.lm_head);
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const tg_gpt2_layer *y = &m->w.layers[l];
        sum += tg_weight_bytes(&y->qkv_w) + tg_weight_bytes(&y->proj_w) +
               tg_weight_bytes(&y->up_w) + tg_weight_bytes(&y->down_w);
    }
    return sum;
}

const tg_arch_ops tg_gpt2_ops = {
    .arch = TG_ARCH_GPT2,
    .check = check,
    .embed = embed,
    .block = block,
    .final_norm = final_norm,
    .lm_head = lm_head,
    .step_weight_bytes = step_weight_bytes,
};
