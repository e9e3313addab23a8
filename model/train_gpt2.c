/* train_gpt2.c — GPT-2's blocks for the trainer (model/train_internal.h):
 * the parameter table, GPT-2's init, and per layer
 *   mid = x + proj(attention(qkv(layernorm1(x))))
 *   xo  = mid + down(gelu(up(layernorm2(mid))))
 * then the final layernorm, forward and backward. The embeddings (token
 * and position), attention, matmuls, classifier and loss are train.c's.
 */
#include <string.h>

#include "model/train_internal.h"

static int sizes(const tg_model_config *c, int tied, size_t *s) {
    (void)tied;
    size_t L = c->n_layer, E = c->n_embd, F = c->n_ff, V = c->n_vocab, C = c->n_ctx;
    size_t sz[TG_TRAIN_N_TENSORS] = {V * E, C * E, L * E, L * E, L * 3 * E * E, L * 3 * E,
                                     L * E * E, L * E, L * E, L * E, L * F * E, L * F,
                                     L * E * F, L * E, E, E};
    memcpy(s, sz, sizeof sz);
    return TG_TRAIN_N_TENSORS;
}

static const char *const names[TG_TRAIN_N_TENSORS] = {
    "wte", "wpe", "ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w", "proj_b",
    "ln2_w", "ln2_b", "up_w", "up_b", "down_w", "down_b", "lnf_w", "lnf_b"};
static const int decay[TG_TRAIN_N_TENSORS] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};

static tg_train_params table(float *base, const size_t *s) {
    float **ptrs[TG_TRAIN_N_TENSORS];
    tg_train_params t;
    ptrs[0] = &t.wte, ptrs[1] = &t.wpe, ptrs[2] = &t.ln1_w, ptrs[3] = &t.ln1_b;
    ptrs[4] = &t.qkv_w, ptrs[5] = &t.qkv_b, ptrs[6] = &t.proj_w, ptrs[7] = &t.proj_b;
    ptrs[8] = &t.ln2_w, ptrs[9] = &t.ln2_b, ptrs[10] = &t.up_w, ptrs[11] = &t.up_b;
    ptrs[12] = &t.down_w, ptrs[13] = &t.down_b, ptrs[14] = &t.lnf_w, ptrs[15] = &t.lnf_b;
    for (int i = 0; i < TG_TRAIN_N_TENSORS; i++) {
        *ptrs[i] = base;
        base += s[i];
    }
    return t;
}

static void carve(tg_trainer *tr) {
    tr->p = table(tr->params, tr->sizes);
    tr->g = table(tr->grads, tr->sizes);
    tr->tok_w = tr->cls_w = tr->p.wte, tr->tok_g = tr->cls_g = tr->g.wte;
    tr->pos_w = tr->p.wpe, tr->pos_g = tr->g.wpe;
}

static void reset(tg_trainer *tr) {
    size_t L = tr->cfg.n_layer, E = tr->E;
    for (size_t i = 0; i < L * E; i++) tr->p.ln1_w[i] = tr->p.ln2_w[i] = 1.0f;
    for (size_t i = 0; i < E; i++) tr->p.lnf_w[i] = 1.0f;
}

static void init(tg_trainer *tr, tg_rng *r) { tg_tr_init_normals(tr, r, tr->p.proj_w, tr->p.down_w); }

void tg_trainer_weights(tg_trainer *tr, tg_gpt2_weights *w, tg_gpt2_layer *layers) {
    const tg_gpt2_config *c = &tr->cfg;
    size_t E = c->n_embd, F = c->n_ff;
    const tg_train_params *p = &tr->p;
    int iE = c->n_embd, iF = c->n_ff;
    w->wte = tg_weight_f32(p->wte, c->n_vocab, iE);
    w->wpe = p->wpe;
    w->lnf_w = p->lnf_w;
    w->lnf_b = p->lnf_b;
    w->lm_head = w->wte;
    w->tied = 1;
    w->layers = layers;
    for (int l = 0; l < c->n_layer; l++) {
        tg_gpt2_layer *y = &layers[l];
        y->ln1_w = p->ln1_w + l * E, y->ln1_b = p->ln1_b + l * E;
        y->qkv_w = tg_weight_f32(p->qkv_w + l * 3 * E * E, 3 * iE, iE), y->qkv_b = p->qkv_b + l * 3 * E;
        y->proj_w = tg_weight_f32(p->proj_w + l * E * E, iE, iE), y->proj_b = p->proj_b + l * E;
        y->ln2_w = p->ln2_w + l * E, y->ln2_b = p->ln2_b + l * E;
        y->up_w = tg_weight_f32(p->up_w + l * F * E, iF, iE), y->up_b = p->up_b + l * F;
        y->down_w = tg_weight_f32(p->down_w + l * E * F, iE, iF), y->down_b = p->down_b + l * E;
    }
}

/* ---- layernorm and GELU ------------------------------------------------------ */

typedef struct ln_job {
    const tg_trainer *tr;
    float *out, *dinp;
    const float *inp, *w, *b, *dout;
} ln_job;

static void ln_fwd_rows(void *ctx, int t0, int t1, int ith) {
    (void)ith;
    const ln_job *j = ctx;
    size_t E = j->tr->E;
    j->tr->eng.k.layernorm(j->out + t0 * E, j->inp + t0 * E, j->w, j->b, t1 - t0, (int)E,
                           j->tr->cfg.ln_eps);
}

/* out[BT,E] = layernorm(inp) · w + b */
static void layernorm_forward(tg_trainer *tr, float *out, const float *inp, const float *w,
                              const float *b, int BT) {
    ln_job j = {tr, out, NULL, inp, w, b, NULL};
    tg_parallel_for(tr->pool, BT, TG_TR_CHUNK, 8.0 * BT * tr->E, ln_fwd_rows, &j);
}

static void ln_bwd_chunk(const void *ctx, int t0, int t1, float *part) {
    const ln_job *j = ctx;
    size_t E = j->tr->E;
    j->tr->eng.k.layernorm_bwd(j->dinp + t0 * E, part, part + E, j->dout + t0 * E,
                               j->inp + t0 * E, j->w, t1 - t0, (int)E, j->tr->cfg.ln_eps);
}

/* dinp[BT,E] += layernorm backward; dw, db += their sums */
static void layernorm_backward(tg_trainer *tr, float *dinp, float *dw, float *db,
                               const float *dout, const float *inp, const float *w, int BT) {
    ln_job j = {tr, NULL, dinp, inp, w, NULL, dout};
    tg_tr_norm_backward(tr, BT, 20.0 * BT * tr->E, ln_bwd_chunk, &j, dw, db);
}

typedef struct ew_job {
    const tg_trainer *tr;
    float *out;
    const float *inp, *dout;
} ew_job;

static void gelu_fwd_range(void *ctx, int i0, int i1, int ith) {
    (void)ith;
    const ew_job *j = ctx;
    j->tr->eng.k.gelu(j->out + i0, j->inp + i0, i1 - i0);
}

static void gelu_forward(tg_trainer *tr, float *out, const float *inp, int n) {
    ew_job j = {tr, out, inp, NULL};
    tg_parallel_for(tr->pool, n, 1024, 20.0 * n, gelu_fwd_range, &j);
}

static void gelu_bwd_range(void *ctx, int i0, int i1, int ith) {
    (void)ith;
    const ew_job *j = ctx;
    j->tr->eng.k.gelu_bwd(j->out + i0, j->inp + i0, j->dout + i0, i1 - i0);
}

/* dinp[n] = dout · GELU'(inp)  (dinp may alias dout) */
static void gelu_backward(tg_trainer *tr, float *dinp, const float *inp, const float *dout, int n) {
    ew_job j = {tr, dinp, inp, dout};
    tg_parallel_for(tr->pool, n, 1024, 30.0 * n, gelu_bwd_range, &j);
}

/* ---- the blocks ---------------------------------------------------------------- */

static void forward(tg_trainer *tr, int B, int T) {
    const tg_train_params *p = &tr->p;
    int BT = B * T, L = tr->cfg.n_layer, E = tr->E, F = tr->F, H = tr->H;
    size_t sE = (size_t)BT * E, sF = (size_t)BT * F;
    for (int l = 0; l < L; l++) {
        float *x = tr->res + l * sE, *xo = tr->res + (l + 1) * sE, *mid = tr->mid + l * sE;
        float *ln1 = tr->ln1 + l * sE, *ln2 = tr->ln2 + l * sE, *qkv = tr->qkv + l * 3 * sE;
        float *att = tr->att + (size_t)l * B * H * T * T, *atty = tr->atty + l * sE;
        float *up = tr->up + l * sF, *act = tr->act + l * sF;
        layernorm_forward(tr, ln1, x, p->ln1_w + l * E, p->ln1_b + l * E, BT);
        tg_tr_matmul_forward(tr, qkv, ln1, p->qkv_w + (size_t)l * 3 * E * E, p->qkv_b + l * 3 * E, BT, E, 3 * E);
        tg_tr_attention_forward(tr, atty, att, qkv, B, T);
        tg_tr_matmul_forward(tr, mid, atty, p->proj_w + (size_t)l * E * E, p->proj_b + l * E, BT, E, E);
        tg_tr_residual(mid, mid, x, sE);
        layernorm_forward(tr, ln2, mid, p->ln2_w + l * E, p->ln2_b + l * E, BT);
        tg_tr_matmul_forward(tr, up, ln2, p->up_w + (size_t)l * F * E, p->up_b + l * F, BT, E, F);
        gelu_forward(tr, act, up, (int)sF);
        tg_tr_matmul_forward(tr, xo, act, p->down_w + (size_t)l * E * F, p->down_b + l * E, BT, F, E);
        tg_tr_residual(xo, xo, mid, sE);
    }
    layernorm_forward(tr, tr->lnf, tr->res + L * sE, p->lnf_w, p->lnf_b, BT);
}

static void backward(tg_trainer *tr, int B, int T) {
    const tg_train_params *p = &tr->p, *g = &tr->g;
    int BT = B * T, L = tr->cfg.n_layer, E = tr->E, F = tr->F, H = tr->H;
    size_t sE = (size_t)BT * E, sF = (size_t)BT * F;
    memset(tr->dres, 0, sizeof(float) * sE);
    layernorm_backward(tr, tr->dres, g->lnf_w, g->lnf_b, tr->dln, tr->res + L * sE, p->lnf_w, BT);
    for (int l = L - 1; l >= 0; l--) {
        const float *x = tr->res + l * sE, *mid = tr->mid + l * sE;
        const float *ln1 = tr->ln1 + l * sE, *ln2 = tr->ln2 + l * sE, *qkv = tr->qkv + l * 3 * sE;
        const float *att = tr->att + (size_t)l * B * H * T * T, *atty = tr->atty + l * sE;
        const float *up = tr->up + l * sF, *act = tr->act + l * sF;
        /* MLP: xo = mid + down(gelu(up(ln2(mid)))) */
        tg_tr_matmul_backward(tr, tr->dup, g->down_w + (size_t)l * E * F, g->down_b + l * E, tr->dres,
                              act, p->down_w + (size_t)l * E * F, BT, F, E);
        gelu_backward(tr, tr->dup, up, tr->dup, (int)sF);
        tg_tr_matmul_backward(tr, tr->dln, g->up_w + (size_t)l * F * E, g->up_b + l * F, tr->dup, ln2,
                              p->up_w + (size_t)l * F * E, BT, E, F);
        layernorm_backward(tr, tr->dres, g->ln2_w + l * E, g->ln2_b + l * E, tr->dln, mid,
                           p->ln2_w + l * E, BT);
        /* attention: mid = x + proj(attn(qkv(ln1(x)))) */
        tg_tr_matmul_backward(tr, tr->datty, g->proj_w + (size_t)l * E * E, g->proj_b + l * E,
                              tr->dres, atty, p->proj_w + (size_t)l * E * E, BT, E, E);
        tg_tr_attention_backward(tr, tr->dqkv, tr->datty, qkv, att, B, T);
        tg_tr_matmul_backward(tr, tr->dln, g->qkv_w + (size_t)l * 3 * E * E, g->qkv_b + l * 3 * E,
                              tr->dqkv, ln1, p->qkv_w + (size_t)l * 3 * E * E, BT, E, 3 * E);
        layernorm_backward(tr, tr->dres, g->ln1_w + l * E, g->ln1_b + l * E, tr->dln, x,
                           p->ln1_w + l * E, BT);
    }
}

const tg_train_arch tg_train_gpt2 = {
    .arch = TG_ARCH_GPT2,
    .sizes = sizes,
    .names = names,
    .decay = decay,
    .carve = carve,
    .reset = reset,
    .init = init,
    .forward = forward,
    .backward = backward,
};
