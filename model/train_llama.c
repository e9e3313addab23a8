/* train_llama.c — a Llama's blocks for the trainer (model/train_internal.h):
 * the parameter table, llama2.c's init, and per layer, as model/llama.c
 * runs them (legend of train_internal.h)
 *   h = rmsnorm(x) · attn_norm
 *   [q k v] = h · wqkvᵀ;  q, k = rope(q), rope(k)       [BT, Q + 2KV]
 *   mid = x + attention(q, k, v) · woᵀ                  (GQA: K/V head h/G)
 *   h = rmsnorm(mid) · ffn_norm
 *   [a b] = h · w13ᵀ;  xo = mid + (silu(a) ⊙ b) · w2ᵀ    [BT, 2F]
 * then the final RMSNorm, forward and backward; no biases, no positions.
 * RoPE is a rotation per pair: its backward is the same kernel turning by
 * the opposite angle (sin negated), applied to dq and dk. The embedding,
 * attention, matmuls, classifier (tied or not) and loss are train.c's.
 */
#include <string.h>

#include "model/train_internal.h"

enum { N_TIED = 8, N_UNTIED = 9 };

static int sizes(const tg_model_config *c, int tied, size_t *s) {
    size_t L = c->n_layer, E = c->n_embd, F = c->n_ff, V = c->n_vocab;
    size_t HS = tg_config_head_dim(c), Q = c->n_head * HS, KV = tg_config_n_kv_head(c) * HS;
    size_t sz[N_UNTIED] = {V * E, L * E, L * (Q + 2 * KV) * E, L * E * Q, L * E,
                           L * 2 * F * E, L * E * F, E, V * E};
    memcpy(s, sz, sizeof sz);
    return tied ? N_TIED : N_UNTIED;
}

static const char *const names[N_UNTIED] = {"tok_embd", "attn_norm", "wqkv", "wo", "ffn_norm",
                                            "w13", "w2", "out_norm", "output"};
static const int decay[N_UNTIED] = {1, 0, 1, 1, 0, 1, 1, 0, 1};

static tg_train_llama_params table(float *base, const size_t *s, int n) {
    tg_train_llama_params t = {0};
    float **ptrs[N_UNTIED] = {&t.tok_embd, &t.attn_norm, &t.wqkv, &t.wo, &t.ffn_norm,
                              &t.w13, &t.w2, &t.out_norm, &t.output};
    for (int i = 0; i < n; i++) {
        *ptrs[i] = base;
        base += s[i];
    }
    if (n == N_TIED) t.output = t.tok_embd;
    return t;
}

static void carve(tg_trainer *tr) {
    tr->lp = table(tr->params, tr->sizes, tr->n_tensors);
    tr->lg = table(tr->grads, tr->sizes, tr->n_tensors);
    tr->tok_w = tr->lp.tok_embd, tr->tok_g = tr->lg.tok_embd;
    tr->cls_w = tr->lp.output, tr->cls_g = tr->lg.output;
    tr->pos_w = tr->pos_g = NULL;
}

static void reset(tg_trainer *tr) {
    size_t L = tr->cfg.n_layer, E = tr->E;
    for (size_t i = 0; i < L * E; i++) tr->lp.attn_norm[i] = tr->lp.ffn_norm[i] = 1.0f;
    for (size_t i = 0; i < E; i++) tr->lp.out_norm[i] = 1.0f;
}

/* wo and w2 are the residual projections */
static void init(tg_trainer *tr, tg_rng *r) { tg_tr_init_normals(tr, r, tr->lp.wo, tr->lp.w2); }

void tg_trainer_llama_weights(tg_trainer *tr, tg_llama_weights *w, tg_llama_layer *layers) {
    const tg_model_config *c = &tr->cfg;
    const tg_train_llama_params *p = &tr->lp;
    size_t E = tr->E, F = tr->F, Q = tr->Q, KV = tr->KV, QKV = tr->QKV;
    int iE = tr->E, iF = tr->F, iQ = tr->Q, iKV = tr->KV;
    w->tok_embd = tg_weight_f32(p->tok_embd, c->n_vocab, iE);
    w->out_norm = p->out_norm;
    w->tied = tr->tied;
    w->output = tr->tied ? w->tok_embd : tg_weight_f32(p->output, c->n_vocab, iE);
    w->layers = layers;
    for (int l = 0; l < c->n_layer; l++) {
        tg_llama_layer *y = &layers[l];
        const float *qkv = p->wqkv + l * QKV * E, *w13 = p->w13 + l * 2 * F * E;
        y->attn_norm = p->attn_norm + l * E;
        y->wq = tg_weight_f32(qkv, iQ, iE);
        y->wk = tg_weight_f32(qkv + Q * E, iKV, iE);
        y->wv = tg_weight_f32(qkv + (Q + KV) * E, iKV, iE);
        y->wo = tg_weight_f32(p->wo + l * E * Q, iE, iQ);
        y->ffn_norm = p->ffn_norm + l * E;
        y->w1 = tg_weight_f32(w13, iF, iE);
        y->w3 = tg_weight_f32(w13 + F * E, iF, iE);
        y->w2 = tg_weight_f32(p->w2 + l * E * F, iE, iF);
    }
}

/* ---- RMSNorm, RoPE, SwiGLU ------------------------------------------------------ */

typedef struct row_job {
    const tg_trainer *tr;
    float *out, *dinp;
    const float *inp, *w, *dout;
    int T;
    const float *sn; /* RoPE: sin or -sin */
} row_job;

static void rms_fwd_rows(void *ctx, int t0, int t1, int ith) {
    (void)ith;
    const row_job *j = ctx;
    size_t E = j->tr->E;
    j->tr->eng.k.rmsnorm(j->out + t0 * E, j->inp + t0 * E, j->w, t1 - t0, (int)E,
                         j->tr->cfg.ln_eps);
}

/* out[BT,E] = rmsnorm(inp) · w */
static void rmsnorm_forward(tg_trainer *tr, float *out, const float *inp, const float *w, int BT) {
    row_job j = {tr, out, NULL, inp, w, NULL, 0, NULL};
    tg_parallel_for(tr->pool, BT, TG_TR_CHUNK, 6.0 * BT * tr->E, rms_fwd_rows, &j);
}

static void rms_bwd_chunk(const void *ctx, int t0, int t1, float *part) {
    const row_job *j = ctx;
    size_t E = j->tr->E;
    j->tr->eng.k.rmsnorm_bwd(j->dinp + t0 * E, part, j->dout + t0 * E, j->inp + t0 * E, j->w,
                             t1 - t0, (int)E, j->tr->cfg.ln_eps);
}

/* dinp[BT,E] += RMSNorm backward; dw += its sum over rows */
static void rmsnorm_backward(tg_trainer *tr, float *dinp, float *dw, const float *dout,
                             const float *inp, const float *w, int BT) {
    row_job j = {tr, NULL, dinp, inp, w, dout, 0, NULL};
    tg_tr_norm_backward(tr, BT, 12.0 * BT * tr->E, rms_bwd_chunk, &j, dw, NULL);
}

/* rows of x[BT,QKV]: the Q and K heads turned by the angles of position t % T */
static void rope_rows(void *ctx, int t0, int t1, int ith) {
    (void)ith;
    const row_job *j = ctx;
    const tg_trainer *tr = j->tr;
    int half = tg_config_rope_dim(&tr->cfg) / 2, D = 2 * half;
    int halves = tr->cfg.rope_pairs == TG_ROPE_HALVES;
    for (int t = t0; t < t1; t++) {
        float *row = j->out + (size_t)t * tr->QKV;
        size_t at = (size_t)(t % j->T) * half;
        tr->eng.k.rope(row, tr->rope_cos + at, j->sn + at, tr->H, tr->HS, D, halves);
        tr->eng.k.rope(row + tr->Q, tr->rope_cos + at, j->sn + at, tr->KVH, tr->HS, D, halves);
    }
}

/* forward (sn = sin) or backward (sn = -sin: the inverse rotation) */
static void rope_apply(tg_trainer *tr, float *qkv, const float *sn, int BT, int T) {
    row_job j = {tr, qkv, NULL, NULL, NULL, NULL, T, sn};
    tg_parallel_for(tr->pool, BT, 16, 6.0 * BT * (tr->Q + tr->KV), rope_rows, &j);
}

static void swiglu_fwd_rows(void *ctx, int t0, int t1, int ith) {
    (void)ith;
    const row_job *j = ctx;
    size_t F = j->tr->F;
    for (int t = t0; t < t1; t++) {
        const float *ab = j->inp + t * 2 * F;
        j->tr->eng.k.silu_mul(j->out + t * F, ab, ab + F, (int)F);
    }
}

static void swiglu_bwd_rows(void *ctx, int t0, int t1, int ith) {
    (void)ith;
    const row_job *j = ctx;
    size_t F = j->tr->F;
    for (int t = t0; t < t1; t++) {
        const float *ab = j->inp + t * 2 * F;
        float *d = j->dinp + t * 2 * F;
        j->tr->eng.k.silu_mul_bwd(d, d + F, ab, ab + F, j->dout + t * F, (int)F);
    }
}

/* act[BT,F] = silu(ab[:, :F]) ⊙ ab[:, F:] */
static void swiglu_forward(tg_trainer *tr, float *act, const float *ab, int BT) {
    row_job j = {tr, act, NULL, ab, NULL, NULL, 0, NULL};
    tg_parallel_for(tr->pool, BT, 4, 20.0 * BT * tr->F, swiglu_fwd_rows, &j);
}

/* dab[BT,2F] (overwritten) from dact[BT,F] */
static void swiglu_backward(tg_trainer *tr, float *dab, const float *ab, const float *dact, int BT) {
    row_job j = {tr, NULL, dab, ab, NULL, dact, 0, NULL};
    tg_parallel_for(tr->pool, BT, 4, 30.0 * BT * tr->F, swiglu_bwd_rows, &j);
}

/* ---- the blocks ---------------------------------------------------------------- */

static void forward(tg_trainer *tr, int B, int T) {
    const tg_train_llama_params *p = &tr->lp;
    int BT = B * T, L = tr->cfg.n_layer, E = tr->E, F = tr->F, H = tr->H;
    int Q = tr->Q, QKV = tr->QKV;
    size_t sE = (size_t)BT * E, sF = (size_t)BT * F;
    for (int l = 0; l < L; l++) {
        float *x = tr->res + l * sE, *xo = tr->res + (l + 1) * sE, *mid = tr->mid + l * sE;
        float *ln1 = tr->ln1 + l * sE, *ln2 = tr->ln2 + l * sE, *qkv = tr->qkv + (size_t)l * BT * QKV;
        float *att = tr->att + (size_t)l * B * H * T * T, *atty = tr->atty + (size_t)l * BT * Q;
        float *ab = tr->up + l * 2 * sF, *act = tr->act + l * sF;
        rmsnorm_forward(tr, ln1, x, p->attn_norm + l * E, BT);
        tg_tr_matmul_forward(tr, qkv, ln1, p->wqkv + (size_t)l * QKV * E, NULL, BT, E, QKV);
        rope_apply(tr, qkv, tr->rope_sin, BT, T);
        tg_tr_attention_forward(tr, atty, att, qkv, B, T);
        tg_tr_matmul_forward(tr, mid, atty, p->wo + (size_t)l * E * Q, NULL, BT, Q, E);
        tg_tr_residual(mid, mid, x, sE);
        rmsnorm_forward(tr, ln2, mid, p->ffn_norm + l * E, BT);
        tg_tr_matmul_forward(tr, ab, ln2, p->w13 + (size_t)l * 2 * F * E, NULL, BT, E, 2 * F);
        swiglu_forward(tr, act, ab, BT);
        tg_tr_matmul_forward(tr, xo, act, p->w2 + (size_t)l * E * F, NULL, BT, F, E);
        tg_tr_residual(xo, xo, mid, sE);
    }
    rmsnorm_forward(tr, tr->lnf, tr->res + L * sE, p->out_norm, BT);
}

static void backward(tg_trainer *tr, int B, int T) {
    const tg_train_llama_params *p = &tr->lp, *g = &tr->lg;
    int BT = B * T, L = tr->cfg.n_layer, E = tr->E, F = tr->F, H = tr->H;
    int Q = tr->Q, QKV = tr->QKV;
    size_t sE = (size_t)BT * E, sF = (size_t)BT * F;
    memset(tr->dres, 0, sizeof(float) * sE);
    rmsnorm_backward(tr, tr->dres, g->out_norm, tr->dln, tr->res + L * sE, p->out_norm, BT);
    for (int l = L - 1; l >= 0; l--) {
        const float *x = tr->res + l * sE, *mid = tr->mid + l * sE;
        const float *ln1 = tr->ln1 + l * sE, *ln2 = tr->ln2 + l * sE;
        const float *qkv = tr->qkv + (size_t)l * BT * QKV;
        const float *att = tr->att + (size_t)l * B * H * T * T, *atty = tr->atty + (size_t)l * BT * Q;
        const float *ab = tr->up + l * 2 * sF, *act = tr->act + l * sF;
        /* MLP: xo = mid + w2(silu(w1 h) ⊙ w3 h), h = rmsnorm(mid) */
        tg_tr_matmul_backward(tr, tr->dact, g->w2 + (size_t)l * E * F, NULL, tr->dres, act,
                              p->w2 + (size_t)l * E * F, BT, F, E);
        swiglu_backward(tr, tr->dup, ab, tr->dact, BT);
        tg_tr_matmul_backward(tr, tr->dln, g->w13 + (size_t)l * 2 * F * E, NULL, tr->dup, ln2,
                              p->w13 + (size_t)l * 2 * F * E, BT, E, 2 * F);
        rmsnorm_backward(tr, tr->dres, g->ffn_norm + l * E, tr->dln, mid, p->ffn_norm + l * E, BT);
        /* attention: mid = x + wo(attn(rope(wqkv h))), h = rmsnorm(x) */
        tg_tr_matmul_backward(tr, tr->datty, g->wo + (size_t)l * E * Q, NULL, tr->dres, atty,
                              p->wo + (size_t)l * E * Q, BT, Q, E);
        tg_tr_attention_backward(tr, tr->dqkv, tr->datty, qkv, att, B, T);
        rope_apply(tr, tr->dqkv, tr->rope_nsin, BT, T);
        tg_tr_matmul_backward(tr, tr->dln, g->wqkv + (size_t)l * QKV * E, NULL, tr->dqkv, ln1,
                              p->wqkv + (size_t)l * QKV * E, BT, E, QKV);
        rmsnorm_backward(tr, tr->dres, g->attn_norm + l * E, tr->dln, x, p->attn_norm + l * E, BT);
    }
}

const tg_train_arch tg_train_llama = {
    .arch = TG_ARCH_LLAMA,
    .sizes = sizes,
    .names = names,
    .decay = decay,
    .carve = carve,
    .reset = reset,
    .init = init,
    .forward = forward,
    .backward = backward,
};
