/* opcount.c — the flop and byte formulas of every op (see opcount.h for the
 * conventions). Shapes: E width, H heads, HS = E/H, F feed-forward width,
 * V vocabulary, T tokens in the step, pos tokens already cached, R =
 * n_logits rows through the head, P = pos + T positions in the cache after
 * the step, S = Σ_{t<T} (pos + t + 1) = T·pos + T(T+1)/2 (query, key) pairs
 * per head. */
#include "model/opcount.h"

enum { F32 = 4 };

/* A matmul y[T,OUT] = x[T,IN] · W[OUT,IN]ᵀ (+ b): 2·T·IN·OUT flops (+ T·OUT
 * for the bias); reads W (and b) and x. */
static tg_opcost matmul_cost(double T, double in, double out, int bias) {
    tg_opcost k = {0};
    k.flops = 2.0 * T * in * out + (bias ? T * out : 0);
    k.weight_bytes = F32 * (in * out + (bias ? out : 0));
    k.act_bytes = F32 * T * in;
    return k;
}

/* LayerNorm of R rows of N: mean (1 flop/element), variance (3: subtract,
 * square, add), normalise and affine (4: subtract, scale, gain, bias) = 8
 * per element; reads x and the gain and bias vectors. */
static tg_opcost layernorm_cost(double R, double N) {
    tg_opcost k = {0};
    k.flops = 8.0 * R * N;
    k.weight_bytes = F32 * 2.0 * N;
    k.act_bytes = F32 * R * N;
    return k;
}

/* RMSNorm of R rows of N: square-sum (2 per element), scale and gain (2) =
 * 4 per element; reads x and the gain. */
static tg_opcost rmsnorm_cost(double R, double N) {
    tg_opcost k = {0};
    k.flops = 4.0 * R * N;
    k.weight_bytes = F32 * N;
    k.act_bytes = F32 * R * N;
    return k;
}

/* Llama's ops where they differ from GPT-2's (Q = H·HS query width, KV =
 * KVH·HS key/value width; no biases, no position embedding). */
static int llama_cost(const tg_gpt2_config *c, tg_op op, double T, double P, double S, double R,
                      tg_opcost *k) {
    double E = c->n_embd, F = c->n_ff, HS = tg_config_head_dim(c), H = c->n_head;
    double Q = H * HS, KV = tg_config_n_kv_head(c) * HS, D = tg_config_rope_dim(c);
    tg_opcost z = {0};
    *k = z;
    switch (op) {
    case TG_OP_EMBED:        /* a row copy */
        k->weight_bytes = F32 * T * E;
        return 1;
    case TG_OP_LN1:
    case TG_OP_LN2:
        *k = rmsnorm_cost(T, E);
        return 1;
    case TG_OP_LNF:
        *k = rmsnorm_cost(R, E);
        return 1;
    case TG_OP_QKV:          /* three matmuls, then RoPE on q and k: 6 flops per rotated pair */
        *k = matmul_cost(T, E, Q + 2 * KV, 0);
        k->flops += 6.0 * T * (H + tg_config_n_kv_head(c)) * D / 2;
        return 1;
    case TG_OP_ATTN_SCORES:  /* the G query heads of a group read their KV head */
        k->flops = S * (2 * Q + H);
        k->kv_bytes = F32 * P * KV;
        k->act_bytes = F32 * T * Q;
        return 1;
    case TG_OP_ATTN_MIX:
        k->flops = 2.0 * S * Q;
        k->kv_bytes = F32 * P * KV;
        k->act_bytes = F32 * H * S;
        return 1;
    case TG_OP_ATTN_PROJ:    /* [T,Q] -> [T,E], then the residual add */
        *k = matmul_cost(T, Q, E, 0);
        k->flops += T * E;
        k->act_bytes += F32 * T * E;
        return 1;
    case TG_OP_MLP_UP:       /* gate and up: two [T,E] -> [T,F] */
        *k = matmul_cost(T, E, 2 * F, 0);
        return 1;
    case TG_OP_GELU:         /* silu(a)·b: negate, exp, add, divide, multiply */
        k->flops = 5.0 * T * F;
        k->act_bytes = F32 * 2.0 * T * F;
        return 1;
    case TG_OP_MLP_DOWN:
        *k = matmul_cost(T, F, E, 0);
        k->flops += T * E;
        k->act_bytes += F32 * T * E;
        return 1;
    default:
        return 0; /* softmax, lm_head, sample: as GPT-2's */
    }
}

tg_opcost tg_opcost_layer(const tg_gpt2_config *c, tg_op op, int T_, int pos_, int R_) {
    double E = c->n_embd, H = c->n_head, F = c->n_ff, V = c->n_vocab;
    double T = T_, pos = pos_, R = R_;
    double P = pos + T;
    double S = T * pos + T * (T + 1) / 2;
    tg_opcost k = {0};
    if (c->arch == TG_ARCH_LLAMA && llama_cost(c, op, T, P, S, R, &k)) return k;
    switch (op) {
    case TG_OP_EMBED:        /* x[t] = wte[token] + wpe[pos+t]: one add per element */
        k.flops = T * E;
        k.weight_bytes = F32 * 2.0 * T * E;
        break;
    case TG_OP_LN1:
    case TG_OP_LN2:
        k = layernorm_cost(T, E);
        break;
    case TG_OP_QKV:          /* [T,E] -> [T,3E] with bias (the K/V copy into the cache is free) */
        k = matmul_cost(T, E, 3 * E, 1);
        break;
    case TG_OP_ATTN_SCORES:  /* per head and pair: HS-long dot (2·HS) and the scale (1) */
        k.flops = S * (2 * E + H);
        k.kv_bytes = F32 * P * E;        /* every cached key, all heads */
        k.act_bytes = F32 * T * E;       /* the queries */
        break;
    case TG_OP_ATTN_SOFTMAX: /* per score: max, subtract, exp, sum, normalise */
        k.flops = 5.0 * H * S;
        k.act_bytes = F32 * H * S;
        break;
    case TG_OP_ATTN_MIX:     /* per head and pair: HS multiply-adds */
        k.flops = 2.0 * S * E;
        k.kv_bytes = F32 * P * E;        /* every cached value */
        k.act_bytes = F32 * H * S;       /* the attention weights */
        break;
    case TG_OP_ATTN_PROJ:    /* [T,E] -> [T,E] with bias, then the residual add */
        k = matmul_cost(T, E, E, 1);
        k.flops += T * E;
        k.act_bytes += F32 * T * E;
        break;
    case TG_OP_MLP_UP:
        k = matmul_cost(T, E, F, 1);
        break;
    case TG_OP_GELU:         /* 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))): 9 per element */
        k.flops = 9.0 * T * F;
        k.act_bytes = F32 * T * F;
        break;
    case TG_OP_MLP_DOWN:     /* [T,F] -> [T,E] with bias, then the residual add */
        k = matmul_cost(T, F, E, 1);
        k.flops += T * E;
        k.act_bytes += F32 * T * E;
        break;
    case TG_OP_LNF:
        k = layernorm_cost(R, E);
        break;
    case TG_OP_LM_HEAD:      /* [R,E] -> [R,V], no bias (tied or not, V·E weights) */
        k = matmul_cost(R, E, V, 0);
        break;
    case TG_OP_SAMPLE:       /* one pass over the last row of logits */
        k.flops = V;
        k.act_bytes = F32 * V;
        break;
    default:
        break;
    }
    return k;
}

int tg_op_in_block(tg_op op) { return op >= TG_OP_LN1 && op <= TG_OP_MLP_DOWN; }

int tg_op_per_head(tg_op op) {
    return op == TG_OP_ATTN_SCORES || op == TG_OP_ATTN_SOFTMAX || op == TG_OP_ATTN_MIX;
}

tg_opcost tg_opcost_scale(tg_opcost a, double s) {
    return (tg_opcost){a.flops * s, a.weight_bytes * s, a.kv_bytes * s, a.act_bytes * s};
}

tg_opcost tg_opcost_add(tg_opcost a, tg_opcost b) {
    return (tg_opcost){a.flops + b.flops, a.weight_bytes + b.weight_bytes,
                       a.kv_bytes + b.kv_bytes, a.act_bytes + b.act_bytes};
}

/* bytes of a typed matrix minus its f32 count */
static double typed_extra(const tg_weight *m) {
    return (double)m->rows * (double)m->row_bytes - F32 * (double)m->rows * (double)m->cols;
}

double tg_kv_scale(tg_wtype kv_type) { return kv_type == TG_WTYPE_F16 ? 0.5 : 1.0; }

void tg_typed_bytes_of_gpt(const tg_gpt *g, tg_typed_bytes *out) {
    tg_typed_bytes_of(tg_gpt_model(g), out);
    out->kv_scale = tg_kv_scale(tg_gpt_kv_type(g));
}

void tg_typed_bytes_of(const tg_model *m, tg_typed_bytes *out) {
    *out = (tg_typed_bytes){{0}, {0}, 1.0};
    double E = m->cfg.n_embd;
    if (m->cfg.arch == TG_ARCH_LLAMA) {
        const tg_llama_weights *w = &m->llama;
        if (!w->layers) return;
        out->token[TG_OP_EMBED] = (double)w->tok_embd.row_bytes - F32 * E;
        out->step[TG_OP_LM_HEAD] = typed_extra(&w->output);
        for (int l = 0; l < m->cfg.n_layer; l++) {
            const tg_llama_layer *y = &w->layers[l];
            out->step[TG_OP_QKV] += typed_extra(&y->wq) + typed_extra(&y->wk) + typed_extra(&y->wv);
            out->step[TG_OP_ATTN_PROJ] += typed_extra(&y->wo);
            out->step[TG_OP_MLP_UP] += typed_extra(&y->w1) + typed_extra(&y->w3);
            out->step[TG_OP_MLP_DOWN] += typed_extra(&y->w2);
        }
        return;
    }
    const tg_gpt2_weights *w = &m->w;
    if (!w->layers) return;
    out->token[TG_OP_EMBED] = (double)w->wte.row_bytes - F32 * E;
    out->step[TG_OP_LM_HEAD] = typed_extra(&w->lm_head);
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const tg_gpt2_layer *y = &w->layers[l];
        out->step[TG_OP_QKV] += typed_extra(&y->qkv_w);
        out->step[TG_OP_ATTN_PROJ] += typed_extra(&y->proj_w);
        out->step[TG_OP_MLP_UP] += typed_extra(&y->up_w);
        out->step[TG_OP_MLP_DOWN] += typed_extra(&y->down_w);
    }
}

tg_opcost tg_opcost_step_typed(const tg_gpt2_config *c, const tg_typed_bytes *tb, tg_op op, int T,
                               int pos, int n_logits) {
    tg_opcost k = tg_opcost_step(c, op, T, pos, n_logits);
    if (tb && op >= 0 && op < TG_OP_COUNT) k.weight_bytes += tb->step[op] + tb->token[op] * T;
    if (tb && tb->kv_scale > 0) k.kv_bytes *= tb->kv_scale;
    return k;
}

double tg_opcost_typed_delta_model(const tg_model *m) {
    tg_typed_bytes tb;
    tg_typed_bytes_of(m, &tb);
    double d = 0;
    for (int op = 0; op < TG_OP_COUNT; op++) d += tb.step[op];
    return d;
}

double tg_opcost_typed_delta(const tg_gpt2_config *c, const tg_gpt2_weights *w) {
    if (!w->layers) return 0; /* not GPT-2 weights: tg_opcost_typed_delta_model */
    double real = (double)w->lm_head.rows * (double)w->lm_head.row_bytes;
    double f32 = F32 * w->lm_head.rows * (double)w->lm_head.cols;
    for (int l = 0; l < c->n_layer; l++) {
        const tg_weight *m[4] = {&w->layers[l].qkv_w, &w->layers[l].proj_w, &w->layers[l].up_w,
                                 &w->layers[l].down_w};
        for (int k = 0; k < 4; k++) {
            real += (double)m[k]->rows * (double)m[k]->row_bytes;
            f32 += F32 * m[k]->rows * (double)m[k]->cols;
        }
    }
    return real - f32;
}

double tg_opcost_bytes(tg_opcost k) { return k.weight_bytes + k.kv_bytes + k.act_bytes; }

tg_opcost tg_opcost_step(const tg_gpt2_config *c, tg_op op, int T, int pos, int n_logits) {
    tg_opcost k = tg_opcost_layer(c, op, T, pos, n_logits);
    return tg_op_in_block(op) ? tg_opcost_scale(k, c->n_layer) : k;
}

tg_opcost tg_opcost_forward(const tg_gpt2_config *c, int T, int pos, int n_logits) {
    tg_opcost sum = {0};
    for (int op = 0; op < TG_OP_SAMPLE; op++)
        sum = tg_opcost_add(sum, tg_opcost_step(c, (tg_op)op, T, pos, n_logits));
    return sum;
}
